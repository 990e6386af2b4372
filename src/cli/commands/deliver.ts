// `gcs deliver`: the destination delivery and webhook workers alone (`gcs serve` runs them beside the API).
import { openDatabase } from "../../db/database";
import { flushDue, type FlushReport } from "../../delivery/engine";
import { assertDeliveryKeyConfigured, deliverySecretKey, messageIdKey, runDelivery, startDestinations } from "../../delivery/run";
import { createLogger } from "../../logger";
import { sendDue, type SendReport } from "../../webhooks/sender";
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
      // stdout stays one JSON report a line, for scripts; what the pass did, for people, on stderr.
      console.error(passSummary(reports, sent));
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

function passSummary(flushed: FlushReport[], sent: SendReport[]): string {
  if (flushed.length === 0 && sent.length === 0) return "one pass: nothing was due (no destination binding or webhook endpoint had anything to send)";
  const count = (n: number, what: string) => `${n} ${what}${n === 1 ? "" : "s"}`;
  const delivered = flushed.filter((r) => r.outcome === "delivered").length;
  const events = sent.reduce((total, r) => total + r.sent, 0);
  return `one pass: ${count(flushed.length, "destination binding")} (${delivered} delivered), ${count(sent.length, "webhook endpoint")} (${count(events, "event")} sent)`;
}
