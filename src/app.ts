// createApp(): Express 5 with /v1 (REST facade), /graphql (Apollo) and health checks. No listen():
// tests drive it with supertest, server.ts binds it to a port (and calls drain() on shutdown).
import { isUtf8 } from "node:buffer";
import { randomUUID } from "node:crypto";
import express, { type NextFunction, type Request, type Response } from "express";
import { ApolloServer, HeaderMap, type ApolloServerPlugin } from "@apollo/server";
import { expressMiddleware } from "@as-integrations/express5";
import { ApolloServerPluginCacheControlDisabled } from "@apollo/server/plugin/disabled";
import { ApolloServerPluginLandingPageDisabled } from "@apollo/server/plugin/disabled";
import { unwrapResolverError } from "@apollo/server/errors";
import { GraphQLError, type GraphQLFormattedError } from "graphql";
import { createContext } from "./context";
import { currentRecord, startRecord, serverTiming, type RequestRecord } from "./observability/request";
import { observeDatabase, recordRequest } from "./observability/metrics";
import { gaugeReaders } from "./data/stores/gauges";
import { traceRequest } from "./observability/tracing";
import { routeTemplate } from "./observability/route";
import { mountGraphqlIde } from "./graphql/ide";
import { mountDashboard } from "./dashboard";
import { buildSchema } from "./graphql/schema";
import { apiError, boundMessage, errorCodeOf, withHttpStatus } from "./errors";
import { prepareOperations } from "./rest/execute";
import { compiledExecutorGateway } from "./graphql/compiled";
import { stringifyResult } from "./graphql/raw-json";
import { createRestRouter } from "./rest/router";
import { closeStreams, eventStreamHandler } from "./rest/event-stream";
import { GRAPHQL_STREAM_PATH, graphqlStream } from "./graphql/stream";
import { mountOpenApi } from "./openapi";
import { mountDocs } from "./docs";
import { costPlugin, validationRules } from "./graphql/limits";
import { inputGuardPlugin } from "./graphql/input-guard";
import { loadTrustedDocuments, trustedDocumentsPlugin } from "./graphql/trusted-documents";
import { sendError } from "./rest/respond";
import { corsFor, securityHeaders } from "./http/headers";
import { DatabaseFaults, RETRY_AFTER_SECONDS } from "./db/faults";
import { databaseAnswers } from "./data/client";
import type { ReplicaStatus } from "./db/replica-health";
import { createRateLimiter } from "./http/rate-limit";
import { oauthRoutes } from "./oauth/router";
import type { Logger } from "./logger";
import type { Credential } from "./auth/authenticate";
import type { Services } from "./services";

declare global {
  // eslint-disable-next-line @typescript-eslint/no-namespace
  namespace Express {
    interface Request {
      id: string;
      log: Logger;
      /** Database down or too slow → 503/504, logged once per outage (db/faults.ts). */
      faults: DatabaseFaults;
    }
    interface Response {
      /** The request's statements and timings (observability/request.ts), sent as headers. */
      record?: RequestRecord;
    }
  }
}

export interface App {
  app: express.Express;
  /** Shutdown has begun: /readyz answers 503 and every response closes its connection. */
  drain(): void;
  stop(): Promise<void>;
}

const REQUEST_ID = /^[\w.:-]{1,128}$/;

