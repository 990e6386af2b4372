// /graphql/stream: GraphQL subscriptions over Server-Sent Events (issue 29), in the graphql-sse
// protocol's "distinct connections" mode (one request per subscription, `Accept: text/event-stream`,
// GET or POST; no WebSocket). For dashboards: `subscription { events { … } }` is the event timeline
// as it grows, the same rows and cursors as GET /v1/events/stream, from the same hub: one poll per
// group and instance for both doors (streams/event-hub.ts).
//
// The protocol is written here, not by graphql-sse's server handler, which pulls every result of a
// subscription into an unbounded queue whatever its client reads (issue 40: twenty never-reading
// subscriptions took an instance from 693 MB to 1.7 GB). Here the writer asks for the next result
// only when the response has taken the last one, and the hub stops handing a subscription rows once
// it holds STREAM_BUFFER_BYTES (SubscriptionSink): a slow client costs at most that, and catches up
// by itself when it reads again. A subscription whose credential is revoked, expires or loses its
// scope ends within GCS_STREAM_CREDENTIAL_CHECK_MS (streams/credential-watch.ts): one `next` with
// that error, then `complete`.
//
// Everything /graphql checks is checked here, before the stream opens, and answered as JSON
// `{ errors }` with the error's status: the rate limit and failed-authentication budget (app.ts mounts
// this under /graphql), authentication, X-Property-Id and pinned keys (createContext), trusted
// documents, parse and validation with the same limits (depth, selections, aliases, cost per event),
// storable text, then the per-credential cap on open streams shared with GET /v1/events/stream.
// The field's scope is checked when it subscribes (graphql/schema.ts); that error, and a bad
// cursor, arrive as the stream's one `next` event before `complete`.
import type { Request, Response } from "express";
import {
  GraphQLError,
  TypeInfo,
  ValidationContext,
  getOperationAST,
  getVariableValues,
  parse,
  specifiedRules,
  subscribe,
  validate,
  visit,
  type DocumentNode,
  type ExecutionArgs,
  type ExecutionResult,
  type GraphQLSchema,
} from "graphql";
import { getDirective } from "@graphql-tools/utils";
import { createContext, type RequestContext } from "../context";
import { RETRY_AFTER_SECONDS } from "../db/faults";
import { eventKeyOf, type EventFilter, type EventRow } from "../data/events";
import { ERROR_STATUS, apiError, errorCodeOf, internalError, invalidCursor, invalidRequest, missingScope, untrustedDocument } from "../errors";
import { decodeCursor, encodeCursor, type CursorBinding } from "../pagination/cursor";
import { STREAM_BUFFER_BYTES, type Sink } from "../streams/event-hub";
import { isTimelineKey, type LiveStreams } from "../streams/event-stream";
import type { Services } from "../services";
import { measureOperation, validationRules } from "./limits";
import { fragmentsOf, rootFieldsOf } from "./root-fields";
import { isStorableText, unstorableDetail, unstorablePath } from "./text";
import { documentHash, loadTrustedDocuments } from "./trusted-documents";

export const GRAPHQL_STREAM_PATH = "/graphql/stream";

/** What /graphql/stream adds to a subscription's context: the hub, and the sink the writer reads. */
interface LiveContext extends RequestContext {
  live: { hub: LiveStreams["hub"]; sink: SubscriptionSink; log: Request["log"] };
}

/** The graphql-sse protocol's ping, an SSE comment (its server's interval). */
const PING_MS = 12_000;
const SSE_HEADERS = {
  connection: "keep-alive",
  "cache-control": "no-cache",
  "content-encoding": "none",
  "content-type": "text/event-stream; charset=utf-8",
  "x-accel-buffering": "no",
};
/** One message of the protocol (graphql-sse's print()). */
const message = (event: "next" | "complete", data?: unknown) => `event: ${event}\ndata:${data === undefined ? "" : ` ${JSON.stringify(data)}`}\n\n`;

export interface EventStreamItem {
  cursor: string;
  node: EventRow;
}

/**
 * Subscription.events: the timeline after `after` (else from the end of the log, as the group's poll
 * has it), one item per event with its cursor, bound like GET /v1/events (same filter and property)
 * so the cursors of the two are interchangeable. The rows come from the app's hub into the stream's
 * sink; the items go out as fast as the writer asks for them.
 */
