// A GraphQL IDE (ruru, a GraphiQL distribution) at GET /graphql for a browser, entirely from this
// service: the page and ruru's static assets from node_modules/ruru/static, nothing from a CDN. The
// credential is typed into the page's headers editor (prefilled `Authorization: Bearer `), kept in
// the tab only, and sent by the browser with each query like any API client's; the server holds no
// token for it. On unless NODE_ENV=production (GCS_GRAPHQL_IDE overrides). ruru (about 160 MB with
// Monaco) is a dev dependency: a production install (`npm ci --omit=dev`) has none, so there the IDE
// is off unless GCS_GRAPHQL_IDE=true asks for it, which then fails at start, saying so.
import { createHash } from "node:crypto";
import path from "node:path";
import express, { type Express, type Request } from "express";
import type { RuruClientConfig } from "ruru/server";

/** Outside /graphql: the API paths answer `Cache-Control: no-store`, and these files never change. */
export const IDE_STATIC_PATH = "/graphql-ide/";

const INITIAL_HEADERS = JSON.stringify({ Authorization: "Bearer " }, null, 2);

const INLINE_SCRIPT = /<script(?![^>]*\ssrc=)[^>]*>([\s\S]*?)<\/script>/g;

type Resolve = (request: string) => string;

/** Whether ruru is installed (a dev dependency: not in a production install). */
export function graphqlIdeInstalled(resolve: Resolve = require.resolve): boolean {
  try {
    resolve("ruru/server");
    return true;
  } catch {
    return false;
  }
}

export const IDE_MISSING =
  "the GraphQL IDE is on (GCS_GRAPHQL_IDE=true) but ruru is not installed: it is a dev dependency, which `npm ci --omit=dev` leaves out; install the dev dependencies or set GCS_GRAPHQL_IDE=false";

/**
 * A browser opening /graphql: a GET of the path itself that prefers text/html. API clients
 * (Accept: application/json, any type, or none) go on to the GraphQL endpoint.
 */
function asksForPage(req: Request): boolean {
  return req.method === "GET" && req.path === "/" && req.accepts(["application/json", "application/graphql-response+json", "text/html"]) === "text/html";
}

export const IDE_OFF_PAGE = `<!doctype html>
<html lang="en"><head><meta charset="utf-8"><title>Guest Context Service · GraphQL</title></head>
<body><h1>The GraphQL IDE is off on this server</h1>
<p>It is off in production (NODE_ENV=production) unless GCS_GRAPHQL_IDE=true, which needs the dev dependencies installed.</p>
<p>The GraphQL endpoint is here: send queries with <code>POST /graphql</code>, a JSON body and an <code>Authorization: Bearer</code> header.</p>
</body></html>
`;

/**
 * With the IDE off (production): a browser opening /graphql is told so, instead of the endpoint's
 * refusal of a GET without a preflight header (Apollo's CSRF prevention), which reads as an error.
 */
export function mountGraphqlIdeOff(app: Express): void {
  app.use("/graphql", (req, res, next) => {
    if (!asksForPage(req)) return next();
    res.status(404).type("html").send(IDE_OFF_PAGE);
  });
}

export function mountGraphqlIde(app: Express, resolve: Resolve = require.resolve): void {
  if (!graphqlIdeInstalled(resolve)) throw new Error(IDE_MISSING);
  // Required here: an instance with the IDE off never loads it.
  // eslint-disable-next-line @typescript-eslint/no-require-imports
  const { ruruHTML } = require(resolve("ruru/server")) as typeof import("ruru/server");
  const page = ruruHTML({
    endpoint: "/graphql",
    staticPath: IDE_STATIC_PATH,
    // ruru-types marks every prop required; the page needs these three.
    clientConfig: { initialHeaders: INITIAL_HEADERS, defaultHeaders: INITIAL_HEADERS, showPersistHeadersSettings: false } as RuruClientConfig,
    htmlParts: { titleTag: "<title>Guest Context Service · GraphQL</title>" },
  });
  // Own origin only. The page's few inline scripts are allowed by hash; Monaco and ruru's components
  // set styles inline, which cannot run code.
  const scriptHashes = [...page.matchAll(INLINE_SCRIPT)].map((m) => `'sha256-${createHash("sha256").update(m[1]).digest("base64")}'`);
  const policy = [
    "default-src 'self'",
    `script-src 'self' ${scriptHashes.join(" ")}`,
    "style-src 'self' 'unsafe-inline'",
    "img-src 'self' data:",
    "font-src 'self' data:",
    "connect-src 'self'",
    "worker-src 'self'",
    "object-src 'none'",
    "base-uri 'none'",
    "form-action 'none'",
    "frame-ancestors 'none'",
  ].join("; ");

  // Mounted like the endpoint itself (app.use): GET /graphql is the endpoint's too, for API clients.
  app.use("/graphql", (req, res, next) => {
    if (!asksForPage(req)) return next();
    res.set("Content-Security-Policy", policy).type("html").send(page);
  });
  const staticDir = path.join(path.dirname(resolve("ruru")), "..", "static");
  app.use(IDE_STATIC_PATH, express.static(staticDir, { index: false, maxAge: "1d" }));
}
