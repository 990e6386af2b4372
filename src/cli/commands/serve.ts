// The long-running commands: the API (with the delivery worker unless turned off) and the worker alone.
import { openDatabase } from "../../db/database";
import { serveEmbeddedToLocalTools } from "../../db/embedded";
import { flushDue } from "../../delivery/engine";
import { assertDeliveryKeyConfigured, deliverySecretKey, destinationsFromConfig, runDelivery } from "../../delivery/run";
import { createLogger } from "../../logger";
import { startServer } from "../../server";
import { cliConfig, printJson, withDatabase } from "../database";
import { announceEmbeddedDemo } from "../demo";
import { PREPARE_EMBEDDED_COMMAND } from "../program";

export async function serve(): Promise<never> {
  const config = cliConfig();
  assertDeliveryKeyConfigured(config); // before anything starts: a one-line refusal
  // On the embedded database this process owns the data directory and serves it to the other gcs commands.
  serveEmbeddedToLocalTools(PREPARE_EMBEDDED_COMMAND);
  const server = await startServer(config, async (running) => {
    if (running.services.db.embedded) await announceEmbeddedDemo(running);
  });
  // Drain (server.ts): readyz 503, stop accepting, finish requests in flight and the delivery batch,
  // exit 0 within GCS_SHUTDOWN_TIMEOUT_MS. A second signal ends the process at once.
  const shutdown = (signal: string) => {
    server.services.logger.info({ signal, timeoutMs: config.http.shutdownTimeoutMs }, "shutting down: draining");
    server.stop().then(
      () => process.exit(0),
      (err: Error) => {
        server.services.logger.error({ err }, "shutdown failed");
        process.exit(1);
      },
    );
  };
  process.once("SIGINT", shutdown);
  process.once("SIGTERM", shutdown);
  return new Promise<never>(() => undefined); // runs until a signal
}

export async function deliver(opts: { once?: boolean }): Promise<void> {
  const config = cliConfig();
  assertDeliveryKeyConfigured(config);
  const logger = createLogger(config.logLevel);
  if (opts.once) {
    return withDatabase(config, true, async (db) => {
      const reports = await flushDue(db.primary, {
        secretKey: await deliverySecretKey(config, db.primary),
        destinations: destinationsFromConfig(config),
        batchSize: config.delivery.batchSize,
        logger,
      });
      for (const r of reports) printJson(r);
    });
  }
  const db = await openDatabase({ databaseUrl: config.databaseUrl, dataDir: config.dataDir, poolSize: 4 });
  const delivery = await runDelivery(config, db.primary, logger, false);
  logger.info("delivery worker running");
  const shutdown = async () => {
    await delivery.stop();
    await db.close();
    process.exit(0);
  };
  process.once("SIGINT", shutdown);
  process.once("SIGTERM", shutdown);
  return new Promise<never>(() => undefined);
}
