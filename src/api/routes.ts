// The whole /v1 surface as data: each route names its scope, its GraphQL operation, how request
// parameters become variables, and how the result becomes the response body.
import { MAX_DESCRIPTION, MAX_PROPERTY_IDS, MAX_URL } from "../webhooks/input";
import { bodyParam, bool, date, enumOf, expand, instant, int, jsonValue, lowerEnumOf, requiredParam, str, stringList, text, uuid, uuidOrNotFound, type BodySpec, type ParamSpec } from "./params";

export interface RouteSpec {
  method: "GET" | "POST" | "DELETE";
  /** Express path, e.g. /v1/guests/:id */
  path: string;
  /** First required scope: echoed in 403s raised before the operation runs. */
  scope: string;
  /** Named operation in api/operations/routes/*.graphql. */
  operation: string;
  pathParams?: Record<string, ParamSpec>;
  query?: Record<string, ParamSpec>;
  body?: Record<string, BodySpec>;
  /**
   * "body": the operation's data is the body (`{ data: … }` via the `data:` alias).
   * "unwrap": the single root field's value is the body (pages, aggregate objects).
   */
  envelope: "body" | "unwrap";
  /** The success status when not 200: 201 (created) or 204 (no body). */
  status?: 201 | 204;
  /** A 404 without a path id: a body member names a record that may be missing (the lookup's table_id). */
  bodyNotFound?: true;
  /** Members dropped from the body when null (total_count appears only when asked for). */
  omitNull?: string[];
  /** Query values on their way out: answered with `Deprecation` and `Sunset` headers (respond.ts). */
  deprecatedValues?: DeprecatedValue[];
}

export interface DeprecatedValue {
  parameter: string;
  value: string;
  /** RFC 9745: since when it is deprecated (1.0.0, which deprecated mode=rollup, was released then). */
  deprecatedAt: Date;
  /** RFC 8594: after this instant it may stop working. */
  sunsetAt: Date;
}

/** `mode=rollup`, an alias of `mode=latest` kept for old clients: six months' notice from 1.0.0. */
export const ROLLUP_DEPRECATION: DeprecatedValue = {
  parameter: "mode",
  value: "rollup",
  deprecatedAt: new Date("2026-11-23T00:00:00Z"),
  sunsetAt: new Date("2027-06-01T00:00:00Z"),
};

const keyset = { limit: int("limit"), cursor: str("cursor") };
const offset = { limit: int("limit"), offset: int("offset"), include_total: bool("includeTotal") };
const byId = (variable = "id") => ({ id: uuid(variable) });
const updatedSince = { updated_since: instant("filter.updatedSince") };
/** Lists whose rows point at a guest: `expand=guest` adds each row's `guest` (the operation's @include). */
const expandGuest = { expand: expand("guest") };

/** A keyset list route: GET path, filters under `filter.*`. */
function list(path: string, scope: string, operation: string, filters: Record<string, ParamSpec>): RouteSpec {
  return { method: "GET", path, scope, operation, query: { ...keyset, ...filters }, envelope: "unwrap", omitNull: ["total_count"] };
}

/** A get-by-id route: `{ data }` or 404. */
function get(path: string, scope: string, operation: string): RouteSpec {
  return { method: "GET", path, scope, operation, pathParams: byId(), envelope: "body" };
}

