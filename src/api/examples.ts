// Examples for the OpenAPI document: one record of each kind, in the world of the demo data
// (src/fixtures/catalog.ts: group A, Harbour & Vine Hotels, its Brighton hotel on Opera Cloud).
// Response examples are composed from these records by generate.ts, so a page, a get-by-id answer
// and a table member show the same guest. A unit test validates every example against its schema.

export const IDS = {
  property: "0b6f6c1e-2a41-4c36-9b43-2f0d1f0e8a11",
  restaurant: "5c3d2b1a-0f9e-4d8c-b7a6-958473625140",
  integration: "7d2e5b90-58c4-4d7e-b2a9-1c4e6f8a9b02",
  connection: "e1d2c3b4-a596-4877-8695-a4b3c2d1e0f9",
  guest: "3f1c2a9e-7d4b-4c1a-9e2f-5b6a7c8d9e0f",
  masterProfile: "c4a1d2e3-f405-4617-8829-9a0b1c2d3e4f",
  reservation: "9a8b7c6d-5e4f-4a3b-8c2d-1e0f9a8b7c6d",
  transaction: "2b4d6f80-1a3c-4e5f-8a7b-9c0d1e2f3a4b",
  consent: "5e0c9a4b-1f2d-4e3a-8b7c-6d5e4f3a2b1c",
  action: "8c7b6a59-4d3e-4f21-9a0b-c1d2e3f4a5b6",
  review: "4a5b6c7d-8e9f-4a0b-9c1d-2e3f4a5b6c7d",
  loyaltyProgram: "6d5c4b3a-2910-4f8e-8d7c-6b5a49382716",
  loyaltyMember: "1f2e3d4c-5b6a-4798-8a7b-6c5d4e3f2a1b",
  channel: "0a1b2c3d-4e5f-4a6b-8c7d-9e0f1a2b3c4d",
  space: "d4c3b2a1-9f8e-4d7c-a6b5-0f1e2d3c4b5a",
  table: "b7a69584-7362-4514-9f8e-7d6c5b4a3928",
  binding: "f0e1d2c3-b4a5-4968-8877-66554433aa22",
} as const;

/** The `id` path parameter's example, by the path it belongs under. */
export const ID_EXAMPLES: Record<string, string> = {
  "/v1/properties": IDS.property,
  "/v1/integrations": IDS.integration,
  "/v1/guests": IDS.guest,
  "/v1/master-profiles": IDS.masterProfile,
  "/v1/reservations": IDS.reservation,
  "/v1/transactions": IDS.transaction,
  "/v1/actions": IDS.action,
  "/v1/reviews": IDS.review,
  "/v1/loyalty/members": IDS.loyaltyMember,
  "/v1/tables": IDS.table,
};

/** Opaque cursors look like this (base64url payload, a dot, a signature). */
export const CURSOR_EXAMPLE = "eyJrIjpbIjIwMjYtMDEtMTRUMDk6MzA6MDAuMDAwWiJdfQ.c2ln";

const PROPERTY = {
  id: IDS.property,
  name: "The Harbour Hotel Brighton",
  code: "HBR",
  kind: "hotel",
  timezone: "Europe/London",
  country_code: "GB",
  city: "Brighton",
  address_line: "1 Kings Road",
  currency: "GBP",
  room_count: 128,
  seat_count: null,
  created_at: "2025-09-01T08:00:00.000Z",
  updated_at: "2025-09-01T08:00:00.000Z",
};

const GUEST = {
  id: IDS.guest,
  property_id: IDS.property,
  integration_id: IDS.integration,
  source_id: "100234",
  master_profile_id: IDS.masterProfile,
  given_name: "Olivia",
  family_name: "Smith",
  email: "olivia.smith@example.com",
  phone: "+447700900123",
  language: "en",
  country_code: "GB",
  city: "London",
  birth_date: "1986-04-12",
  vip_code: "VIP1",
  created_at: "2026-01-14T09:30:00.000Z",
  updated_at: "2026-03-02T17:05:12.345Z",
};

