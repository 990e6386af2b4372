// Master profiles: one per real guest, clustering guest profiles across sources and properties.
import type { GraphQLContext } from "../../context";
import type { Prisma } from "../../generated/prisma/client";
import { containsInsensitive, getById, given, insensitive, keysetList, type PageArgs } from "./lists";

interface MasterProfileFilter {
  q?: string | null;
  email?: string | null;
  propertyId?: string | null;
  vip?: boolean | null;
  updatedSince?: Date | null;
}

function masterWhere(f: MasterProfileFilter): Prisma.MasterProfileWhereInput {
  const search = f.q?.trim();
  return {
    ...given({
      email: insensitive(f.email),
      vip: f.vip,
      updatedAt: f.updatedSince == null ? undefined : { gte: f.updatedSince },
      guests: f.propertyId == null ? undefined : { some: { propertyId: f.propertyId } },
    }),
    ...(search
      ? {
          OR: [
            { givenName: containsInsensitive(search) },
            { familyName: containsInsensitive(search) },
            { email: containsInsensitive(search) },
          ],
        }
      : {}),
  };
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
  return ctx.db.masterProfile.count({ where: masterWhere(filter) });
}

const listMasterProfiles = keysetList<MasterProfileFilter, Prisma.MasterProfileGetPayload<object>>(
  "master_profiles",
  (db, args) => db.masterProfile.findMany(args),
  masterWhere,
);

export const masterProfileResolvers = {
  Query: {
    masterProfiles: async (
      parent: unknown,
      args: PageArgs<MasterProfileFilter> & { includeTotal?: boolean | null },
      ctx: GraphQLContext,
    ) => {
      const page = await listMasterProfiles(parent, args, ctx);
      // The total is asked for on the first page only: later pages never carry it.
      const totalCount = args.includeTotal && !args.cursor ? await countMatches(args.filter ?? {}, ctx) : null;
      return { ...page, totalCount };
    },
    masterProfile: getById("master profile", (db, id) => db.masterProfile.findUnique({ where: { id } })),
  },

  MasterProfile: {
    guests: (row: { id: string }, _: unknown, ctx: GraphQLContext) => ctx.loaders.guestsByMasterProfile.load(row.id),
    guestProfileIds: async (row: { id: string }, _: unknown, ctx: GraphQLContext) =>
      (await ctx.loaders.guestsByMasterProfile.load(row.id)).map((g) => g.id),
    loyaltyMemberships: (row: { id: string }, _: unknown, ctx: GraphQLContext) => ctx.loaders.loyaltyByMaster.load(row.id),
  },
};
