// The delivery engine's storage (src/delivery): leasing a due binding, the reads that feed a batch's
// plan, the checkpoints and bookkeeping of a flush, the gauges of /metrics and the connection
// secrets' rotation batches. The rules (planning, backoff, sealing) stay in src/delivery; these
// functions only read and write. Cross-tenant background work: the engine and rotation run on the
// unscoped client and may use raw SQL. A request's binding reads and pause/resume are
// data/destinations.ts.
import { Prisma, type PrismaClient } from "../../generated/prisma/client";
import type { DeliveryGaugeRow } from "../../observability/metrics";
import { acrossGroups } from "../../db/session";

/** What the engine reads through: the unscoped client (or a transaction of it). */
export type DeliveryTx = Prisma.TransactionClient;
export type MemberType = "guest_profile" | "master_profile";

// ---------------------------------------------------------------------------------------------
// The engine: a binding is held by a lease, never by a row lock or transaction across destination
// calls. Each function here is one short statement.
// ---------------------------------------------------------------------------------------------

/** A binding by id (the next batch of the one in hand), or any due binding but these. */
export type ClaimTarget = { id: string } | { exclude: string[] };

export interface ClaimedBinding {
  id: string;
  propertyGroupId: string;
  tableId: string;
  provider: string;
  connectionId: string;
  remoteListId: string;
  confirmedSeq: bigint;
  failureCount: number;
  memberType: MemberType;
  secretCiphertext: string;
  /** This flush's lease: every later write of the flush names it. */
  leaseToken: string;
  /** Address key → log position, confirmed beyond confirmedSeq (engine.ts). */
  sentAhead: Record<string, string>;
}

/**
 * Leases one due binding for `leaseMs`: active, not backing off, behind its log head, and not leased
 * by a live flush (an expired lease is a crashed or frozen instance's: taken over). The row lock of
 * SKIP LOCKED lasts only this statement; the lease is what keeps other instances off afterwards.
 * Lease times are the database's clock, so instances need not agree on theirs.
 */
export async function claimDueBinding(db: DeliveryTx, target: ClaimTarget, at: Date, leaseMs: number): Promise<ClaimedBinding | undefined> {
  const which = "id" in target
    ? Prisma.sql`AND b.id = ${target.id}::uuid`
    : Prisma.sql`AND NOT (b.id = ANY(${target.exclude}::uuid[]))`;
  const rows = await db.$queryRaw<(Omit<ClaimedBinding, "confirmedSeq"> & { confirmedSeq: bigint })[]>`
    WITH due AS (
      SELECT b.id FROM destination_bindings b
      WHERE b.state = 'active'
        AND (b.next_attempt_at IS NULL OR b.next_attempt_at <= ${at})
        AND (b.lease_until IS NULL OR b.lease_until < now())
        AND EXISTS (SELECT 1 FROM table_membership_changes c WHERE c.table_id = b.table_id AND c.seq > b.confirmed_seq)
        ${which}
      ORDER BY b.last_flush_at ASC NULLS FIRST, b.id
      LIMIT 1
      FOR UPDATE OF b SKIP LOCKED
    ), leased AS (
      UPDATE destination_bindings b
      SET lease_token = gen_random_uuid(), lease_until = now() + make_interval(secs => ${leaseMs / 1000})
      FROM due WHERE b.id = due.id
      RETURNING b.*
    )
    SELECT l.id::text AS id, l.property_group_id::text AS "propertyGroupId", l.table_id::text AS "tableId",
      l.provider, l.connection_id::text AS "connectionId", l.remote_list_id AS "remoteListId",
      l.confirmed_seq AS "confirmedSeq", l.failure_count AS "failureCount", t.member_type::text AS "memberType",
      c.secret_ciphertext AS "secretCiphertext", l.lease_token::text AS "leaseToken",
      COALESCE(l.sent_ahead, '{}'::jsonb) AS "sentAhead"
    FROM leased l
    JOIN tables t ON t.id = l.table_id
    JOIN destination_connections c ON c.id = l.connection_id`;
  return rows[0];
}

