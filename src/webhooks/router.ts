// /v1/webhook-endpoints (issue 29). Unlike the route table's routes these are not GraphQL
// operations: an endpoint's signing secret is shown once, in the answer to its creation or
// rotation, and must never pass through /graphql's caches, persisted queries or traces, and a
// test ping calls out to the receiver from the request. Authentication, the scope check, the
// tenant rule (data/webhooks.ts `owned`), the error bodies and the rate limits are the /v1 ones.
import { Router, type Request, type Response } from "express";
import { randomUUID } from "node:crypto";
import { createContext, type RequestContext } from "../context";
import { propertyInGroup } from "../data/credentials";
import * as store from "../data/webhooks";
import type { WebhookEndpointRow, WebhookOwner } from "../data/webhooks";
import { deliverySecretKey } from "../delivery/run";
import { seal, type Keyring } from "../delivery/secret-box";
import { apiError, echo, forbidden, invalidCursor, invalidRequest, missingScope, notFound } from "../errors";
import { decodeCursor, encodeCursor } from "../pagination/cursor";
import { pageSize } from "../pagination/keyset";
import { sendError, sendJson } from "../rest/respond";
import type { Services } from "../services";
import { isUuid, parseInstant } from "../validate";
import { newPingId, sendPing, signingSecrets } from "./sender";
import { newSecret, pingMessage, ROTATION_OVERLAP_MS } from "./sign";
import { checkUrlForm, resolveChecked, systemResolver, WebhookUrlError, type Resolver, type UrlPolicy } from "./ssrf";

/** spec 2.6: the entity types of the event log; `*` subscribes to all. */
export const WEBHOOK_TOPICS = ["guest_profile", "reservation", "transaction", "action", "loyalty_program", "membership", "review", "channel", "space"] as const;
const MAX_PROPERTY_IDS = 100;
/** Each endpoint is a sender's work and a row of attempts: a group has at most this many. */
export const MAX_ENDPOINTS_PER_GROUP = 50;
const MAX_DESCRIPTION = 500;

export function endpointView(e: WebhookEndpointRow) {
  return {
    id: e.id,
    url: e.url,
    topics: e.topics,
    property_ids: e.propertyIds,
    description: e.description,
    state: e.state,
    disabled_reason: e.disabledReason,
    disabled_at: e.disabledAt?.toISOString() ?? null,
    failure_count: e.failureCount,
    next_attempt_at: e.nextAttemptAt?.toISOString() ?? null,
    last_error: e.lastError,
    previous_secret_expires_at: e.previousSecretUntil && e.previousSecretUntil > new Date() ? e.previousSecretUntil.toISOString() : null,
    created_at: e.createdAt.toISOString(),
    updated_at: e.updatedAt.toISOString(),
  };
}

function deliveryView(d: store.WebhookDeliveryRow) {
  return {
    id: d.id,
    message_id: d.messageId,
    event_type: d.eventType,
    event_seq: d.eventSeq === null ? null : d.eventSeq.toString(),
    attempt: d.attempt,
    status: d.status,
    response_code: d.responseCode,
    duration_ms: d.durationMs,
    error: d.error,
    next_retry_at: d.nextRetryAt?.toISOString() ?? null,
    created_at: d.createdAt.toISOString(),
  };
}

export function webhookPolicy(services: Services): UrlPolicy {
  return services.config.webhooks;
}

const keyrings = new WeakMap<Services, Promise<Keyring>>();
function keyringOf(services: Services): Promise<Keyring> {
  let ring = keyrings.get(services);
  if (!ring) {
    ring = deliverySecretKey(services.config, services.db.primary);
    ring.catch(() => keyrings.delete(services));
    keyrings.set(services, ring);
  }
  return ring;
}

type Handler = (req: Request, res: Response, ctx: RequestContext, owner: WebhookOwner) => Promise<void>;

