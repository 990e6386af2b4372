// The body parser every door uses (jsonBody) and the app's last handlers: 404 and the error handler
// for body parsing failures and anything that escaped a handler.
import { isUtf8 } from "node:buffer";
import express, { type NextFunction, type Request, type Response } from "express";
import { apiError } from "../errors";
import { sendError } from "../http/respond";

/** Unknown routes answer 404; body parsing failures and escaped errors answer the spec's error body. */
export function mountFallbacks(app: express.Express) {
  app.use((req, res) => {
    res.status(404).json({ error: "not_found", detail: `no route ${req.method} ${req.path}` });
  });
  // Body parsing failures and anything that escaped a handler.
  app.use((err: Error & { type?: string; status?: number; encoding?: string }, req: Request, res: Response, _next: NextFunction) => {
    if (err.type === "entity.parse.failed") return sendError(req, res, apiError("invalid_request", "request body is not valid JSON"));
    if (err.type === "entity.too.large") return sendError(req, res, apiError("payload_too_large", "request body is too large"));
    // body-parser's 415s: a Content-Encoding it cannot inflate, or bytes that are not UTF-8 (jsonBody's
    // verify; charsets are checked in jsonBody).
    if (err.status === 415) {
      const detail =
        err.type === NOT_UTF8 ? "the body is not valid UTF-8; send JSON encoded as UTF-8"
        : err.encoding ? `Content-Encoding ${err.encoding} is not supported; send gzip, deflate, br or none`
        : "unsupported request body encoding";
      return refuseMediaType(req, res, detail, err.type);
    }
    // Express could not percent-decode a path segment (%FF, a lone surrogate's bytes).
    if (err instanceof URIError) return sendError(req, res, apiError("invalid_request", "the path is not valid percent-encoded UTF-8"));
    if (err.status === 400) return sendError(req, res, apiError("invalid_request", "malformed request"));
    sendError(req, res, err);
  });
}

const CHARSET = /;\s*charset\s*=\s*"?([^";\s]*)/i;
const NOT_UTF8 = "entity.not.utf8";

/**
 * Refuses the bytes as they arrived, before body-parser decodes them (once): invalid UTF-8 would
 * otherwise be read with U+FFFD in place of what the client sent. isUtf8 validates without decoding.
 */
function verifyUtf8(_req: unknown, _res: unknown, body: Buffer) {
  if (!isUtf8(body)) throw Object.assign(new Error("request body is not valid UTF-8"), { status: 415, type: NOT_UTF8 });
}

/**
 * A 415: the client's mistake, not a fault, so one warn line without a stack. The path as the client
 * sent it (req.originalUrl: inside a mount req.path has lost it), without the query string, as in
 * the access log.
 */
function refuseMediaType(req: Request, res: Response, detail: string, type?: string) {
  const path = req.originalUrl.split("?", 1)[0];
  req.log.warn({ method: req.method, path, ...(type ? { type } : {}) }, "unsupported media type");
  sendError(req, res, apiError("unsupported_media_type", detail));
}

/**
 * express.json() that answers a body it should not read with 415, before authentication: a POST body
 * of another type (express.json() alone skips it, and the handler sees no body: "member_type is
 * required"), JSON in a charset other than UTF-8 (RFC 8259; body-parser would decode UTF-16 into
 * garbage), or bytes that are not valid UTF-8 (verifyUtf8, through the error handler). A POST
 * without a body (pause, resume) needs no Content-Type.
 */
export function jsonBody(limit: string) {
  const parse = express.json({ limit, verify: verifyUtf8 });
  return (req: Request, res: Response, next: NextFunction) => {
    const hasBody = req.get("transfer-encoding") !== undefined || Number(req.get("content-length") ?? 0) > 0;
    const type = req.get("content-type");
    const charset = type ? CHARSET.exec(type)?.[1].toLowerCase() : undefined;
    let detail: string | undefined;
    if (req.method === "POST" && hasBody && !req.is("application/json")) {
      detail = `send the body as Content-Type: application/json; got ${type ? type.slice(0, 100) : "no Content-Type"}`;
    } else if (hasBody && req.is("application/json") && charset !== undefined && charset !== "utf-8") {
      detail = `send the body as Content-Type: application/json in UTF-8; got charset ${charset.slice(0, 40)}`;
    }
    if (detail === undefined) return parse(req, res, next);
    refuseMediaType(req, res, detail);
  };
}

