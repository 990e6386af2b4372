// Standard Webhooks 1.0 (https://www.standardwebhooks.com): secrets, the message body and its
// headers, signed with the `standardwebhooks` package so receivers verify with any of its libraries.
import { createHmac, randomBytes } from "node:crypto";
import { Webhook } from "standardwebhooks";
import type { WebhookEvent } from "../data/stores/webhook-sender";

/** A new signing secret: `whsec_` + 24 random bytes in base64 (the format the libraries accept). */
export const newSecret = () => `whsec_${randomBytes(24).toString("base64")}`;

/** How long the old secret keeps signing beside the new one after a rotation. */
export const ROTATION_OVERLAP_MS = 24 * 60 * 60_000;

/**
 * The event row as GET /v1/events returns it, without `seq`: seq counts every group's events, so a
 * receiver would see it jump by what other groups appended. The webhook-id header names the event.
 */
export function eventData(e: WebhookEvent) {
  return {
    entity_type: e.entity_type,
    entity_id: e.entity_id,
    guest_profile_id: e.guest_profile_id,
    property_id: e.property_id,
    integration_id: e.integration_id,
    operation: e.operation,
    delta: e.delta,
    occurred_at: e.occurred_at.toISOString(),
    recorded_at: e.recorded_at.toISOString(),
  };
}

const PAST = { create: "created", update: "updated", delete: "deleted" } as Record<string, string>;

/** `reservation.created`, `guest_profile.updated`, … */
export const eventType = (e: Pick<WebhookEvent, "entity_type" | "operation">) => `${e.entity_type}.${PAST[e.operation] ?? e.operation}`;

/**
 * webhook-id: one per event, the same on every attempt and replay, so receivers can deduplicate.
 * An HMAC of the event's seq under the service's own key (`messageIdKey`, delivery/run.ts), not the
 * seq itself: seq counts every group's events, so a receiver would see its ids jump by what other
 * groups appended. 128 bits, base64url.
 */
export const messageIdOf = (seq: string, key: string) => `evt_${createHmac("sha256", key).update(seq).digest("base64url").slice(0, 22)}`;

export interface Message {
  id: string;
  type: string;
  body: string;
}

// An event's `data` as JSON, made once per event: a feed's event goes to every endpoint that selects it.
const dataJson = new WeakMap<WebhookEvent, string>();

export function eventMessage(e: WebhookEvent, at: Date, idKey: string): Message {
  const type = eventType(e);
  let data = dataJson.get(e);
  if (data === undefined) dataJson.set(e, (data = JSON.stringify(eventData(e))));
  // The same text as JSON.stringify({ type, timestamp, data }).
  return { id: messageIdOf(e.seq, idKey), type, body: `{"type":${JSON.stringify(type)},"timestamp":"${at.toISOString()}","data":${data}}` };
}

export function pingMessage(id: string, endpointId: string, at: Date): Message {
  return { id, type: "webhook.ping", body: JSON.stringify({ type: "webhook.ping", timestamp: at.toISOString(), data: { endpoint_id: endpointId } }) };
}

/** The secrets that sign: the current one, and the previous one until `previousUntil` (a rotation's overlap). */
export interface SigningSecrets {
  current: string;
  previous?: string;
  previousUntil?: Date;
}

/**
 * The three headers. With a rotation in its overlap, webhook-signature carries both signatures
 * (space-separated, the new secret's first): a receiver that has either secret verifies.
 */
export function signedHeaders(m: Message, secrets: SigningSecrets, at: Date): Record<string, string> {
  return signer(secrets)(m, at);
}

/**
 * signedHeaders for many messages: each secret is decoded once (a sender's lane signs its events
 * with it). The previous secret signs only while `at` is inside its overlap, however long the lane lives.
 */
export function signer(secrets: SigningSecrets): (m: Message, at: Date) => Record<string, string> {
  const current = new Webhook(secrets.current);
  const previous = secrets.previous && secrets.previousUntil ? { hook: new Webhook(secrets.previous), until: secrets.previousUntil } : undefined;
  return (m, at) => ({
    "webhook-id": m.id,
    "webhook-timestamp": String(Math.floor(at.getTime() / 1000)),
    "webhook-signature": previous && at < previous.until
      ? `${current.sign(m.id, at, m.body)} ${previous.hook.sign(m.id, at, m.body)}`
      : current.sign(m.id, at, m.body),
  });
}
