// Runs the delivery worker from configuration: inside `gcs serve`, or alone as `gcs deliver`. Any
// number of instances may run it against one database (bindings are leased: engine.ts).
import type { Config } from "../config";
import type { DataClient as PrismaClient } from "../data/client";
import { existingServiceSecret } from "../data/stores/delivery";
import type { Logger } from "../logger";
import { serviceSecret } from "../db/service-secrets";
import { loadKeyring, rawKeyOf, type Keyring } from "./secret-box";
import { startDeliveryWorker, type DeliveryWorker } from "./engine";
import { startStandIn, type StandIn } from "./standin";
import type { DestinationsConfig } from "./providers";
import { startWebhookWorker, type WebhookWorker } from "../webhooks/sender";

const GENERATED_KEY = "delivery_secret_box";
const SALT = "delivery_secret_box_salt";

/**
 * Production keeps the delivery key outside the database: a key generated and stored beside the
 * ciphertexts it seals protects nothing. Throws a one-line reason; also checks the keys' form.
 */
export function assertDeliveryKeyConfigured(config: Config): void {
  if (config.env === "production" && !config.delivery.secretKey) {
    throw new Error("GCS_DELIVERY_SECRET_KEY must be set when NODE_ENV=production (a key stored in the database beside the secrets it seals protects nothing)");
  }
  for (const [name, keys] of [["GCS_DELIVERY_SECRET_KEY", [config.delivery.secretKey ?? ""]], ["GCS_DELIVERY_SECRET_KEY_PREVIOUS", config.delivery.previousSecretKeys]] as const) {
    try {
      keys.forEach(rawKeyOf);
    } catch (err) {
      throw new Error(`invalid configuration: ${name}: ${(err as Error).message}`);
    }
  }
}

/**
 * The keys destination secrets are sealed with: GCS_DELIVERY_SECRET_KEY seals, the PREVIOUS ones
 * open. Unset: a key generated once and kept in the database (not in production). A generated key
 * that exists while a key is configured stays open-only, so secrets sealed before the key was
 * configured keep working until `gcs secrets rotate` re-seals them. Derived once per process.
 */
export async function deliverySecretKey(config: Config, prisma: PrismaClient): Promise<Keyring> {
  assertDeliveryKeyConfigured(config);
  const configured = config.delivery.secretKey;
  const generated = configured
    ? await existingServiceSecret(prisma, GENERATED_KEY)
    : await serviceSecret(prisma, GENERATED_KEY);
  return loadKeyring({
    current: configured ?? generated!,
    previous: [...config.delivery.previousSecretKeys, ...(configured && generated ? [generated] : [])],
    // Not secret: it only makes a passphrase's derivation specific to this deployment.
    salt: await serviceSecret(prisma, SALT),
  });
}

/**
 * The key of the events' webhook-ids (webhooks/sign.ts messageIdOf): made once and kept in the
 * database, so every instance and every replay gives an event the same id; never rotated, since
 * receivers deduplicate on the ids.
 */
export const messageIdKey = (prisma: PrismaClient) => serviceSecret(prisma, "webhook_message_id");

export function destinationsFromConfig(config: Config, standInUrl?: string): DestinationsConfig {
  const mailchimp = config.delivery.mailchimpBaseUrl ?? standInUrl;
  const klaviyo = config.delivery.klaviyoBaseUrl ?? standInUrl;
  return { ...(mailchimp ? { mailchimp: { baseUrl: mailchimp } } : {}), ...(klaviyo ? { klaviyo: { baseUrl: klaviyo } } : {}) };
}

export interface RunningDelivery {
  worker: DeliveryWorker;
  /** The webhook sender (src/webhooks), beside table delivery: same keyring, same lease pattern. */
  webhooks: WebhookWorker;
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
  const secretKey = await deliverySecretKey(config, prisma);
  const worker = startDeliveryWorker({
    prisma,
    logger: logger.child({ component: "delivery" }),
    secretKey,
    destinations: destinationsFromConfig(config, standIn?.url),
    intervalMs: config.delivery.intervalMs,
    batchSize: config.delivery.batchSize,
    leaseMs: config.delivery.leaseMs,
  });
  const webhooks = startWebhookWorker(prisma, {
    logger: logger.child({ component: "webhooks" }),
    secretKey,
    messageIdKey: await messageIdKey(prisma),
    policy: config.webhooks,
    intervalMs: config.webhooks.intervalMs,
    concurrency: config.webhooks.lanes,
    pipeline: config.webhooks.pipeline,
    leaseMs: config.delivery.leaseMs,
  });
  return {
    worker,
    webhooks,
    standIn,
    async stop() {
      await Promise.all([worker.stop(), webhooks.stop()]);
      await standIn?.close();
    },
  };
}
