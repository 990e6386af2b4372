// GET /v1/events/stream: the event timeline as Server-Sent Events (issue 29).
//
// The same rows, filters, order and tenant scope as GET /v1/events timeline (data/events.ts, read
// through the request's scoped data), and each event's SSE `id` is a timeline cursor: the very
// token GET /v1/events would return as next_cursor after that row, for the same filters. So a client
// reconnecting with Last-Event-ID (or passing `cursor`) resumes after the last event it saw, on any
// instance, with no gap and no duplicate; and it can switch between paging and streaming freely.
//
// Delivery is a short poll of the timeline (GCS_STREAM_POLL_MS, 500 ms): it works the same on
// PostgreSQL, behind PgBouncer in transaction mode (where LISTEN cannot be used) and on the
// embedded PGlite, and on a read replica (the timeline's watermark makes a replica's answer safe).
// A stream holds no database connection between polls and no credential concurrency slot; the
// number of open streams per credential is capped per instance (GCS_STREAM_MAX_PER_CREDENTIAL).
import type { Request, Response } from "express";
import { createContext, type RequestContext } from "../context";
import type { EventFilter, EventRow } from "../data/events";
import { eventKeyOf } from "../data/events";
import { eventLogEnd } from "../data/webhooks";
import { echo, invalidRequest, missingScope, rateLimited } from "../errors";
import { decodeCursor, encodeCursor, type CursorBinding, type CursorKey } from "../pagination/cursor";
import type { Services } from "../services";
import { isUuid } from "../validate";
import { WEBHOOK_TOPICS } from "../webhooks/router";
import { eventType } from "../webhooks/sign";
import { sendError } from "./respond";

const SCOPE = "read:events";
/** The reconnection delay clients are told (ms). */
export const RETRY_HINT_MS = 2_000;
const BATCH = 200;

const open = new Map<string, number>();
const streams = new Set<Response>();

/** Ends every open stream (the server is draining): clients reconnect elsewhere with Last-Event-ID. */
export function closeStreams(): void {
  for (const res of streams) res.end();
}

/** The /v1/events row of an event. */
export function restEventRow(e: EventRow) {
  return {
    seq: e.seq,
    entity_type: e.entityType,
    entity_id: e.entityId,
    guest_profile_id: e.guestProfileId,
    property_id: e.propertyId,
    integration_id: e.integrationId,
    operation: e.operation,
    delta: e.delta,
    occurred_at: e.occurredAt,
    recorded_at: e.recordedAt,
  };
}

function parseFilter(query: Record<string, unknown>): { filter: EventFilter; cursor?: string } {
  const known = ["entity_type", "entity_id", "guest_profile_id", "master_profile_id", "cursor"];
  const q: Record<string, string> = {};
  for (const [k, v] of Object.entries(query)) {
    if (!known.includes(k)) throw invalidRequest(`unknown query parameter ${echo(k)}; known: ${known.join(", ")}`);
    if (typeof v !== "string") throw invalidRequest(`${k} must be given once`);
    q[k] = v;
  }
  const filter: EventFilter = {};
  if (q.entity_type !== undefined) {
    if (!(WEBHOOK_TOPICS as readonly string[]).includes(q.entity_type)) throw invalidRequest(`entity_type must be one of ${WEBHOOK_TOPICS.join(", ")}; got ${echo(q.entity_type)}`);
    filter.entityType = q.entity_type;
  }
  if (q.entity_id !== undefined) filter.entityId = q.entity_id;
  for (const [param, field] of [["guest_profile_id", "guestProfileId"], ["master_profile_id", "masterProfileId"]] as const) {
    if (q[param] === undefined) continue;
    if (!isUuid(q[param])) throw invalidRequest(`${param} must be a uuid, e.g. 3f1c2a9e-7d4b-4c1a-9e2f-5b6a7c8d9e0f`);
    filter[field] = q[param];
  }
  if (filter.guestProfileId && filter.masterProfileId) throw invalidRequest("send guest_profile_id or master_profile_id, not both");
  return { filter, cursor: q.cursor };
}

/**
 * Holds one of the credential's open streams on this instance, REST and GraphQL (graphql/stream.ts)
 * counted together; `rate_limited` past the cap. Returns the release (safe to call twice).
 */
export function holdStreamSlot(ctx: RequestContext, max: number): () => void {
  const slot = `${ctx.credential.kind}:${ctx.credential.id}`;
  const count = open.get(slot) ?? 0;
  if (count >= max) throw rateLimited(`at most ${max} open event streams per credential; close one first`);
  open.set(slot, count + 1);
  let held = true;
  return () => {
    if (!held) return;
    held = false;
    const left = (open.get(slot) ?? 1) - 1;
    if (left > 0) open.set(slot, left);
    else open.delete(slot);
  };
}

