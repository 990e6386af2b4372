// The webhook sender's storage (src/webhooks/sender.ts): cross-tenant background work on the
// unscoped client, leased like destination_bindings in data/stores/delivery.ts: each function one
// short statement, no transaction or row lock held while a receiver answers. Also the rotation of
// signing secrets, the gauges of /metrics and the retention of delivery attempts. The endpoint
// routes' storage, one group's, is data/webhooks.ts.
import type { QueryResultRow } from "pg";
import { Prisma, type PrismaClient } from "../../generated/prisma/client";
import type { Sql } from "../../generated/prisma/internal/prismaNamespace";
import { poolOf } from "../../db/database";
import { runStatement } from "../../db/sql-count";
import { asGroup } from "../../db/session";

/** An attempt, recorded after the receiver answered (also by the routes' test ping). */
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

/** How many more lanes each group may take in one claim (the worker's fair share, webhooks/sender.ts LaneShares). */
export interface GroupRoom {
  /** Groups that hold lanes already, and how many more each may take. */
  groups: string[];
  left: number[];
  /** What any other group may take. */
  share: number;
  /**
   * Lanes the claim may take beyond each lane-less group's first one, all groups together: the
   * free lanes less the reserve, which only groups holding no lane reach (one lane each).
   */
  beyondFirst: number;
}

/**
 * Leases up to `limit` due endpoints for `leaseMs`: active, not backing off, not leased by a live
 * sender, with an event they select after their cursor. Taken in turns across groups (each group's
 * first due endpoint before any group's second), at most `room` per group, and within a group the
 * least recently served first (a release leaves lease_until at its time), so neither a few busy
 * endpoints nor one group's many can starve the others. The first lane of a group holding none
 * comes before any other claim and may use the reserve; every other claim counts against
 * `room.beyondFirst`. The SKIP LOCKED row locks last this statement only (the state and lease are
 * checked again on the locked row); lease times are the database's clock.
 */
export async function claimDueEndpoints(db: PrismaClient, exclude: string[], at: Date, leaseMs: number, limit: number, room?: GroupRoom): Promise<ClaimedEndpoint[]> {
  const share = room?.share ?? limit;
  const beyondFirst = room?.beyondFirst ?? limit;
  return db.$queryRaw<ClaimedEndpoint[]>`
    WITH due AS (
      SELECT w.id, w.next_attempt_at, w.lease_until,
        row_number() OVER (PARTITION BY w.property_group_id ORDER BY w.next_attempt_at ASC NULLS FIRST, w.lease_until ASC NULLS FIRST, w.id) AS turn,
        COALESCE(r.left_n, ${share}) AS room, r.group_id IS NULL AS laneless
      FROM webhook_endpoints w
      LEFT JOIN unnest(${room?.groups ?? []}::uuid[], ${room?.left ?? []}::int[]) AS r(group_id, left_n) ON r.group_id = w.property_group_id
      WHERE w.state = 'active'
        AND (w.next_attempt_at IS NULL OR w.next_attempt_at <= ${at})
        AND (w.lease_until IS NULL OR w.lease_until < now())
        AND NOT (w.id = ANY(${exclude}::uuid[]))
        AND EXISTS (SELECT 1 FROM events ev WHERE ${selects("w")} AND ${FINISHED}
          AND ev.txid >= w.cursor_txid AND (ev.txid > w.cursor_txid OR ev.seq > w.cursor_seq))
    ), ranked AS (
      -- A lane-less group's first lane, or the how-manieth other claim (held to beyondFirst).
      SELECT d.*, d.laneless AND d.turn = 1 AS first_lane,
        row_number() OVER (PARTITION BY d.laneless AND d.turn = 1 ORDER BY d.turn, d.next_attempt_at ASC NULLS FIRST, d.lease_until ASC NULLS FIRST, d.id) AS k
      FROM due d WHERE d.turn <= d.room
    ), chosen AS (
      SELECT w.id FROM webhook_endpoints w JOIN ranked d ON d.id = w.id
      WHERE (d.first_lane OR d.k <= ${beyondFirst}) AND w.state = 'active' AND (w.lease_until IS NULL OR w.lease_until < now())
      ORDER BY d.first_lane DESC, d.turn, d.next_attempt_at ASC NULLS FIRST, d.lease_until ASC NULLS FIRST, w.id
      LIMIT ${limit}
      FOR UPDATE OF w SKIP LOCKED
    )
    UPDATE webhook_endpoints w SET lease_token = gen_random_uuid(), lease_until = now() + make_interval(secs => ${leaseMs / 1000})
    FROM chosen WHERE w.id = chosen.id
    RETURNING w.id::text AS id, w.property_group_id::text AS "propertyGroupId", w.url, w.topics,
      COALESCE(w.property_ids::text[], '{}') AS "propertyIds", w.cursor_txid AS "cursorTxid", w.cursor_seq AS "cursorSeq",
      w.failure_count AS "failureCount", w.failing_since AS "failingSince", w.secret_ciphertext AS "secretCiphertext",
      w.previous_secret_ciphertext AS "previousSecretCiphertext", w.previous_secret_until AS "previousSecretUntil",
      w.lease_token::text AS "leaseToken"`;
}