export interface Checkpoint {
  /** Every change up to here is delivered (or superseded by a later one still pending). */
  confirmedSeq: bigint;
  counts: object;
  /** Confirmed beyond confirmedSeq: address key → log position. */
  sentAhead: Record<string, string>;
  at: Date;
}

/**
 * Records what the destination confirmed so far and renews the lease, in one statement. Answers
 * whether the flush may go on: false when the binding was paused (or put in error, or deleted) or
 * the lease was lost (this flush stalled past it and another took over; nothing is recorded then).
 */
export async function checkpoint(db: DeliveryTx, b: ClaimedBinding, c: Checkpoint, leaseMs: number): Promise<boolean> {
  const rows = await db.$queryRaw<{ state: string }[]>`
    UPDATE destination_bindings SET
      confirmed_seq = GREATEST(confirmed_seq, ${c.confirmedSeq}),
      last_flush_at = CASE WHEN ${c.confirmedSeq} > confirmed_seq THEN ${c.at} ELSE last_flush_at END,
      last_flush_counts = ${JSON.stringify(c.counts)}::jsonb,
      sent_ahead = ${Object.keys(c.sentAhead).length > 0 ? JSON.stringify(c.sentAhead) : null}::jsonb,
      last_error = CASE WHEN ${c.confirmedSeq} > confirmed_seq THEN NULL ELSE last_error END,
      failure_count = CASE WHEN ${c.confirmedSeq} > confirmed_seq THEN 0 ELSE failure_count END,
      next_attempt_at = CASE WHEN ${c.confirmedSeq} > confirmed_seq THEN NULL ELSE next_attempt_at END,
      lease_until = now() + make_interval(secs => ${leaseMs / 1000})
    WHERE id = ${b.id}::uuid AND lease_token = ${b.leaseToken}::uuid
    RETURNING state::text AS state`;
  return rows[0]?.state === "active";
}

/** Ends the flush's lease (the binding is free for the next poll of any instance). */
export async function releaseLease(db: DeliveryTx, b: ClaimedBinding): Promise<void> {
  await db.$executeRaw`
    UPDATE destination_bindings SET lease_token = NULL, lease_until = NULL
    WHERE id = ${b.id}::uuid AND lease_token = ${b.leaseToken}::uuid`;
}

/** After a transient failure: counted, not due again before `nextAttemptAt`, lease ended. */
export async function recordBackoff(db: DeliveryTx, b: ClaimedBinding, failureCount: number, nextAttemptAt: Date, lastError: string) {
  await db.$executeRaw`
    UPDATE destination_bindings SET failure_count = ${failureCount}, next_attempt_at = ${nextAttemptAt},
      last_error = ${lastError}, lease_token = NULL, lease_until = NULL
    WHERE id = ${b.id}::uuid AND lease_token = ${b.leaseToken}::uuid`;
}

/**
 * After a permanent failure: the binding is in error until resumed, lease ended. A binding paused
 * meanwhile stays paused (the operator's word wins), with the error recorded.
 */
export async function recordError(db: DeliveryTx, b: ClaimedBinding, failureCount: number, lastError: string) {
  await db.$executeRaw`
    UPDATE destination_bindings SET
      state = CASE WHEN state = 'active' THEN 'error'::"BindingState" ELSE state END,
      updated_at = CASE WHEN state = 'active' THEN now() ELSE updated_at END,
      failure_count = ${failureCount}, next_attempt_at = NULL, last_error = ${lastError},
      lease_token = NULL, lease_until = NULL
    WHERE id = ${b.id}::uuid AND lease_token = ${b.leaseToken}::uuid`;
}

/** The table's logged membership changes after `afterSeq`, oldest first, at most `take`. */
export function membershipChangesAfter(tx: DeliveryTx, tableId: string, afterSeq: bigint, take: number) {
  return tx.tableMembershipChange.findMany({
    where: { tableId, seq: { gt: afterSeq } },
    orderBy: { seq: "asc" },
    take,
    select: { seq: true, memberId: true, op: true },
  });
}