const MASTER_PROFILE = {
  id: IDS.masterProfile,
  given_name: "Olivia",
  family_name: "Smith",
  email: "olivia.smith@example.com",
  phone: "+447700900123",
  language: "en",
  country_code: "GB",
  birth_date: "1986-04-12",
  vip: true,
  guest_profile_ids: [IDS.guest, "a1b2c3d4-e5f6-4a7b-8c9d-0e1f2a3b4c5d"],
  created_at: "2026-01-14T09:31:00.000Z",
  updated_at: "2026-03-02T17:05:13.000Z",
};

const CONSENT_OBSERVATION = {
  id: IDS.consent,
  property_id: null,
  integration_id: null,
  guest_profile_id: IDS.guest,
  contact_type: "email",
  contact_value: "olivia.smith@example.com",
  purpose: "email_marketing",
  channel: "email",
  status: "withdrawn",
  source: "preference_centre",
  observed_at: "2026-02-20T08:00:00.000Z",
  created_at: "2026-02-20T08:00:01.000Z",
};

const LOYALTY_TIER = { code: "gold", name: "Gold", threshold_points: 20000 };

const FLUSH_COUNTS = {
  pushed: 42,
  subscribed: 38,
  skipped_no_consent_subscribe: 9,
  skipped_suppressed: 3,
  skipped_unresolved: 1,
  removed: 4,
  failed: 0,
};

const BINDING_GUIDANCE = { recommends_consent_filter: false, consent_filter_field: "consent.email_marketing", consent_filter_present: true };

const DESTINATION_BINDING = {
  id: IDS.binding,
  table_id: IDS.table,
  connection_id: IDS.connection,
  provider: "mailchimp",
  remote_list_id: "a1b2c3d4e5",
  state: "active",
  confirmed_seq: "1874",
  log_head: "1880",
  lag: 6,
  last_flush_at: "2026-03-14T09:15:00.000Z",
  last_error: null,
  last_flush_counts: FLUSH_COUNTS,
  last_resync_run_handle: null,
  guidance: BINDING_GUIDANCE,
};

/** A filter document that the preview accepts and that the demo data answers. */
export const FILTER_DOC_EXAMPLE = {
  and: [
    { field: "country_code", op: "eq", value: "GB" },
    { field: "consent.email_marketing", op: "eq", value: "granted" },
  ],
};

const TABLE = {
  id: IDS.table,
  property_id: null,
  name: "Welcome-back list",
  description: "UK guests who agreed to e-mail marketing, for the spring campaign.",
  kind: "filter",
  member_type: "guest_profile",
  filter_doc: FILTER_DOC_EXAMPLE,
  created_by: "marketing@harbourandvine.example",
  member_count: null,
  created_at: "2026-02-01T10:00:00.000Z",
  updated_at: "2026-02-01T10:00:00.000Z",
};