export async function subscribeEvents(args: { filter?: EventFilter | null; after?: string | null }, ctx: RequestContext): Promise<AsyncIterable<EventStreamItem>> {
  const live = (ctx as Partial<LiveContext>).live;
  if (!live) throw apiError("unsupported_operation", `subscriptions are served at ${GRAPHQL_STREAM_PATH}`);
  // The REST stream's filter holds only the keys given: the same object binds the same cursors.
  const filter: EventFilter = {};
  for (const [key, value] of Object.entries(args.filter ?? {})) if (value != null) filter[key as keyof EventFilter] = value;
  if (filter.guestProfileId && filter.masterProfileId) throw invalidRequest("send guest_profile_id or master_profile_id, not both");
  const binding: CursorBinding = { family: "events", propertyGroupId: ctx.scope.propertyGroupId, query: { filter, propertyId: ctx.scope.propertyId } };
  // Without `after`, the end of the log (EventHub.follow).
  const start = args.after ? decodeCursor(args.after, binding, ctx.cursorSecret) : undefined;
  if (start && !isTimelineKey(start)) throw invalidCursor();
  const { hub, sink, log } = live;
  hub
    .follow(ctx.scope, filter, start, sink)
    // The stream completes; the client subscribes again with the last cursor it saw.
    .catch((err) => log.warn({ err }, "event subscription ended by an error; the client resumes with its last cursor"))
    .finally(() => sink.close());
  async function* items(): AsyncGenerator<EventStreamItem> {
    for (let row = await sink.take(); row; row = await sink.take()) yield { cursor: encodeCursor(eventKeyOf(row), binding, ctx.cursorSecret), node: row };
  }
  return items();
}

/** A row's size as the JSON it is sent as, measured once per row (the feed's rows are shared by its streams). */
const rowSizes = new WeakMap<EventRow, number>();
function rowBytes(row: EventRow): number {
  let size = rowSizes.get(row);
  if (size === undefined) rowSizes.set(row, (size = JSON.stringify(row).length));
  return size;
}

/**
 * The rows the hub hands one subscription, until its writer takes them: `full` at
 * STREAM_BUFFER_BYTES (the rows queued here plus what the response holds unwritten).
 */
class SubscriptionSink implements Sink {
  closed = false;
  readonly gone: Promise<void>;
  /** Set when the credential no longer opens the stream: its last `next`. */
  endedBy?: GraphQLError;
  private left!: () => void;
  private readonly queue: EventRow[] = [];
  private queuedBytes = 0;
  /** The writer, waiting for a row. */
  private wake?: () => void;
  /** The hub, waiting for room. */
  private roomWaiters: (() => void)[] = [];

  constructor(private readonly res: Response) {
    this.gone = new Promise((resolve) => (this.left = resolve));
    res.once("close", () => this.close());
  }

  open(): void {}

  send(row: EventRow): void {
    this.queue.push(row);
    this.queuedBytes += rowBytes(row);
  }

  get full(): boolean {
    return this.queuedBytes + this.res.writableLength >= STREAM_BUFFER_BYTES;
  }

  flush(): boolean {
    this.wakeWriter();
    return !this.full;
  }

  drained(): Promise<void> {
    if (this.closed || !this.full) return Promise.resolve();
    return new Promise((resolve) => this.roomWaiters.push(resolve));
  }

  /** The next row for the writer, once there is one; undefined when the stream has ended. */
  async take(): Promise<EventRow | undefined> {
    while (!this.closed && this.queue.length === 0) {
      // Everything handed over is taken: the hub may send more (the response took the last message).
      if (!this.full) this.room();
      await new Promise<void>((resolve) => (this.wake = resolve));
    }
    if (this.closed) return undefined;
    const row = this.queue.shift()!;
    this.queuedBytes -= rowBytes(row);
    if (!this.full) this.room();
    return row;
  }

  /** Ends the stream: the hub stops, the writer completes it. */
  close(): void {
    if (this.closed) return;
    this.closed = true;
    this.queue.length = 0;
    this.left();
    this.wakeWriter();
    this.room();
  }

  private wakeWriter() {
    const wake = this.wake;
    this.wake = undefined;
    wake?.();
  }

  private room() {
    const waiters = this.roomWaiters;
    this.roomWaiters = [];
    for (const resolve of waiters) resolve();
  }
}

export interface GraphqlStream {
  handler(req: Request, res: Response): Promise<void>;
  /** Ends every open subscription (the server drains): clients subscribe again with their last cursor. */
  close(): void;
}

