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

/**
 * Base URLs from GCS_MAILCHIMP_BASE_URL and GCS_KLAVIYO_BASE_URL. With a stand-in running, stand-in
 * keys (the fixtures') go to it; `everything` (the embedded demo) sends every connection there.
 */
export function destinationsFromConfig(config: Config, standInUrl?: string, everything = false): DestinationsConfig {
  const or = (configured?: string) => configured ?? (everything ? standInUrl : undefined);
  const mailchimp = or(config.delivery.mailchimpBaseUrl);
  const klaviyo = or(config.delivery.klaviyoBaseUrl);
  return {
    ...(mailchimp ? { mailchimp: { baseUrl: mailchimp } } : {}),
    ...(klaviyo ? { klaviyo: { baseUrl: klaviyo } } : {}),
    ...(standInUrl ? { standInUrl } : {}),
  };
}

/**
 * The destinations of a delivery run, with the built-in stand-in (on 127.0.0.1) started unless both
 * base URLs are configured. The embedded demo sends everything to it (nothing leaves the machine);
 * elsewhere only stand-in keys go there. Production starts none: a stand-in key fails there instead.
 */
export async function startDestinations(config: Config, embedded: boolean): Promise<{ destinations: DestinationsConfig; standIn?: StandIn }> {
  const bothConfigured = Boolean(config.delivery.mailchimpBaseUrl && config.delivery.klaviyoBaseUrl);
  const standIn = !bothConfigured && (embedded || config.env !== "production") ? await startStandIn() : undefined;
  return { destinations: destinationsFromConfig(config, standIn?.url, embedded), standIn };
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
 *   the machine) unless base URLs are configured; elsewhere only stand-in keys do (startDestinations).
 */
export async function runDelivery(config: Config, prisma: PrismaClient, logger: Logger, withStandIn: boolean): Promise<RunningDelivery> {
  const { destinations, standIn } = await startDestinations(config, withStandIn);
  if (standIn) logger.info({ url: standIn.url }, withStandIn ? "embedded demo: delivering to local stand-in destinations" : "demo data (stand-in keys): delivering to local stand-in destinations");
  const secretKey = await deliverySecretKey(config, prisma);
  const worker = startDeliveryWorker({
    prisma,
    logger: logger.child({ component: "delivery" }),
    secretKey,
    destinations,
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
