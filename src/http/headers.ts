// Response headers for data that must not linger or be reinterpreted, and cross-origin access.
//
// Every API door (/v1, /graphql, /mcp) answers with personal data or could: `Cache-Control:
// no-store` keeps it out of browser, proxy and CDN caches. `X-Content-Type-Options: nosniff` goes on
// every response so no browser reads JSON as script or HTML.
//
// CORS is off unless GCS_CORS_ORIGINS lists origins: API clients are servers and agents, not pages of
// other sites. A listed origin may send the credential headers and read the rate-limit, request-id
// and timing headers; any other origin gets no CORS headers at all (the browser then refuses).
import cors from "cors";
import type { NextFunction, Request, RequestHandler, Response } from "express";

export const API_PATHS = ["/v1", "/graphql", "/mcp"];

export function securityHeaders(req: Request, res: Response, next: NextFunction) {
  res.setHeader("X-Content-Type-Options", "nosniff");
  if (API_PATHS.some((p) => req.path === p || req.path.startsWith(`${p}/`))) res.setHeader("Cache-Control", "no-store");
  next();
}

/** The CORS middleware for the allowlisted origins, or undefined when cross-origin access is off. */
export function corsFor(origins: readonly string[]): RequestHandler | undefined {
  if (origins.length === 0) return undefined;
  const allowed = new Set(origins);
  return cors({
    origin: (origin, done) => done(null, origin !== undefined && allowed.has(origin)),
    methods: ["GET", "POST"],
    allowedHeaders: ["Authorization", "Content-Type", "X-Property-Id", "X-Request-Id", "Mcp-Protocol-Version", "Accept"],
    exposedHeaders: ["X-Request-Id", "X-Sql-Statements", "Server-Timing", "RateLimit", "RateLimit-Policy", "Retry-After", "WWW-Authenticate", "Deprecation", "Sunset"],
    maxAge: 600,
  });
}
