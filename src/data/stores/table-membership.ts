// The one write path for table membership: `table_members` (the current set) and
// `table_membership_changes` (the log delivery reads) change together, in one transaction.
//
// Why the table row is locked: each table's log is numbered 1, 2, 3 … (next seq = head + 1), and the
// engine confirms positions in it. Holding the table row (FOR NO KEY UPDATE) while numbering makes
// two writers of one table take turns, so seqs are unique, gap-free and commit in order: the engine
// can never confirm 11 before 10 is visible. Any other writer of table_membership_changes must take
// the same lock.
//
// The same lock keeps each table's member positions consecutive (in the order members were added;
// offset k is the seek `position >= first + k`): an add appends after the last position, a remove
// closes its gaps by moving the members on its shorter side towards them.
import type { Prisma, PrismaClient } from "../../generated/prisma/client";
import { asGroup } from "../../db/session";

type Tx = Prisma.TransactionClient;

export interface MembershipInput {
  tableId: string;
  propertyGroupId: string;
  memberIds: readonly string[];
}

export interface MembershipResult {
  /** Members actually added or removed, in input order; a change was logged for each. */
  changed: string[];
  /** seq of the newest logged change, or null when nothing changed. */
  lastSeq: bigint | null;
}

export class MembershipError extends Error {}

/** Adds members; members already present change nothing and log nothing. As the table's group (db/session.ts). */
export function addTableMembers(prisma: PrismaClient, input: MembershipInput): Promise<MembershipResult> {
  return asGroup(input.propertyGroupId, () => prisma.$transaction(async (tx) => {
    const table = await lockTable(tx, input);
    const ids = unique(input.memberIds);
    await assertMembersExist(tx, input.propertyGroupId, table.memberType, ids);
    const added = await appendMembers(tx, input, ids);
    return logChanges(tx, input, ids.filter((id) => added.has(id)), "add");
  }));
}

/** Removes members; ids that are not members change nothing and log nothing. As the table's group. */
export function removeTableMembers(prisma: PrismaClient, input: MembershipInput): Promise<MembershipResult> {
  return asGroup(input.propertyGroupId, () => prisma.$transaction(async (tx) => {
    await lockTable(tx, input);
    const ids = unique(input.memberIds);
    // Only the rows that existed are logged.
    const removed = await deleteMembers(tx, input.tableId, ids);
    return logChanges(tx, input, ids.filter((id) => removed.has(id)), "remove");
  }));
}

async function lockTable(tx: Tx, input: MembershipInput) {
  const rows = await tx.$queryRaw<{ member_type: "guest_profile" | "master_profile" }[]>`
    SELECT member_type FROM tables
    WHERE id = ${input.tableId}::uuid AND property_group_id = ${input.propertyGroupId}::uuid
    FOR NO KEY UPDATE`;
  if (rows.length === 0) throw new MembershipError(`table ${input.tableId} not found in group ${input.propertyGroupId}`);
  return { memberType: rows[0].member_type };
}

/** A table of guest profiles holds guest profiles of its own group; likewise for master profiles. */
async function assertMembersExist(tx: Tx, groupId: string, memberType: string, ids: string[]) {
  const where = { id: { in: ids }, propertyGroupId: groupId };
  const found = memberType === "master_profile"
    ? await tx.masterProfile.count({ where })
    : await tx.guestProfile.count({ where });
  if (found !== ids.length) throw new MembershipError(`${ids.length - found} member id(s) are not ${memberType}s of this group`);
}

/**
 * Inserts the ids that are not members yet after the table's last position, in member_id order
 * (they share one added_at). added_at is when this statement started, after the table lock was
 * taken, not when the transaction began: so added_at never decreases along positions, even when a
 * writer that began first got the lock second. Returns the ids inserted.
 */
async function appendMembers(tx: Tx, input: MembershipInput, ids: string[]): Promise<Set<string>> {
  if (ids.length === 0) return new Set();
  const rows = await tx.$queryRaw<{ member_id: string }[]>`
    INSERT INTO table_members (table_id, member_id, property_group_id, added_at, position)
    SELECT ${input.tableId}::uuid, n.id, ${input.propertyGroupId}::uuid, statement_timestamp(),
      (SELECT coalesce(max(position), 0) FROM table_members WHERE table_id = ${input.tableId}::uuid) + row_number() OVER (ORDER BY n.id)
    FROM unnest(${ids}::uuid[]) AS n(id)
    WHERE NOT EXISTS (SELECT 1 FROM table_members m WHERE m.table_id = ${input.tableId}::uuid AND m.member_id = n.id)
    RETURNING member_id`;
  return new Set(rows.map((r) => r.member_id));
}

/**
 * Deletes the ids that are members, then closes the gaps they leave with one UPDATE of the members on
 * the shorter side: those after the first gap move down by the number of gaps below them, or those
 * before the last gap move up by the number above them (width_bucket counts gaps at or below a
 * position in the sorted array). Removing near either end of a long table so moves a few rows, not
 * the whole table. Returns the ids deleted.
 */
async function deleteMembers(tx: Tx, tableId: string, ids: string[]): Promise<Set<string>> {
  if (ids.length === 0) return new Set();
  // The bounds are read in the DELETE's snapshot: the table as it was before it.
  const deleted = await tx.$queryRaw<{ member_id: string; position: number; first: number; last: number }[]>`
    WITH gone AS (
      DELETE FROM table_members WHERE table_id = ${tableId}::uuid AND member_id = ANY(${ids}::uuid[])
      RETURNING member_id, position
    )
    SELECT member_id, position,
      (SELECT min(position) FROM table_members WHERE table_id = ${tableId}::uuid) AS first,
      (SELECT max(position) FROM table_members WHERE table_id = ${tableId}::uuid) AS last
    FROM gone`;
  if (deleted.length === 0) return new Set();
  const gaps = deleted.map((r) => r.position).sort((a, b) => a - b);
  const [lowest, highest] = [gaps[0], gaps[gaps.length - 1]];
  const { first, last } = deleted[0];
  if (last - lowest <= highest - first) {
    await tx.$executeRaw`
      UPDATE table_members SET position = position - width_bucket(position, ${gaps}::int[])
      WHERE table_id = ${tableId}::uuid AND position > ${lowest}`;
  } else {
    await tx.$executeRaw`
      UPDATE table_members SET position = position + ${gaps.length} - width_bucket(position, ${gaps}::int[])
      WHERE table_id = ${tableId}::uuid AND position < ${highest}`;
  }
  return new Set(deleted.map((r) => r.member_id));
}

async function logChanges(tx: Tx, input: MembershipInput, memberIds: string[], op: "add" | "remove"): Promise<MembershipResult> {
  if (memberIds.length === 0) return { changed: [], lastSeq: null };
  const base = { tableId: input.tableId, propertyGroupId: input.propertyGroupId, op };
  const head = await tx.tableMembershipChange.aggregate({ where: { tableId: input.tableId }, _max: { seq: true } });
  const first = (head._max.seq ?? 0n) + 1n;
  await tx.tableMembershipChange.createMany({
    data: memberIds.map((memberId, i) => ({ ...base, memberId, seq: first + BigInt(i) })),
  });
  return { changed: memberIds, lastSeq: first + BigInt(memberIds.length - 1) };
}

const unique = (ids: readonly string[]) => [...new Set(ids)];