export function createWebhookRouter(services: Services): Router {
  const router = Router();
  const db = () => services.db.primary;
  const resolver = () => services.webhookResolver ?? systemResolver;

  const route = (scope: "read:webhooks" | "write:webhooks", handler: Handler) => async (req: Request, res: Response) => {
    try {
      const ctx = await createContext(services, {
        authorization: req.get("authorization"),
        propertyHeader: req.get("x-property-id"),
        surface: "rest",
        address: req.ip,
        requiredScope: scope,
        response: res,
      });
      res.locals.credential = ctx.credential;
      if (!ctx.credential.scopes.has(scope)) throw missingScope(scope);
      await handler(req, res, ctx, { propertyGroupId: ctx.scope.propertyGroupId, propertyId: ctx.scope.propertyId });
    } catch (err) {
      sendError(req, res, err);
    }
  };

  const found = async (owner: WebhookOwner, id: string) => {
    if (!isUuid(id)) throw notFound("webhook endpoint", echo(id));
    const e = await store.getEndpoint(db(), owner, id);
    if (!e) throw notFound("webhook endpoint", id);
    return e;
  };

  router.post("/v1/webhook-endpoints", route("write:webhooks", async (req, res, ctx, owner) => {
    const input = await parseNewEndpoint(req.body, ctx, owner, services, resolver());
    if ((await store.countEndpoints(db(), owner.propertyGroupId)) >= MAX_ENDPOINTS_PER_GROUP) {
      throw invalidRequest(`a group has at most ${MAX_ENDPOINTS_PER_GROUP} webhook endpoints; delete one first`);
    }
    const id = randomUUID();
    const secret = newSecret();
    const sealed = seal(secret, id, await keyringOf(services));
    const row = await store.createEndpoint(db(), owner, { ...input, id, secretCiphertext: sealed });
    res.status(201);
    sendJson(res, { data: { ...endpointView(row), secret } });
  }));

  router.get("/v1/webhook-endpoints", route("read:webhooks", async (req, res, ctx, owner) => {
    const q = queryOf(req, ["limit", "cursor"]);
    const size = parseLimit(q.limit);
    const binding = { family: "webhook_endpoints", propertyGroupId: owner.propertyGroupId, query: { propertyId: owner.propertyId } };
    const after = q.cursor ? String(decodeCursor(q.cursor, binding, ctx.cursorSecret)[0]) : null;
    if (after !== null && !isUuid(after)) throw invalidCursor();
    const rows = await store.listEndpoints(db(), owner, after, size + 1);
    const page = rows.slice(0, size);
    const more = rows.length > size;
    sendJson(res, { data: page.map(endpointView), next_cursor: more ? encodeCursor([page[page.length - 1].id], binding, ctx.cursorSecret) : null, has_more: more });
  }));

  router.get("/v1/webhook-endpoints/:id", route("read:webhooks", async (req, res, _ctx, owner) => {
    sendJson(res, { data: endpointView(await found(owner, String(req.params.id))) });
  }));

  router.delete("/v1/webhook-endpoints/:id", route("write:webhooks", async (req, res, _ctx, owner) => {
    const id = String(req.params.id);
    if (!isUuid(id) || !(await store.deleteEndpoint(db(), owner, id))) throw notFound("webhook endpoint", echo(id));
    res.status(204).end();
  }));

  router.post("/v1/webhook-endpoints/:id/rotate-secret", route("write:webhooks", async (req, res, _ctx, owner) => {
    const e = await found(owner, String(req.params.id));
    const secret = newSecret();
    const row = await store.rotateEndpointSecret(db(), owner, e.id, seal(secret, e.id, await keyringOf(services)), new Date(Date.now() + ROTATION_OVERLAP_MS));
    if (!row) throw notFound("webhook endpoint", e.id);
    sendJson(res, { data: { ...endpointView(row), secret } });
  }));

  router.post("/v1/webhook-endpoints/:id/test", route("write:webhooks", async (req, res, _ctx, owner) => {
    const e = await found(owner, String(req.params.id));
    const sealed = await store.endpointSecrets(db(), owner, e.id);
    if (!sealed) throw notFound("webhook endpoint", e.id);
    const secrets = signingSecrets({ id: e.id, ...sealed }, await keyringOf(services));
    const message = pingMessage(newPingId(), e.id, new Date());
    const r = await sendPing(db(), e, secrets, message, { policy: webhookPolicy(services), resolve: resolver() });
    const delivered = r.status !== undefined && r.status >= 200 && r.status < 300;
    sendJson(res, {
      data: {
        message_id: message.id,
        delivered,
        response_code: r.status ?? null,
        duration_ms: r.durationMs,
        error: delivered ? null : r.error ?? `HTTP ${r.status}`,
      },
    });
  }));

  router.get("/v1/webhook-endpoints/:id/deliveries", route("read:webhooks", async (req, res, ctx, owner) => {
    const e = await found(owner, String(req.params.id));
    const q = queryOf(req, ["limit", "cursor"]);
    const size = parseLimit(q.limit);
    const binding = { family: "webhook_deliveries", propertyGroupId: owner.propertyGroupId, query: { endpoint: e.id } };
    let after: { createdAt: Date; id: string } | null = null;
    if (q.cursor) {
      const [at, id] = decodeCursor(q.cursor, binding, ctx.cursorSecret).map(String);
      if (!isUuid(id ?? "") || Number.isNaN(Date.parse(at))) throw invalidCursor();
      after = { createdAt: new Date(at), id };
    }
    const rows = await store.listDeliveries(db(), owner, e.id, after, size + 1);
    const page = rows.slice(0, size);
    const more = rows.length > size;
    const last = page[page.length - 1];
    sendJson(res, {
      data: page.map(deliveryView),
      next_cursor: more ? encodeCursor([last.createdAt.toISOString(), last.id], binding, ctx.cursorSecret) : null,
      has_more: more,
    });
  }));

  router.post("/v1/webhook-endpoints/:id/replay", route("write:webhooks", async (req, res, ctx, owner) => {
    const e = await found(owner, String(req.params.id));
    const body = objectBody(req.body, ["cursor", "since"]);
    if ((body.cursor === undefined) === (body.since === undefined)) {
      throw invalidRequest('send exactly one of cursor (a next_cursor of GET /v1/events without filters) or since (an instant, e.g. "2026-11-27T09:00:00Z")');
    }
    let to: { txid: bigint; seq: bigint } | { since: Date };
    if (body.cursor !== undefined) {
      if (typeof body.cursor !== "string") throw invalidRequest("cursor must be a string: a next_cursor of GET /v1/events without filters");
      const key = decodeCursor(body.cursor, eventsCursorBinding(owner), ctx.cursorSecret).map(String);
      if (key.length !== 2 || !key.every((k) => /^\d{1,19}$/.test(k))) throw invalidCursor();
      to = { txid: BigInt(key[0]), seq: BigInt(key[1]) };
    } else {
      let since: Date;
      try {
        since = parseInstant(body.since);
      } catch {
        throw invalidRequest(`since must be an ISO 8601 instant, e.g. "2026-11-27T09:00:00Z"; got ${echo(body.since)}`);
      }
      to = { since };
    }
    const row = await store.replayEndpoint(db(), owner, e.id, to);
    if (!row) throw notFound("webhook endpoint", e.id);
    sendJson(res, { data: endpointView(row) });
  }));

  for (const [path, methods] of [
    ["/v1/webhook-endpoints", ["GET", "POST"]],
    ["/v1/webhook-endpoints/:id", ["GET", "DELETE"]],
    ["/v1/webhook-endpoints/:id/rotate-secret", ["POST"]],
    ["/v1/webhook-endpoints/:id/test", ["POST"]],
    ["/v1/webhook-endpoints/:id/deliveries", ["GET"]],
    ["/v1/webhook-endpoints/:id/replay", ["POST"]],
  ] as const) {
    router.all(path, (req, res) => {
      res.set("Allow", methods.join(", "));
      res.status(405).json({ error: "method_not_allowed", detail: `${req.method} is not allowed here; use ${methods.join(" or ")}` });
    });
  }
  return router;
}

