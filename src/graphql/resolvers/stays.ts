// Stays and spend: reservations and folio transactions (data/stays.ts).
import type { RequestContext } from "../../context";
import { stayKeyOf, type ReservationFilter, type TransactionFilter } from "../../data/stays";
import { getById, guestOfRow, keysetList, requireIntegrationForSourceId } from "./lists";

const DAY_MS = 86_400_000;

export const stayResolvers = {
  Query: {
    reservations: keysetList<ReservationFilter, { createdAt: string; id: string }>(
      "reservations",
      stayKeyOf,
      (ctx) => ctx.data.stays.reservationPage,
      requireIntegrationForSourceId,
    ),
    reservation: getById("reservation", (ctx, id) => ctx.data.stays.reservationById(id)),
    transactions: keysetList<TransactionFilter, { createdAt: string; id: string }>("transactions", stayKeyOf, (ctx) => ctx.data.stays.transactionPage),
    transaction: getById("transaction", (ctx, id) => ctx.data.stays.transactionById(id)),
  },

  Reservation: {
    // Dates arrive as YYYY-MM-DD (data/stays.ts), which Date.parse reads as UTC midnight.
    nights: (r: { arrivalDate: string; departureDate: string }) =>
      Math.max(0, Math.round((Date.parse(r.departureDate) - Date.parse(r.arrivalDate)) / DAY_MS)),
    guest: guestOfRow,
    property: (r: { propertyId: string }, _: unknown, ctx: RequestContext) => ctx.loaders.property.load(r.propertyId),
    transactions: (r: { id: string }, _: unknown, ctx: RequestContext) => ctx.loaders.transactionsByReservation.load(r.id),
  },
  Transaction: { guest: guestOfRow },
};
