// Guest profiles: one guest as one source system knows them (data/guests.ts).
import type { GraphQLResolveInfo } from "graphql";
import type { RequestContext } from "../../context";
import { guestKeyOf, type GuestFilter } from "../../data/guests";
import { GUEST, RESERVATION, TRANSACTION } from "../row-types";
import { selectedShape } from "../selection";
import type { JsonRow } from "../../data/json-rows";
import type { CursorKey } from "../../pagination/cursor";
import { RESERVATIONS_OF_GUEST, TRANSACTIONS_OF_GUEST } from "../../data/stays";
import { jsonPage, jsonRelation } from "../json-page";
import { getById, jsonKeysetList, requireIntegrationForSourceId, selectedKeysetList } from "./lists";

/** Query.guests for the JSON read path (graphql/json-plan.ts): the resolver below, rows as JSON text. */
export const guestPageJson = jsonKeysetList<GuestFilter, JsonRow>("guests", guestKeyOf, (ctx) => ctx.data.guests.pageJson, requireIntegrationForSourceId);
/** The same for a flat selection, each row its member object; `keyOf` reads the cursor key under the selection's keys. */
export const guestPageRows = (keyOf: (row: Record<string, unknown>) => CursorKey) =>
  jsonKeysetList<GuestFilter, Record<string, unknown>>("guests", keyOf, (ctx) => ctx.data.guests.pageRows, requireIntegrationForSourceId);

export const guestResolvers = {
  Query: {
    guests: {
      resolve: selectedKeysetList<GuestFilter, { createdAt: string; id: string }>(
        "guests",
        GUEST,
        guestKeyOf,
        (ctx) => ctx.data.guests.page,
        requireIntegrationForSourceId,
      ),
      // The JSON read path (graphql/json-plan.ts) reads this page with the readers above.
      extensions: jsonPage({ nodes: "Guest", read: guestPageJson, key: ["createdAt", "id"], readRows: guestPageRows }),
    },
    guest: getById("guest", (ctx, id, info) => ctx.data.guests.byId(id, selectedShape(info, GUEST))),
  },

  Guest: {
    name: (g: { givenName: string | null; familyName: string | null }) => [g.givenName, g.familyName].filter(Boolean).join(" ") || null,
    // As the guest context says it (resolvers/guest-context.ts): the person's flag, else the source's code.
    vip: async (g: { masterProfileId: string | null; vipCode: string | null }, _: unknown, ctx: RequestContext) => {
      const master = g.masterProfileId ? await ctx.loaders.masterProfile.load(g.masterProfileId) : null;
      return master?.vip ?? g.vipCode != null;
    },
    property: (row: { propertyId: string }, _: unknown, ctx: RequestContext) => ctx.loaders.property.load(row.propertyId),
    integration: (row: { integrationId: string }, _: unknown, ctx: RequestContext) =>
      ctx.loaders.integration.load(row.integrationId),
    masterProfile: (row: { masterProfileId: string | null }, _: unknown, ctx: RequestContext) =>
      row.masterProfileId ? ctx.loaders.masterProfile.load(row.masterProfileId) : null,
    // What the loaders read, in SQL terms, for the JSON read path (data/stays.ts says it once).
    reservations: {
      resolve: (row: { id: string }, _: unknown, ctx: RequestContext, info: GraphQLResolveInfo) =>
        ctx.loaders.reservationsByGuest(selectedShape(info, RESERVATION)).load(row.id),
      extensions: jsonRelation(RESERVATIONS_OF_GUEST),
    },
    transactions: {
      resolve: (row: { id: string }, _: unknown, ctx: RequestContext, info: GraphQLResolveInfo) =>
        ctx.loaders.transactionsByGuest(selectedShape(info, TRANSACTION)).load(row.id),
      extensions: jsonRelation(TRANSACTIONS_OF_GUEST),
    },
    consents: (row: { id: string }, _: unknown, ctx: RequestContext) => ctx.loaders.consentsByGuest.load(row.id),
    reviews: (row: { id: string }, _: unknown, ctx: RequestContext) => ctx.loaders.reviewsByGuest.load(row.id),
    actions: (row: { id: string }, _: unknown, ctx: RequestContext) => ctx.loaders.actionsByGuest.load(row.id),
    loyaltyMemberships: (row: { id: string }, _: unknown, ctx: RequestContext) => ctx.loaders.loyaltyByGuest.load(row.id),
  },
};