export async function createApp(services: Services): Promise<App> {
  const schema = buildSchema();
  const operations = prepareOperations(schema);
  const app = express();
  app.disable("x-powered-by");
  // No ETags: hashing every JSON body (50 KB for a guests page) costs more than API clients gain.
  app.set("etag", false);
  app.set("query parser", "simple");
  // The client address (unauthenticated rate limits, the OAuth endpoints' limits) from X-Forwarded-For
  // only through proxies the operator named (GCS_TRUST_PROXY); otherwise the socket's peer.
  app.set("trust proxy", services.config.trustProxy);
  const faults = new DatabaseFaults(services.logger, services.config.statementTimeoutMs);
  // Pool, delivery and webhook gauges of /metrics.
  const unobserve = observeDatabase(gaugeReaders(services.db), services.logger);
  let draining = false;

  // The access line's fields are fixed and hold no secret: it skips the redaction every other line
  // pays (a walk of every logged object).
  const accessLog = services.logger.child({}, { redact: [] });
  // req.log is made on first use (most requests log only their access line), by a getter on the
  // prototype Express gives every request: defining one on each request costs a slower object.
  Object.defineProperty(app.request, "log", {
    configurable: true,
    get(this: Request) {
      const log = services.logger.child({ requestId: this.id });
      Object.defineProperty(this, "log", { value: log, configurable: true });
      return log;
    },
  });
  // The statement count and timings go out as headers, so they are taken just before the headers are
  // written: by one method on the prototype Express gives every response. (A closure assigned to each
  // response instead made V8 promote every request's objects to the old generation: docs/performance.md.)
  const writeHead = app.response.writeHead;
  app.response.writeHead = function (this: Response, ...args: unknown[]) {
    const record = this.record;
    if (record && !this.headersSent) {
      this.setHeader("X-Sql-Statements", String(record.statements));
      this.setHeader("Server-Timing", serverTiming(record));
      // While draining, a kept-alive connection would only be cut later: close it after this response.
      if (draining) this.setHeader("Connection", "close");
    }
    return (writeHead as (...a: unknown[]) => Response).apply(this, args);
  } as typeof app.response.writeHead;
  app.use((req, res, next) => {
    const given = req.headers["x-request-id"];
    req.id = typeof given === "string" && REQUEST_ID.test(given) ? given : randomUUID();
    req.faults = faults;
    res.setHeader("X-Request-Id", req.id);
    const startedAt = Date.now();
    const started = process.hrtime.bigint();
    // Taken now: a mounted handler (Apollo on /graphql) may answer while Express holds req.url stripped of its mount path.
    const path = req.path;
    const record = startRecord(req.id);
    res.record = record;
    res.on("finish", () => {
      if (res.statusCode < 500 && record.statements > 0) faults.succeeded(startedAt);
      const ms = Number(process.hrtime.bigint() - started) / 1e6;
      recordRequest(req.method, routeTemplate(req), res.statusCode, ms / 1000, record.statements);
      // The path only: query strings can carry personal data (an e-mail filter).
      // Who read what: the credential's id and kind and its group (never the token), so an auditor
      // can answer "who read this guest's data" from the access log alone.
      const who = res.locals.credential as Credential | undefined;
      accessLog.info(
        {
          requestId: req.id,
          method: req.method,
          path,
          status: res.statusCode,
          ms: Math.round(ms * 10) / 10,
          sql: record.statements,
          ...(res.locals.traceId ? { traceId: res.locals.traceId } : {}),
          ...(who ? { credential: { kind: who.kind, id: who.id }, propertyGroupId: who.propertyGroupId } : {}),
        },
        "request",
      );
    });
    traceRequest(req, res, next);
  });
  app.use(securityHeaders);
  const cors = corsFor(services.config.corsOrigins);
  if (cors) app.use(cors);

  // Before the rate limit: loading the IDE's page and files is no API request.
  if (services.config.graphqlIde) mountGraphqlIde(app);
  if (services.config.dashboard) mountDashboard(app);

  // An address past its failed authentications is refused before the rate limit counts it (each
  // random token would be a key of its own) and before any credential lookup.
  if (services.authFailures) app.use(["/v1", "/graphql", "/mcp"], services.authFailures.middleware);
  // Counted before body parsing and authentication: a refused request costs no work.
  const limiter = createRateLimiter(services.config, services.db, services.logger);
  if (limiter) app.use(["/v1", "/graphql", "/mcp"], limiter.middleware);

  app.get("/healthz", (_req, res) => {
    res.json({ status: "ok" });
  });
  app.get("/readyz", async (req, res) => {
    if (draining) {
      res.set("Retry-After", String(RETRY_AFTER_SECONDS));
      res.status(503).json({ error: "unavailable", detail: "the service is shutting down" });
      return;
    }
    try {
      await databaseAnswers(services.db.primary);
      const replica = services.db.replica;
      res.json(replica ? { status: "ready", replica: replicaReport(replica.status()) } : { status: "ready" });
    } catch (err) {
      if (!faults.errorFor(err, "/readyz")) req.log.warn({ err }, "database not reachable");
      res.set("Retry-After", String(RETRY_AFTER_SECONDS));
      res.status(503).json({ error: "unavailable", detail: "the database is not reachable" });
    }
  });

  // GraphQL subscriptions over Server-Sent Events (graphql/stream.ts), before Apollo's /graphql mount would take the path.
  const graphqlSse = graphqlStream(services, schema);
  app.use(GRAPHQL_STREAM_PATH, jsonBody("1mb"), graphqlSse.handler);

  // Read at start-up, so a missing or malformed allow-list stops the service instead of a request.
  const trusted = services.config.graphqlTrustedDocuments ? [trustedDocumentsPlugin(loadTrustedDocuments(services.config.graphqlTrustedDocuments))] : [];
  const apollo = new ApolloServer({
    // The schema, executed by graphql-jit; results over the response cap answer response_too_large.
    gateway: compiledExecutorGateway(schema, services.config.graphqlMaxResponseBytes),

    introspection: services.config.graphqlIntrospection,
    // The parser stops after this many tokens, so a huge document costs little to refuse.
    parseOptions: { maxTokens: services.config.graphqlMaxTokens },
    validationRules: validationRules(services.config),
    includeStacktraceInErrorResponses: false,
    // Writes a result the JSON read path (graphql/json-plan.ts) wrote already as it is.
    stringifyResult,
    // Apollo's own handler stops the server and re-raises the signal, killing the process mid-drain;
    // server.ts drains instead.
    stopOnTerminationSignals: false,
    plugins: [ApolloServerPluginCacheControlDisabled(), ApolloServerPluginLandingPageDisabled(), inputGuardPlugin(), ...trusted, costPlugin(services.config.graphqlMaxCost), faultStatus, boundErrors],
    // With introspection off (production) errors do not suggest the schema's names either.
    formatError: (formatted, error) =>
      boundFormatted(maskUnexpected(ownValidationCode(formatted, error), error, services.logger, faults), !services.config.graphqlIntrospection),
  });
  await apollo.start();
  app.use(
    "/graphql",
    jsonBody("1mb"),
    expressMiddleware(apollo, {
      context: ({ req, res }) =>
        createContext(services, {
          authorization: req.get("authorization"),
          propertyHeader: req.get("x-property-id"),
          surface: "graphql",
          address: req.ip,
          response: res,
        }).then(
          (context) => ((res.locals.credential = context.credential), context),
          (err) => {
            throw withFaultStatus(withHttpStatus(faults.errorFor(err, "/graphql") ?? err));
          },
        ),
    }),
  );

  // The MCP authorization server: metadata, client registration, consent page, tokens (src/oauth).
  const oauth = oauthRoutes(services);
  app.use(oauth.handler);

  app.use("/v1", jsonBody("256kb"));
  app.use(createRestRouter(services, schema, operations)); // route paths include /v1
  app.get("/v1/events/stream", eventStreamHandler(services)); // Server-Sent Events (src/rest/event-stream.ts)
  // The MCP SDK and what it pulls in are required on the first /mcp request: an instance that serves
  // only REST and GraphQL never loads them.
  let mcp: ((req: Request, res: Response) => Promise<void>) | undefined;
  app.post("/mcp", jsonBody("256kb"), (req, res) => {
    // A 401 from here points the client at the authorization metadata (rest/respond.ts).
    res.locals.resourceMetadataUrl = oauth.resourceMetadataUrl;
    // The SDK answers an empty batch with 202 and no body; JSON-RPC 2.0 says it is an invalid request.
    if (Array.isArray(req.body) && req.body.length === 0) {
      res.status(400).json({ jsonrpc: "2.0", error: { code: -32600, message: "Invalid Request: empty batch" }, id: null });
      return;
    }
    // A batch past GCS_MCP_MAX_BATCH is refused whole, before anything in it runs.
    const maxBatch = services.config.mcpMaxBatch;
    if (Array.isArray(req.body) && req.body.length > maxBatch) {
      const message = `Invalid Request: a batch holds at most ${maxBatch} messages, this one ${req.body.length}; send fewer per batch`;
      res.status(400).json({ jsonrpc: "2.0", error: { code: -32600, message }, id: null });
      return;
    }
    // Every message of a batch is a request to the rate limit (the middleware counted the first).
    if (Array.isArray(req.body) && limiter && !limiter.charge(req, res, req.body.length - 1)) return;
    // eslint-disable-next-line @typescript-eslint/no-require-imports
    mcp ??= (require("./mcp/server") as typeof import("./mcp/server")).mcpHandler(services, schema, operations);
    return mcp(req, res);
  });
  // Stateless streamable HTTP: no SSE stream to GET and no session to DELETE, which the MCP
  // transport spec answers with 405.
  app.route("/mcp").all((req, res) => {
    res.set("Allow", "POST");
    res.status(405).json({ error: "method_not_allowed", detail: `${req.method} is not allowed here; the MCP server takes POST only` });
  });
  mountOpenApi(app); // GET /openapi.json and GET /docs
  mountDocs(app); // GET /llms.txt and the Markdown documents for agents

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

  return {
    app,
    drain: () => {
      draining = true;
      closeStreams();
      graphqlSse.close();
    },
    stop: async () => {
      unobserve();
      await apollo.stop();
      await limiter?.stop();
    },
  };
}

