// The guest event log (spec 4.4, 6).
//
// Timeline walks must never skip a row because sequence values commit out of order: a transaction
// that took seq 100 can commit after one that took seq 101. So the timeline is ordered by the
// writing transaction id, then seq, and only rows of transactions older than the snapshot's xmin
// (every older transaction has finished) are returned. A transaction still in flight, or one that
// has not written yet, always gets a larger transaction id than any returned row, so it sorts after
// any cursor a reader holds: late commits appear later in the walk, never behind it.
import type { Prisma } from "../generated/prisma/client";
import type { CursorKey } from "../pagination/cursor";
import { isUuid } from "../validate";
import { allInstantsAsText, type AsText } from "./prisma-rows";
import type { Readers } from "./readers";
import { given, guestIdsOfMaster } from "./where";

export interface EventFilter {
  entityType?: string | null;
  entityId?: string | null;
  guestProfileId?: string | null;
  masterProfileId?: string | null;
}

export type EventRow = AsText<Prisma.EventGetPayload<object>>;

/** The timeline's position: (txid, seq). */
export const eventKeyOf = (e: EventRow): CursorKey => [e.txid.toString(), e.seq.toString()];

/** (txid, seq) > (t, s), written so that the index range starts at the cursor. */
function afterKey(txid: bigint, seq: bigint): Prisma.EventWhereInput {
  return { AND: [{ txid: { gte: txid } }, { OR: [{ txid: { gt: txid } }, { seq: { gt: seq } }] }] };
}

export function events(r: Readers) {
  async function eventWhere(f: EventFilter): Promise<Prisma.EventWhereInput> {
    // Unclustered guests have no master profile, so they never match a master_profile_id.
    const ofMaster = await guestIdsOfMaster(r, f.masterProfileId);
    // Entity ids are uuids: any other string names no entity (the column would reject it).
    if (f.entityId != null && !isUuid(f.entityId)) return { seq: { lt: 0 } };
    return given({ entityType: f.entityType, entityId: f.entityId?.toLowerCase(), guestProfileId: f.guestProfileId ?? ofMaster });
  }

  async function snapshotXmin(): Promise<bigint> {
    const [row] = await r.prisma.$queryRaw<{ xmin: string }[]>`SELECT pg_snapshot_xmin(pg_current_snapshot())::text AS xmin`;
    return BigInt(row.xmin);
  }

  return {
    /** Events the filter selects after `after` in (txid, seq) order, of finished transactions only. */
    async timeline(filter: EventFilter, after: CursorKey | null, take: number): Promise<EventRow[]> {
      const where = await eventWhere(filter);
      const xmin = await snapshotXmin();
      const position: Prisma.EventWhereInput = after ? afterKey(BigInt(after[0]), BigInt(after[1])) : {};
      const rows = await r.prisma.event.findMany({
        where: { AND: [where, { txid: { lt: xmin } }, position] },
        orderBy: [{ txid: "asc" }, { seq: "asc" }],
        take,
      });
      return allInstantsAsText(rows);
    },

    /** The newest event of up to `take` entities the filter selects, most recently changed first. */
    async latest(filter: EventFilter, take: number): Promise<{ heads: number; nodes: EventRow[] }> {
      const where = await eventWhere(filter);
      const heads = await r.prisma.event.groupBy({
        by: ["entityType", "entityId"],
        where,
        _max: { seq: true },
        orderBy: { _max: { seq: "desc" } },
        take: take + 1,
      });
      const seqs = heads.slice(0, take).map((h) => h._max.seq!);
      const nodes = seqs.length ? await r.prisma.event.findMany({ where: { seq: { in: seqs } }, orderBy: { seq: "desc" } }) : [];
      return { heads: heads.length, nodes: allInstantsAsText(nodes) };
    },

    /** The latest events of these guests, newest first. */
    ofGuests: async (guestIds: readonly string[], take: number): Promise<EventRow[]> =>
      allInstantsAsText(await r.prisma.event.findMany({ where: { guestProfileId: { in: [...guestIds] } }, orderBy: { seq: "desc" }, take })),
  };
}
