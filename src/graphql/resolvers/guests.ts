// Guest profiles and their master profiles.
import type { GraphQLContext } from "../../context";
import type { Prisma } from "../../generated/prisma/client";
import { byCreatedAt, keysetPage } from "../../pagination/keyset";
import { apiError, notFound } from "../errors";

interface GuestFilter {
  sourceId?: string | null;
  integrationId?: string | null;
  propertyId?: string | null;
  masterProfileId?: string | null;
  email?: string | null;
  updatedSince?: Date | null;
}

interface PageArgs<F> {
  filter?: F | null;
  limit?: number | null;
  cursor?: string | null;
}

function guestWhere(filter: GuestFilter): Prisma.GuestProfileWhereInput {
  if (filter.sourceId != null && filter.integrationId == null) {
    throw apiError("source_id requires integration_id", "a source_id is only unique within one integration: send integration_id too");
  }
  return {
    ...(filter.sourceId != null ? { sourceId: filter.sourceId } : {}),
    ...(filter.integrationId != null ? { integrationId: filter.integrationId } : {}),
    ...(filter.masterProfileId != null ? { masterProfileId: filter.masterProfileId } : {}),
    ...(filter.email != null ? { email: { equals: filter.email, mode: "insensitive" as const } } : {}),
    ...(filter.updatedSince != null ? { updatedAt: { gte: filter.updatedSince } } : {}),
  };
}

export const guestResolvers = {
  Query: {
    guests: (_: unknown, args: PageArgs<GuestFilter>, ctx: GraphQLContext) => {
      const filter = args.filter ?? {};
      const where: Prisma.GuestProfileWhereInput = {
        ...guestWhere(filter),
        ...(filter.propertyId != null ? { propertyId: filter.propertyId } : {}),
      };
      return keysetPage({
        limit: args.limit,
        cursor: args.cursor,
        secret: ctx.cursorSecret,
        binding: { family: "guests", propertyGroupId: ctx.scope.propertyGroupId, query: { filter, propertyId: ctx.scope.propertyId } },
        keyOf: byCreatedAt.keyOf,
        fetch: (after, take) =>
          ctx.db.guestProfile.findMany({
            where: { AND: [where, byCreatedAt.after(after)] },
            orderBy: byCreatedAt.orderBy,
            take,
          }),
      });
    },

    guest: async (_: unknown, args: { id: string }, ctx: GraphQLContext) => {
      const guest = await ctx.db.guestProfile.findUnique({ where: { id: args.id } });
      if (!guest) throw notFound("guest", args.id);
      return guest;
    },
  },

  Guest: {
    property: (row: { propertyId: string }, _: unknown, ctx: GraphQLContext) => ctx.loaders.property.load(row.propertyId),
    integration: (row: { integrationId: string }, _: unknown, ctx: GraphQLContext) =>
      ctx.loaders.integration.load(row.integrationId),
    masterProfile: (row: { masterProfileId: string | null }, _: unknown, ctx: GraphQLContext) =>
      row.masterProfileId ? ctx.loaders.masterProfile.load(row.masterProfileId) : null,
  },

  MasterProfile: {
    guests: (row: { id: string }, _: unknown, ctx: GraphQLContext) => ctx.loaders.guestsByMasterProfile.load(row.id),
  },
};
