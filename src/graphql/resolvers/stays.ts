// Stays and spend: reservations and folio transactions.
import type { GraphQLContext } from "../../context";
import type { Prisma } from "../../generated/prisma/client";
import { getById, given, guestIdsOfMaster, keysetList, range, requireIntegrationForSourceId } from "./lists";

interface ReservationFilter {
  guestProfileId?: string | null;
  masterProfileId?: string | null;
  propertyId?: string | null;
  integrationId?: string | null;
  sourceId?: string | null;
  status?: string | null;
  kind?: string | null;
  confirmationNumber?: string | null;
  arrivalFrom?: Date | null;
  arrivalTo?: Date | null;
  departureFrom?: Date | null;
  departureTo?: Date | null;
  updatedSince?: Date | null;
}

interface TransactionFilter {
  guestProfileId?: string | null;
  masterProfileId?: string | null;
  reservationId?: string | null;
  propertyId?: string | null;
  integrationId?: string | null;
  kind?: string | null;
  category?: string | null;
  occurredFrom?: Date | null;
  occurredTo?: Date | null;
}

async function reservationWhere(f: ReservationFilter, ctx: GraphQLContext): Promise<Prisma.ReservationWhereInput> {
  requireIntegrationForSourceId(f);
  const ofMaster = await guestIdsOfMaster(ctx, f.masterProfileId);
  return {
    ...given({
      propertyId: f.propertyId,
      integrationId: f.integrationId,
      sourceId: f.sourceId,
      status: f.status,
      kind: f.kind,
      confirmationNumber: f.confirmationNumber,
      arrivalDate: range(f.arrivalFrom, f.arrivalTo, false),
      departureDate: range(f.departureFrom, f.departureTo, false),
      updatedAt: f.updatedSince == null ? undefined : { gte: f.updatedSince },
    }),
    AND: [given({ guestProfileId: f.guestProfileId }), given({ guestProfileId: ofMaster })],
  };
}

async function transactionWhere(f: TransactionFilter, ctx: GraphQLContext): Promise<Prisma.TransactionWhereInput> {
  const ofMaster = await guestIdsOfMaster(ctx, f.masterProfileId);
  return {
    ...given({
      reservationId: f.reservationId,
      propertyId: f.propertyId,
      integrationId: f.integrationId,
      kind: f.kind,
      category: f.category,
      occurredAt: range(f.occurredFrom, f.occurredTo, true),
    }),
    AND: [given({ guestProfileId: f.guestProfileId }), given({ guestProfileId: ofMaster })],
  };
}

const DAY_MS = 86_400_000;
/** Rows read in SQL carry dates as YYYY-MM-DD text (db/rows.ts), Prisma's as Date: both to UTC ms. */
const dayOf = (d: Date | string) => (typeof d === "string" ? Date.parse(d) : d.getTime());

export const stayResolvers = {
  Query: {
    reservations: keysetList<ReservationFilter, Prisma.ReservationGetPayload<object>>(
      "reservations",
      (db, args) => db.reservation.findMany(args),
      reservationWhere,
    ),
    reservation: getById("reservation", (db, id) => db.reservation.findUnique({ where: { id } })),
    transactions: keysetList<TransactionFilter, Prisma.TransactionGetPayload<object>>(
      "transactions",
      (db, args) => db.transaction.findMany(args),
      transactionWhere,
    ),
    transaction: getById("transaction", (db, id) => db.transaction.findUnique({ where: { id } })),
  },

  Reservation: {
    nights: (r: { arrivalDate: Date | string; departureDate: Date | string }) =>
      Math.max(0, Math.round((dayOf(r.departureDate) - dayOf(r.arrivalDate)) / DAY_MS)),
    guest: (r: { guestProfileId: string | null }, _: unknown, ctx: GraphQLContext) =>
      r.guestProfileId ? ctx.loaders.guest.load(r.guestProfileId) : null,
    property: (r: { propertyId: string }, _: unknown, ctx: GraphQLContext) => ctx.loaders.property.load(r.propertyId),
    transactions: (r: { id: string }, _: unknown, ctx: GraphQLContext) => ctx.loaders.transactionsByReservation.load(r.id),
  },

};
