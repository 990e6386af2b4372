// Master profiles: one per real guest, clustering guest profiles across sources and properties.
// Read in SQL like guests: agents look master profiles up by e-mail and search them by name.
import type { GraphQLContext } from "../../context";
import { escapeLike } from "../../db/like";
import type { GraphQLResolveInfo } from "graphql";
import { GUEST, GUEST_KEYS, MASTER_PROFILE } from "../../db/rows";
import { selectedShape } from "../selection";
import { col, equals, equalsInsensitive, sql } from "../../db/scoped-sql";
import { sqlGetById, sqlKeysetList, type PageArgs } from "./lists";

interface MasterProfileFilter {
  q?: string | null;
  email?: string | null;
  propertyId?: string | null;
  vip?: boolean | null;
  updatedSince?: Date | null;
}

function masterConditions(f: MasterProfileFilter) {
  const search = f.q?.trim();
  const pattern = search ? `%${escapeLike(search)}%` : undefined;
  return [
    equalsInsensitive("email", f.email),
    equals("vip", f.vip),
    f.updatedSince == null ? undefined : sql`${col("updatedAt")} >= ${f.updatedSince}`,
    f.propertyId == null
      ? undefined
      : sql`EXISTS (SELECT 1 FROM guest_profiles gp WHERE gp.master_profile_id = ${col("id")}
              AND gp.property_group_id = ${col("propertyGroupId")} AND gp.property_id = ${f.propertyId}::uuid)`,
    pattern === undefined
      ? undefined
      : sql`(${col("givenName")} ILIKE ${pattern} OR ${col("familyName")} ILIKE ${pattern} OR ${col("email")} ILIKE ${pattern})`,
  ];
}

/**
 * How many master profiles match. The whole group's total is kept by triggers (master_profile_counts),
 * so the common unfiltered search reads one row; a filter or a narrowed property counts the matches.
 */
async function countMatches(filter: MasterProfileFilter, ctx: GraphQLContext): Promise<number> {
  const unfiltered = Object.entries(filter).every(([key, value]) => value == null || (key === "q" && !String(value).trim()));
  if (unfiltered && ctx.scope.propertyId === null) {
    const [row] = await ctx.sql.rows<{ total: string }>({ from: "MasterProfileCount", shape: { total: "value" } });
    return Number(row?.total ?? 0);
  }
  return ctx.sql.count({ from: "MasterProfile", where: masterConditions(filter) });
}

const listMasterProfiles = sqlKeysetList<MasterProfileFilter>("master_profiles", "MasterProfile", MASTER_PROFILE, masterConditions);

export const masterProfileResolvers = {
  Query: {
    masterProfiles: async (
      parent: unknown,
      args: PageArgs<MasterProfileFilter> & { includeTotal?: boolean | null },
      ctx: GraphQLContext,
      info: GraphQLResolveInfo,
    ) => {
      const page = await listMasterProfiles(parent, args, ctx, info);
      // The total is asked for on the first page only: later pages never carry it.
      const totalCount = args.includeTotal && !args.cursor ? await countMatches(args.filter ?? {}, ctx) : null;
      return { ...page, totalCount };
    },
    masterProfile: sqlGetById("master profile", "MasterProfile", MASTER_PROFILE),
  },

  MasterProfile: {
    guests: (row: { id: string }, _: unknown, ctx: GraphQLContext, info: GraphQLResolveInfo) =>
      ctx.loaders.guestsByMasterProfile(selectedShape(info, GUEST)).load(row.id),
    guestProfileIds: async (row: { id: string }, _: unknown, ctx: GraphQLContext) =>
      (await ctx.loaders.guestsByMasterProfile(GUEST_KEYS).load(row.id)).map((g) => g.id),
    loyaltyMemberships: (row: { id: string }, _: unknown, ctx: GraphQLContext) => ctx.loaders.loyaltyByMaster.load(row.id),
  },
};
