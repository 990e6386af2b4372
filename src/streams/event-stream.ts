// GET /v1/events/stream: the event timeline as Server-Sent Events (issue 29).
//
// The same rows, filters, order and tenant scope as GET /v1/events timeline (data/events.ts, read
// through the request's scoped data), and each event's SSE `id` is a timeline cursor: the very
// token GET /v1/events would return as next_cursor after that row, for the same filters. So a client
// reconnecting with Last-Event-ID (or passing `cursor`) resumes after the last event it saw, on any
// instance, with no gap and no duplicate; and it can switch between paging and streaming freely.
//
// New events are found by polling the timeline (GCS_STREAM_POLL_MS, 500 ms), once per group and
// instance for all of the group's open streams (streams/event-hub.ts), not by LISTEN: it works the same
// on PostgreSQL, behind PgBouncer in transaction mode, on the embedded PGlite, and on a read replica
// (the timeline's watermark makes a replica's answer safe). A stream holds no database connection
// between polls and no credential concurrency slot; the number of open streams per credential is
// capped per instance (GCS_STREAM_MAX_PER_CREDENTIAL). A stream whose credential is revoked, expires
// or loses read:events ends within GCS_STREAM_CREDENTIAL_CHECK_MS (streams/credential-watch.ts) with
// an `error` event holding the error body a new request would get.
import type { Request, Response } from "express";
import { createContext, type RequestContext } from "../context";
import type { EventFilter, EventRow } from "../data/events";
import { eventKeyOf } from "../data/events";
import { EventHub, STREAM_BUFFER_BYTES, type Sink } from "./event-hub";
import { CredentialWatch } from "./credential-watch";
import { echo, invalidCursor, invalidRequest, missingScope, rateLimited } from "../errors";
import { toHttpError } from "../http/http-errors";
import type { GraphQLError } from "graphql";
import { canonicalJson, decodeCursor, encodeCursor, type CursorBinding, type CursorKey } from "../pagination/cursor";
import type { Services } from "../services";
import { isUuid } from "../validate";
import { WEBHOOK_TOPICS } from "../webhooks/input";
import { eventType } from "../webhooks/sign";
import { sendError } from "../http/respond";

const SCOPE = "read:events";
/** The reconnection delay clients are told (ms). */
export const RETRY_HINT_MS = 2_000;

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
    filter[field] = q[param].toLowerCase(); // as GET /v1/events reads it (api/params.ts uuid): the same cursor binding
  }
  if (filter.guestProfileId && filter.masterProfileId) throw invalidRequest("send guest_profile_id or master_profile_id, not both");
  return { filter, cursor: q.cursor };
}

/**
 * Holds one of the credential's open streams in `open` (one app's count), REST and GraphQL
 * (graphql/stream.ts) counted together; `rate_limited` past the cap. Returns the release (safe to call twice).
 */
