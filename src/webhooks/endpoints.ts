// Webhook endpoints as the GraphQL fields see them (issue 29): input rules, the signing secret's
// sealing, the test ping and replay. The resolvers (graphql/resolvers/webhooks.ts) call these with
// the request's context; /v1/webhook-endpoints and the MCP tools run those fields.
//
// The secret: made here, sealed before it is stored, returned once in the create and rotate results.
// Nothing on the way records a result: tracing keeps error codes only (observability/tracing.ts),
// Apollo's cache control is disabled, persisted queries cache documents, the request log has no bodies.
import { randomUUID } from "node:crypto";
import type { RequestContext } from "../context";
import type { WebhookDeliveryRow, WebhookEndpointRow } from "../data/webhooks";
import { deliverySecretKey } from "../delivery/run";
import { seal, type Keyring } from "../delivery/secret-box";
import { apiError, echo, forbidden, invalidCursor, invalidRequest, notFound } from "../errors";
import { decodeCursor, encodeCursor } from "../pagination/cursor";
import { pageSize } from "../pagination/keyset";
import type { Config } from "../config";
import type { Database } from "../db/database";
import { isUuid } from "../validate";
import { LANES_HEAR_WITHIN_MS, newPingId, sendPing, signingSecrets } from "./sender";
import { newSecret, pingMessage, ROTATION_OVERLAP_MS, type SigningSecrets } from "./sign";
import { MAX_DESCRIPTION, MAX_PROPERTY_IDS, MAX_URL, WEBHOOK_TOPICS } from "./input";
import { checkUrlForm, resolveChecked, systemResolver, WebhookUrlError, type Resolver, type UrlPolicy } from "./ssrf";

/** Each endpoint is a sender's work and a row of attempts: a group has at most this many. */
export const MAX_ENDPOINTS_PER_GROUP = 50;

/** What the fields need of the service beyond the request: the URL policy, the resolver, the sealing key. */
export interface WebhookEnv {
  policy: UrlPolicy;
  resolver(): Resolver;
  keyring(): Promise<Keyring>;
}

/** What webhookEnv reads of the service (services.ts holds it). */
export interface WebhookServices {
  config: Config;
  db: Pick<Database, "primary">;
  webhookResolver?: Resolver;
}

const envs = new WeakMap<WebhookServices, WebhookEnv>();

/** One per service: the key ring is read once (and again after a failed read). */
export function webhookEnv(services: WebhookServices): WebhookEnv {
  let env = envs.get(services);
  if (!env) {
    let ring: Promise<Keyring> | undefined;
    env = {
      policy: services.config.webhooks,
      // Read per call: tests inject a resolver after the app started.
      resolver: () => services.webhookResolver ?? systemResolver,
      keyring: () => {
        if (!ring) {
          ring = deliverySecretKey(services.config, services.db.primary);
          ring.catch(() => (ring = undefined));
        }
        return ring;
      },
    };
    envs.set(services, env);
  }
  return env;
}

/** The GraphQL WebhookEndpoint: instants as ISO strings (the DateTime scalar passes them through). */
export function endpointView(e: WebhookEndpointRow, secret: string | null = null) {
  return {
    id: e.id,
    url: e.url,
    topics: e.topics,
    propertyIds: e.propertyIds,
    description: e.description,
    state: e.state,
    disabledReason: e.disabledReason,
    disabledAt: e.disabledAt?.toISOString() ?? null,
    failureCount: e.failureCount,
    nextAttemptAt: e.nextAttemptAt?.toISOString() ?? null,
    lastError: e.lastError,
    previousSecretExpiresAt: e.previousSecretUntil && e.previousSecretUntil > new Date() ? e.previousSecretUntil.toISOString() : null,
    createdAt: e.createdAt.toISOString(),
    updatedAt: e.updatedAt.toISOString(),
    secret,
  };
}

function deliveryView(d: WebhookDeliveryRow) {
  return {
    id: d.id,
    messageId: d.messageId,
    eventType: d.eventType,
    eventSeq: d.eventSeq === null ? null : d.eventSeq.toString(),
    attempt: d.attempt,
    status: d.status,
    responseCode: d.responseCode,
    durationMs: d.durationMs,
    error: d.error,
    nextRetryAt: d.nextRetryAt?.toISOString() ?? null,
    createdAt: d.createdAt.toISOString(),
  };
}

/**
 * The endpoint, or not_found (an id outside the scope is not told apart from a missing one).
 * @param fresh read from the primary: a mutation acts on what is there now.
 */
export async function found(ctx: RequestContext, id: string, fresh = false): Promise<WebhookEndpointRow> {
  const e = await ctx.data.webhooks.get(id, fresh);
  if (!e) throw notFound("webhook endpoint", id);
  return e;
}

