// The guest event log (spec 4.4, 6).
//
// Timeline walks must never skip a row because sequence values commit out of order: a transaction
// that took seq 100 can commit after one that took seq 101. So the timeline is ordered by the
// writing transaction id, then seq, and only rows of transactions older than the snapshot's xmin
// (every older transaction has finished) are returned. A transaction still in flight, or one that
// has not written yet, always gets a larger transaction id than any returned row, so it sorts after
// any cursor a reader holds: late commits appear later in the walk, never behind it.
import type { GraphQLContext } from "../../context";
import type { Prisma } from "../../generated/prisma/client";
import { keysetPage, pageSize } from "../../pagination/keyset";
import { invalidRequest } from "../errors";
import { isUuid } from "../../auth/scope";
import { given, guestIdsOfMaster, type PageArgs } from "./lists";

interface EventFilter {
  entityType?: string | null;
  entityId?: string | null;
  guestProfileId?: string | null;
  masterProfileId?: string | null;
}

type EventRow = Prisma.EventGetPayload<object>;

async function eventWhere(f: EventFilter, ctx: GraphQLContext): Promise<Prisma.EventWhereInput> {
  if (f.guestProfileId != null && f.masterProfileId != null) {
    throw invalidRequest("send guest_profile_id or master_profile_id, not both");
  }
  // Unclustered guests have no master profile, so they never match a master_profile_id.
  const ofMaster = await guestIdsOfMaster(ctx, f.masterProfileId);
  // Entity ids are uuids: any other string names no entity (the column would reject it).
  if (f.entityId != null && !isUuid(f.entityId)) return { seq: { lt: 0 } };
  return given({ entityType: f.entityType, entityId: f.entityId?.toLowerCase(), guestProfileId: f.guestProfileId ?? ofMaster });
}

async function snapshotXmin(ctx: GraphQLContext): Promise<bigint> {
  const [row] = await ctx.db.$queryRaw<{ xmin: string }[]>`SELECT pg_snapshot_xmin(pg_current_snapshot())::text AS xmin`;
  return BigInt(row.xmin);
}

async function timeline(args: PageArgs<EventFilter>, ctx: GraphQLContext) {
  const filter = args.filter ?? {};
  const where = await eventWhere(filter, ctx);
  return keysetPage<EventRow>({
    limit: args.limit,
    cursor: args.cursor,
    secret: ctx.cursorSecret,
    binding: { family: "events", propertyGroupId: ctx.scope.propertyGroupId, query: { filter, propertyId: ctx.scope.propertyId } },
    keyOf: (e) => [e.txid.toString(), e.seq.toString()],
    fetch: async (after, take) => {
      const xmin = await snapshotXmin(ctx);
      const position: Prisma.EventWhereInput = after ? afterKey(BigInt(after[0]), BigInt(after[1])) : {};
      return ctx.db.event.findMany({
        where: { AND: [where, { txid: { lt: xmin } }, position] },
        orderBy: [{ txid: "asc" }, { seq: "asc" }],
        take,
      });
    },
  });
}

/** (txid, seq) > (t, s), written so that the index range starts at the cursor. */
function afterKey(txid: bigint, seq: bigint): Prisma.EventWhereInput {
  return { AND: [{ txid: { gte: txid } }, { OR: [{ txid: { gt: txid } }, { seq: { gt: seq } }] }] };
}

/**
 * The newest event of each entity the filter selects, most recently changed entities first. `limit`
 * caps the number of entities; `has_more` says more entities matched (narrow the filter to see
 * them). One page: next_cursor is always null.
 */
async function latest(args: PageArgs<EventFilter>, ctx: GraphQLContext) {
  const size = pageSize(args.limit);
  if (args.cursor) throw invalidRequest("mode=latest is a single page: it takes no cursor");
  const where = await eventWhere(args.filter ?? {}, ctx);
  const heads = await ctx.db.event.groupBy({
    by: ["entityType", "entityId"],
    where,
    _max: { seq: true },
    orderBy: { _max: { seq: "desc" } },
    take: size + 1,
  });
  const seqs = heads.slice(0, size).map((h) => h._max.seq!);
  const nodes = seqs.length ? await ctx.db.event.findMany({ where: { seq: { in: seqs } }, orderBy: { seq: "desc" } }) : [];
  return { nodes, nextCursor: null, hasMore: heads.length > size };
}

export const eventResolvers = {
  Query: {
    events: async (_: unknown, args: PageArgs<EventFilter> & { mode?: string | null }, ctx: GraphQLContext) => {
      const mode = args.mode === "latest" || args.mode === "rollup" ? "latest" : "timeline";
      const page = mode === "latest" ? await latest(args, ctx) : await timeline(args, ctx);
      return { ...page, mode };
    },
  },
  Event: {
    seq: (e: EventRow) => e.seq.toString(),
  },
};
