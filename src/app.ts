// createApp(): Express 5 with /v1 (REST facade), /graphql (Apollo) and health checks. No listen():
// tests drive it with supertest, server.ts binds it to a port.
import { randomUUID } from "node:crypto";
import express, { type NextFunction, type Request, type Response } from "express";
import { ApolloServer } from "@apollo/server";
import { expressMiddleware } from "@as-integrations/express5";
import { ApolloServerPluginCacheControlDisabled } from "@apollo/server/plugin/disabled";
import { ApolloServerPluginLandingPageDisabled } from "@apollo/server/plugin/disabled";
import { unwrapResolverError } from "@apollo/server/errors";
import { GraphQLError, type GraphQLFormattedError } from "graphql";
import { createContext } from "./context";
import { startCounting } from "./db/sql-count";
import { buildSchema } from "./graphql/schema";
import { apiError, errorCodeOf, withHttpStatus } from "./graphql/errors";
import { prepareOperations } from "./rest/execute";
import { compiledExecutorGateway } from "./graphql/compiled";
import { createRestRouter } from "./rest/router";
import { mountOpenApi } from "./openapi";
import { validationRules } from "./graphql/limits";
import { sendError } from "./rest/respond";
import { createRateLimiter } from "./http/rate-limit";
import type { Logger } from "./logger";
import type { Services } from "./services";

declare global {
  // eslint-disable-next-line @typescript-eslint/no-namespace
  namespace Express {
    interface Request {
      id: string;
      log: Logger;
    }
  }
}

export interface App {
  app: express.Express;
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

  app.use((req, res, next) => {
    const given = req.get("x-request-id");
    req.id = given && REQUEST_ID.test(given) ? given : randomUUID();
    req.log = services.logger.child({ requestId: req.id });
    res.set("X-Request-Id", req.id);
    const started = process.hrtime.bigint();
    const sql = startCounting();
    // The statement count goes out as a header, so it is taken just before the headers are written.
    const writeHead = res.writeHead;
    res.writeHead = function (this: Response, ...args: unknown[]) {
      if (!res.headersSent) res.setHeader("X-Sql-Statements", String(sql.statements()));
      return (writeHead as (...a: unknown[]) => Response).apply(this, args);
    } as typeof res.writeHead;
    res.on("finish", () => {
      const ms = Number(process.hrtime.bigint() - started) / 1e6;
      // The path only: query strings can carry personal data (an e-mail filter).
      req.log.info(
        { method: req.method, path: req.path, status: res.statusCode, ms: Math.round(ms * 10) / 10, sql: sql.statements() },
        "request",
      );
    });
    next();
  });

  // Counted before body parsing and authentication: a refused request costs no work.
  const limiter = createRateLimiter(services.config, services.db, services.logger);
  if (limiter) app.use(["/v1", "/graphql", "/mcp"], limiter.middleware);

  app.get("/healthz", (_req, res) => {
    res.json({ status: "ok" });
  });
  app.get("/readyz", async (req, res) => {
    try {
      await services.db.primary.$queryRaw`SELECT 1`;
      res.json({ status: "ready" });
    } catch (err) {
      req.log.warn({ err }, "database not reachable");
      res.status(503).json({ error: "unavailable", detail: "the database is not reachable" });
    }
  });

  const apollo = new ApolloServer({
    gateway: compiledExecutorGateway(schema), // the schema, executed by graphql-jit

    introspection: services.config.graphqlIntrospection,
    validationRules: validationRules(services.config),
    includeStacktraceInErrorResponses: false,
    plugins: [ApolloServerPluginCacheControlDisabled(), ApolloServerPluginLandingPageDisabled()],
    formatError: (formatted, error) => maskUnexpected(formatted, error, services.logger),
  });
  await apollo.start();
  app.use(
    "/graphql",
    express.json({ limit: "1mb" }),
    expressMiddleware(apollo, {
      context: ({ req, res }) =>
        createContext(services, {
          authorization: req.get("authorization"),
          propertyHeader: req.get("x-property-id"),
          surface: "graphql",
          response: res,
        }).catch((err) => {
          throw withHttpStatus(err);
        }),
    }),
  );

  app.use("/v1", express.json({ limit: "256kb" }));
  app.use(createRestRouter(services, schema, operations)); // route paths include /v1
  // The MCP SDK and what it pulls in are required on the first /mcp request: an instance that serves
  // only REST and GraphQL starts about 11 MB smaller without them.
  let mcp: ((req: Request, res: Response) => Promise<void>) | undefined;
  app.post("/mcp", express.json({ limit: "256kb" }), (req, res) => {
    // eslint-disable-next-line @typescript-eslint/no-require-imports
    mcp ??= (require("./mcp/server") as typeof import("./mcp/server")).mcpHandler(services, schema, operations);
    return mcp(req, res);
  });
  mountOpenApi(app); // GET /openapi.json and GET /docs

  app.use((req, res) => {
    res.status(404).json({ error: "not_found", detail: `no route ${req.method} ${req.path}` });
  });
  // Body parsing failures and anything that escaped a handler.
  app.use((err: Error & { type?: string; status?: number }, req: Request, res: Response, _next: NextFunction) => {
    if (err.type === "entity.parse.failed") return sendError(req, res, apiError("invalid_request", "request body is not valid JSON"));
    if (err.type === "entity.too.large") return sendError(req, res, apiError("payload_too_large", "request body is too large"));
    if (err.status === 400) return sendError(req, res, apiError("invalid_request", "malformed request"));
    sendError(req, res, err);
  });

  return {
    app,
    stop: async () => {
      await apollo.stop();
      await limiter?.stop();
    },
  };
}

/** GraphQL errors of ours and Apollo's keep their code; anything else becomes internal_error. */
function maskUnexpected(formatted: GraphQLFormattedError, error: unknown, logger: Logger): GraphQLFormattedError {
  const cause = unwrapResolverError(error);
  if (cause instanceof GraphQLError && (errorCodeOf(cause) || formatted.extensions?.code !== "INTERNAL_SERVER_ERROR")) {
    return formatted;
  }
  logger.error({ err: cause }, "unhandled GraphQL error");
  return { message: "unexpected server fault; retry later", path: formatted.path, extensions: { code: "internal_error" } };
}