/** An event as GET /v1/events shows it, plus its timeline position. */
export interface WebhookEvent {
  /** int8 as text (the timeline position; the sender turns it back into a bigint). */
  txid: string;
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
  return asGroup(e.propertyGroupId, () => senderQuery<WebhookEvent>(db, nextEvents(e, { txid: e.cursorTxid, seq: e.cursorSeq }, take)));
}

/** The group's next `take` events after `after`, every topic and property (webhooks/feed.ts). */
export function groupEventsAfter(db: PrismaClient, propertyGroupId: string, after: readonly [bigint, bigint], take: number): Promise<WebhookEvent[]> {
  const everything = { propertyGroupId, topics: ["*"], propertyIds: [] as string[] };
  return asGroup(propertyGroupId, () => senderQuery<WebhookEvent>(db, nextEvents(everything, { txid: after[0], seq: after[1] }, take)));
}

/**
 * The sender's hot statements (a read or checkpoint per batch of each busy endpoint) run on the
 * client's pg pool, without Prisma's per-row cost (int8 columns are selected as text, so both give
 * the same rows).
 */
async function senderQuery<Row extends QueryResultRow>(db: PrismaClient, statement: Sql): Promise<Row[]> {
  const pool = poolOf(db);
  if (!pool) return db.$queryRaw<Row[]>(statement);
  return (await runStatement<Row>(pool, statement.text, statement.values)).rows;
}

function nextEvents(e: Pick<ClaimedEndpoint, "propertyGroupId" | "topics" | "propertyIds">, after: { txid: bigint; seq: bigint }, take: number) {
  return Prisma.sql`
    SELECT ev.txid::text AS txid, ev.seq::text AS seq, ev.entity_type::text AS entity_type, ev.entity_id::text AS entity_id,
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

/** The endpoint's signing secrets as a checkpoint finds them: a rotation reaches a lane this way. */
export type SealedSecrets = Pick<ClaimedEndpoint, "secretCiphertext" | "previousSecretCiphertext" | "previousSecretUntil">;

/**
 * The sender's checkpoint, one statement: the attempts answered 2xx since the last one recorded
 * (one multi-row insert), the cursor moved to the last of them (failure state cleared), and the
 * lease renewed (or, with `release`, given up). Null when the lease is lost (another instance took
 * over after this one stalled, or a replay moved the cursor) or the endpoint was disabled or
 * deleted: send nothing more; otherwise the endpoint's signing secrets now. The attempts are
 * recorded either way (they happened), unless the endpoint is gone.
 */
export async function checkpointEndpoint(
  db: PrismaClient,
  e: ClaimedEndpoint,
  leaseMs: number,
  cursor?: { txid: bigint; seq: bigint },
  attempts: SucceededAttempt[] = [],
  release = false,
): Promise<SealedSecrets | null> {
  const rows = await senderQuery<MovedRow>(db, Prisma.sql`${checkpointed(e, leaseMs, cursor, attempts, release)} SELECT * FROM moved`);
  return rows[0]?.state === "active" ? sealedOf(rows[0]) : null;
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
): Promise<{ events: WebhookEvent[]; secrets: SealedSecrets } | null> {
  const from = cursor ?? { txid: e.cursorTxid, seq: e.cursorSeq };
  const rows = await senderQuery<WebhookEvent & MovedRow>(db, Prisma.sql`${checkpointed(e, leaseMs, cursor, attempts, false)}
    SELECT m.*, n.* FROM moved m LEFT JOIN (${nextEvents(e, from, take)}) n ON m.state = 'active'
    ORDER BY n.txid::bigint, n.seq::bigint`);
  if (rows[0]?.state !== "active") return null;
  return { events: rows[0].txid === null ? [] : rows, secrets: sealedOf(rows[0]) };
}

interface MovedRow {
  state: string;
  secret_ciphertext: string;
  previous_secret_ciphertext: string | null;
  previous_secret_until: Date | null;
}
const sealedOf = (r: MovedRow): SealedSecrets => ({
  secretCiphertext: r.secret_ciphertext, previousSecretCiphertext: r.previous_secret_ciphertext, previousSecretUntil: r.previous_secret_until,
});

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
      RETURNING state::text AS state, secret_ciphertext, previous_secret_ciphertext, previous_secret_until) ${record}`;
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
