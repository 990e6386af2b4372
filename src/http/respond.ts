// Sends an error as the spec's JSON body; faults of ours are logged with their cause and the
// request id, and never leak into the body. A database that is down or too slow is answered 503 or
// 504 through the app's DatabaseFaults (db/faults.ts), which logs outages once, not per request.
import type { Request, Response } from "express";
import { toHttpError } from "./http-errors";
import { RETRY_AFTER_SECONDS } from "../db/faults";

export function sendError(req: Request, res: Response, err: unknown) {
  const { status, body, unexpected } = toHttpError(req.faults?.errorFor(err, req.path) ?? err);
  if (unexpected) req.log?.error({ err, requestId: req.id }, "unhandled error");
  if (status === 401) res.set("WWW-Authenticate", wwwAuthenticate(res));
  if (status === 503) res.set("Retry-After", String(RETRY_AFTER_SECONDS));
  res.status(status).json(body);
}

/**
 * A JSON body, sent as one string: Node then writes the headers and the body in one write and sets
 * Content-Length itself. Express's res.json turns any body over 1,000 characters into a Buffer
 * first, which costs a copy of the body and a second chunk (a writev) per response: a measurable
 * share of a 100-guest page's cost. Same status, headers and bytes as res.json.
 */
export function sendJson(res: Response, body: unknown) {
  res.setHeader("Content-Type", "application/json; charset=utf-8");
  res.end(JSON.stringify(body));
}

/**
 * On /mcp the challenge names the protected resource metadata (RFC 9728 §5.1), where an MCP client
 * discovers the authorization server and starts the OAuth flow.
 */
function wwwAuthenticate(res: Response): string {
  const metadata = res.locals.resourceMetadataUrl as string | undefined;
  return metadata ? `Bearer resource_metadata="${metadata}", realm="guest-context"` : 'Bearer realm="guest-context"';
}
