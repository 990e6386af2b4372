// The delivery engine's storage (src/delivery): claiming a due binding with SKIP LOCKED, the reads
// that feed a batch's plan, the binding's bookkeeping after a batch, pause/resume as one UPDATE,
// the binding view's reads, and the connection secrets' rotation batches. The rules (planning,
// backoff, the state machine, sealing) stay in src/delivery; these functions only read and write.
//
// Cross-tenant background work: the engine and rotation run on the unscoped client and may use raw
// SQL; pause/resume find the binding through the caller's (possibly scoped) client first.
import { Prisma, type BindingState, type DestinationBinding, type PrismaClient } from "../generated/prisma/client";

export type { BindingState, DestinationBinding };
/** The handle of an open delivery transaction (a batch holds its binding's row lock in one). */
export type DeliveryTx = Prisma.TransactionClient;
export type MemberType = "guest_profile" | "master_profile";

// ---------------------------------------------------------------------------------------------
// The engine: one batch per transaction, under the claimed binding's row lock.
// ---------------------------------------------------------------------------------------------

/**
 * Runs a batch in one transaction; `timeoutMs` bounds how long it may hold the binding lock. Prisma's
 * timeout runs in this process only: a frozen or partitioned instance would keep the lock until TCP
 * gives up (hours). The server-side idle timeout ends such a transaction, so another instance can
 * take the binding over (the batch is sent again: at-least-once). It is twice Prisma's, so a live
 * instance always ends its own transaction first (on PGlite the server's would end the one session).
 */
export function inBatchTransaction<T>(prisma: PrismaClient, timeoutMs: number, batch: (tx: DeliveryTx) => Promise<T>): Promise<T> {
  const idleLimitMs = Math.max(1, Math.round(2 * timeoutMs));
  return prisma.$transaction(
    async (tx) => {
      await tx.$executeRawUnsafe(`SET LOCAL idle_in_transaction_session_timeout = ${idleLimitMs}`);
      return batch(tx);
    },
    { maxWait: 10_000, timeout: timeoutMs },
  );
}

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
}

/**
 * Locks one due binding, skipping rows another instance holds. The state and due conditions are in
 * the locking statement, so they are re-checked on the row as it is once locked: a binding paused
 * (or flushed) while this call was queued behind it is not taken.
 */