export const routes: RouteSpec[] = [
  { method: "GET", path: "/v1/properties", scope: "read:properties", operation: "ListProperties", envelope: "body" },
  get("/v1/properties/:id", "read:properties", "GetProperty"),
  { method: "GET", path: "/v1/integrations", scope: "read:properties", operation: "ListIntegrations", envelope: "body" },
  { method: "GET", path: "/v1/integrations/:id/connection", scope: "read:properties", operation: "GetIntegrationConnection",
    pathParams: byId("integrationId"), envelope: "body" },

  list("/v1/guests", "read:guests", "ListGuests", {
    source_id: str("filter.sourceId"),
    integration_id: uuid("filter.integrationId"),
    property_id: uuid("filter.propertyId"),
    master_profile_id: uuid("filter.masterProfileId"),
    email: str("filter.email"),
    ...updatedSince,
  }),
  get("/v1/guests/:id", "read:guests", "GetGuest"),
  { method: "POST", path: "/v1/guests/lookup", scope: "read:guests", operation: "LookupGuests", envelope: "unwrap", body: lookupBody(), bodyNotFound: true },

  {
    ...list("/v1/master-profiles", "read:guests", "ListMasterProfiles", {
      q: str("filter.q"),
      email: str("filter.email"),
      property_id: uuid("filter.propertyId"),
      vip: bool("filter.vip"),
      include_total: bool("includeTotal"),
      ...updatedSince,
    }),
    omitNull: ["total_count", "candidates"], // candidates: only when q matched nothing (issue 42)
  },
  get("/v1/master-profiles/:id", "read:guests", "GetMasterProfile"),
  { method: "GET", path: "/v1/master-profiles/:id/links", scope: "read:guests", operation: "ListMasterProfileLinks",
    pathParams: byId("masterProfileId"), envelope: "body" },

  list("/v1/reservations", "read:reservations", "ListReservations", {
    guest_profile_id: uuid("filter.guestProfileId"),
    master_profile_id: uuid("filter.masterProfileId"),
    property_id: uuid("filter.propertyId"),
    integration_id: uuid("filter.integrationId"),
    source_id: str("filter.sourceId"),
    status: enumOf("filter.status", "ReservationStatus"),
    kind: enumOf("filter.kind", "ReservationKind"),
    confirmation_number: str("filter.confirmationNumber"),
    arrival_from: date("filter.arrivalFrom"),
    arrival_to: date("filter.arrivalTo"),
    departure_from: date("filter.departureFrom"),
    departure_to: date("filter.departureTo"),
    ...updatedSince,
    ...expandGuest,
  }),
  get("/v1/reservations/:id", "read:reservations", "GetReservation"),

  list("/v1/transactions", "read:transactions", "ListTransactions", {
    guest_profile_id: uuid("filter.guestProfileId"),
    master_profile_id: uuid("filter.masterProfileId"),
    reservation_id: uuid("filter.reservationId"),
    property_id: uuid("filter.propertyId"),
    integration_id: uuid("filter.integrationId"),
    kind: enumOf("filter.kind", "TransactionKind"),
    category: str("filter.category"),
    occurred_from: instant("filter.occurredFrom"),
    occurred_to: instant("filter.occurredTo"),
    ...expandGuest,
  }),
  get("/v1/transactions/:id", "read:transactions", "GetTransaction"),

  list("/v1/consents", "read:consents", "ListConsents", {
    guest_profile_id: uuid("filter.guestProfileId"),
    master_profile_id: uuid("filter.masterProfileId"),
    contact_value: str("filter.contactValue"),
    email: str("filter.contactValue"),
    purpose: str("filter.purpose"),
    status: enumOf("filter.status", "ConsentStatus"),
    property_id: uuid("filter.propertyId"),
    observed_from: instant("filter.observedFrom"),
    observed_to: instant("filter.observedTo"),
    ...expandGuest,
  }),
  list("/v1/consents/effective", "read:consents", "ListEffectiveConsents", {
    contact_value: str("filter.contactValue"),
    email: str("filter.contactValue"),
    purpose: str("filter.purpose"),
    guest_profile_id: uuid("filter.guestProfileId"),
    ...expandGuest,
  }),

  list("/v1/actions", "read:actions", "ListActions", {
    guest_profile_id: uuid("filter.guestProfileId"),
    master_profile_id: uuid("filter.masterProfileId"),
    reservation_id: uuid("filter.reservationId"),
    property_id: uuid("filter.propertyId"),
    status: enumOf("filter.status", "ActionStatus"),
    priority: enumOf("filter.priority", "ActionPriority"),
    kind: str("filter.kind"),
    due_from: instant("filter.dueFrom"),
    due_to: instant("filter.dueTo"),
    ...updatedSince,
    ...expandGuest,
  }),
  get("/v1/actions/:id", "read:actions", "GetAction"),

  { method: "GET", path: "/v1/reviews/summary", scope: "read:reviews", operation: "GetReviewSummary", envelope: "unwrap",
    query: reviewFilters() },
  list("/v1/reviews", "read:reviews", "ListReviews", { ...reviewFilters(), ...expandGuest }),
  get("/v1/reviews/:id", "read:reviews", "GetReview"),

  list("/v1/loyalty/programs", "read:loyalty", "ListLoyaltyPrograms", { active: bool("filter.active") }),
  list("/v1/loyalty/members", "read:loyalty", "ListLoyaltyMembers", {
    program_id: uuid("filter.programId"),
    guest_profile_id: uuid("filter.guestProfileId"),
    master_profile_id: uuid("filter.masterProfileId"),
    member_number: str("filter.memberNumber"),
    tier: str("filter.tier"),
    status: enumOf("filter.status", "LoyaltyMemberStatus"),
    ...updatedSince,
    ...expandGuest,
  }),
  get("/v1/loyalty/members/:id", "read:loyalty", "GetLoyaltyMember"),

  list("/v1/channels", "read:resources", "ListChannels", {
    property_id: uuid("filter.propertyId"),
    kind: str("filter.kind"),
    active: bool("filter.active"),
  }),
  list("/v1/spaces", "read:resources", "ListSpaces", {
    property_id: uuid("filter.propertyId"),
    kind: str("filter.kind"),
    active: bool("filter.active"),
    min_capacity: int("filter.minCapacity"),
  }),

  { method: "GET", path: "/v1/events", scope: "read:events", operation: "ListEvents", envelope: "unwrap",
    query: {
      ...keyset,
      mode: enumOf("mode", "EventMode"),
      entity_type: enumOf("filter.entityType", "EntityType"),
      entity_id: str("filter.entityId"),
      guest_profile_id: uuid("filter.guestProfileId"),
      master_profile_id: uuid("filter.masterProfileId"),
      order: lowerEnumOf("order", "EventOrder"),
      ...expandGuest,
    },
    deprecatedValues: [ROLLUP_DEPRECATION] },
  { method: "GET", path: "/v1/tables", scope: "read:tables", operation: "ListTables", envelope: "unwrap", omitNull: ["total_count"],
    query: { ...offset, kind: enumOf("filter.kind", "TableKind"), member_type: enumOf("filter.memberType", "MemberType"), property_id: uuid("filter.propertyId") } },
  { method: "POST", path: "/v1/tables/preview", scope: "read:tables", operation: "PreviewTable", envelope: "unwrap", omitNull: ["total_count"],
    body: {
      member_type: bodyParam(enumOf("memberType", "MemberType"), true),
      filter_doc: jsonValue("filterDoc", true),
      limit: bodyParam(int("limit")),
      offset: bodyParam(int("offset")),
      include_total: bodyParam(bool("includeTotal")),
    } },
  get("/v1/tables/:id", "read:tables", "GetTable"),
  { method: "POST", path: "/v1/tables/:id/destinations/:provider/pause", scope: "write:tables", operation: "PauseDestination",
    pathParams: { id: uuid("tableId"), provider: str("provider") }, envelope: "body" },
  { method: "POST", path: "/v1/tables/:id/destinations/:provider/resume", scope: "write:tables", operation: "ResumeDestination",
    pathParams: { id: uuid("tableId"), provider: str("provider") }, envelope: "body" },
  { method: "GET", path: "/v1/tables/:id/members", scope: "read:tables", operation: "ListTableMembers", envelope: "unwrap",
    omitNull: ["total_count"], pathParams: byId("tableId"), query: { ...offset, ...expandGuest } },
  { method: "GET", path: "/v1/tables/:id/reachability", scope: "read:tables", operation: "GetTableReachability", envelope: "body",
    pathParams: byId(), query: { purpose: requiredParam(str("purpose"), "email_marketing") } },
  ...webhookRoutes(),
];

