// Runs the service: opens the database (embedded PGlite when no DATABASE_URL), builds the app,
// listens, and shuts down gracefully on SIGINT/SIGTERM.
import type { Server } from "node:http";
import type { Config } from "./config";
import { createApp } from "./app";
import { openDatabase, redactUrl } from "./db/database";
import { createLogger } from "./logger";
import { createServices, type Services } from "./services";
import { runDelivery } from "./delivery/run";

export interface RunningServer {
  services: Services;
  http: Server;
  port: number;
  stop(): Promise<void>;
}

export async function startServer(config: Config, onReady?: (s: RunningServer) => Promise<void>): Promise<RunningServer> {
  const logger = createLogger(config.logLevel);
  const db = await openDatabase({
    databaseUrl: config.databaseUrl,
    replicaUrl: config.replicaUrl,
    dataDir: config.dataDir,
    poolSize: config.poolSize,
    onIdleConnectionError: (err) => logger.warn({ err: err.message }, "database closed an idle connection"),
  });
  logger.info({ database: db.embedded ? `embedded PGlite at ${config.dataDir}` : redactUrl(db.url) }, "database ready");
  const services = await createServices(config, db, logger);
  const { app, stop: stopApp } = await createApp(services);
  const delivery = config.delivery.worker ? await runDelivery(config, db.primary, logger, db.embedded) : undefined;
  const http = await new Promise<Server>((resolve) => {
    const s = app.listen(config.port, config.host, () => resolve(s));
  });
  const port = (http.address() as { port: number }).port;
  logger.info({ port }, "listening");
  let stopping: Promise<void> | undefined;
  const running: RunningServer = {
    services,
    http,
    port,
    stop: () =>
      (stopping ??= (async () => {
        await new Promise<void>((resolve) => http.close(() => resolve()));
        await delivery?.stop();
        await stopApp();
        await db.close();
      })()),
  };
  if (onReady) await onReady(running);
  return running;
}
