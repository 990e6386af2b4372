// /graphql/stream: GraphQL subscriptions over Server-Sent Events (issue 29), with the graphql-sse
// package in its "distinct connections" mode (one request per subscription, `Accept:
// text/event-stream`, GET or POST; no WebSocket). For dashboards: `subscription { events { … } }`
// is the event timeline as it grows, the same rows and cursors as GET /v1/events/stream, read by the
// same poll (streams/event-stream.ts followTimeline).
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
  Kind,
  TypeInfo,
  ValidationContext,
  getOperationAST,
  getVariableValues,
  parse,
  specifiedRules,
  validate,
  visit,
  type DocumentNode,
  type ExecutionResult,
  type GraphQLSchema,
} from "graphql";
import { getDirective } from "@graphql-tools/utils";
import { createHandler } from "graphql-sse/lib/use/express";
import type { OperationArgs, RequestParams, Response as SseResponse } from "graphql-sse";
import { createContext, type RequestContext } from "../context";
import { RETRY_AFTER_SECONDS } from "../db/faults";
import { eventKeyOf, type EventFilter, type EventRow } from "../data/events";
import { eventLogEnd } from "../data/webhooks";
import { ERROR_STATUS, apiError, errorCodeOf, internalError, invalidRequest, missingScope, untrustedDocument } from "../errors";
import { decodeCursor, encodeCursor, type CursorBinding, type CursorKey } from "../pagination/cursor";
import { followTimeline, holdStreamSlot } from "../streams/event-stream";
import type { Services } from "../services";
import { measureOperation, validationRules } from "./limits";
import { isStorableText, unstorableDetail, unstorablePath } from "./text";
import { documentHash, loadTrustedDocuments } from "./trusted-documents";

export const GRAPHQL_STREAM_PATH = "/graphql/stream";

/** What /graphql/stream adds to a subscription's context: how to follow the log. */
interface LiveContext extends RequestContext {
  live: { pollMs: number; logEnd(): Promise<CursorKey>; log: Request["log"] };
}

export interface EventStreamItem {
  cursor: string;
  node: EventRow;
}

/**
 * Subscription.events: the timeline after `after` (else from the end of the log now), one item per
 * event with its cursor, bound like GET /v1/events (same filter and property) so the cursors of
 * the two are interchangeable.
 */
export async function subscribeEvents(args: { filter?: EventFilter | null; after?: string | null }, ctx: RequestContext): Promise<AsyncIterable<EventStreamItem>> {
  const live = (ctx as Partial<LiveContext>).live;
  if (!live) throw apiError("unsupported_operation", `subscriptions are served at ${GRAPHQL_STREAM_PATH}`);
  // The REST stream's filter holds only the keys given: the same object binds the same cursors.
  const filter: EventFilter = {};
  for (const [key, value] of Object.entries(args.filter ?? {})) if (value != null) filter[key as keyof EventFilter] = value;
  if (filter.guestProfileId && filter.masterProfileId) throw invalidRequest("send guest_profile_id or master_profile_id, not both");
  const binding: CursorBinding = { family: "events", propertyGroupId: ctx.scope.propertyGroupId, query: { filter, propertyId: ctx.scope.propertyId } };
  const start = args.after ? decodeCursor(args.after, binding, ctx.cursorSecret) : await live.logEnd();
  const stop = new AbortController();
  async function* items(): AsyncGenerator<EventStreamItem> {
    try {
      for await (const rows of followTimeline(ctx, filter, start, live!.pollMs, stop.signal)) {
        for (const row of rows) yield { cursor: encodeCursor(eventKeyOf(row), binding, ctx.cursorSecret), node: row };
      }
    } catch (err) {
      // The stream completes; the client subscribes again with the last cursor it saw.
      live!.log.warn({ err }, "event subscription ended by an error; the client resumes with its last cursor");
    }
  }
  const source = items();
  // return() must end the stream even while it waits for the next poll, when the generator itself
  // would only see it at its next yield.
  return {
    [Symbol.asyncIterator]() {
      return this;
    },
    next: () => source.next(),
    return: (value?: unknown) => {
      stop.abort();
      return source.return(value as undefined);
    },
    throw: (err?: unknown) => {
      stop.abort();
      return source.throw(err);
    },
  } as AsyncGenerator<EventStreamItem>;
}

export interface GraphqlStream {
  handler(req: Request, res: Response): Promise<void>;
  /** Ends every open subscription (the server drains): clients subscribe again with their last cursor. */
  close(): void;
}

