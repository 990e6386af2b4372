// Guest profiles: one guest as one source system knows them. Read in SQL: the guests page is the
// hottest path of the API (db/scoped-sql.ts says why).
import type { GraphQLContext } from "../../context";
import type { GraphQLResolveInfo } from "graphql";
import { GUEST, RESERVATION, TRANSACTION } from "../../db/rows";
import { col, equals, equalsInsensitive, sql } from "../../db/scoped-sql";
import { selectedShape } from "../selection";
import { requireIntegrationForSourceId, sqlGetById, sqlKeysetList } from "./lists";

interface GuestFilter {
  sourceId?: string | null;
  integrationId?: string | null;
  propertyId?: string | null;
  masterProfileId?: string | null;
  email?: string | null;
  updatedSince?: Date | null;
}

function guestConditions(f: GuestFilter) {
  requireIntegrationForSourceId(f);
  return [
    equals("sourceId", f.sourceId),
    equals("integrationId", f.integrationId),
    equals("propertyId", f.propertyId),
    equals("masterProfileId", f.masterProfileId),
    equalsInsensitive("email", f.email),
    f.updatedSince == null ? undefined : sql`${col("updatedAt")} >= ${f.updatedSince}`,
  ];
}

export const guestResolvers = {
  Query: {
    guests: sqlKeysetList<GuestFilter>("guests", "GuestProfile", GUEST, guestConditions),
    guest: sqlGetById("guest", "GuestProfile", GUEST),
  },

  Guest: {
    property: (row: { propertyId: string }, _: unknown, ctx: GraphQLContext) => ctx.loaders.property.load(row.propertyId),
    integration: (row: { integrationId: string }, _: unknown, ctx: GraphQLContext) =>
      ctx.loaders.integration.load(row.integrationId),
    masterProfile: (row: { masterProfileId: string | null }, _: unknown, ctx: GraphQLContext) =>
      row.masterProfileId ? ctx.loaders.masterProfile.load(row.masterProfileId) : null,
    reservations: (row: { id: string }, _: unknown, ctx: GraphQLContext, info: GraphQLResolveInfo) =>
      ctx.loaders.reservationsByGuest(selectedShape(info, RESERVATION)).load(row.id),
    transactions: (row: { id: string }, _: unknown, ctx: GraphQLContext, info: GraphQLResolveInfo) =>
      ctx.loaders.transactionsByGuest(selectedShape(info, TRANSACTION)).load(row.id),
    consents: (row: { id: string }, _: unknown, ctx: GraphQLContext) => ctx.loaders.consentsByGuest.load(row.id),
    reviews: (row: { id: string }, _: unknown, ctx: GraphQLContext) => ctx.loaders.reviewsByGuest.load(row.id),
    actions: (row: { id: string }, _: unknown, ctx: GraphQLContext) => ctx.loaders.actionsByGuest.load(row.id),
    loyaltyMemberships: (row: { id: string }, _: unknown, ctx: GraphQLContext) => ctx.loaders.loyaltyByGuest.load(row.id),
  },
};
