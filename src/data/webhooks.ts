// Webhook endpoints and their deliveries (issue 29), for the /v1/webhook-endpoints routes: one group,
// through `WebhookOwner` (the tenant rule is written once, in `owned`). The sender's cross-tenant
// storage is data/stores/webhook-sender.ts.
import { asGroup } from "../db/session";
import { Prisma, type PrismaClient } from "../generated/prisma/client";
import { propertyInGroup } from "./stores/credentials";
import { recordDelivery, type NewDelivery } from "./stores/webhook-sender";
import type { Readers } from "./readers";

/** Who asks: the group, and the one property a narrowed credential sees (it sees only endpoints of that property). */
export interface WebhookOwner {
  propertyGroupId: string;
  propertyId: string | null;
}

export interface WebhookEndpointRow {
  id: string;
  propertyGroupId: string;
  url: string;
  topics: string[];
  propertyIds: string[];
  description: string | null;
  state: "active" | "disabled";
  disabledReason: string | null;
  disabledAt: Date | null;
  cursorTxid: bigint;
  cursorSeq: bigint;
  failureCount: number;
  failingSince: Date | null;
  nextAttemptAt: Date | null;
  lastError: string | null;
  previousSecretUntil: Date | null;
  createdAt: Date;
  updatedAt: Date;
}

const ENDPOINT_COLUMNS = Prisma.raw(`id::text AS id, property_group_id::text AS "propertyGroupId", url, topics,
  COALESCE(property_ids::text[], '{}') AS "propertyIds", description, state::text AS state, disabled_reason AS "disabledReason",
  disabled_at AS "disabledAt", cursor_txid AS "cursorTxid", cursor_seq AS "cursorSeq", failure_count AS "failureCount",
  failing_since AS "failingSince", next_attempt_at AS "nextAttemptAt", last_error AS "lastError",
  previous_secret_until AS "previousSecretUntil", created_at AS "createdAt", updated_at AS "updatedAt"`);

/** The tenant rule of every route: the group, and for a narrowed credential its property's endpoints only. */
function owned(o: WebhookOwner, alias = "") {
  const t = Prisma.raw(alias ? `${alias}.` : "");
  return o.propertyId
    ? Prisma.sql`${t}property_group_id = ${o.propertyGroupId}::uuid AND ${t}property_ids = ARRAY[${o.propertyId}::uuid]`
    : Prisma.sql`${t}property_group_id = ${o.propertyGroupId}::uuid`;
}

export interface NewEndpoint {
  url: string;
  topics: string[];
  propertyIds: string[];
  description: string | null;
  /** Sealed with secret-box under the endpoint's id (so it is chosen here, before the insert). */
  id: string;
  secretCiphertext: string;
}

/**
 * A new endpoint starts at the log's current end: it receives what is appended from now on (replay
 * sends older events). The position is the timeline's watermark, read in the same statement.
 * Undefined when the group has `max` endpoints already: the group's creates take turns on a
 * transaction-scoped advisory lock, so each counts the others' committed rows (concurrent creates
 * cannot pass the cap). The transaction is two short statements and holds nothing else.
 */
export async function createEndpoint(db: PrismaClient, o: WebhookOwner, e: NewEndpoint, max: number): Promise<WebhookEndpointRow | undefined> {
  return db.$transaction(async (tx) => {
    await tx.$executeRaw`SELECT pg_advisory_xact_lock(hashtextextended(${`webhook_endpoints:${o.propertyGroupId}`}, 0))`;
    const [row] = await tx.$queryRaw<WebhookEndpointRow[]>`
      INSERT INTO webhook_endpoints (id, property_group_id, url, topics, property_ids, description, secret_ciphertext, cursor_txid, cursor_seq)
      SELECT ${e.id}::uuid, ${o.propertyGroupId}::uuid, ${e.url}, ${e.topics}::text[], ${e.propertyIds}::uuid[], ${e.description},
        ${e.secretCiphertext}, h.txid, h.seq
      FROM (${logEnd(o.propertyGroupId, o.propertyId)}) h
      WHERE (SELECT count(*) FROM webhook_endpoints WHERE property_group_id = ${o.propertyGroupId}::uuid) < ${max}
      RETURNING ${ENDPOINT_COLUMNS}`;
    return row;
  });
}

/**
 * The group's last timeline position a reader can see now: (the newest finished txid, its max seq),
 * or (0, 0). A position past every finished row and before every unfinished one: events.ts orders by
 * (txid, seq) and shows only txid < xmin. With `propertyId` (a narrowed caller's endpoint, which
 * selects only that property's events) the position among that property's events: every event the
 * endpoint selects and a reader sees now is at or before it, so it is as good a start, and the
 * statement reads no other property's rows.
 */
