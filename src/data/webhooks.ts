// Webhook endpoints and their deliveries (issue 29).
//
// Two kinds of callers: the /v1/webhook-endpoints routes (one group, through `WebhookOwner`: the
// tenant rule is written once, in `owned`), and the sender (cross-tenant background work on the
// unscoped client, leased like destination_bindings in data/stores/delivery.ts: each function one short
// statement, no transaction or row lock held while a receiver answers).
import { Prisma, type PrismaClient } from "../generated/prisma/client";
import { propertyInGroup } from "./stores/credentials";
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
 */
export async function createEndpoint(db: PrismaClient, o: WebhookOwner, e: NewEndpoint): Promise<WebhookEndpointRow> {
  const [row] = await db.$queryRaw<WebhookEndpointRow[]>`
    INSERT INTO webhook_endpoints (id, property_group_id, url, topics, property_ids, description, secret_ciphertext, cursor_txid, cursor_seq)
    SELECT ${e.id}::uuid, ${o.propertyGroupId}::uuid, ${e.url}, ${e.topics}::text[], ${e.propertyIds}::uuid[], ${e.description},
      ${e.secretCiphertext}, h.txid, h.seq
    FROM (${logEnd(o.propertyGroupId, o.propertyId)}) h
    RETURNING ${ENDPOINT_COLUMNS}`;
  return row;
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

/** How many endpoints the group has (the per-group cap). */
export async function countEndpoints(db: PrismaClient, propertyGroupId: string): Promise<number> {
  const [row] = await db.$queryRaw<{ n: number }[]>`SELECT count(*)::int AS n FROM webhook_endpoints WHERE property_group_id = ${propertyGroupId}::uuid`;
  return row.n;
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

/** The new secret seals; the old one keeps signing beside it until `previousUntil`. */
export async function rotateEndpointSecret(db: PrismaClient, o: WebhookOwner, id: string, sealed: string, previousUntil: Date): Promise<WebhookEndpointRow | undefined> {
  const [row] = await db.$queryRaw<WebhookEndpointRow[]>`
    UPDATE webhook_endpoints SET previous_secret_ciphertext = secret_ciphertext, previous_secret_until = ${previousUntil},
      secret_ciphertext = ${sealed}, updated_at = now()
    WHERE id = ${id}::uuid AND ${owned(o)}
    RETURNING ${ENDPOINT_COLUMNS}`;
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
 */
export async function replayEndpoint(
  db: PrismaClient,
  o: WebhookOwner,
  id: string,
  to: { txid: bigint; seq: bigint } | { since: Date },
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
      next_attempt_at = NULL, updated_at = now()
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

export interface NewDelivery {
  endpointId: string;
  propertyGroupId: string;
  messageId: string;
  eventType: string;
  eventSeq: bigint | null;
  attempt: number;
  status: "succeeded" | "failed" | "refused";
  responseCode: number | null;
  durationMs: number;
  error: string | null;
  nextRetryAt: Date | null;
}

export async function recordDelivery(db: PrismaClient, d: NewDelivery): Promise<void> {
  await db.$executeRaw`
    INSERT INTO webhook_deliveries (endpoint_id, property_group_id, message_id, event_type, event_seq, attempt, status,
      response_code, duration_ms, error, next_retry_at)
    SELECT ${d.endpointId}::uuid, ${d.propertyGroupId}::uuid, ${d.messageId}, ${d.eventType}, ${d.eventSeq}, ${d.attempt},
      ${d.status}, ${d.responseCode}, ${d.durationMs}, ${d.error}, ${d.nextRetryAt}
    -- An endpoint deleted while its call was in flight: the attempt is not recorded (nor an error).
    WHERE EXISTS (SELECT 1 FROM webhook_endpoints WHERE id = ${d.endpointId}::uuid AND property_group_id = ${d.propertyGroupId}::uuid)`;
}

// ---------------------------------------------------------------------------------------------
// The sender: leases, checkpoints and the events to send. Each function is one short statement.
// ---------------------------------------------------------------------------------------------

export interface ClaimedEndpoint {
  id: string;
  propertyGroupId: string;
  url: string;
  topics: string[];
  propertyIds: string[];
  cursorTxid: bigint;
  cursorSeq: bigint;
  failureCount: number;
  failingSince: Date | null;
  secretCiphertext: string;
  previousSecretCiphertext: string | null;
  previousSecretUntil: Date | null;
  leaseToken: string;
}

/** The endpoint's filter on `events ev`: its group, topics and properties. */
function selects(alias: string) {
  const e = Prisma.raw(alias);
  return Prisma.sql`ev.property_group_id = ${e}.property_group_id
    AND ('*' = ANY(${e}.topics) OR ev.entity_type::text = ANY(${e}.topics))
    AND (cardinality(${e}.property_ids) = 0 OR ev.property_id = ANY(${e}.property_ids))`;
}

/** Finished transactions only (events.ts FINISHED): the walk never passes a late commit. */
const FINISHED = Prisma.sql`ev.txid < pg_snapshot_xmin(pg_current_snapshot())::text::bigint`;

/**
 * Leases up to `limit` due endpoints for `leaseMs`: active, not backing off, not leased by a live
 * sender, with an event they select after their cursor; the least recently served first (a release
 * leaves lease_until at its time), so a few busy endpoints cannot starve the others. The SKIP
 * LOCKED row locks last this statement only; lease times are the database's clock.
 */
export async function claimDueEndpoints(db: PrismaClient, exclude: string[], at: Date, leaseMs: number, limit: number): Promise<ClaimedEndpoint[]> {
  return db.$queryRaw<ClaimedEndpoint[]>`
    WITH due AS (
      SELECT w.id FROM webhook_endpoints w
      WHERE w.state = 'active'
        AND (w.next_attempt_at IS NULL OR w.next_attempt_at <= ${at})
        AND (w.lease_until IS NULL OR w.lease_until < now())
        AND NOT (w.id = ANY(${exclude}::uuid[]))
        AND EXISTS (SELECT 1 FROM events ev WHERE ${selects("w")} AND ${FINISHED}
          AND ev.txid >= w.cursor_txid AND (ev.txid > w.cursor_txid OR ev.seq > w.cursor_seq))
      ORDER BY w.next_attempt_at ASC NULLS FIRST, w.lease_until ASC NULLS FIRST, w.id
      LIMIT ${limit}
      FOR UPDATE OF w SKIP LOCKED
    )
    UPDATE webhook_endpoints w SET lease_token = gen_random_uuid(), lease_until = now() + make_interval(secs => ${leaseMs / 1000})
    FROM due WHERE w.id = due.id
    RETURNING w.id::text AS id, w.property_group_id::text AS "propertyGroupId", w.url, w.topics,
      COALESCE(w.property_ids::text[], '{}') AS "propertyIds", w.cursor_txid AS "cursorTxid", w.cursor_seq AS "cursorSeq",
      w.failure_count AS "failureCount", w.failing_since AS "failingSince", w.secret_ciphertext AS "secretCiphertext",
      w.previous_secret_ciphertext AS "previousSecretCiphertext", w.previous_secret_until AS "previousSecretUntil",
      w.lease_token::text AS "leaseToken"`;
}

/** An event as GET /v1/events shows it, plus its timeline position. */
export interface WebhookEvent {
  txid: bigint;
  seq: string;
  entity_type: string;
  entity_id: string;
  guest_profile_id: string | null;
  property_id: string | null;
  integration_id: string | null;
  operation: string;
  delta: unknown;
  occurred_at: Date;
  recorded_at: Date;
}

/** The next `take` events the endpoint selects after its cursor, in timeline order. */
export function eventsAfterCursor(db: PrismaClient, e: ClaimedEndpoint, take: number): Promise<WebhookEvent[]> {
  return db.$queryRaw<WebhookEvent[]>`${nextEvents(e, { txid: e.cursorTxid, seq: e.cursorSeq }, take)}`;
}

function nextEvents(e: ClaimedEndpoint, after: { txid: bigint; seq: bigint }, take: number) {
  return Prisma.sql`
    SELECT ev.txid, ev.seq::text AS seq, ev.entity_type::text AS entity_type, ev.entity_id::text AS entity_id,
      ev.guest_profile_id::text AS guest_profile_id, ev.property_id::text AS property_id, ev.integration_id::text AS integration_id,
      ev.operation::text AS operation, ev.delta, ev.occurred_at, ev.recorded_at
    FROM events ev, (SELECT ${e.propertyGroupId}::uuid AS property_group_id, ${e.topics}::text[] AS topics,
      ${e.propertyIds}::uuid[] AS property_ids) w
    WHERE ${selects("w")} AND ${FINISHED}
      AND ev.txid >= ${after.txid} AND (ev.txid > ${after.txid} OR ev.seq > ${after.seq}::bigint)
    ORDER BY ev.txid, ev.seq LIMIT ${take}`;
}

/** A POST answered 2xx, to be recorded at the next checkpoint. */
export interface SucceededAttempt {
  messageId: string;
  eventType: string;
  eventSeq: string;
  attempt: number;
  responseCode: number;
  durationMs: number;
}

/**
 * The sender's checkpoint, one statement: the attempts answered 2xx since the last one recorded
 * (one multi-row insert), the cursor moved to the last of them (failure state cleared), and the
 * lease renewed (or, with `release`, given up). False when the lease is lost (another instance took
 * over after this one stalled) or the endpoint was disabled or deleted: send nothing more. The
 * attempts are recorded either way (they happened), unless the endpoint is gone.
 */
export async function checkpointEndpoint(
  db: PrismaClient,
  e: ClaimedEndpoint,
  leaseMs: number,
  cursor?: { txid: bigint; seq: bigint },
  attempts: SucceededAttempt[] = [],
  release = false,
): Promise<boolean> {
  const rows = await db.$queryRaw<{ state: string }[]>`${checkpointed(e, leaseMs, cursor, attempts, release)} SELECT state FROM moved`;
  return rows[0]?.state === "active";
}

/**
 * checkpointEndpoint and then eventsAfterCursor from the new cursor, in one statement (a lane's
 * round trip per batch): null when the lease is lost or the endpoint no longer active.
 */
export async function checkpointAndRead(
  db: PrismaClient,
  e: ClaimedEndpoint,
  leaseMs: number,
  cursor: { txid: bigint; seq: bigint } | undefined,
  attempts: SucceededAttempt[],
  take: number,
): Promise<WebhookEvent[] | null> {
  const from = cursor ?? { txid: e.cursorTxid, seq: e.cursorSeq };
  const rows = await db.$queryRaw<(WebhookEvent & { state: string })[]>`${checkpointed(e, leaseMs, cursor, attempts, false)}
    SELECT m.state, n.* FROM moved m LEFT JOIN (${nextEvents(e, from, take)}) n ON m.state = 'active'
    ORDER BY n.txid, n.seq::bigint`;
  if (rows[0]?.state !== "active") return null;
  return rows[0].txid === null ? [] : rows;
}

/** The WITH of a checkpoint: `moved` (the endpoint row, when the lease is held) and the attempts inserted. */
function checkpointed(e: ClaimedEndpoint, leaseMs: number, cursor: { txid: bigint; seq: bigint } | undefined, attempts: SucceededAttempt[], release: boolean) {
  const move = cursor
    ? Prisma.sql`cursor_txid = ${cursor.txid}, cursor_seq = ${cursor.seq}::bigint, failure_count = 0, failing_since = NULL,
        next_attempt_at = NULL, last_error = NULL,`
    : Prisma.empty;
  // A released endpoint keeps lease_until as its last-served time (claimDueEndpoints' order).
  const lease = release ? Prisma.sql`lease_token = NULL, lease_until = now()` : Prisma.sql`lease_until = now() + make_interval(secs => ${leaseMs / 1000})`;
  const record = attempts.length === 0 ? Prisma.empty : Prisma.sql`, recorded AS (
      INSERT INTO webhook_deliveries (endpoint_id, property_group_id, message_id, event_type, event_seq, attempt, status, response_code, duration_ms)
      SELECT ${e.id}::uuid, ${e.propertyGroupId}::uuid, a.message_id, a.event_type, a.event_seq, a.attempt, 'succeeded', a.response_code, a.duration_ms
      FROM unnest(${attempts.map((a) => a.messageId)}::text[], ${attempts.map((a) => a.eventType)}::text[], ${attempts.map((a) => a.eventSeq)}::bigint[],
        ${attempts.map((a) => a.attempt)}::int[], ${attempts.map((a) => a.responseCode)}::int[], ${attempts.map((a) => a.durationMs)}::int[])
        AS a(message_id, event_type, event_seq, attempt, response_code, duration_ms)
      -- An endpoint deleted while its calls were in flight: the attempts are not recorded (nor an error).
      WHERE EXISTS (SELECT 1 FROM webhook_endpoints WHERE id = ${e.id}::uuid AND property_group_id = ${e.propertyGroupId}::uuid))`;
  return Prisma.sql`
    WITH moved AS (
      UPDATE webhook_endpoints SET ${move} ${lease}
      WHERE id = ${e.id}::uuid AND lease_token = ${e.leaseToken}::uuid
      RETURNING state::text AS state) ${record}`;
}

/** A failed attempt: counted, not due before `nextAttemptAt`, lease ended. */
export async function recordEndpointBackoff(db: PrismaClient, e: ClaimedEndpoint, failureCount: number, failingSince: Date, nextAttemptAt: Date, lastError: string) {
  await db.$executeRaw`
    UPDATE webhook_endpoints SET failure_count = ${failureCount}, failing_since = ${failingSince}, next_attempt_at = ${nextAttemptAt},
      last_error = ${lastError}, lease_token = NULL, lease_until = NULL
    WHERE id = ${e.id}::uuid AND lease_token = ${e.leaseToken}::uuid`;
}

/** 410 Gone, or the schedule exhausted: disabled with the reason shown, until replayed. */
export async function disableEndpoint(db: PrismaClient, e: ClaimedEndpoint, failureCount: number, reason: string) {
  await db.$executeRaw`
    UPDATE webhook_endpoints SET state = 'disabled', disabled_reason = ${reason}, disabled_at = now(), failure_count = ${failureCount},
      next_attempt_at = NULL, last_error = ${reason}, lease_token = NULL, lease_until = NULL, updated_at = now()
    WHERE id = ${e.id}::uuid AND lease_token = ${e.leaseToken}::uuid`;
}

/** The group's current end of the timeline (data/events.ts order): where a stream without a cursor starts. */
export async function eventLogEnd(db: PrismaClient, propertyGroupId: string): Promise<{ txid: string; seq: string }> {
  const [row] = await db.$queryRaw<{ txid: string; seq: string }[]>`SELECT h.txid::text AS txid, h.seq::text AS seq FROM (${logEnd(propertyGroupId)}) h`;
  return row;
}

/**
 * One rotation batch of webhook signing secrets (current and previous), like resealConnectionBatch
 * in data/stores/delivery.ts: rows locked FOR UPDATE in one transaction; `reseal` returns a new ciphertext
 * or null to leave it. Returns the last id when the batch was full.
 */
export function resealWebhookBatch(
  prisma: PrismaClient,
  after: string | null,
  batchSize: number,
  reseal: (id: string, ciphertext: string) => string | null,
): Promise<string | null> {
  return prisma.$transaction(async (tx) => {
    const rows = await tx.$queryRaw<{ id: string; secret_ciphertext: string; previous_secret_ciphertext: string | null }[]>`
      SELECT id::text, secret_ciphertext, previous_secret_ciphertext FROM webhook_endpoints
      WHERE ${after}::uuid IS NULL OR id > ${after}::uuid
      ORDER BY id LIMIT ${batchSize}
      FOR UPDATE`;
    for (const row of rows) {
      const current = reseal(row.id, row.secret_ciphertext);
      const previous = row.previous_secret_ciphertext === null ? null : reseal(row.id, row.previous_secret_ciphertext);
      if (current !== null || previous !== null) {
        await tx.$executeRaw`UPDATE webhook_endpoints SET secret_ciphertext = COALESCE(${current}, secret_ciphertext),
          previous_secret_ciphertext = COALESCE(${previous}, previous_secret_ciphertext) WHERE id = ${row.id}::uuid`;
      }
    }
    return rows.length === batchSize ? rows[rows.length - 1].id : null;
  });
}

/** Events counted per endpoint at most: a scrape stays cheap whatever the backlog. */
export const PENDING_COUNT_CAP = 10_000;

/**
 * One row per endpoint for /metrics (observability/metrics.ts): its state, consecutive failures and
 * the finished events it selects after its cursor (at most PENDING_COUNT_CAP). One statement.
 */
export function webhookGaugeRows(db: PrismaClient, limit: number): Promise<{ id: string; state: string; failures: number; pending: number }[]> {
  return db.$queryRaw`
    SELECT w.id::text AS id, w.state::text AS state, w.failure_count AS failures,
      (SELECT count(*)::int FROM (SELECT 1 FROM events ev WHERE ${selects("w")} AND ${FINISHED}
        AND ev.txid >= w.cursor_txid AND (ev.txid > w.cursor_txid OR ev.seq > w.cursor_seq) LIMIT ${PENDING_COUNT_CAP}) p) AS pending
    FROM webhook_endpoints w ORDER BY w.id LIMIT ${limit}`;
}

/** Deletes up to `limit` delivery attempts recorded before `before` (retention); returns how many. */
export function pruneDeliveries(db: PrismaClient, before: Date, limit: number): Promise<number> {
  return db.$executeRaw`DELETE FROM webhook_deliveries WHERE id IN (
    SELECT id FROM webhook_deliveries WHERE created_at < ${before} LIMIT ${limit})`;
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
    count: () => countEndpoints(db(), o.propertyGroupId),
    get: (id: string, fresh = false) => getEndpoint(fresh ? db() : r.prisma, o, id),
    list: (afterId: string | null, take: number) => listEndpoints(r.prisma, o, afterId, take),
    create: (e: NewEndpoint) => createEndpoint(db(), o, e),
    delete: (id: string) => deleteEndpoint(db(), o, id),
    rotate: (id: string, sealed: string, previousUntil: Date) => rotateEndpointSecret(db(), o, id, sealed, previousUntil),
    secrets: (id: string) => endpointSecrets(db(), o, id),
    replay: (id: string, to: { txid: bigint; seq: bigint } | { since: Date }) => replayEndpoint(db(), o, id, to),
    deliveries: (endpointId: string, after: { createdAt: Date; id: string } | null, take: number) => listDeliveries(r.prisma, o, endpointId, after, take),
    /** One statement, after the receiver answered (the test ping holds nothing open while it waits). */
    recordDelivery: (d: NewDelivery) => recordDelivery(db(), d),
    /** Whether a property is the group's (property_ids of a new endpoint). */
    isGroupProperty: async (propertyId: string) => (await propertyInGroup(r.group, propertyId, o.propertyGroupId)) !== null,
  };
}
