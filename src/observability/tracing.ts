// OpenTelemetry spans: the HTTP request (server span), each GraphQL operation (graphql-jit runs
// outside graphql-js, so no stock instrumentation sees it) and each SQL statement, text without
// parameter values. Off unless OTEL_EXPORTER_OTLP_ENDPOINT is set: then server.ts calls
// startTracing(), which loads the SDK (tracing-sdk.ts). Until then nothing of OpenTelemetry is
// loaded, and every function here is one `if` on the request path.
import type * as Api from "@opentelemetry/api";
import type { SpanExporter } from "@opentelemetry/sdk-trace-base";
import type { NextFunction, Request, Response } from "express";
import { routeTemplate } from "./route";

interface Active {
  api: typeof Api;
  tracer: Api.Tracer;
  shutdown(): Promise<void>;
}

let active: Active | undefined;

export interface TracingOptions {
  /** The OTLP/HTTP base URL (OTEL_EXPORTER_OTLP_ENDPOINT); spans go to its /v1/traces. */
  endpoint?: string;
  /** Tests pass an InMemorySpanExporter (spans exported as each ends) in place of OTLP. */
  exporter?: SpanExporter;
}

export interface Tracing {
  /** Exports the spans still buffered and unregisters everything. */
  shutdown(): Promise<void>;
}

/** Registers the SDK for this process (W3C traceparent honoured from callers). */
export function startTracing(options: TracingOptions = {}): Tracing {
  if (active) throw new Error("tracing is already started");
  // eslint-disable-next-line @typescript-eslint/no-require-imports
  const sdk = require("./tracing-sdk") as typeof import("./tracing-sdk");
  const started = sdk.startSdk(options.exporter, options.endpoint);
  active = started;
  setPrismaHelper(prismaTracingHelper());
  return {
    shutdown: async () => {
      if (active !== started) return;
      active = undefined;
      setPrismaHelper(undefined);
      await started.shutdown();
    },
  };
}

/** Whether spans are being made (startTracing ran and was not shut down). */
export const tracingActive = (): boolean => active !== undefined;

/**
 * Runs the rest of the request inside a server span, continuing the caller's trace when it sends a
 * `traceparent`. The span is named and labelled with the route template once the response finishes.
 */
export function traceRequest(req: Request, res: Response, next: NextFunction): void {
  if (!active) return next();
  const { api, tracer } = active;
  const parent = api.propagation.extract(api.ROOT_CONTEXT, req.headers);
  const span = tracer.startSpan(
    req.method,
    { kind: api.SpanKind.SERVER, attributes: { "http.request.method": req.method, "url.path": req.path } },
    parent,
  );
  res.locals.traceId = span.spanContext().traceId; // for the request log line
  let ended = false;
  const end = () => {
    if (ended) return;
    ended = true;
    const route = routeTemplate(req);
    span.updateName(`${req.method} ${route}`);
    span.setAttributes({ "http.route": route, "http.response.status_code": res.statusCode });
    if (res.statusCode >= 500) span.setStatus({ code: api.SpanStatusCode.ERROR });
    if (!res.writableFinished) span.setAttribute("error.type", "aborted"); // the client left first
    span.end();
  };
  res.once("finish", end);
  res.once("close", end);
  api.context.with(api.trace.setSpan(parent, span), next);
}

export interface OperationError {
  message: string;
  extensions?: { code?: unknown };
}

/** Runs a GraphQL operation inside a span named `<type> <name>`; its errors become span events. */
export async function traceOperation<T extends { data?: unknown; errors?: readonly OperationError[] }>(
  type: string,
  name: string | undefined,
  run: () => Promise<T>,
): Promise<T> {
  if (!active) return run();
  const { api, tracer } = active;
  const parent = api.context.active();
  const span = tracer.startSpan(
    name ? `${type} ${name}` : type,
    { attributes: { "graphql.operation.type": type, ...(name ? { "graphql.operation.name": name } : {}) } },
    parent,
  );
  try {
    const result = await api.context.with(api.trace.setSpan(parent, span), run);
    // The same code and message the client gets: no values beyond what it sent.
    for (const error of result.errors ?? []) {
      span.recordException({ name: String(error.extensions?.code ?? "GraphQLError"), message: error.message });
    }
    if (result.errors?.length) span.setStatus({ code: api.SpanStatusCode.ERROR, message: result.data ? "partial result" : "no result" });
    return result;
  } catch (err) {
    span.setStatus({ code: api.SpanStatusCode.ERROR, message: (err as Error).name });
    throw err;
  } finally {
    span.end();
  }
}