/** The members' profiles in the group (guest or master profiles, as the table holds), raw emails. */
export function memberProfiles(tx: DeliveryTx, memberType: MemberType, propertyGroupId: string, memberIds: string[]) {
  const args = {
    where: { id: { in: memberIds }, propertyGroupId },
    select: { id: true, email: true, givenName: true, familyName: true },
  };
  return memberType === "master_profile" ? tx.masterProfile.findMany(args) : tx.guestProfile.findMany(args);
}

/** Which of these (normalised) addresses a current member of the table still has. */
export async function emailsOfCurrentMembers(tx: DeliveryTx, tableId: string, memberType: MemberType, emails: string[]): Promise<Set<string>> {
  if (emails.length === 0) return new Set();
  const profiles = Prisma.raw(memberType === "master_profile" ? "master_profiles" : "guest_profiles");
  const rows = await tx.$queryRaw<{ email: string }[]>`
    SELECT DISTINCT lower(btrim(p.email)) AS email
    FROM table_members m JOIN ${profiles} p ON p.id = m.member_id
    WHERE m.table_id = ${tableId}::uuid AND lower(btrim(p.email)) = ANY(${emails}::text[])`;
  return new Set(rows.map((r) => r.email));
}

// ---------------------------------------------------------------------------------------------
// Metrics: the delivery gauges of /metrics.
// ---------------------------------------------------------------------------------------------

/** Every binding that is not paused (at most `limit`), with its lag, pending changes, failures and last flush time. */
export function deliveryGaugeRows(prisma: PrismaClient, limit: number): Promise<DeliveryGaugeRow[]> {
  // The oldest pending change is one index probe per binding (table_id, seq is the primary key).
  return prisma.$queryRaw<DeliveryGaugeRow[]>`
    SELECT b.id::text AS id, b.provider,
      EXTRACT(EPOCH FROM now() - (SELECT c.created_at FROM table_membership_changes c
        WHERE c.table_id = b.table_id AND c.seq > b.confirmed_seq ORDER BY c.seq LIMIT 1))::float8 AS lag_s,
      EXTRACT(EPOCH FROM b.last_flush_at)::float8 AS last_flush_s,
      GREATEST(COALESCE((SELECT max(c.seq) FROM table_membership_changes c WHERE c.table_id = b.table_id), 0) - b.confirmed_seq, 0)::float8 AS pending,
      b.failure_count AS failures
    FROM destination_bindings b WHERE b.state <> 'paused' ORDER BY b.id LIMIT ${limit}`;
}

// ---------------------------------------------------------------------------------------------
// Connection secrets.
// ---------------------------------------------------------------------------------------------

/**
 * One rotation batch: the next `batchSize` connections after `after` in id order, locked FOR UPDATE
 * in one transaction; `reseal` returns a row's new ciphertext, or null to leave it.
 * @returns the last id when the batch was full (there may be more), else null.
 */
export function resealConnectionBatch(
  prisma: PrismaClient,
  after: string | null,
  batchSize: number,
  reseal: (row: { id: string; secret_ciphertext: string }) => string | null,
): Promise<string | null> {
  return prisma.$transaction(async (tx) => {
    const rows = await tx.$queryRaw<{ id: string; secret_ciphertext: string }[]>`
      SELECT id::text, secret_ciphertext FROM destination_connections
      WHERE ${after}::uuid IS NULL OR id > ${after}::uuid
      ORDER BY id LIMIT ${batchSize}
      FOR UPDATE`;
    for (const row of rows) {
      const sealed = reseal(row);
      if (sealed !== null) await tx.destinationConnection.update({ where: { id: row.id }, data: { secretCiphertext: sealed } });
    }
    return rows.length === batchSize ? rows[rows.length - 1].id : null;
  });
}

/** A service secret if one was generated, without generating it (db/service-secrets.ts generates, on the same path). */
export function existingServiceSecret(prisma: PrismaClient, name: string): Promise<string | undefined> {
  return acrossGroups("service start", async () => (await prisma.serviceSecret.findUnique({ where: { name } }))?.value);
}