/** The binding of GET /v1/events cursors without filters (graphql/resolvers/lists.ts boundPage). */
export const eventsCursorBinding = (owner: WebhookOwner) => ({ family: "events", propertyGroupId: owner.propertyGroupId, query: { filter: {}, propertyId: owner.propertyId } });

function queryOf(req: Request, known: string[]): Record<string, string | undefined> {
  const q = req.query as Record<string, unknown>;
  const out: Record<string, string | undefined> = {};
  for (const [k, v] of Object.entries(q)) {
    if (!known.includes(k)) throw invalidRequest(`unknown query parameter ${echo(k)}; known: ${known.join(", ")}`);
    if (typeof v !== "string") throw invalidRequest(`${k} must be given once`);
    out[k] = v;
  }
  return out;
}

function parseLimit(raw: string | undefined): number {
  if (raw === undefined) return pageSize(undefined);
  if (!/^-?\d{1,9}$/.test(raw)) throw invalidRequest(`limit must be an integer, e.g. 50; got ${echo(raw)}`);
  return pageSize(Number(raw));
}

function objectBody(body: unknown, known: string[]): Record<string, unknown> {
  if (body === undefined || body === null || typeof body !== "object" || Array.isArray(body)) {
    throw invalidRequest("the body must be a JSON object (Content-Type: application/json)");
  }
  for (const k of Object.keys(body)) if (!known.includes(k)) throw invalidRequest(`unknown member ${echo(k)}; known: ${known.join(", ")}`);
  return body as Record<string, unknown>;
}