function logEnd(groupId: string, propertyId: string | null = null) {
  const own = propertyId ? Prisma.sql`AND property_id = ${propertyId}::uuid` : Prisma.empty;
  return Prisma.sql`SELECT COALESCE(max(txid), 0) AS txid, COALESCE(max(seq), 0) AS seq FROM events
    WHERE property_group_id = ${groupId}::uuid ${own} AND txid = (SELECT max(txid) FROM events
      WHERE property_group_id = ${groupId}::uuid ${own} AND txid < pg_snapshot_xmin(pg_current_snapshot())::text::bigint)`;
}

export async function getEndpoint(db: PrismaClient, o: WebhookOwner, id: string): Promise<WebhookEndpointRow | undefined> {
  const [row] = await db.$queryRaw<WebhookEndpointRow[]>`SELECT ${ENDPOINT_COLUMNS} FROM webhook_endpoints WHERE id = ${id}::uuid AND ${owned(o)}`;
  return row;
}

/** Keyset page by id: `take` rows after `afterId`. */
export function listEndpoints(db: PrismaClient, o: WebhookOwner, afterId: string | null, take: number): Promise<WebhookEndpointRow[]> {
  return db.$queryRaw<WebhookEndpointRow[]>`
    SELECT ${ENDPOINT_COLUMNS} FROM webhook_endpoints
    WHERE ${owned(o)} AND (${afterId}::uuid IS NULL OR id > ${afterId}::uuid)
    ORDER BY id LIMIT ${take}`;
}

export async function deleteEndpoint(db: PrismaClient, o: WebhookOwner, id: string): Promise<boolean> {
  return (await db.$executeRaw`DELETE FROM webhook_endpoints WHERE id = ${id}::uuid AND ${owned(o)}`) > 0;
}

/**
 * The new secret seals; the old one keeps signing beside it until `previousUntil`. `leased`: a
 * sender's lane holds the endpoint now (it hears the new secret at its next checkpoint).
 */
export async function rotateEndpointSecret(db: PrismaClient, o: WebhookOwner, id: string, sealed: string, previousUntil: Date): Promise<(WebhookEndpointRow & { leased: boolean }) | undefined> {
  const [row] = await db.$queryRaw<(WebhookEndpointRow & { leased: boolean })[]>`
    UPDATE webhook_endpoints SET previous_secret_ciphertext = secret_ciphertext, previous_secret_until = ${previousUntil},
      secret_ciphertext = ${sealed}, updated_at = now()
    WHERE id = ${id}::uuid AND ${owned(o)}
    RETURNING ${ENDPOINT_COLUMNS}, (lease_token IS NOT NULL AND lease_until > now()) AS leased`;
  return row;
}

/** The sealed secrets of one endpoint of the group (the test ping signs with them). */
export async function endpointSecrets(db: PrismaClient, o: WebhookOwner, id: string) {
  const [row] = await db.$queryRaw<{ secretCiphertext: string; previousSecretCiphertext: string | null; previousSecretUntil: Date | null }[]>`
    SELECT secret_ciphertext AS "secretCiphertext", previous_secret_ciphertext AS "previousSecretCiphertext",
      previous_secret_until AS "previousSecretUntil"
    FROM webhook_endpoints WHERE id = ${id}::uuid AND ${owned(o)}`;
  return row;
}

/**
 * Replay: the endpoint's cursor moves back to (txid, seq) (or to just before the first event
 * recorded at or after `since`), and a disabled endpoint is active again. Only backwards: a
 * position ahead of the cursor is left alone (that would skip events).
 *
 * The lease is taken from the lane that holds the endpoint, on whichever instance: its next
 * checkpoint finds the lease gone, so it neither moves the cursor back over the replay nor sends
 * more. A held lease is kept from new claims for `quietMs` (sender.ts LANES_HEAR_WITHIN_MS: the
 * old lane has stopped sending by then), so the replayed events do not cross its last ones.
 */