export async function claimDueBinding(tx: DeliveryTx, target: ClaimTarget, at: Date): Promise<ClaimedBinding | undefined> {
  const which = "id" in target
    ? Prisma.sql`AND b.id = ${target.id}::uuid`
    : Prisma.sql`AND NOT (b.id = ANY(${target.exclude}::uuid[]))`;
  const rows = await tx.$queryRaw<{ id: string }[]>`
    SELECT b.id FROM destination_bindings b
    WHERE b.state = 'active'
      AND (b.next_attempt_at IS NULL OR b.next_attempt_at <= ${at})
      AND EXISTS (SELECT 1 FROM table_membership_changes c WHERE c.table_id = b.table_id AND c.seq > b.confirmed_seq)
      ${which}
    ORDER BY b.last_flush_at ASC NULLS FIRST, b.id
    LIMIT 1
    FOR UPDATE OF b SKIP LOCKED`;
  if (rows.length === 0) return undefined;
  const b = await tx.destinationBinding.findUniqueOrThrow({
    where: { id: rows[0].id },
    include: { connection: { select: { secretCiphertext: true } }, table: { select: { memberType: true } } },
  });
  return {
    id: b.id,
    propertyGroupId: b.propertyGroupId,
    tableId: b.tableId,
    provider: b.provider,
    connectionId: b.connectionId,
    remoteListId: b.remoteListId,
    confirmedSeq: b.confirmedSeq,
    failureCount: b.failureCount,
    memberType: b.table.memberType,
    secretCiphertext: b.connection.secretCiphertext,
  };
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

/** After a delivered batch: the cursor moves to `lastSeq` and the backoff is cleared. */
export async function recordDelivered(tx: DeliveryTx, bindingId: string, lastSeq: bigint, counts: object, at: Date) {
  await tx.destinationBinding.update({
    where: { id: bindingId },
    data: {
      confirmedSeq: lastSeq,
      lastFlushAt: at,
      lastFlushCounts: { ...counts },
      lastError: null,
      failureCount: 0,
      nextAttemptAt: null,
    },
  });
}

/** After a transient failure: counted, and not due again before `nextAttemptAt`. */
export async function recordBackoff(tx: DeliveryTx, bindingId: string, failureCount: number, nextAttemptAt: Date, lastError: string) {
  await tx.destinationBinding.update({ where: { id: bindingId }, data: { failureCount, nextAttemptAt, lastError } });
}

/** After a permanent failure: the binding is in error until resumed. */
export async function recordError(tx: DeliveryTx, bindingId: string, failureCount: number, lastError: string) {
  await tx.destinationBinding.update({
    where: { id: bindingId },
    data: { state: "error", failureCount, nextAttemptAt: null, lastError },
  });
}

// ---------------------------------------------------------------------------------------------
// Bindings: pause and resume, and the view's reads.
// ---------------------------------------------------------------------------------------------

// SET clauses, evaluated against the row as it is when the UPDATE holds its lock. updated_at only
// moves when the state does (the column is @updatedAt for Prisma; raw SQL sets it itself).
const TRANSITIONS = {
  pause: Prisma.sql`state = 'paused',
    updated_at = CASE WHEN state <> 'paused' THEN now() ELSE updated_at END`,
  // The backoff is cleared only when the binding actually moves: resuming an active binding that
  // is backing off after a transient failure changes nothing.
  resume: Prisma.sql`state = 'active',
    failure_count = CASE WHEN state <> 'active' THEN 0 ELSE failure_count END,
    next_attempt_at = CASE WHEN state <> 'active' THEN NULL ELSE next_attempt_at END,
    updated_at = CASE WHEN state <> 'active' THEN now() ELSE updated_at END`,
} as const;
export type BindingTransition = keyof typeof TRANSITIONS;

// Column → field, so a RETURNING row has the shape of the Prisma model.
const RETURNING = Prisma.raw(`id, property_group_id AS "propertyGroupId", table_id AS "tableId", connection_id AS "connectionId",
  provider, remote_list_id AS "remoteListId", state::text AS state, confirmed_seq AS "confirmedSeq",
  last_flush_at AS "lastFlushAt", last_error AS "lastError", last_flush_counts AS "lastFlushCounts",
  last_resync_run_handle AS "lastResyncRunHandle", failure_count AS "failureCount", next_attempt_at AS "nextAttemptAt",
  created_at AS "createdAt", updated_at AS "updatedAt"`);

/** One `UPDATE … RETURNING` applying the transition; null when the binding is gone. */
export async function updateBindingState(
  db: PrismaClient,
  binding: { id: string; propertyGroupId: string },
  name: BindingTransition,
): Promise<DestinationBinding | null> {
  const [row] = await db.$queryRaw<DestinationBinding[]>`
    UPDATE destination_bindings SET ${TRANSITIONS[name]}
    WHERE id = ${binding.id}::uuid AND property_group_id = ${binding.propertyGroupId}::uuid
    RETURNING ${RETURNING}`;
  return row ?? null;
}

/** The binding of a table visible through `db` (a scoped client applies property narrowing to the table). */
export async function findBinding(db: PrismaClient, tableId: string, provider: string): Promise<DestinationBinding | null> {
  const table = await db.guestTable.findFirst({ where: { id: tableId }, select: { id: true } });
  if (!table) return null;
  return db.destinationBinding.findFirst({ where: { tableId: table.id, provider } });
}

/** The newest seq of the table's membership log (null when empty) and the table's filter document. */
export async function bindingTableState(db: PrismaClient, tableId: string): Promise<{ logHead: bigint | null; filterDoc: unknown }> {
  const [head, table] = await Promise.all([
    db.tableMembershipChange.aggregate({ where: { tableId }, _max: { seq: true } }),
    db.guestTable.findFirst({ where: { id: tableId }, select: { filterDoc: true } }),
  ]);
  return { logHead: head._max.seq, filterDoc: table?.filterDoc ?? null };
}

// ---------------------------------------------------------------------------------------------
// Metrics: the delivery gauges of /metrics.
// ---------------------------------------------------------------------------------------------

export interface DeliveryGaugeRow {
  id: string;
  provider: string;
  /** Age of the oldest change the destination has not confirmed, in seconds; null when caught up. */
  lag_s: number | null;
  last_flush_s: number | null;
}

/** Every binding that is not paused (at most `limit`), with its lag and last flush time. */
export function deliveryGaugeRows(prisma: PrismaClient, limit: number): Promise<DeliveryGaugeRow[]> {
  // The oldest pending change is one index probe per binding (table_id, seq is the primary key).
  return prisma.$queryRaw<DeliveryGaugeRow[]>`
    SELECT b.id::text AS id, b.provider,
      EXTRACT(EPOCH FROM now() - (SELECT c.created_at FROM table_membership_changes c
        WHERE c.table_id = b.table_id AND c.seq > b.confirmed_seq ORDER BY c.seq LIMIT 1))::float8 AS lag_s,
      EXTRACT(EPOCH FROM b.last_flush_at)::float8 AS last_flush_s
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

/** A service secret if one was generated, without generating it (db/service-secrets.ts generates). */
export async function existingServiceSecret(prisma: PrismaClient, name: string): Promise<string | undefined> {
  return (await prisma.serviceSecret.findUnique({ where: { name } }))?.value;
}