/**
 * /v1/webhook-endpoints (issue 29). Their OpenAPI operations are written out in
 * src/api/openapi/webhooks.ts (the secret, 201 and 204, the payloads). An id that is not a uuid is
 * `not_found`, as an unknown endpoint is.
 */
function webhookRoutes(): RouteSpec[] {
  const endpoint = (variable = "id") => ({ id: uuidOrNotFound(variable, "webhook endpoint") });
  const one = (method: RouteSpec["method"], path: string, operation: string, more: Partial<RouteSpec> = {}): RouteSpec => ({
    method, path, scope: method === "GET" ? "read:webhooks" : "write:webhooks", operation, pathParams: endpoint(), envelope: "body", ...more,
  });
  return [
    { method: "GET", path: "/v1/webhook-endpoints", scope: "read:webhooks", operation: "ListWebhookEndpoints", envelope: "unwrap", query: keyset },
    { method: "POST", path: "/v1/webhook-endpoints", scope: "write:webhooks", operation: "CreateWebhookEndpoint", envelope: "body", status: 201,
      body: {
        url: text("url", 'url is required: an https URL, e.g. "https://example.com/webhooks"', { required: true, maxLength: MAX_URL, tooLong: `url must be at most ${MAX_URL} characters` }),
        topics: stringList("topics", 'topics is required: a non-empty array of entity types or ["*"]', { required: true }),
        property_ids: stringList("propertyIds", `property_ids must be an array of at most ${MAX_PROPERTY_IDS} property uuids`, { uuids: true }),
        description: text("description", `description must be a string of at most ${MAX_DESCRIPTION} characters`, { maxLength: MAX_DESCRIPTION }),
      } },
    one("GET", "/v1/webhook-endpoints/:id", "GetWebhookEndpoint"),
    one("POST", "/v1/webhook-endpoints/:id/rotate-secret", "RotateWebhookEndpointSecret"),
    one("POST", "/v1/webhook-endpoints/:id/test", "TestWebhookEndpoint"),
    one("GET", "/v1/webhook-endpoints/:id/deliveries", "ListWebhookDeliveries", { pathParams: endpoint("endpointId"), query: keyset, envelope: "unwrap" }),
    one("POST", "/v1/webhook-endpoints/:id/replay", "ReplayWebhookEndpoint", {
      body: {
        cursor: text("cursor", "cursor must be a string: a next_cursor of GET /v1/events without filters", { maxLength: 2048 }),
        since: bodyParam(instant("since")),
      },
    }),
    // Last: a walk of the table in order (tests, tools) acts on an endpoint before deleting it.
    one("DELETE", "/v1/webhook-endpoints/:id", "DeleteWebhookEndpoint", { status: 204 }),
  ];
}