/** One example per record component of the document, by component name. */
export const RECORD_EXAMPLES: Record<string, unknown> = {
  Property: PROPERTY,
  Integration: {
    id: IDS.integration,
    provider: "opera_cloud",
    name: "Opera Cloud – Brighton",
    property_id: IDS.property,
    status: "connected",
    source_ref: "HVH/HBR",
  },
  IntegrationConnection: {
    id: IDS.connection,
    integration_id: IDS.integration,
    auth_type: "oauth2_client_credentials",
    account_label: "HVH enterprise (OHIP)",
    granted_scopes: ["profiles:read", "reservations:read", "folios:read"],
    expires_at: "2027-01-14T09:00:00.000Z",
    rotated_at: "2026-01-14T09:00:00.000Z",
    created_at: "2025-09-01T08:05:00.000Z",
  },
  Guest: GUEST,
  MasterProfile: MASTER_PROFILE,
  Reservation: {
    id: IDS.reservation,
    property_id: IDS.property,
    integration_id: IDS.integration,
    source_id: "2000468",
    guest_profile_id: IDS.guest,
    confirmation_number: "10000468",
    kind: "stay",
    status: "checked_in",
    arrival_date: "2026-03-14",
    departure_date: "2026-03-17",
    nights: 3,
    starts_at: null,
    adults: 2,
    children: 0,
    room_type: "Deluxe King",
    room_number: "214",
    rate_code: "BB",
    space_id: IDS.space,
    booking_channel: "direct_web",
    total_amount_minor: 53700,
    currency: "GBP",
    special_requests: "Celebrating an anniversary",
    booked_at: "2026-02-02T11:20:00.000Z",
    cancelled_at: null,
    created_at: "2026-02-02T11:21:00.000Z",
    updated_at: "2026-03-14T15:02:03.120Z",
  },
  Transaction: {
    id: IDS.transaction,
    property_id: IDS.property,
    integration_id: IDS.integration,
    source_id: "30000936",
    guest_profile_id: IDS.guest,
    reservation_id: IDS.reservation,
    kind: "charge",
    category: "accommodation",
    description: "Accommodation, 3 night(s)",
    amount_minor: 53700,
    currency: "GBP",
    outlet: "Front Office",
    occurred_at: "2026-03-17T10:30:00.000Z",
    created_at: "2026-03-17T10:32:00.000Z",
  },
  ConsentObservation: CONSENT_OBSERVATION,
  EffectiveConsent: {
    contact_type: "email",
    contact_value: "olivia.smith@example.com",
    purpose: "email_marketing",
    status: "withdrawn",
    decided_by: CONSENT_OBSERVATION,
    observation_count: 2,
    last_observed_at: "2026-02-20T08:00:00.000Z",
  },
  Action: {
    id: IDS.action,
    property_id: IDS.property,
    guest_profile_id: IDS.guest,
    reservation_id: IDS.reservation,
    kind: "vip_amenity",
    title: "Prepare welcome amenity",
    body: "Champagne and a handwritten card in the room before arrival.",
    status: "open",
    priority: "high",
    assignee: "guest.relations@harbourandvine.example",
    due_at: "2026-03-14T14:00:00.000Z",
    completed_at: null,
    created_at: "2026-03-10T09:00:00.000Z",
    updated_at: "2026-03-10T09:00:00.000Z",
  },
  Review: {
    id: IDS.review,
    property_id: IDS.property,
    integration_id: null,
    source_id: "google-900234",
    guest_profile_id: IDS.guest,
    reservation_id: IDS.reservation,
    source: "google",
    rating: 5,
    source_rating: 5,
    source_scale: 5,
    title: "Perfect anniversary weekend",
    body: "Lovely sea-view room, and the team remembered our anniversary.",
    language: "en",
    published_at: "2026-03-19T20:15:00.000Z",
    response_body: "Thank you, Olivia: we hope to welcome you back soon.",
    responded_at: "2026-03-20T09:00:00.000Z",
    created_at: "2026-03-19T20:20:00.000Z",
  },
  ReviewSummary: {
    count: 412,
    average_rating: 4.31,
    by_rating: [
      { rating: 1, count: 9 },
      { rating: 2, count: 17 },
      { rating: 3, count: 41 },
      { rating: 4, count: 118 },
      { rating: 5, count: 227 },
    ],
    by_source: [
      { source: "google", count: 231, average_rating: 4.38 },
      { source: "tripadvisor", count: 181, average_rating: 4.22 },
    ],
    by_property: [
      { property_id: IDS.property, count: 298, average_rating: 4.35 },
      { property_id: IDS.restaurant, count: 114, average_rating: 4.2 },
    ],
    responded: { count: 176, average_rating: 3.96 },
  },
  LoyaltyTier: LOYALTY_TIER,
  LoyaltyProgram: {
    id: IDS.loyaltyProgram,
    name: "Harbour & Vine Circle",
    code: "HVC",
    points_name: "Anchors",
    tiers: [
      { code: "blue", name: "Blue", threshold_points: 0 },
      { code: "silver", name: "Silver", threshold_points: 5000 },
      LOYALTY_TIER,
      { code: "platinum", name: "Platinum", threshold_points: 60000 },
    ],
    active: true,
    created_at: "2025-09-01T08:00:00.000Z",
    updated_at: "2025-09-01T08:00:00.000Z",
  },
  LoyaltyMember: {
    id: IDS.loyaltyMember,
    program_id: IDS.loyaltyProgram,
    guest_profile_id: IDS.guest,
    master_profile_id: IDS.masterProfile,
    enrolment_property_id: IDS.property,
    member_number: "HVC-000000234",
    tier: "gold",
    status: "active",
    points_balance: 23150,
    lifetime_points: 41800,
    enrolled_at: "2026-01-14T09:45:00.000Z",
    tier_expires_at: "2027-03-31T23:59:59.000Z",
    created_at: "2026-01-14T09:45:00.000Z",
    updated_at: "2026-03-17T10:35:00.000Z",
  },
  Channel: {
    id: IDS.channel,
    property_id: IDS.property,
    integration_id: IDS.integration,
    source_id: "BDC",
    code: "booking_com",
    name: "Booking.com",
    kind: "ota",
    active: true,
    created_at: "2025-09-01T08:00:00.000Z",
    updated_at: "2025-09-01T08:00:00.000Z",
  },
  Space: {
    id: IDS.space,
    property_id: IDS.property,
    integration_id: IDS.integration,
    source_id: "214",
    code: "214",
    name: "Room 214 – Deluxe King",
    kind: "room",
    capacity: 3,
    floor: "2",
    active: true,
    created_at: "2025-09-01T08:00:00.000Z",
    updated_at: "2025-09-01T08:00:00.000Z",
  },
  Event: {
    seq: "1042",
    entity_type: "reservation",
    entity_id: IDS.reservation,
    guest_profile_id: IDS.guest,
    property_id: IDS.property,
    integration_id: IDS.integration,
    operation: "update",
    delta: { status: "checked_in" },
    occurred_at: "2026-03-14T15:02:00.000Z",
    recorded_at: "2026-03-14T15:02:03.120Z",
  },
  Table: TABLE,
  TableWithBindings: { ...TABLE, bindings: [DESTINATION_BINDING] },
  TableMember: { member_id: IDS.guest, member_type: "guest_profile", added_at: "2026-02-01T10:00:05.000Z", guest: GUEST, master_profile: null },
  DestinationBinding: DESTINATION_BINDING,
  FlushCounts: FLUSH_COUNTS,
  BindingGuidance: BINDING_GUIDANCE,
  RatingCount: { rating: 5, count: 227 },
  ReviewBreakdown: { count: 176, average_rating: 3.96 },
  ReviewSourceBreakdown: { source: "google", count: 231, average_rating: 4.38 },
  ReviewPropertyBreakdown: { property_id: IDS.property, count: 298, average_rating: 4.35 },
};

/** expand=guest: the person each row points at (GuestSummaryFields). */
const GUEST_SUMMARY = { id: IDS.guest, master_profile_id: IDS.masterProfile, name: "Olivia Smith", vip: true };
RECORD_EXAMPLES.GuestSummary = GUEST_SUMMARY;
// Each list row with its guest, named <Record>WithGuest in the document.
for (const record of ["Reservation", "Transaction", "ConsentObservation", "Action", "Review", "LoyaltyMember"]) {
  RECORD_EXAMPLES[`${record}WithGuest`] = { ...(RECORD_EXAMPLES[record] as object), guest: GUEST_SUMMARY };
}
RECORD_EXAMPLES.GuestWithNameAndVip = { ...GUEST, name: "Olivia Smith", vip: true };

/** Members of page envelopes: a first page with more to come. */
export const ENVELOPE_EXAMPLES: Record<string, unknown> = {
  next_cursor: CURSOR_EXAMPLE,
  has_more: true,
  next_offset: 50,
  total_count: 1284,
  mode: "timeline",
};