function holdStreamSlot(open: Map<string, number>, holder: Pick<RequestContext, "credential">, max: number): () => void {
  const slot = `${holder.credential.kind}:${holder.credential.id}`;
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

/** A timeline position is (txid, seq); a signed key of another shape cannot come from us. */
export const isTimelineKey = (key: CursorKey): boolean => key.length === 2 && key.every((k) => /^\d{1,19}$/.test(String(k)));

/**
 * What an app's open streams share, for both doors (REST here, GraphQL in graphql/stream.ts): one
 * hub, one credential check, and the per-credential count of open streams. Per app, not per process:
 * two apps in one process (tests, a second listener) keep their own.
 */
export interface LiveStreams {
  hub: EventHub;
  credentials: CredentialWatch;
  /** Holds one of the credential's open streams (GCS_STREAM_MAX_PER_CREDENTIAL); returns the release. */
  holdSlot(holder: Pick<RequestContext, "credential">): () => void;
  /** The open REST streams' responses (the GraphQL door keeps its own). */
  readonly responses: Set<Response>;
  /** Ends every open REST stream (the server is draining): clients reconnect elsewhere with Last-Event-ID. */
  closeStreams(): void;
  stop(): void;
}

export function liveStreams(services: Services): LiveStreams {
  const cfg = services.config.stream;
  const credentials = new CredentialWatch(services.db, cfg.credentialCheckMs, services.logger);
  const slots = new Map<string, number>();
  const responses = new Set<Response>();
  return {
    hub: new EventHub(services.db, cfg.pollMs, services.logger),
    credentials,
    holdSlot: (holder) => holdStreamSlot(slots, holder, cfg.maxPerCredential),
    responses,
    closeStreams: () => {
      for (const res of responses) res.end();
    },
    stop: () => credentials.stop(),
  };
}

export function eventStreamHandler(services: Services, live: LiveStreams) {
  const cfg = services.config.stream;
  return async (req: Request, res: Response) => {
    let release: (() => void) | undefined;
    try {
      const { scope, filter, binding, secret, start, credential } = await openRequest(req, res);
      release = live.holdSlot({ credential });
      const sink = new SseSink(res, binding, secret, cfg.heartbeatMs);
      const unwatch = live.credentials.watch(req.get("authorization"), credential, SCOPE, (err) => sink.end(err));
      live.responses.add(res);
      try {
        await live.hub.follow(scope, filter, start, sink);
      } finally {
        unwatch();
        live.responses.delete(res);
        if (!res.writableEnded) res.end();
      }
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

  /**
   * Authenticates and reads the request; returns only what the stream keeps, so the request's
   * context (its data handle, loaders) is not held for the stream's whole life.
   */
  async function openRequest(req: Request, res: Response) {
    // No `response`: a stream must not hold a credential concurrency slot for its whole life.
    const ctx = await createContext(services, {
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
    // Without a cursor the stream starts at the log's end (EventHub.follow).
    const start = resumeFrom ? decodeCursor(resumeFrom, binding, ctx.cursorSecret) : undefined;
    if (start && !isTimelineKey(start)) throw invalidCursor();
    return { scope: ctx.scope, filter, binding, secret: ctx.cursorSecret, start, credential: ctx.credential };
  }
}

/** A row's SSE event text, made once per cursor binding and shared by every stream it goes to. */
const rowFrames = new WeakMap<EventRow, Map<string, string>>();

/**
 * One open stream's writer. A class, so that a thousand open streams share its methods; it keeps
 * the response, what signs its ids, the text not yet written and when it last wrote (heartbeats).
 */
class SseSink implements Sink {
  closed = false;
  /** Resolves when the client has gone or end() ended the stream: the hub lets it go. */
  readonly gone: Promise<void>;
  private left!: () => void;
  private lastWrite = Date.now();
  private readonly pending: string[] = [];
  /** The pending frames' length (characters: a frame is JSON, mostly one byte each). */
  private pendingBytes = 0;
  /** Streams with equal bindings share their rows' frames (rowFrames). */
  private readonly bindingKey: string;

  constructor(
    private readonly res: Response,
    private readonly binding: CursorBinding,
    private readonly secret: string,
    private readonly heartbeatMs: number,
  ) {
    this.bindingKey = `${binding.propertyGroupId}\n${canonicalJson(binding.query)}`;
    this.gone = new Promise((resolve) => (this.left = resolve));
    res.once("close", () => {
      this.closed = true;
      this.left();
    });
  }

  open(): void {
    this.res.writeHead(200, {
      "Content-Type": "text/event-stream; charset=utf-8",
      "Cache-Control": "no-cache, no-transform",
      "X-Accel-Buffering": "no",
    });
    this.pending.push(`retry: ${RETRY_HINT_MS}\n: stream of GET /v1/events; the id of each event is a timeline cursor\n\n`);
    this.flush();
  }

  send(row: EventRow): void {
    if (this.closed) return; // ended: nothing more is written, so nothing more is queued
    let frames = rowFrames.get(row);
    if (!frames) rowFrames.set(row, (frames = new Map()));
    let frame = frames.get(this.bindingKey);
    if (frame === undefined) {
      const id = encodeCursor(eventKeyOf(row), this.binding, this.secret);
      const type = eventType({ entity_type: row.entityType, operation: row.operation });
      frames.set(this.bindingKey, (frame = `id: ${id}\nevent: ${type}\ndata: ${JSON.stringify(restEventRow(row))}\n\n`));
    }
    this.pending.push(frame);
    this.pendingBytes += frame.length;
  }

  /** Queued and not yet taken by the socket: node's buffer of the response holds what the kernel's could not. */
  get full(): boolean {
    return this.pendingBytes + this.res.writableLength >= STREAM_BUFFER_BYTES;
  }

  flush(): boolean {
    // Ended by closeStreams (the server drains) or end(): its 'close' is on the way.
    if (this.closed || this.res.writableEnded) return true;
    if (this.pending.length === 0) {
      if (Date.now() - this.lastWrite < this.heartbeatMs) return true;
      this.pending.push(": heartbeat\n\n");
    }
    this.lastWrite = Date.now();
    // The shared frames as they are (no per-stream copy), in one system call.
    this.res.cork();
    for (const frame of this.pending) this.res.write(frame);
    this.res.uncork();
    this.pending.length = 0;
    this.pendingBytes = 0;
    return !this.full;
  }

  /**
   * Ends the stream because its credential no longer opens it: an `error` event with the error body
   * a new request would get, then the end. A client that is not reading (the response waits for a
   * drain) would not see it behind what it has not read, and its connection is closed at once.
   * Either way the hub lets the stream go now, not when its client goes: its slot is released.
   */
  end(err: GraphQLError): void {
    if (this.closed || this.res.writableEnded) return;
    if (this.full || this.res.writableNeedDrain) this.res.destroy();
    else {
      this.flush();
      this.res.end(`event: error\ndata: ${JSON.stringify(toHttpError(err).body)}\n\n`);
    }
    this.closed = true; // the hub sends it nothing more
    this.left();
  }

  drained(): Promise<void> {
    if (this.closed || !this.full) return Promise.resolve();
    return new Promise((resolve) => {
      const done = () => {
        this.res.off("drain", done);
        this.res.off("close", done);
        resolve();
      };
      this.res.once("drain", done);
      this.res.once("close", done);
    });
  }
}
