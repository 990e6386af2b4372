// Sends an error as the spec's JSON body; faults of ours are logged with their cause and the
// request id, and never leak into the body.
import type { Request, Response } from "express";
import { toHttpError } from "./http-errors";

export function sendError(req: Request, res: Response, err: unknown) {
  const { status, body, unexpected } = toHttpError(err);
  if (unexpected) req.log?.error({ err, requestId: req.id }, "unhandled error");
  if (status === 401) res.set("WWW-Authenticate", 'Bearer realm="guest-context"');
  res.status(status).json(body);
}
