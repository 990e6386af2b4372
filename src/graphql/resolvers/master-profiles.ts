// Master profiles: one per real guest, clustering guest profiles across sources and properties
// (data/master-profiles.ts).
import type { GraphQLResolveInfo } from "graphql";
import type { RequestContext } from "../../context";
import { GUEST_KEYS } from "../../data/guests";
import { masterProfileKeyOf, type MasterProfileFilter } from "../../data/master-profiles";
import { GUEST, MASTER_PROFILE } from "../row-types";
import { selectedShape } from "../selection";
import { getById, selectedKeysetList, type PageArgs } from "./lists";

const listMasterProfiles = selectedKeysetList<MasterProfileFilter, { createdAt: string; id: string }>(
  "master_profiles",
  MASTER_PROFILE,
  masterProfileKeyOf,
  (ctx) => ctx.data.masterProfiles.page,
);

export const masterProfileResolvers = {
  Query: {
    masterProfiles: async (
      parent: unknown,
      args: PageArgs<MasterProfileFilter> & { includeTotal?: boolean | null },
      ctx: RequestContext,
      info: GraphQLResolveInfo,
    ) => {
      const page = await listMasterProfiles(parent, args, ctx, info);
      // The total is asked for on the first page only: later pages never carry it.
      const totalCount = args.includeTotal && !args.cursor ? await ctx.data.masterProfiles.count(args.filter ?? {}) : null;
      return { ...page, totalCount };
    },
    masterProfile: getById("master profile", (ctx, id, info) => ctx.data.masterProfiles.byId(id, selectedShape(info, MASTER_PROFILE))),
  },

  MasterProfile: {
    guests: (row: { id: string }, _: unknown, ctx: RequestContext, info: GraphQLResolveInfo) =>
      ctx.loaders.guestsByMasterProfile(selectedShape(info, GUEST)).load(row.id),
    guestProfileIds: async (row: { id: string }, _: unknown, ctx: RequestContext) =>
      (await ctx.loaders.guestsByMasterProfile(GUEST_KEYS).load(row.id)).map((g) => g.id),
    loyaltyMemberships: (row: { id: string }, _: unknown, ctx: RequestContext) => ctx.loaders.loyaltyByMaster.load(row.id),
  },
};
