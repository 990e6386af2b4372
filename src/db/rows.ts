// The rows the SQL read paths return (db/scoped-sql.ts): the model's fields under their Prisma names,
// so resolvers treat them like Prisma's rows; instants and dates arrive as the API's ISO text. A
// GraphQL selection reads the subset its fields need (the RowTypes at the end).
import type { RowShape } from "./scoped-sql";
import type { RowType } from "../graphql/selection";

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

// The same rows as GraphQL types (graphql/selection.ts): a selection reads only the columns its
// fields need. `always` holds the key, the keyset cursor's columns and the loaders' grouping keys.
const byId = ["id"] as const;
export const GUEST: RowType = {
  shape: GUEST_ROW,
  always: ["id", "createdAt", "masterProfileId"],
  reads: {
    property: ["propertyId"],
    integration: ["integrationId"],
    masterProfile: ["masterProfileId"],
    reservations: byId,
    transactions: byId,
    consents: byId,
    reviews: byId,
    actions: byId,
    loyaltyMemberships: byId,
  },
};

/** Just enough of a guest to list the ids under a master profile. */
export const GUEST_KEYS: RowShape = { id: "value", masterProfileId: "value" };

export const MASTER_PROFILE: RowType = {
  shape: MASTER_PROFILE_ROW,
  always: ["id", "createdAt"],
  reads: { guests: byId, guestProfileIds: byId, loyaltyMemberships: byId },
};

export const RESERVATION: RowType = {
  shape: RESERVATION_ROW,
  always: ["id", "guestProfileId"],
  reads: { nights: ["arrivalDate", "departureDate"], guest: ["guestProfileId"], property: ["propertyId"], transactions: byId },
};

export const TRANSACTION: RowType = { shape: TRANSACTION_ROW, always: ["id", "guestProfileId"], reads: {} };
