// Runs the delivery worker from configuration: inside `gcs serve`, or alone as `gcs deliver`. Any
// number of instances may run it against one database (bindings are claimed with SKIP LOCKED).
import type { Config } from "../config";
import type { PrismaClient } from "../generated/prisma/client";
import type { Logger } from "../logger";
import { serviceSecret } from "../db/service-secrets";
import { startDeliveryWorker, type DeliveryWorker } from "./engine";
import { startStandIn, type StandIn } from "./standin";
import type { DestinationsConfig } from "./providers";

/** The passphrase destination secrets are sealed with: configured, or kept in the database. */
export async function deliverySecretKey(config: Config, prisma: PrismaClient): Promise<string> {
  return config.delivery.secretKey ?? (await serviceSecret(prisma, "delivery_secret_box"));
}

export function destinationsFromConfig(config: Config, standInUrl?: string): DestinationsConfig {
  const mailchimp = config.delivery.mailchimpBaseUrl ?? standInUrl;
  const klaviyo = config.delivery.klaviyoBaseUrl ?? standInUrl;
  return { ...(mailchimp ? { mailchimp: { baseUrl: mailchimp } } : {}), ...(klaviyo ? { klaviyo: { baseUrl: klaviyo } } : {}) };
}

export interface RunningDelivery {
  worker: DeliveryWorker;
  /** The local stand-in destinations of the embedded demo, when they run. */
  standIn?: StandIn;
  stop(): Promise<void>;
}

/**
 * @param withStandIn the embedded demo delivers to local stand-in destinations (so nothing leaves
 *   the machine) unless base URLs are configured.
 */
export async function runDelivery(config: Config, prisma: PrismaClient, logger: Logger, withStandIn: boolean): Promise<RunningDelivery> {
  const needsStandIn = withStandIn && !(config.delivery.mailchimpBaseUrl && config.delivery.klaviyoBaseUrl);
  const standIn = needsStandIn ? await startStandIn() : undefined;
  if (standIn) logger.info({ url: standIn.url }, "embedded demo: delivering to local stand-in destinations");
  const worker = startDeliveryWorker({
    prisma,
    logger: logger.child({ component: "delivery" }),
    secretKey: await deliverySecretKey(config, prisma),
    destinations: destinationsFromConfig(config, standIn?.url),
    intervalMs: config.delivery.intervalMs,
    batchSize: config.delivery.batchSize,
  });
  return {
    worker,
    standIn,
    async stop() {
      await worker.stop();
      await standIn?.close();
    },
  };
}