async function parseNewEndpoint(raw: unknown, ctx: RequestContext, owner: WebhookOwner, services: Services, resolve: Resolver) {
  const body = objectBody(raw, ["url", "topics", "property_ids", "description"]);
  if (typeof body.url !== "string" || body.url === "") throw invalidRequest('url is required: an https URL, e.g. "https://example.com/webhooks"');
  const policy = webhookPolicy(services);
  let url: URL;
  try {
    url = checkUrlForm(body.url, policy);
    // The name is resolved once now, so an obviously internal name is refused at once; every send resolves and checks again.
    await resolveChecked(url, policy, resolve);
  } catch (err) {
    if (err instanceof WebhookUrlError) throw invalidRequest(err.message);
    throw err;
  }
  if (!Array.isArray(body.topics) || body.topics.length === 0 || body.topics.length > WEBHOOK_TOPICS.length + 1) {
    throw invalidRequest(`topics is required: a non-empty array of entity types (${WEBHOOK_TOPICS.join(", ")}) or ["*"]`);
  }
  for (const t of body.topics) {
    if (t !== "*" && !(WEBHOOK_TOPICS as readonly unknown[]).includes(t)) throw invalidRequest(`unknown topic ${echo(t)}; known: *, ${WEBHOOK_TOPICS.join(", ")}`);
  }
  const topics = [...new Set(body.topics as string[])];
  let propertyIds: string[] = [];
  if (body.property_ids !== undefined && body.property_ids !== null) {
    if (!Array.isArray(body.property_ids) || body.property_ids.length > MAX_PROPERTY_IDS || !body.property_ids.every((p) => typeof p === "string" && isUuid(p))) {
      throw invalidRequest(`property_ids must be an array of at most ${MAX_PROPERTY_IDS} property uuids`);
    }
    propertyIds = [...new Set((body.property_ids as string[]).map((p) => p.toLowerCase()))];
    for (const p of propertyIds) {
      if (!(await propertyInGroup(services.db.reader, p, owner.propertyGroupId))) throw apiError("invalid_request", `property ${p} is not a property of this group`);
    }
  }
  if (owner.propertyId) {
    // A credential narrowed to one property makes and sees endpoints of that property only.
    if (propertyIds.length > 0 && (propertyIds.length !== 1 || propertyIds[0] !== owner.propertyId)) {
      throw forbidden("this credential is narrowed to one property: property_ids may only name that property");
    }
    propertyIds = [owner.propertyId];
  }
  if (body.description !== undefined && body.description !== null && (typeof body.description !== "string" || body.description.length > MAX_DESCRIPTION)) {
    throw invalidRequest(`description must be a string of at most ${MAX_DESCRIPTION} characters`);
  }
  return { url: url.toString(), topics, propertyIds, description: (body.description as string | undefined) ?? null };
}
