// The route a request matched, as a template (`/v1/guests/:id`): the label of metrics and the name
// of spans. Never the raw path, which carries ids and would make one time series per guest.
import type { Request } from "express";

/** A request no route answered: 404s, and refusals before routing outside the mounts below. */
export const UNMATCHED = "unmatched";

/**
 * The matched route's path (REST routes, health checks, docs), else the mount that answered
 * (`/graphql`; `/v1` for a body refused or a request rate-limited before routing), else `unmatched`.
 * Read when the response finishes: a handler that answers without calling next() leaves req.baseUrl
 * at its mount.
 */
export function routeTemplate(req: Request): string {
  const path: unknown = req.route?.path;
  if (typeof path === "string") return req.baseUrl + path;
  return req.baseUrl || UNMATCHED;
}