/** The request's GraphQL parameters (the protocol's GET query string or POST JSON body). */
interface RequestParams {
  query?: unknown;
  operationName?: string;
  variables?: Record<string, unknown>;
}

/** A refusal before the stream opens: the status, headers and JSON body to answer with. */
type Refusal = [body: string, init: { status: number; headers: Record<string, string> }];

/** A subscription ready to run, and what its stream holds while open. */
interface Prepared {
  args: ExecutionArgs;
  ctx: RequestContext;
  sink: SubscriptionSink;
  /** The subscription field's scope (its credential must keep it). */
  scope: string | undefined;
  release: () => void;
}

export function graphqlStream(services: Services, schema: GraphQLSchema, live: LiveStreams): GraphqlStream {
  const config = services.config;
  const rules = [...specifiedRules, ...validationRules(config, { subscriptions: true })];
  const trusted = config.graphqlTrustedDocuments ? loadTrustedDocuments(config.graphqlTrustedDocuments) : undefined;
  /** The open streams' sinks: closing one completes its stream (the server drains). */
  const open = new Set<SubscriptionSink>();

  /** A refusal before the stream opens: `{ errors }` with the error's status, as /graphql answers. */
  function refuse(req: Request, err: unknown): Refusal {
    const known = req.faults?.errorFor(err, GRAPHQL_STREAM_PATH) ?? err;
    let errors: GraphQLError[];
    let status = 400;
    if (Array.isArray(known)) errors = known;
    else if (known instanceof GraphQLError && errorCodeOf(known)) {
      errors = [known];
      status = ERROR_STATUS[errorCodeOf(known)!];
    } else if (known instanceof GraphQLError) errors = [known];
    else {
      req.log.error({ err, requestId: req.id }, "unhandled error");
      errors = [internalError()];
      status = 500;
    }
    const headers: Record<string, string> = { "content-type": "application/json; charset=utf-8" };
    if (status === 401) headers["www-authenticate"] = 'Bearer realm="guest-context"'; // as http/respond.ts
    if (status === 503) headers["retry-after"] = String(RETRY_AFTER_SECONDS);
    return [JSON.stringify({ errors: errors.map((e) => e.toJSON()) }), { status, headers }];
  }

  /** Errors found while subscribing: the API's own kept, a database fault named, anything else masked and logged (as /graphql does). */
  function masked(req: Request, result: ExecutionResult): ExecutionResult {
    if (!result.errors) return result;
    const errors = result.errors.map((e) => {
      const cause = e.originalError ?? e;
      if (cause instanceof GraphQLError && errorCodeOf(cause)) return e;
      const fault = req.faults?.errorFor(cause, GRAPHQL_STREAM_PATH);
      if (fault) return new GraphQLError(fault.message, { path: e.path, extensions: fault.extensions });
      req.log.error({ err: cause, requestId: req.id }, "unhandled GraphQL error");
      return new GraphQLError("unexpected server fault; retry later", { path: e.path, extensions: { code: "internal_error" } });
    });
    return { ...result, errors };
  }

  const withCode = (errors: readonly GraphQLError[], code: string) =>
    errors.map((e) => (e.extensions?.code ? e : new GraphQLError(e.message, { nodes: e.nodes, source: e.source, positions: e.positions, extensions: { ...e.extensions, code } })));

  async function prepare(req: Request, res: Response, params: RequestParams): Promise<Refusal | Prepared> {
    let ctx: RequestContext;
    try {
      // No `response`: like GET /v1/events/stream, a stream holds no credential concurrency slot.
      ctx = await createContext(services, {
        authorization: req.get("authorization"),
        propertyHeader: req.get("x-property-id"),
        surface: "graphql",
        address: req.ip,
      });
      res.locals.credential = ctx.credential;
    } catch (err) {
      return refuse(req, err);
    }
    if (typeof params.query !== "string") return refuse(req, invalidRequest("query must be a string"));
    if (trusted && !trusted.has(documentHash(params.query))) return refuse(req, untrustedDocument());
    let document: DocumentNode;
    try {
      document = parse(params.query, { maxTokens: config.graphqlMaxTokens });
    } catch (err) {
      return refuse(req, withCode([err as GraphQLError], "GRAPHQL_PARSE_FAILED"));
    }
    let invalid: readonly GraphQLError[];
    try {
      invalid = validate(schema, document, rules);
    } catch (err) {
      // graphql-js 16's SingleFieldSubscriptionsRule throws, not reports, on `@include(if: $v)` at
      // the root (it collects the fields without variables).
      if (!(err instanceof GraphQLError)) throw err;
      invalid = [err];
    }
    if (invalid.length) return refuse(req, withCode(invalid, "GRAPHQL_VALIDATION_FAILED"));
    const operation = getOperationAST(document, params.operationName);
    if (!operation) return refuse(req, invalidRequest("name the operation to run (operationName): the document holds several, or none"));
    if (operation.operation !== "subscription") {
      return refuse(req, apiError("unsupported_operation", `${GRAPHQL_STREAM_PATH} serves subscriptions; send ${operation.operation}s to POST /graphql`));
    }
    const variables = params.variables ?? {};
    let coerced: Record<string, unknown> = {};
    if (operation.variableDefinitions?.length) {
      const values = getVariableValues(schema, operation.variableDefinitions, variables, { maxErrors: 1 });
      if (values.errors) return refuse(req, withCode(values.errors, "BAD_USER_INPUT"));
      coerced = values.coerced;
    }
    // The field's scope, answered 403 before the stream opens (the schema checks it again) and kept
    // by the credential watch. Validation leaves at most one root field, reached through fragments too.
    const subscriptionType = schema.getSubscriptionType()!;
    const [fieldNodes] = rootFieldsOf(schema, fragmentsOf(document), operation, subscriptionType, coerced).values();
    if (!fieldNodes) return refuse(req, invalidRequest("the subscription selects no field (@skip or @include left none)"));
    const field = subscriptionType.getFields()[fieldNodes[0].name.value];
    // As graphql/schema.ts requiredScope reads it (not imported: schema.ts loads the resolvers, which load this file).
    const scope = field && (getDirective(schema, field, "requiresScope")?.[0]?.scope as string | undefined);
    if (scope && !ctx.credential.scopes.has(scope)) return refuse(req, missingScope(scope));
    const at = unstorablePath(variables, "");
    if (at !== undefined) return refuse(req, invalidRequest(`variable ${unstorableDetail(`$${at}`)}`));
    let literal: string | undefined;
    visit(document, {
      StringValue(node) {
        if (!literal && !isStorableText(node.value)) literal = unstorableDetail("a string literal");
      },
    });
    if (literal) return refuse(req, invalidRequest(literal));
    // Priced with the variables' values, as costPlugin does for /graphql.
    if (operation.variableDefinitions?.length) {
      const m = measureOperation(new ValidationContext(schema, document, new TypeInfo(schema), () => {}), operation, config.graphqlMaxCost, coerced);
      if (m.cost > config.graphqlMaxCost) {
        return refuse(req, apiError("query_too_complex", `the operation costs ${Math.ceil(m.cost)} per event; at most ${config.graphqlMaxCost} is allowed`));
      }
    }
    let release: () => void;
    try {
      release = live.holdSlot(ctx);
    } catch (err) {
      return refuse(req, err);
    }
    const sink = new SubscriptionSink(res);
    const contextValue: LiveContext = Object.assign(Object.create(ctx) as RequestContext, { live: { hub: live.hub, sink, log: req.log } });
    const args: ExecutionArgs = { schema, document, operationName: params.operationName, variableValues: variables, contextValue };
    return { args, ctx, sink, scope, release };
  }

  /** The protocol's parameters, or a refusal (400 invalid_request). */
  function paramsOf(req: Request): RequestParams | Refusal {
    let params: Record<string, unknown>;
    if (req.method === "GET") {
      const search = new URL(req.originalUrl, "http://localhost").searchParams;
      params = { query: search.get("query") ?? undefined, operationName: search.get("operationName") ?? undefined };
      for (const key of ["variables", "extensions"]) {
        const text = search.get(key);
        if (text === null) continue;
        try {
          params[key] = JSON.parse(text);
        } catch {
          return refuse(req, invalidRequest(`${key} must be JSON`));
        }
      }
    } else {
      // Parsed by the mount's jsonBody, which answers a body of another type 415 itself.
      if (typeof req.body !== "object" || req.body === null || Array.isArray(req.body)) return refuse(req, invalidRequest("the body must be a JSON object"));
      params = req.body as Record<string, unknown>;
    }
    const { query, operationName, variables, extensions } = params;
    if (query == null) return refuse(req, invalidRequest("query is missing"));
    if (operationName != null && typeof operationName !== "string") return refuse(req, invalidRequest("operationName must be a string"));
    for (const [key, value] of [["variables", variables], ["extensions", extensions]] as const) {
      if (value != null && (typeof value !== "object" || Array.isArray(value))) return refuse(req, invalidRequest(`${key} must be an object`));
    }
    return { query, operationName: operationName ?? undefined, variables: (variables ?? undefined) as Record<string, unknown> | undefined };
  }

  /**
   * Writes the subscription's results as the protocol's `next` messages, asking for the next result
   * only once the response has taken the last one, then `complete`. Ends early, with one `next`
   * holding the error, when its credential no longer opens it.
   */
  async function run(req: Request, res: Response, p: Prepared) {
    const { sink } = p;
    open.add(sink);
    const unwatch = live.credentials.watch(req.get("authorization"), p.ctx.credential, p.scope, (err) => {
      sink.endedBy = err;
      // A client that is not reading would not see it behind what it has not read: closed at once,
      // which also frees a writer waiting in writable(res) for a drain that would never come.
      if (sink.full || res.writableNeedDrain) res.destroy();
      sink.close();
    });
    let ping: NodeJS.Timeout | undefined;
    let result: Awaited<ReturnType<typeof subscribe>> | undefined;
    try {
      result = await subscribe(p.args);
      res.writeHead(200, SSE_HEADERS);
      // An empty message first: some browsers wait for a body before they report the stream open.
      res.write(":\n\n");
      if (!isAsyncGenerator(result)) {
        // Refused while subscribing (a bad cursor): its errors, then complete.
        res.end(message("next", masked(req, result)) + message("complete"));
        return;
      }
      ping = setInterval(() => !sink.full && res.write(":\n\n"), PING_MS);
      ping.unref();
      for (let step = await result.next(); !step.done && !sink.closed; step = await result.next()) {
        if (!res.write(message("next", masked(req, step.value)))) await writable(res);
      }
      if (res.destroyed) return;
      if (sink.endedBy) res.write(message("next", { errors: [sink.endedBy.toJSON()] }));
      res.end(message("complete"));
    } catch (err) {
      if (!res.headersSent) {
        const [body, init] = refuse(req, err);
        res.writeHead(init.status, init.headers).end(body);
      } else {
        req.log.warn({ err }, "event subscription ended by an error; the client resumes with its last cursor");
        res.end();
      }
    } finally {
      clearInterval(ping);
      unwatch();
      p.release();
      open.delete(sink);
      sink.close();
      if (isAsyncGenerator(result)) await result.return(undefined);
    }
  }

  return {
    async handler(req, res) {
      // Only the distinct connections mode: single connection mode keeps reservations in memory on
      // one instance (PUT), which a client behind a load balancer cannot rely on.
      if (req.method !== "GET" && req.method !== "POST") {
        res.set("Allow", "GET, POST");
        res.status(405).json({ errors: [{ message: `${req.method} is not allowed here; subscribe with GET or POST`, extensions: { code: "method_not_allowed" } }] });
        return;
      }
      if (req.get("accept") !== "text/event-stream") {
        res.status(406).json({ errors: [{ message: "send Accept: text/event-stream (graphql-sse, distinct connections mode)", extensions: { code: "invalid_request" } }] });
        return;
      }
      const params = paramsOf(req);
      const prepared = Array.isArray(params) ? params : await prepare(req, res, params);
      if (Array.isArray(prepared)) {
        const [body, init] = prepared;
        res.writeHead(init.status, init.headers).end(body);
        return;
      }
      await run(req, res, prepared);
    },
    close() {
      for (const sink of open) sink.close();
    },
  };
}

/** Resolves when the response can take more, or has closed. */
function writable(res: Response): Promise<void> {
  if (res.destroyed || !res.writableNeedDrain) return Promise.resolve();
  return new Promise((resolve) => {
    const done = () => {
      res.off("drain", done);
      res.off("close", done);
      resolve();
    };
    res.once("drain", done);
    res.once("close", done);
  });
}

function isAsyncGenerator(value: unknown): value is AsyncGenerator<ExecutionResult> {
  return typeof value === "object" && value !== null && typeof (value as AsyncGenerator).next === "function" && typeof (value as AsyncGenerator).return === "function";
}
