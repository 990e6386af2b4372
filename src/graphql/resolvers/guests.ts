// Guest profiles: one guest as one source system knows them.
import type { GraphQLContext } from "../../context";
import type { Prisma } from "../../generated/prisma/client";
import { getById, given, insensitive, keysetList, requireIntegrationForSourceId } from "./lists";

interface GuestFilter {
  sourceId?: string | null;
  integrationId?: string | null;
  propertyId?: string | null;
  masterProfileId?: string | null;
  email?: string | null;
  updatedSince?: Date | null;
}

function guestWhere(f: GuestFilter): Prisma.GuestProfileWhereInput {
  requireIntegrationForSourceId(f);
  return given({
    sourceId: f.sourceId,
    integrationId: f.integrationId,
    propertyId: f.propertyId,
    masterProfileId: f.masterProfileId,
    email: insensitive(f.email),
    updatedAt: f.updatedSince == null ? undefined : { gte: f.updatedSince },
  });
}

export const guestResolvers = {
  Query: {
    guests: keysetList<GuestFilter, Prisma.GuestProfileGetPayload<object>>("guests", (db, args) => db.guestProfile.findMany(args), guestWhere),
    guest: getById("guest", (db, id) => db.guestProfile.findUnique({ where: { id } })),
  },

  Guest: {
    property: (row: { propertyId: string }, _: unknown, ctx: GraphQLContext) => ctx.loaders.property.load(row.propertyId),
    integration: (row: { integrationId: string }, _: unknown, ctx: GraphQLContext) =>
      ctx.loaders.integration.load(row.integrationId),
    masterProfile: (row: { masterProfileId: string | null }, _: unknown, ctx: GraphQLContext) =>
      row.masterProfileId ? ctx.loaders.masterProfile.load(row.masterProfileId) : null,
    reservations: (row: { id: string }, _: unknown, ctx: GraphQLContext) => ctx.loaders.reservationsByGuest.load(row.id),
    transactions: (row: { id: string }, _: unknown, ctx: GraphQLContext) => ctx.loaders.transactionsByGuest.load(row.id),
    consents: (row: { id: string }, _: unknown, ctx: GraphQLContext) => ctx.loaders.consentsByGuest.load(row.id),
    reviews: (row: { id: string }, _: unknown, ctx: GraphQLContext) => ctx.loaders.reviewsByGuest.load(row.id),
    actions: (row: { id: string }, _: unknown, ctx: GraphQLContext) => ctx.loaders.actionsByGuest.load(row.id),
    loyaltyMemberships: (row: { id: string }, _: unknown, ctx: GraphQLContext) => ctx.loaders.loyaltyByGuest.load(row.id),
  },
};
