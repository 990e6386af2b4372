// Serves the OpenAPI document at GET /openapi.json and a reference page rendered from it at
// GET /docs. Redoc's standalone bundle is served from here, so the page works offline.
import { createHash } from "node:crypto";
import { existsSync, readFileSync } from "node:fs";
import path from "node:path";
import type { Express } from "express";
import { openApiDocument } from "../api/openapi";

// redoc is a dev dependency: `npm run build` (scripts/build.js) copies its bundle beside the compiled
// module; running from source, it is still in node_modules.
const BUILT_REDOC_BUNDLE = path.join(__dirname, "redoc.standalone.js");
const REDOC_BUNDLE = existsSync(BUILT_REDOC_BUNDLE) ? BUILT_REDOC_BUNDLE : require.resolve("redoc/bundles/redoc.standalone.js");

// Redoc's side menu always shows a logo from its CDN, which the policy below refuses (a CSP error in
// the console): the bundle is served with an empty inline image in its place, so nothing is asked for.
const REDOC_LOGO = "https://cdn.redoc.ly/redoc/logo-mini.svg";
const NO_LOGO = "data:image/svg+xml,%3Csvg xmlns='http://www.w3.org/2000/svg'/%3E";

let bundle: string | undefined;
/** The bundle without the CDN logo, read on the first request (not at start: the embedded demo counts its memory). */
const redocBundle = () => (bundle ??= readFileSync(REDOC_BUNDLE, "utf8").replaceAll(REDOC_LOGO, NO_LOGO));

const INIT_SCRIPT = `Redoc.init("/openapi.json", { expandResponses: "200", jsonSampleExpandLevel: 3 }, document.getElementById("redoc"));`;

const DOCS_PAGE = `<!doctype html>
<html lang="en">
<head>
<meta charset="utf-8">
<meta name="viewport" content="width=device-width, initial-scale=1">
<title>Guest Context Service API</title>
<link rel="icon" href="data:,">
<style>body { margin: 0; }</style>
</head>
<body>
<div id="redoc"></div>
<script src="/docs/redoc.standalone.js"></script>
<script>${INIT_SCRIPT}</script>
</body>
</html>
`;

/**
 * Nothing may load from elsewhere (Redoc's CDN logo is replaced in the bundle, above). Styles are
 * inline (styled-components); search runs in a blob: worker; the init script is allowed by its hash.
 */
const DOCS_POLICY = [
  "default-src 'none'",
  `script-src 'self' 'sha256-${createHash("sha256").update(INIT_SCRIPT).digest("base64")}'`,
  "style-src 'self' 'unsafe-inline'",
  "img-src 'self' data:",
  "font-src 'self' data:",
  "connect-src 'self'",
  "worker-src blob:",
  "base-uri 'none'",
  "form-action 'none'",
  "frame-ancestors 'none'",
].join("; ");

export function mountOpenApi(app: Express): void {
  const json = JSON.stringify(openApiDocument());
  app.get("/openapi.json", (_req, res) => {
    res.type("application/json").send(json);
  });
  app.get("/docs", (_req, res) => {
    res.set("Content-Security-Policy", DOCS_POLICY).type("html").send(DOCS_PAGE);
  });
  app.get("/docs/redoc.standalone.js", (_req, res) => {
    res.set("Cache-Control", "public, max-age=86400").type("js").send(redocBundle());
  });
}