/** POST /v1/guests/lookup: the lists (at most 100 inputs in all: the resolver counts them), or a table's members. */
function lookupBody(): Record<string, BodySpec> {
  const limit = "at most 100 inputs in all across guest_profile_ids, master_profile_ids, emails and phones";
  return {
    guest_profile_ids: stringList("input.guestProfileIds", `guest_profile_ids must be an array of guest profile uuids, ${limit}`, { uuids: true }),
    master_profile_ids: stringList("input.masterProfileIds", `master_profile_ids must be an array of master profile uuids, ${limit}`, { uuids: true }),
    emails: stringList("input.emails", `emails must be an array of e-mail addresses, ${limit}`),
    phones: stringList("input.phones", `phones must be an array of phone numbers with their country code, ${limit}`),
    table_id: bodyParam(uuid("input.tableId")),
    offset: bodyParam(int("input.offset")),
    purpose: text("input.purpose", "purpose must be a string, e.g. email_marketing", { maxLength: 512 }),
  };
}

function reviewFilters(): Record<string, ParamSpec> {
  return {
    guest_profile_id: uuid("filter.guestProfileId"),
    master_profile_id: uuid("filter.masterProfileId"),
    reservation_id: uuid("filter.reservationId"),
    property_id: uuid("filter.propertyId"),
    source: str("filter.source"),
    min_rating: int("filter.minRating", { minimum: 1, maximum: 5 }),
    max_rating: int("filter.maxRating", { minimum: 1, maximum: 5 }),
    published_from: instant("filter.publishedFrom"),
    published_to: instant("filter.publishedTo"),
  };
}