export async function listEndpoints(ctx: RequestContext, limit: number | null | undefined, cursor: string | null | undefined) {
  const size = pageSize(limit);
  const { owner } = ctx.data.webhooks;
  const binding = { family: "webhook_endpoints", propertyGroupId: owner.propertyGroupId, query: { propertyId: owner.propertyId } };
  const after = cursor ? String(decodeCursor(cursor, binding, ctx.cursorSecret)[0]) : null;
  if (after !== null && !isUuid(after)) throw invalidCursor();
  const rows = await ctx.data.webhooks.list(after, size + 1);
  const page = rows.slice(0, size);
  const more = rows.length > size;
  return { nodes: page.map((e) => endpointView(e)), nextCursor: more ? encodeCursor([page[page.length - 1].id], binding, ctx.cursorSecret) : null, hasMore: more };
}

export async function listDeliveries(ctx: RequestContext, endpointId: string, limit: number | null | undefined, cursor: string | null | undefined) {
  const e = await found(ctx, endpointId);
  const size = pageSize(limit);
  const binding = { family: "webhook_deliveries", propertyGroupId: ctx.data.webhooks.owner.propertyGroupId, query: { endpoint: e.id } };
  let after: { createdAt: Date; id: string } | null = null;
  if (cursor) {
    const [at, id] = decodeCursor(cursor, binding, ctx.cursorSecret).map(String);
    if (!isUuid(id ?? "") || Number.isNaN(Date.parse(at))) throw invalidCursor();
    after = { createdAt: new Date(at), id };
  }
  const rows = await ctx.data.webhooks.deliveries(e.id, after, size + 1);
  const page = rows.slice(0, size);
  const more = rows.length > size;
  const last = page[page.length - 1];
  return {
    nodes: page.map(deliveryView),
    nextCursor: more ? encodeCursor([last.createdAt.toISOString(), last.id], binding, ctx.cursorSecret) : null,
    hasMore: more,
  };
}

export interface NewEndpointInput {
  url: string;
  topics: string[];
  propertyIds?: string[] | null;
  description?: string | null;
}

export async function createEndpoint(ctx: RequestContext, env: WebhookEnv, raw: NewEndpointInput) {
  const input = await checkNewEndpoint(ctx, env, raw);
  const id = randomUUID();
  const secret = newSecret();
  // The cap is checked with the insert, atomically (data/webhooks.ts createEndpoint).
  const row = await ctx.data.webhooks.create({ ...input, id, secretCiphertext: seal(secret, id, await env.keyring()) }, MAX_ENDPOINTS_PER_GROUP);
  if (!row) throw invalidRequest(`a group has at most ${MAX_ENDPOINTS_PER_GROUP} webhook endpoints; delete one first`);
  return endpointView(row, secret);
}

export async function deleteEndpoint(ctx: RequestContext, id: string): Promise<string> {
  if (!(await ctx.data.webhooks.delete(id))) throw notFound("webhook endpoint", id);
  return id;
}

export async function rotateSecret(ctx: RequestContext, env: WebhookEnv, id: string) {
  const e = await found(ctx, id, true);
  const secret = newSecret();
  const row = await ctx.data.webhooks.rotate(e.id, seal(secret, e.id, await env.keyring()), new Date(Date.now() + ROTATION_OVERLAP_MS));
  if (!row) throw notFound("webhook endpoint", e.id);
  // A lane sending to the endpoint (any instance) hears the new secret within LANES_HEAR_WITHIN_MS:
  // the answer waits that long, so every POST after it carries both signatures. Nothing is held.
  if (row.leased) await new Promise((r) => setTimeout(r, LANES_HEAR_WITHIN_MS));
  return endpointView(row, secret);
}

/**
 * Signs and POSTs a ping. Each read is its own statement: nothing is held open while the receiver
 * answers. One per request (`pingsInRequest`: the testWebhookEndpoint fields the operation runs): a
 * request is what the rate limit counts, and a GraphQL document could otherwise alias the field a
 * hundred times, a hundred POSTs for the price of one. A document with more is refused before any
 * is sent, as invalid_request: the same document would be refused again, so it is not a 429 to retry.
 */
export async function testEndpoint(ctx: RequestContext, env: WebhookEnv, id: string, pingsInRequest = 1) {
  if (pingsInRequest > 1) {
    throw invalidRequest(`one test ping per request, and this one asks for ${pingsInRequest}: send each testWebhookEndpoint in a request of its own (each counts against the rate limit)`);
  }
  const e = await found(ctx, id, true);
  const sealed = await ctx.data.webhooks.secrets(e.id);
  if (!sealed) throw notFound("webhook endpoint", e.id);
  const message = pingMessage(newPingId(), e.id, new Date());
  const keyring = await env.keyring();
  let secrets: SigningSecrets;
  try {
    secrets = signingSecrets({ id: e.id, ...sealed }, keyring);
  } catch {
    // No configured key opens it (the sender disables such an endpoint): nothing is sent.
    return { messageId: message.id, delivered: false, responseCode: null, durationMs: 0, error: UNREADABLE_SECRET };
  }
  const r = await sendPing(ctx.data.webhooks.recordDelivery, e, secrets, message, { policy: env.policy, resolve: env.resolver() });
  const delivered = r.status !== undefined && r.status >= 200 && r.status < 300;
  return { messageId: message.id, delivered, responseCode: r.status ?? null, durationMs: r.durationMs, error: delivered ? null : r.error ?? `HTTP ${r.status}` };
}

