// Runs the service: opens the database (embedded PGlite when no DATABASE_URL), builds the app,
// listens, and drains on stop() (SIGINT/SIGTERM in cli/main.ts).
import { createServer, type RequestListener, type Server } from "node:http";
import type { Socket } from "node:net";
import { ipKeyGenerator } from "express-rate-limit";
import type { Config } from "./config";
import { createApp } from "./app";
import { openDatabase } from "./db/database";
import { redactUrl } from "./redact-url";
import { chooseLogFormat, createLogger } from "./logger";
import { metricsApp } from "./observability/metrics";
import { startTracing } from "./observability/tracing";
import { createServices, type Services } from "./services";
import { runDelivery } from "./delivery/run";
import { startRollupRefresher } from "./rollups/refresh";

export interface RunningServer {
  services: Services;
  http: Server;
  port: number;
  /** The port of GET /metrics, when GCS_METRICS_PORT is set. */
  metricsPort?: number;
  /** Drains and closes everything; resolves once it is safe to exit (at most the shutdown timeout). */
  stop(): Promise<void>;
}

/** Node's own answers to unparseable requests have empty bodies; ours are the API's JSON errors. */
const CLIENT_ERRORS: Record<string, { status: string; error: string; detail: string }> = {
  HPE_HEADER_OVERFLOW: {
    status: "431 Request Header Fields Too Large",
    error: "headers_too_large",
    detail: "the request headers are larger than 16 KB; send fewer or shorter headers",
  },
  ERR_HTTP_REQUEST_TIMEOUT: {
    status: "408 Request Timeout",
    error: "invalid_request",
    detail: "the request was not received in time",
  },
};
const BAD_REQUEST = { status: "400 Bad Request", error: "invalid_request", detail: "malformed HTTP request" };

export async function startServer(config: Config, onReady?: (s: RunningServer) => Promise<void>): Promise<RunningServer> {
  const logger = createLogger(config.logLevel, chooseLogFormat(config.logFormat, process.stdout.isTTY));
  // Before anything runs a query: SQL spans need the tracer in place.
  const tracing = config.tracing.endpoint ? startTracing({ endpoint: config.tracing.endpoint }) : undefined;
  if (tracing) logger.info({ endpoint: redactUrl(config.tracing.endpoint!) }, "tracing: exporting spans over OTLP/HTTP");
  const db = await openDatabase({
    databaseUrl: config.databaseUrl,
    migrationUrl: config.migrationUrl,
    systemUrl: config.systemUrl,
    replica: config.replica,
    logger,
    dataDir: config.dataDir,
    poolSize: config.poolSize,
    statementTimeoutMs: config.statementTimeoutMs,
    rowSecurity: config.rowSecurity,
    rememberCredentials: config.rememberCredentials,
    pipelineReads: config.pipelineReads,
    onIdleConnectionError: (err) => logger.warn({ err: err.message }, "database closed an idle connection"),
    onSettingsNotApplied: (url, notApplied) =>
      logger.warn({ database: redactUrl(url), notApplied }, "database did not apply the connection settings (a pooler such as PgBouncer drops them): set them on the role"),
  });
  logger.info({ database: db.embedded ? `embedded PGlite at ${config.dataDir}` : redactUrl(db.url) }, "database ready");
  const services = await createServices(config, db, logger);
  const app = await createApp(services);
  const delivery = config.delivery.worker ? await runDelivery(config, db.primary, logger, db.embedded) : undefined;
  const rollups = config.rollups.refreshMs > 0 ? startRollupRefresher(db, logger.child({ component: "rollups" }), config.rollups.refreshMs, { incremental: config.rollups.incremental }) : undefined;
  const metrics = config.metrics.port === undefined ? undefined : await listen(metricsApp(config.metrics.token, logger), config.metrics.port, config.metrics.host);
  const metricsPort = metrics && (metrics.address() as { port: number }).port;
  // `protected`: whether /metrics asks for GCS_METRICS_TOKEN (a field named token would be redacted).
  if (metrics) logger.info({ port: metricsPort, host: config.metrics.host, protected: Boolean(config.metrics.token) }, "metrics listening");
  const http = httpServer(app.handler, config);
  await new Promise<void>((resolve, reject) => {
    http.once("error", reject);
    http.listen(config.port, config.host, () => resolve());
  });
  const port = (http.address() as { port: number }).port;
  logger.info({ port }, "listening");
  if (config.env === "production" && !config.publicUrlConfigured) {
    logger.warn({ publicUrl: config.publicUrl }, "GCS_PUBLIC_URL is not set: the OAuth metadata for MCP clients names localhost, so AI clients elsewhere cannot connect");
  }

  let stopping: Promise<void> | undefined;
  const stop = async () => {
    const deadline = Date.now() + config.http.shutdownTimeoutMs;
    const left = () => Math.max(0, deadline - Date.now());
    // 1. /readyz turns 503 so that load balancers stop routing here; responses close their connections.
    app.drain();
    // 2. Optionally keep accepting while the load balancer notices (GCS_SHUTDOWN_DELAY_MS).
    if (config.http.shutdownDelayMs > 0) await sleep(Math.min(config.http.shutdownDelayMs, left()));
    // 3. Stop accepting; close idle keep-alive connections (close() does); requests in flight run to
    //    the end. The delivery worker starts no new destination call and records its calls in flight.
    const closed = new Promise<void>((resolve) => http.close(() => resolve()));
    http.closeIdleConnections();
    const [drained, workerStopped] = await Promise.all([
      within(closed, left()),
      delivery ? within(delivery.stop(), left()) : Promise.resolve(true),
    ]);
    // 4. At the deadline, cut what is left; a delivery call still unanswered is not recorded, and the
    //    instance that takes the binding over when its lease runs out sends it again.
    if (!drained) {
      logger.warn({ timeoutMs: config.http.shutdownTimeoutMs }, "shutdown timeout: closing the connections still open");
      http.closeAllConnections();
    }
    if (!workerStopped) logger.warn("shutdown timeout: the delivery calls in flight are abandoned and will be retried");
    await within(app.stop(), 2000);
    // A rebuild cut short rolls back and keeps its changes for the next instance.
    await within(rollups?.stop() ?? Promise.resolve(), 2000);
    await within(db.close(), 2000);
    // Scrapes are answered until the end; then the spans still buffered are exported.
    if (metrics) {
      metrics.closeAllConnections();
      await within(new Promise((resolve) => metrics.close(resolve)), 2000);
    }
    if (tracing) await within(tracing.shutdown(), 2000);
    logger.info({ drained, workerStopped }, "stopped");
  };
  const running: RunningServer = { services, http, port, metricsPort, stop: () => (stopping ??= stop()) };
  if (onReady) await onReady(running);
  return running;
}

