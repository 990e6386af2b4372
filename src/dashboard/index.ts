// The internal dashboard at GET /dashboard (issue 28): one page and its files, all from this service
// (uPlot and graphql-sse's client from node_modules, nothing from a CDN). It signs in with an API key pasted in the page,
// kept in the tab only, and sends only the documents of dashboard/trusted-documents.json to
// /graphql, the file that doubles as the example of a production allowlist
// (GCS_GRAPHQL_TRUSTED_DOCUMENTS). On unless NODE_ENV=production (GCS_DASHBOARD overrides).
import path from "node:path";
import express, { type Express } from "express";

/** The dashboard's documents keyed by sha256 (`npm run dashboard:documents` writes it). */
export const DASHBOARD_DOCUMENTS = path.resolve(__dirname, "../../dashboard/trusted-documents.json");
const STATIC = path.join(__dirname, "static");

const POLICY = [
  "default-src 'self'",
  "script-src 'self'",
  // uPlot positions its legend and cursor with inline styles, which cannot run code.
  "style-src 'self' 'unsafe-inline'",
  "img-src 'self' data:",
  "connect-src 'self'",
  "object-src 'none'",
  "base-uri 'none'",
  "form-action 'none'",
  "frame-ancestors 'none'",
].join("; ");

export function mountDashboard(app: Express): void {
  const vendor = path.join(path.dirname(require.resolve("uplot")), "..", "dist");
  app.get("/dashboard", (_req, res) => {
    res.set("Content-Security-Policy", POLICY).sendFile(path.join(STATIC, "index.html"));
  });
  app.get("/dashboard/documents.json", (_req, res) => {
    res.type("json").sendFile(DASHBOARD_DOCUMENTS);
  });
  // graphql-sse's browser build, for the Live events page's subscription (/graphql/stream).
  const sse = path.join(path.dirname(require.resolve("graphql-sse")), "..", "umd");
  app.use("/dashboard/vendor", express.static(vendor, { index: false, maxAge: "1d" }));
  app.use("/dashboard/vendor", express.static(sse, { index: false, maxAge: "1d" }));
  app.use("/dashboard", express.static(STATIC, { index: false }));
}