/**
 * Runs one SQL statement inside a client span carrying its text (placeholders, never the values).
 * Only inside a request: background work (delivery, rate-limit sync, scrapes) makes no orphan traces.
 */
export function traceStatement<T>(text: string, run: () => Promise<T>): Promise<T> {
  if (!active) return run();
  const { api, tracer } = active;
  const parent = api.context.active();
  if (!api.trace.getSpan(parent)) return run();
  const span = tracer.startSpan(statementSpanName(text), { kind: api.SpanKind.CLIENT, attributes: statementAttributes(text) }, parent);
  return api.context.with(api.trace.setSpan(parent, span), run).then(
    (result) => {
      span.end();
      return result;
    },
    (err: unknown) => {
      // The SQLSTATE only: PostgreSQL's messages can quote the values ("invalid input syntax … "x"").
      const code = (err as { code?: unknown } | null)?.code;
      span.setStatus({ code: api.SpanStatusCode.ERROR, message: typeof code === "string" ? code : "error" });
      if (typeof code === "string") span.setAttribute("db.response.status_code", code);
      span.end();
      throw err;
    },
  );
}

function statementAttributes(text: string): Api.Attributes {
  const { operation, table } = describeStatement(text);
  return {
    "db.system.name": "postgresql",
    "db.system": "postgresql", // the attribute's name before semantic conventions 1.26, still read by many backends
    "db.query.text": text,
    ...(operation ? { "db.operation.name": operation } : {}),
    ...(table ? { "db.collection.name": table } : {}),
  };
}

/** `SELECT guest_profiles`: the statement's first keyword and first table, a name of few distinct values. */
export function statementSpanName(text: string): string {
  const { operation, table } = describeStatement(text);
  return [operation ?? "postgresql", table].filter(Boolean).join(" ");
}

const KEYWORD = /^\s*(\w+)/;
const TABLE = /\b(?:FROM|INTO|UPDATE|JOIN)\s+((?:"?\w+"?\.)?"?(\w+)"?)/i;

function describeStatement(text: string): { operation?: string; table?: string } {
  return { operation: KEYWORD.exec(text)?.[1].toUpperCase(), table: TABLE.exec(text)?.[2] };
}

// Prisma (6.19, client engine) runs every statement through a global tracing helper when one is
// installed: its `db_query` calls carry the SQL text, which becomes a statement span like ours.
// Its other spans (serialisation, the engine's steps) are passed through untraced.
interface PrismaSpanOptions {
  name: string;
  attributes?: Record<string, unknown>;
}

function prismaTracingHelper() {
  return {
    isEnabled: () => false, // Prisma's own engine-span machinery stays off; only runInChildSpan is used
    getTraceParent: () => "00-10-10-00",
    dispatchEngineSpans: () => undefined,
    getActiveContext: () => active?.api.context.active(),
    runInChildSpan<R>(options: string | PrismaSpanOptions, callback: () => R): R {
      const name = typeof options === "string" ? options : options.name;
      const text = typeof options === "string" ? undefined : options.attributes?.["db.query.text"];
      if (name !== "db_query" || typeof text !== "string") return callback();
      return traceStatement(text, async () => callback()) as R;
    },
  };
}

function setPrismaHelper(helper: ReturnType<typeof prismaTracingHelper> | undefined): void {
  const global = globalThis as { PRISMA_INSTRUMENTATION?: { helper: unknown } };
  if (helper) global.PRISMA_INSTRUMENTATION = { helper };
  else delete global.PRISMA_INSTRUMENTATION;
}