/** The replica's part of /readyz (openapi: readinessBody). */
function replicaReport(s: ReplicaStatus) {
  return { state: s.state, serving_reads: s.state === "streaming", lag_seconds: s.lagSeconds, lag_bytes: s.lagBytes };
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
function jsonBody(limit: string) {
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

/**
 * Apollo files every validation error under GRAPHQL_VALIDATION_FAILED; our own rules' refusals
 * (query_too_complex, unsupported_operation) keep the code they were raised with.
 */
function ownValidationCode(formatted: GraphQLFormattedError, error: unknown): GraphQLFormattedError {
  const original = error instanceof GraphQLError ? error.originalError : undefined;
  const code = original instanceof GraphQLError ? errorCodeOf(original) : undefined;
  return code ? { ...formatted, extensions: { ...formatted.extensions, code } } : formatted;
}

/**
 * GraphQL errors of ours and Apollo's keep their code; a database fault becomes `unavailable` or
 * `query_timeout` (logged once per outage); anything else becomes internal_error.
 */
function maskUnexpected(formatted: GraphQLFormattedError, error: unknown, logger: Logger, faults: DatabaseFaults): GraphQLFormattedError {
  const cause = unwrapResolverError(error);
  if (cause instanceof GraphQLError && (errorCodeOf(cause) || formatted.extensions?.code !== "INTERNAL_SERVER_ERROR")) {
    return formatted;
  }
  // Apollo refuses some requests with an HTTP 4xx and no code (a persisted query whose sha256 does not
  // match its text): the client's mistake, answered as Apollo's other refusals are, and not logged.
  if (cause instanceof GraphQLError && clientStatus(cause)) return { ...formatted, extensions: { ...formatted.extensions, code: "BAD_REQUEST" } };
  const fault = faults.errorFor(cause, "/graphql");
  if (fault) return { message: fault.message, path: formatted.path, extensions: fault.extensions };
  // Apollo wraps what the context function threw ("Context creation failed: …") without its stack.
  const err = cause instanceof GraphQLError && cause.originalError ? cause.originalError : cause;
  logger.error({ err, requestId: currentRecord()?.requestId }, "unhandled GraphQL error");
  return { message: "unexpected server fault; retry later", path: formatted.path, extensions: { code: "internal_error" } };
}

const clientStatus = (err: GraphQLError) => {
  const status = (err.extensions.http as { status?: number } | undefined)?.status;
  return status !== undefined && status >= 400 && status < 500;
};

/** A formatted error's message bounded (errors.ts boundMessage), suggestions hidden when asked. */
function boundFormatted(formatted: GraphQLFormattedError, hideSuggestions: boolean): GraphQLFormattedError {
  const message = boundMessage(formatted.message, { hideSuggestions });
  return message === formatted.message ? formatted : { ...formatted, message };
}

/** At most this many errors in one response (the first ones): each row of a page can fail, and each error costs bytes. */
const MAX_ERRORS = 100;

const boundErrors: ApolloServerPlugin = {
  async requestDidStart() {
    return {
      async willSendResponse({ response }) {
        if (response.body.kind !== "single") return;
        const errors = response.body.singleResult.errors;
        if (errors && errors.length > MAX_ERRORS) response.body.singleResult.errors = errors.slice(0, MAX_ERRORS);
      },
    };
  },
};

/**
 * When nothing ran (no data) because the database was down or too slow, /graphql answers with the
 * same status as REST: 503 with Retry-After, or 504. Partial results keep 200.
 */
const faultStatus: ApolloServerPlugin = {
  async requestDidStart() {
    return {
      async willSendResponse({ response }) {
        if (response.body.kind !== "single" || response.body.singleResult.data != null) return;
        const code = response.body.singleResult.errors?.[0]?.extensions?.code;
        if (code === "unavailable") {
          response.http.status = 503;
          response.http.headers.set("retry-after", String(RETRY_AFTER_SECONDS));
        } else if (code === "query_timeout") {
          response.http.status = 504;
        }
      },
    };
  },
};

/** A 503 thrown before execution (while authenticating) carries Retry-After too. */
function withFaultStatus(err: unknown): unknown {
  const http = err instanceof GraphQLError ? (err.extensions.http as { status?: number; headers?: HeaderMap } | undefined) : undefined;
  if (http?.status === 503) http.headers = new HeaderMap([["retry-after", String(RETRY_AFTER_SECONDS)]]);
  return err;
}