export async function replayEndpoint(
  db: PrismaClient,
  o: WebhookOwner,
  id: string,
  to: { txid: bigint; seq: bigint } | { since: Date },
  quietMs: number,
): Promise<WebhookEndpointRow | undefined> {
  const target = "since" in to
    ? Prisma.sql`SELECT COALESCE(min(txid), 9223372036854775807) - 1 AS txid, 9223372036854775807::bigint AS seq FROM events
        WHERE property_group_id = ${o.propertyGroupId}::uuid ${o.propertyId ? Prisma.sql`AND property_id = ${o.propertyId}::uuid` : Prisma.empty}
          AND recorded_at >= ${to.since}`
    : Prisma.sql`SELECT ${to.txid}::bigint AS txid, ${to.seq}::bigint AS seq`;
  const [row] = await db.$queryRaw<WebhookEndpointRow[]>`
    WITH t AS (${target})
    UPDATE webhook_endpoints SET
      cursor_txid = CASE WHEN (t.txid, t.seq) < (cursor_txid, cursor_seq) THEN t.txid ELSE cursor_txid END,
      cursor_seq = CASE WHEN (t.txid, t.seq) < (cursor_txid, cursor_seq) THEN t.seq ELSE cursor_seq END,
      state = 'active', disabled_reason = NULL, disabled_at = NULL, failure_count = 0, failing_since = NULL,
      next_attempt_at = NULL, updated_at = now(), lease_token = NULL,
      lease_until = CASE WHEN lease_token IS NOT NULL AND lease_until > now() THEN now() + make_interval(secs => ${quietMs / 1000}) ELSE lease_until END
    FROM t WHERE id = ${id}::uuid AND ${owned(o)}
    RETURNING ${ENDPOINT_COLUMNS}`;
  return row;
}

export interface WebhookDeliveryRow {
  id: string;
  messageId: string;
  eventType: string;
  eventSeq: bigint | null;
  attempt: number;
  status: string;
  responseCode: number | null;
  durationMs: number;
  error: string | null;
  nextRetryAt: Date | null;
  createdAt: Date;
}

/** Newest first, keyset on (created_at, id). */
export function listDeliveries(db: PrismaClient, o: WebhookOwner, endpointId: string, after: { createdAt: Date; id: string } | null, take: number) {
  const before = after ? Prisma.sql`AND (d.created_at, d.id) < (${after.createdAt}, ${after.id}::uuid)` : Prisma.empty;
  return db.$queryRaw<WebhookDeliveryRow[]>`
    SELECT d.id::text AS id, d.message_id AS "messageId", d.event_type AS "eventType", d.event_seq AS "eventSeq", d.attempt,
      d.status, d.response_code AS "responseCode", d.duration_ms AS "durationMs", d.error, d.next_retry_at AS "nextRetryAt",
      d.created_at AS "createdAt"
    FROM webhook_deliveries d JOIN webhook_endpoints e ON e.id = d.endpoint_id
    WHERE d.endpoint_id = ${endpointId}::uuid AND ${owned(o, "e")} ${before}
    ORDER BY d.created_at DESC, d.id DESC LIMIT ${take}`;
}


/** The group's current end of the timeline (data/events.ts order): where a stream without a cursor starts. */
export async function eventLogEnd(db: PrismaClient, propertyGroupId: string): Promise<{ txid: string; seq: string }> {
  const [row] = await asGroup(propertyGroupId, () => db.$queryRaw<{ txid: string; seq: string }[]>`SELECT h.txid::text AS txid, h.seq::text AS seq FROM (${logEnd(propertyGroupId)}) h`);
  return row;
}

/**
 * The request's handle (data/index.ts): the routes' functions above, bound to the caller's scope
 * (the scoped clients' tenant extension covers model calls only; `owned` is the tenant rule of these
 * raw statements). Reads go where the request reads (the replica when one serves), like every other
 * read; a mutation reads the endpoint it changes from the primary (`fresh`), as pause/resume do.
 */
export function webhooks(r: Readers) {
  const db = () => r.primary;
  const o: WebhookOwner = { propertyGroupId: r.scope.propertyGroupId, propertyId: r.scope.propertyId };
  return {
    owner: o,
    get: (id: string, fresh = false) => getEndpoint(fresh ? db() : r.prisma, o, id),
    list: (afterId: string | null, take: number) => listEndpoints(r.prisma, o, afterId, take),
    create: (e: NewEndpoint, max: number) => createEndpoint(db(), o, e, max),
    delete: (id: string) => deleteEndpoint(db(), o, id),
    rotate: (id: string, sealed: string, previousUntil: Date) => rotateEndpointSecret(db(), o, id, sealed, previousUntil),
    secrets: (id: string) => endpointSecrets(db(), o, id),
    replay: (id: string, to: { txid: bigint; seq: bigint } | { since: Date }, quietMs: number) => replayEndpoint(db(), o, id, to, quietMs),
    deliveries: (endpointId: string, after: { createdAt: Date; id: string } | null, take: number) => listDeliveries(r.prisma, o, endpointId, after, take),
    /** One statement, after the receiver answered (the test ping holds nothing open while it waits). */
    recordDelivery: (d: NewDelivery) => recordDelivery(db(), d),
    /** Whether a property is the group's (property_ids of a new endpoint). */
    isGroupProperty: async (propertyId: string) => (await propertyInGroup(r.group, propertyId, o.propertyGroupId)) !== null,
  };
}
