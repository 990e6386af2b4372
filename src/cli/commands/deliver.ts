// `gcs deliver`: the destination delivery and webhook workers alone (`gcs serve` runs them beside the API).
import { openDatabase } from "../../db/database";
import { flushDue } from "../../delivery/engine";
import { assertDeliveryKeyConfigured, deliverySecretKey, messageIdKey, runDelivery, startDestinations } from "../../delivery/run";
import { createLogger } from "../../logger";
import { sendDue } from "../../webhooks/sender";
import { cliConfig, cliDatabaseOptions, printJson, withDatabase } from "../database";

export async function deliver(opts: { once?: boolean }): Promise<void> {
  const config = cliConfig();
  assertDeliveryKeyConfigured(config);
  const logger = createLogger(config.logLevel);
  if (opts.once) {
    return withDatabase(config, true, async (db) => {
      const secretKey = await deliverySecretKey(config, db.primary);
      const { destinations, standIn } = await startDestinations(config, false);
      const reports = await flushDue(db.primary, {
        secretKey,
        destinations,
        batchSize: config.delivery.batchSize,
        leaseMs: config.delivery.leaseMs,
        logger,
      }).finally(() => standIn?.close());
      for (const r of reports) printJson(r);
      // Then one webhook sending pass (the worker's sendDue): every due endpoint once.
      const sent = await sendDue(db.primary, { secretKey, messageIdKey: await messageIdKey(db.primary), policy: config.webhooks, leaseMs: config.delivery.leaseMs, logger });
      for (const r of sent) printJson({ webhook: true, ...r });
    });
  }
  const db = await openDatabase(cliDatabaseOptions(config, true));
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