export function graphqlStream(services: Services, schema: GraphQLSchema): GraphqlStream {
  const config = services.config;
  const rules = [...specifiedRules, ...validationRules(config, { subscriptions: true })];
  const trusted = config.graphqlTrustedDocuments ? loadTrustedDocuments(config.graphqlTrustedDocuments) : undefined;
  const open = new Set<AsyncGenerator<unknown>>();
  const releases = new WeakMap<object, () => void>();

  /** A refusal before the stream opens: `{ errors }` with the error's status, as /graphql answers. */
  function refuse(req: Request, err: unknown): SseResponse {
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
    return [JSON.stringify({ errors: errors.map((e) => e.toJSON()) }), { status, statusText: "", headers }];
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

  async function prepare(req: Request, res: Response, params: RequestParams): Promise<SseResponse | OperationArgs<Record<PropertyKey, unknown>>> {
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
    const invalid = validate(schema, document, rules);
    if (invalid.length) return refuse(req, withCode(invalid, "GRAPHQL_VALIDATION_FAILED"));
    const operation = getOperationAST(document, params.operationName);
    if (!operation) return refuse(req, invalidRequest("name the operation to run (operationName): the document holds several, or none"));
    if (operation.operation !== "subscription") {
      return refuse(req, apiError("unsupported_operation", `${GRAPHQL_STREAM_PATH} serves subscriptions; send ${operation.operation}s to POST /graphql`));
    }
    // The fields' scopes, answered 403 before the stream opens (the schema checks them again).
    for (const selection of operation.selectionSet.selections) {
      if (selection.kind !== Kind.FIELD) continue;
      const field = schema.getSubscriptionType()?.getFields()[selection.name.value];
      // As graphql/schema.ts requiredScope reads it (not imported: schema.ts loads the resolvers, which load this file).
      const scope = field && (getDirective(schema, field, "requiresScope")?.[0]?.scope as string | undefined);
      if (scope && !ctx.credential.scopes.has(scope)) return refuse(req, missingScope(scope));
    }
    const variables = params.variables ?? {};
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
      const coerced = getVariableValues(schema, operation.variableDefinitions, variables, { maxErrors: 1 });
      if (coerced.errors) return refuse(req, withCode(coerced.errors, "BAD_USER_INPUT"));
      const m = measureOperation(new ValidationContext(schema, document, new TypeInfo(schema), () => {}), operation, config.graphqlMaxCost, coerced.coerced);
      if (m.cost > config.graphqlMaxCost) {
        return refuse(req, apiError("query_too_complex", `the operation costs ${Math.ceil(m.cost)} per event; at most ${config.graphqlMaxCost} is allowed`));
      }
    }
    let release: () => void;
    try {
      release = holdStreamSlot(ctx, config.stream.maxPerCredential);
    } catch (err) {
      return refuse(req, err);
    }
    const db = services.db.reader;
    const contextValue: LiveContext = Object.assign(Object.create(ctx) as RequestContext, {
      live: {
        pollMs: config.stream.pollMs,
        log: req.log,
        logEnd: async (): Promise<CursorKey> => {
          const end = await eventLogEnd(db, ctx.scope.propertyGroupId);
          return [end.txid, end.seq];
        },
      },
    });
    releases.set(contextValue, release);
    return { schema, document, operationName: params.operationName, variableValues: variables, contextValue: contextValue as unknown as Record<PropertyKey, unknown> };
  }

  const sse = createHandler({
    schema,
    // Validated in onSubscribe with the service's rules.
    validate: () => [],
    onSubscribe: (req, params) => {
      const { raw, context } = req as unknown as { raw: Request; context: { res: Response } };
      return prepare(raw, context.res, params);
    },
    onOperation: (ctx, req, _args, result) => {
      const release = releases.get(ctx as object) ?? (() => {});
      if (!isAsyncGenerator(result)) {
        release();
        return masked(req.raw as Request, result as ExecutionResult);
      }
      // The slot is held while the stream is open: released however it ends.
      const stream: AsyncGenerator<ExecutionResult> = {
        [Symbol.asyncIterator]() {
          return this;
        },
        next: async () => {
          const step = await result.next();
          if (step.done) {
            release();
            open.delete(stream);
          }
          return step;
        },
        return: async (value) => {
          release();
          open.delete(stream);
          return result.return(value);
        },
        throw: async (err) => {
          release();
          open.delete(stream);
          return result.throw(err);
        },
      } as AsyncGenerator<ExecutionResult>;
      open.add(stream);
      return stream;
    },
  });

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
      res.setHeader("X-Accel-Buffering", "no");
      await sse(req, res);
    },
    close() {
      for (const stream of open) void stream.return(undefined);
    },
  };
}

function isAsyncGenerator(value: unknown): value is AsyncGenerator<ExecutionResult> {
  return typeof value === "object" && value !== null && typeof (value as AsyncGenerator).next === "function" && typeof (value as AsyncGenerator).return === "function";
}