/**
 * The timeline after `after` as it grows, read through the context's scoped data: the rows of each
 * poll in timeline order, polling again at once after a full batch, else after `pollMs`; an empty
 * batch when nothing is new (a stream may then write a heartbeat). Used by this stream and the
 * GraphQL subscription (graphql/stream.ts). Ends as soon as `signal` aborts, even mid-wait.
 */
export async function* followTimeline(ctx: RequestContext, filter: EventFilter, after: CursorKey, pollMs: number, signal: AbortSignal): AsyncGenerator<EventRow[]> {
  while (!signal.aborted) {
    const rows = await ctx.data.events.timeline(filter, after, BATCH);
    if (rows.length) after = eventKeyOf(rows[rows.length - 1]);
    yield rows;
    if (rows.length === BATCH || signal.aborted) continue;
    await new Promise<void>((resolve) => {
      const done = () => {
        clearTimeout(timer);
        signal.removeEventListener("abort", done);
        resolve();
      };
      const timer = setTimeout(done, pollMs);
      timer.unref();
      signal.addEventListener("abort", done);
    });
  }
}

export function eventStreamHandler(services: Services) {
  const cfg = services.config.stream;
  return async (req: Request, res: Response) => {
    let ctx: RequestContext;
    let release: (() => void) | undefined;
    try {
      // No `response`: a stream must not hold a credential concurrency slot for its whole life.
      ctx = await createContext(services, {
        authorization: req.get("authorization"),
        propertyHeader: req.get("x-property-id"),
        surface: "rest",
        address: req.ip,
        requiredScope: SCOPE,
      });
      res.locals.credential = ctx.credential;
      if (!ctx.credential.scopes.has(SCOPE)) throw missingScope(SCOPE);
      const { filter, cursor } = parseFilter(req.query as Record<string, unknown>);
      const binding: CursorBinding = { family: "events", propertyGroupId: ctx.scope.propertyGroupId, query: { filter, propertyId: ctx.scope.propertyId } };
      const resumeFrom = req.get("last-event-id") || cursor;
      let after: CursorKey;
      if (resumeFrom) after = decodeCursor(resumeFrom, binding, ctx.cursorSecret);
      else {
        const end = await eventLogEnd(services.db.reader, ctx.scope.propertyGroupId);
        after = [end.txid, end.seq];
      }
      release = holdStreamSlot(ctx, cfg.maxPerCredential);
      await run(req, res, ctx, filter, binding, after);
    } catch (err) {
      if (!res.headersSent) sendError(req, res, err);
      else {
        req.log.warn({ err }, "event stream ended by an error; the client resumes with Last-Event-ID");
        res.end();
      }
    } finally {
      release?.();
    }
  };

  async function run(req: Request, res: Response, ctx: RequestContext, filter: EventFilter, binding: CursorBinding, start: CursorKey) {
    let closed = false;
    const stop = new AbortController();
    const onClose = () => {
      closed = true;
      stop.abort();
    };
    req.on("close", onClose);
    res.on("close", onClose);
    streams.add(res);
    res.writeHead(200, {
      "Content-Type": "text/event-stream; charset=utf-8",
      "Cache-Control": "no-cache, no-transform",
      "X-Accel-Buffering": "no",
    });
    res.flushHeaders();
    let lastWrite = Date.now();
    const write = async (text: string) => {
      lastWrite = Date.now();
      if (!res.write(text)) await new Promise<void>((resolve) => {
        res.once("drain", resolve);
        res.once("close", resolve);
      });
    };
    try {
      await write(`retry: ${RETRY_HINT_MS}\n: stream of GET /v1/events; the id of each event is a timeline cursor\n\n`);
      for await (const rows of followTimeline(ctx, filter, start, cfg.pollMs, stop.signal)) {
        for (const row of rows) {
          if (closed) return;
          const id = encodeCursor(eventKeyOf(row), binding, ctx.cursorSecret);
          await write(`id: ${id}\nevent: ${eventType({ entity_type: row.entityType, operation: row.operation })}\ndata: ${JSON.stringify(restEventRow(row))}\n\n`);
        }
        if (!closed && rows.length === 0 && Date.now() - lastWrite >= cfg.heartbeatMs) await write(": heartbeat\n\n");
      }
    } finally {
      streams.delete(res);
      req.off("close", onClose);
      if (!res.writableEnded) res.end();
    }
  }
}