function listen(handler: RequestListener, port: number, host: string): Promise<Server> {
  return new Promise((resolve, reject) => {
    const server = createServer(handler).listen(port, host, () => resolve(server));
    server.once("error", reject);
  });
}

/**
 * How often Node checks headersTimeout and requestTimeout. Its default (30 s) let a header dribble run
 * to 29.5 s against a 15 s timeout; checked every second, a timeout holds within a second.
 */
const TIMEOUT_CHECK_MS = 1000;

/** The API's server: timeouts against slow or idle clients, and connection caps (in all and per client address). */
function httpServer(handler: RequestListener, config: Config): Server {
  const http = createServer({ connectionsCheckingInterval: Math.min(TIMEOUT_CHECK_MS, config.http.headersTimeoutMs) }, handler);
  // Longer than a load balancer's idle timeout (60 s on AWS ALB and nginx's default): the balancer,
  // not this server, closes an idle connection, so it never sends a request onto a closing socket.
  http.keepAliveTimeout = config.http.keepAliveTimeoutMs;
  // Against slow clients (slowloris). Node 18+ counts the header timeout from a request's first
  // byte, not from the connection's last activity, so it can be far shorter than the keep-alive
  // idle time (the old advice to set it above keepAliveTimeout predates that; checked on Node 24:
  // a kept-alive connection idle longer than headersTimeout still serves its next request).
  http.headersTimeout = config.http.headersTimeoutMs;
  http.requestTimeout = config.http.requestTimeoutMs; // bodies here are at most 1 MB
  http.maxConnections = config.http.maxConnections;
  capConnectionsPerAddress(http, config.http.maxConnectionsPerAddress);
  http.on("clientError", (err: NodeJS.ErrnoException, socket: Socket) => answerClientError(err, socket));
  return http;
}

/**
 * One address may hold at most `max` open connections (an IPv6 client counts per /56, as the rate
 * limit does); more are closed at once, so idle sockets from one address cannot fill
 * GCS_MAX_CONNECTIONS and lock everyone else out. The peer is the socket's: behind a load balancer,
 * its addresses are the clients here.
 */
function capConnectionsPerAddress(http: Server, max: number) {
  if (!max) return;
  const open = new Map<string, number>();
  http.on("connection", (socket: Socket) => {
    const key = ipKeyGenerator(socket.remoteAddress ?? "");
    const count = (open.get(key) ?? 0) + 1;
    if (count > max) {
      socket.destroy();
      return;
    }
    open.set(key, count);
    socket.once("close", () => {
      const left = open.get(key)! - 1;
      if (left === 0) open.delete(key);
      else open.set(key, left);
    });
  });
}

function answerClientError(err: NodeJS.ErrnoException, socket: Socket) {
  // As Node's default: answer unless the peer is gone or a response on this connection has begun
  // (writing then would corrupt it).
  const inFlight = (socket as Socket & { _httpMessage?: { headersSent: boolean } })._httpMessage;
  if (socket.writable && !inFlight?.headersSent && err.code !== "ECONNRESET") {
    const { status, error, detail } = CLIENT_ERRORS[err.code ?? ""] ?? BAD_REQUEST;
    const body = JSON.stringify({ error, detail });
    socket.write(
      `HTTP/1.1 ${status}\r\nContent-Type: application/json; charset=utf-8\r\nContent-Length: ${Buffer.byteLength(body)}\r\nX-Content-Type-Options: nosniff\r\nConnection: close\r\n\r\n${body}`,
    );
  }
  socket.destroySoon();
}

/** True if the promise settled within `ms`; false if the time ran out first. */
async function within(promise: Promise<unknown>, ms: number): Promise<boolean> {
  let timer: NodeJS.Timeout | undefined;
  const timeout = new Promise<false>((resolve) => (timer = setTimeout(() => resolve(false), ms)));
  try {
    return await Promise.race([promise.then(() => true, () => true), timeout]);
  } finally {
    clearTimeout(timer);
  }
}

const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));
