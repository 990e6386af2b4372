// The rows data/ reads in SQL as GraphQL types (graphql/selection.ts): a selection reads only the
// columns its fields need. `always` holds the key, the keyset cursor's columns and the loaders'
// grouping keys; `reads` the columns each non-column field's resolver reads (relations: their key).
import { GUEST_ROW } from "../data/guests";
import { MASTER_PROFILE_ROW } from "../data/master-profiles";
import { RESERVATION_ROW, TRANSACTION_ROW } from "../data/stays";
import type { RowType } from "./selection";

const byId = ["id"] as const;

export const GUEST: RowType = {
  shape: GUEST_ROW,
  always: ["id", "createdAt", "masterProfileId"],
  reads: {
    name: ["givenName", "familyName"],
    vip: ["masterProfileId", "vipCode"],
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

export const TRANSACTION: RowType = { shape: TRANSACTION_ROW, always: ["id", "guestProfileId"], reads: { guest: ["guestProfileId"] } };
