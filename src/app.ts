// createApp(): Express 5 with every door mounted, one named mount each, in the order they match. No
// listen(): tests drive it with supertest, server.ts binds it to a port (and calls drain() on shutdown).
import type { RequestListener } from "node:http";
import express, { type Request, type Response } from "express";
import type { GraphQLSchema } from "graphql";
import { observeDatabase } from "./observability/metrics";
import { gaugeReaders } from "./data/stores/gauges";
import { mountGraphqlIde, mountGraphqlIdeOff } from "./graphql/ide";
import { mountDashboard } from "./dashboard";
import { buildSchema } from "./graphql/schema";
import { prepareOperations, type PreparedOperations } from "./api/execute";
import { createRestRouter } from "./rest/router";
import { eventStreamHandler, liveStreams, type LiveStreams } from "./streams/event-stream";
import { mountOpenApi } from "./openapi";
import { mountDocs } from "./docs";
import { corsFor, securityHeaders } from "./http/headers";
import { DatabaseFaults, RETRY_AFTER_SECONDS } from "./db/faults";
import { databaseAnswers } from "./data/client";
import type { ReplicaStatus } from "./db/replica-health";
import { createRateLimiter, type RateLimiter } from "./http/rate-limit";
import { oauthRoutes } from "./oauth/router";
import type { Logger } from "./logger";
import type { RequestRecord } from "./observability/request";
import type { Services } from "./services";
import { jsonBody, mountFallbacks } from "./app/body";
import { mountGraphql } from "./app/graphql";
import { answerHealthzFirst, mountRequestRecord, requestFinisher } from "./app/requests";

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
  /** The process's request listener: `app`, with GET /healthz answered before it (app/requests.ts). */
  handler: RequestListener;
  /** Shutdown has begun: /readyz answers 503 and every response closes its connection. */
  drain(): void;
  stop(): Promise<void>;
}

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

  const finish = requestFinisher(services);
  const isDraining = () => draining;
  mountRequestRecord(app, finish, services, faults, isDraining);
  mountHeaders(app, services);
  mountPages(app, services);
  const limiter = mountLimits(app, services);
  mountHealth(app, services, faults, isDraining);
  // One event hub and one check of open streams' credentials for both doors.
  const live = liveStreams(services);
  const graphql = await mountGraphql(app, services, schema, faults, live);
  const oauth = mountOauth(app, services);
  mountRest(app, services, schema, operations, live);
  mountMcp(app, services, schema, operations, oauth.resourceMetadataUrl, limiter);
  mountReference(app);
  mountFallbacks(app);

  return {
    app,
    handler: answerHealthzFirst(app, finish, { cors: services.config.corsOrigins.length > 0, draining: isDraining }),
    drain: () => {
      draining = true;
      live.closeStreams();
      graphql.closeStreams();
    },
    stop: async () => {
      unobserve();
      live.stop();
      await graphql.stop();
      await limiter?.stop();
    },
  };
}

function mountHeaders(app: express.Express, services: Services) {
  app.use(securityHeaders);
  const cors = corsFor(services.config.corsOrigins);
  if (cors) app.use(cors);
}

/** The GraphQL IDE (or the page saying it is off) and the dashboard: before the rate limit, loading a page is no API request. */
function mountPages(app: express.Express, services: Services) {
  if (services.config.graphqlIde) mountGraphqlIde(app);
  else mountGraphqlIdeOff(app);
  if (services.config.dashboard) mountDashboard(app);
}

function mountLimits(app: express.Express, services: Services): RateLimiter | undefined {
  // An address past its failed authentications is refused before the rate limit counts it (each
  // random token would be a key of its own) and before any credential lookup.
  if (services.authFailures) app.use(["/v1", "/graphql", "/mcp"], services.authFailures.middleware);
  // Counted before body parsing and authentication: a refused request costs no work.
  const limiter = createRateLimiter(services.config, services.db, services.logger);
  if (limiter) app.use(["/v1", "/graphql", "/mcp"], limiter.middleware);
  return limiter;
}

function mountHealth(app: express.Express, services: Services, faults: DatabaseFaults, draining: () => boolean) {
  // Answered before Express (app/requests.ts answerHealthzFirst) unless a trace or CORS needs the stack.
  app.get("/healthz", (_req, res) => {
    res.json({ status: "ok" });
  });
  app.get("/readyz", async (req, res) => {
    if (draining()) {
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
}

/** The replica's part of /readyz (openapi: readinessBody). */
function replicaReport(s: ReplicaStatus) {
  return { state: s.state, serving_reads: s.state === "streaming", lag_seconds: s.lagSeconds, lag_bytes: s.lagBytes };
}

/** The MCP authorization server: metadata, client registration, consent page, tokens (src/oauth). */
function mountOauth(app: express.Express, services: Services) {
  const oauth = oauthRoutes(services);
  app.use(oauth.handler);
  return oauth;
}

function mountRest(app: express.Express, services: Services, schema: GraphQLSchema, operations: PreparedOperations, live: LiveStreams) {
  app.use("/v1", jsonBody("256kb"));
  app.use(createRestRouter(services, schema, operations)); // route paths include /v1
  app.get("/v1/events/stream", eventStreamHandler(services, live)); // Server-Sent Events (src/streams/event-stream.ts)
}

function mountMcp(
  app: express.Express,
  services: Services,
  schema: GraphQLSchema,
  operations: PreparedOperations,
  resourceMetadataUrl: string,
  limiter: RateLimiter | undefined,
) {
  // The MCP SDK and what it pulls in are required on the first /mcp request: an instance that serves
  // only REST and GraphQL never loads them.
  let mcp: ((req: Request, res: Response) => Promise<void>) | undefined;
  app.post("/mcp", jsonBody("256kb"), (req, res) => {
    // A 401 from here points the client at the authorization metadata (http/respond.ts).
    res.locals.resourceMetadataUrl = resourceMetadataUrl;
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
}

/** The generated views of the catalogue: the OpenAPI document and its reference page, the docs for agents. */
function mountReference(app: express.Express) {
  mountOpenApi(app); // GET /openapi.json and GET /docs
  mountDocs(app); // GET /llms.txt and the Markdown documents for agents
}
