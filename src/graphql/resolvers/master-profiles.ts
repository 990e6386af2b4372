// Master profiles: one per real guest, clustering guest profiles across sources and properties
// (data/master-profiles.ts).
import type { GraphQLResolveInfo } from "graphql";
import type { RequestContext } from "../../context";
import { GUEST_KEYS } from "../../data/guests";
import { masterProfileKeyOf, type MasterProfileFilter } from "../../data/master-profiles";
import { GUEST, MASTER_PROFILE } from "../row-types";
import { selectedShape, selectedUnder } from "../selection";
import { getById, selectedKeysetList, type PageArgs } from "./lists";

const listMasterProfiles = selectedKeysetList<MasterProfileFilter, { createdAt: string; id: string }>(
  "master_profiles",
  MASTER_PROFILE,
  masterProfileKeyOf,
  (ctx) => ctx.data.masterProfiles.page,
);

type WithGuestIds = { id: string; guestProfileIds?: string[] };

/** Closest candidates shown when q matched nothing (issue 42). */
const CANDIDATES_SHOWN = 5;

/**
 * When q matched nothing on a first page, the master profiles whose name is closest to it, as
 * candidates with their similarity, not as rows; null otherwise (the REST body then leaves it out).
 */
async function closestCandidates(ctx: RequestContext, args: PageArgs<MasterProfileFilter>, found: number, info: GraphQLResolveInfo) {
  if (found > 0 || args.cursor || !args.filter?.q?.trim() || !selectedUnder(info, "candidates").size) return null;
  const scored = await ctx.data.masterProfiles.closest(args.filter, CANDIDATES_SHOWN);
  if (scored.length === 0) return [];
  const rows = new Map((await ctx.data.masterProfiles.byIds(scored.map((s) => s.id))).map((row) => [row.id, row]));
  return scored.map((s) => ({ similarity: s.similarity, masterProfile: rows.get(s.id)! }));
}

/**
 * Each profile's guest ids, read with the page: the statement the loader batches, without a load
 * and a promise per profile.
 */
async function withGuestIds(ctx: RequestContext, nodes: WithGuestIds[]) {
  const ids = new Map<string, string[]>(nodes.map((n) => [n.id, []]));
  const guests = await ctx.data.guests.byMasterProfiles<{ id: string; masterProfileId: string }>([...ids.keys()], GUEST_KEYS);
  for (const g of guests) ids.get(g.masterProfileId)?.push(g.id);
  for (const n of nodes) n.guestProfileIds = ids.get(n.id);
}

export const masterProfileResolvers = {
  Query: {
    masterProfiles: async (
      parent: unknown,
      args: PageArgs<MasterProfileFilter> & { includeTotal?: boolean | null },
      ctx: RequestContext,
      info: GraphQLResolveInfo,
    ) => {
      // The total is asked for on the first page only: later pages never carry it. Read beside the
      // page, so that the two go to PostgreSQL in one round trip (db/tenant-pool.ts ReadBatch).
      const [page, totalCount] = await Promise.all([
        listMasterProfiles(parent, args, ctx, info),
        args.includeTotal && !args.cursor ? ctx.data.masterProfiles.count(args.filter ?? {}) : null,
      ]);
      if (page.nodes.length > 0 && selectedUnder(info, "nodes").has("guestProfileIds")) await withGuestIds(ctx, page.nodes);
      return { ...page, totalCount, candidates: await closestCandidates(ctx, args, page.nodes.length, info) };
    },
    masterProfile: getById("master profile", (ctx, id, info) => ctx.data.masterProfiles.byId(id, selectedShape(info, MASTER_PROFILE))),
  },

  MasterProfile: {
    guests: (row: { id: string }, _: unknown, ctx: RequestContext, info: GraphQLResolveInfo) =>
      ctx.loaders.guestsByMasterProfile(selectedShape(info, GUEST)).load(row.id),
    // Synchronous when read with the page: no promise per profile.
    guestProfileIds: (row: WithGuestIds, _: unknown, ctx: RequestContext) =>
      row.guestProfileIds ?? ctx.loaders.guestsByMasterProfile(GUEST_KEYS).load(row.id).then((guests) => guests.map((g) => g.id)),
    loyaltyMemberships: (row: { id: string }, _: unknown, ctx: RequestContext) => ctx.loaders.loyaltyByMaster.load(row.id),
  },
};
