// The one write path for table membership: `table_members` (the current set) and
// `table_membership_changes` (the log delivery reads) change together, in one transaction.
//
// Why the table row is locked: each table's log is numbered 1, 2, 3 … (next seq = head + 1), and the
// engine confirms positions in it. Holding the table row (FOR NO KEY UPDATE) while numbering makes
// two writers of one table take turns, so seqs are unique, gap-free and commit in order: the engine
// can never confirm 11 before 10 is visible. Any other writer of table_membership_changes must take
// the same lock.
import type { Prisma, PrismaClient } from "../generated/prisma/client";

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

/** Adds members; members already present change nothing and log nothing. */
export function addTableMembers(prisma: PrismaClient, input: MembershipInput): Promise<MembershipResult> {
  return prisma.$transaction(async (tx) => {
    const table = await lockTable(tx, input);
    const ids = unique(input.memberIds);
    await assertMembersExist(tx, input.propertyGroupId, table.memberType, ids);
    const inserted = await tx.tableMember.createManyAndReturn({
      data: ids.map((memberId) => ({ tableId: input.tableId, memberId, propertyGroupId: input.propertyGroupId })),
      skipDuplicates: true,
      select: { memberId: true },
    });
    const added = new Set(inserted.map((r) => r.memberId));
    return logChanges(tx, input, ids.filter((id) => added.has(id)), "add");
  });
}

/** Removes members; ids that are not members change nothing and log nothing. */
export function removeTableMembers(prisma: PrismaClient, input: MembershipInput): Promise<MembershipResult> {
  return prisma.$transaction(async (tx) => {
    await lockTable(tx, input);
    const ids = unique(input.memberIds);
    // Only the rows that existed are logged; the table lock keeps this read and the delete together.
    const present = await tx.tableMember.findMany({
      where: { tableId: input.tableId, memberId: { in: ids } },
      select: { memberId: true },
    });
    const removed = new Set(present.map((r) => r.memberId));
    if (removed.size > 0) await tx.tableMember.deleteMany({ where: { tableId: input.tableId, memberId: { in: [...removed] } } });
    return logChanges(tx, input, ids.filter((id) => removed.has(id)), "remove");
  });
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
