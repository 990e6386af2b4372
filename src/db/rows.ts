// The rows the SQL read paths return (db/scoped-sql.ts): every field of the model, under its Prisma
// name, so resolvers treat them like Prisma's rows; instants and dates arrive as the API's ISO text.
import type { RowShape } from "./scoped-sql";

export const GUEST_ROW: RowShape = {
  id: "value",
  propertyId: "value",
  integrationId: "value",
  sourceId: "value",
  masterProfileId: "value",
  givenName: "value",
  familyName: "value",
  email: "value",
  phone: "value",
  language: "value",
  countryCode: "value",
  city: "value",
  birthDate: "date",
  vipCode: "value",
  createdAt: "instant",
  updatedAt: "instant",
};

export const MASTER_PROFILE_ROW: RowShape = {
  id: "value",
  givenName: "value",
  familyName: "value",
  email: "value",
  phone: "value",
  language: "value",
  countryCode: "value",
  birthDate: "date",
  vip: "value",
  createdAt: "instant",
  updatedAt: "instant",
};

export interface GuestRow {
  id: string;
  propertyId: string;
  integrationId: string;
  sourceId: string;
  masterProfileId: string | null;
  givenName: string | null;
  familyName: string | null;
  email: string | null;
  phone: string | null;
  language: string | null;
  countryCode: string | null;
  city: string | null;
  birthDate: string | null;
  vipCode: string | null;
  createdAt: string;
  updatedAt: string;
}

export const RESERVATION_ROW: RowShape = {
  id: "value",
  propertyId: "value",
  integrationId: "value",
  sourceId: "value",
  guestProfileId: "value",
  confirmationNumber: "value",
  kind: "value",
  status: "value",
  arrivalDate: "date",
  departureDate: "date",
  startsAt: "instant",
  adults: "value",
  children: "value",
  roomType: "value",
  roomNumber: "value",
  rateCode: "value",
  spaceId: "value",
  bookingChannel: "value",
  totalAmountMinor: "value",
  currency: "value",
  specialRequests: "value",
  bookedAt: "instant",
  cancelledAt: "instant",
  createdAt: "instant",
  updatedAt: "instant",
};

export const TRANSACTION_ROW: RowShape = {
  id: "value",
  propertyId: "value",
  integrationId: "value",
  sourceId: "value",
  guestProfileId: "value",
  reservationId: "value",
  kind: "value",
  category: "value",
  description: "value",
  amountMinor: "value",
  currency: "value",
  outlet: "value",
  occurredAt: "instant",
  createdAt: "instant",
};