const UNREADABLE_SECRET = "the signing secret cannot be opened with the configured GCS_DELIVERY_SECRET_KEY: rotate the secret";

/** The binding of GET /v1/events cursors without filters (graphql/resolvers/lists.ts boundPage). */
export const eventsCursorBinding = (owner: { propertyGroupId: string; propertyId: string | null }) => ({
  family: "events",
  propertyGroupId: owner.propertyGroupId,
  query: { filter: {}, propertyId: owner.propertyId },
});

export async function replayEndpoint(ctx: RequestContext, id: string, cursor: string | null | undefined, since: Date | null | undefined) {
  const e = await found(ctx, id, true);
  if ((cursor == null) === (since == null)) {
    throw invalidRequest('send exactly one of cursor (a next_cursor of GET /v1/events without filters) or since (an instant, e.g. "2026-11-27T09:00:00Z")');
  }
  let to: { txid: bigint; seq: bigint } | { since: Date };
  if (cursor != null) {
    const key = decodeCursor(cursor, eventsCursorBinding(ctx.data.webhooks.owner), ctx.cursorSecret).map(String);
    if (key.length !== 2 || !key.every((k) => /^\d{1,19}$/.test(k))) throw invalidCursor();
    to = { txid: BigInt(key[0]), seq: BigInt(key[1]) };
  } else {
    to = { since: since! };
  }
  const row = await ctx.data.webhooks.replay(e.id, to, LANES_HEAR_WITHIN_MS);
  if (!row) throw notFound("webhook endpoint", e.id);
  return endpointView(row);
}

/** URL (form, then one resolution: an obviously internal name is refused at once), topics, properties, description. */
async function checkNewEndpoint(ctx: RequestContext, env: WebhookEnv, raw: NewEndpointInput) {
  if (raw.url === "") throw invalidRequest('url is required: an https URL, e.g. "https://example.com/webhooks"');
  if (raw.url.length > MAX_URL) throw invalidRequest(`url must be at most ${MAX_URL} characters`);
  let url: URL;
  try {
    url = checkUrlForm(raw.url, env.policy);
    // Every send resolves and checks again (sender.ts), so a name that changes later is refused then.
    await resolveChecked(url, env.policy, env.resolver());
  } catch (err) {
    if (err instanceof WebhookUrlError) throw invalidRequest(err.message);
    throw err;
  }
  if (raw.topics.length === 0 || raw.topics.length > WEBHOOK_TOPICS.length + 1) {
    throw invalidRequest(`topics is required: a non-empty array of entity types (${WEBHOOK_TOPICS.join(", ")}) or ["*"]`);
  }
  for (const t of raw.topics) {
    if (t !== "*" && !(WEBHOOK_TOPICS as readonly string[]).includes(t)) throw invalidRequest(`unknown topic ${echo(t)}; known: *, ${WEBHOOK_TOPICS.join(", ")}`);
  }
  const topics = [...new Set(raw.topics)];
  let propertyIds: string[] = [];
  if (raw.propertyIds) {
    if (raw.propertyIds.length > MAX_PROPERTY_IDS) throw invalidRequest(`property_ids must be an array of at most ${MAX_PROPERTY_IDS} property uuids`);
    propertyIds = [...new Set(raw.propertyIds.map((p) => p.toLowerCase()))];
    for (const p of propertyIds) {
      if (!(await ctx.data.webhooks.isGroupProperty(p))) throw apiError("invalid_request", `property ${p} is not a property of this group`);
    }
  }
  const { owner } = ctx.data.webhooks;
  if (owner.propertyId) {
    // A credential narrowed to one property makes and sees endpoints of that property only.
    if (propertyIds.length > 0 && (propertyIds.length !== 1 || propertyIds[0] !== owner.propertyId)) {
      throw forbidden("this credential is narrowed to one property: property_ids may only name that property");
    }
    propertyIds = [owner.propertyId];
  }
  if (raw.description != null && raw.description.length > MAX_DESCRIPTION) {
    throw invalidRequest(`description must be a string of at most ${MAX_DESCRIPTION} characters`);
  }
  return { url: url.toString(), topics, propertyIds, description: raw.description ?? null };
}
