// The hand-written part of the OpenAPI document: what a person or an agent reads. Everything a
// machine checks (paths, parameters, types, statuses) is derived from the code in generate.ts; a
// unit test fails when a route, parameter or record has no prose here.
import { DEFAULT_LIMIT, MAX_LIMIT } from "../pagination/keyset";
import { MAX_OFFSET } from "../pagination/offset";
import type { JsonSchema } from "./selection-schema";

export const API_VERSION = "1.0.0";

export const INFO_DESCRIPTION = `
Read-only access to a hotel or restaurant group's guest data: profiles, identity-resolved master
profiles, stays, spend, consent, reviews, loyalty and the event history, across every property of
the group and safely scoped to it. \`/v1\` is a thin facade over the GraphQL schema served at
\`/graphql\` (its contract is \`schema.graphql\`); this document covers \`/v1\` and the service routes.

## Authentication and scope
Every \`/v1\` request sends \`Authorization: Bearer <token>\`: a personal API key (\`gcs_…\`), a partner
access token (\`gcsp_…\`), a web-app session JWT or a static token. Each resolves to one credential:
its property group, an optional pinned property, and scopes. Each route names the scope it needs
(\`x-required-scope\`); a missing scope is \`403 { "error": "forbidden", "scope": "<scope>" }\`.
MCP connector tokens (\`gcsm_…\`, issued to AI clients through the MCP OAuth flow at \`/authorize\` and
\`/token\`; see \`/docs/auth.md\`) are refused on \`/v1\` with \`403 forbidden\`.

The optional \`X-Property-Id\` header narrows one request to one property of the caller's group. It
must be a uuid (else \`400 invalid_request\`) of a property of the group (else \`403 forbidden\`);
session tokens may not send it; a property-pinned API key ignores it.

## Browsers (CORS)
Cross-origin access is off unless the operator lists origins in \`GCS_CORS_ORIGINS\`. A listed origin
gets \`Access-Control-Allow-Origin\` on its responses and \`204\` answers to its \`OPTIONS\` preflights
(methods \`GET\`, \`POST\`; headers \`Authorization\`, \`Content-Type\`, \`X-Property-Id\`,
\`X-Request-Id\`), and may read \`X-Request-Id\`, \`RateLimit\`, \`RateLimit-Policy\` and \`Retry-After\`.
Every \`/v1\` response carries \`Cache-Control: no-store\` and \`X-Content-Type-Options: nosniff\`.

## Pagination
- **Keyset lists** answer \`{ "data": [...], "next_cursor": string | null, "has_more": boolean }\`.
  \`limit\` defaults to ${DEFAULT_LIMIT}; larger than ${MAX_LIMIT} is clamped to ${MAX_LIMIT}; below 1 is a 400. Send
  \`next_cursor\` back as \`cursor\` until it is null. Cursors are opaque, tamper-evident and bound to
  the group, the list and its filters (changing a filter mid-walk is \`400 invalid_cursor\`). A walk
  never skips or repeats a row, whatever is inserted meanwhile.
- **Offset lists** (tables) answer \`{ "data": [...], "has_more": boolean, "next_offset": integer }\`,
  plus \`total_count\` with \`include_total\`. \`offset\` is clamped to ${MAX_OFFSET.toLocaleString("en-GB")}, where a walk ends.
- **Not paged**: \`GET /v1/properties\`, \`GET /v1/integrations\`, and \`GET /v1/events?mode=latest\`.

Filters are ANDed. An unknown query parameter is a 400 that names the parameter you probably meant.
\`*_from\` is inclusive; \`*_to\` is inclusive for dates and exclusive for instants. Amounts are
integers in the currency's minor unit.

## Errors
Every error is JSON \`{ "error": "<code>", "scope"?: "...", "detail"?: "..." }\`. Besides the
statuses listed per route: an unknown route is \`404 not_found\`, a known path with the wrong method
is \`405 method_not_allowed\` with an \`Allow\` header, a JSON body that cannot be parsed is
\`400 invalid_request\`, and a body that is not \`application/json\` in UTF-8 is \`415 unsupported_media_type\`
(both checked before authentication). Text parameters and body strings may not contain NUL (U+0000)
or lone UTF-16 surrogates, and dates and instants must fall in the years 0001 to 9999: else
\`400 invalid_request\` naming the parameter. The \`X-Request-Id\` response header finds the request in the service's logs.

## Versioning
The version is the path prefix \`/v1\`; this description is versioned ${API_VERSION}. \`mode=rollup\` on
\`GET /v1/events\` is a deprecated alias of \`mode=latest\`: answers say \`latest\`.
`.trim();

export const TAGS: { name: string; description: string }[] = [
  { name: "Properties", description: "The group's properties: hotels, resorts, restaurants, bars, spas." },
  { name: "Integrations", description: "The integration roster: one source system mapped to one property." },
  { name: "Guests", description: "Guest profiles (one guest as one source system knows them) and master profiles (one real guest, merged across sources and properties)." },
  { name: "Stays and spend", description: "Reservations (stays, dining, spa, events) and folio transactions." },
  { name: "Consent", description: "Consent observations (decisive signals only) and the effective status per contact and purpose." },
  { name: "Actions", description: "Guest actions: tasks, amenities, follow-ups, complaints." },
  { name: "Reviews", description: "Guest reviews from every platform, and aggregates over them." },
  { name: "Loyalty", description: "Loyalty programs with their tiers, and memberships." },
  { name: "Resources", description: "Sales and communication channels, and bookable spaces." },
  { name: "Events", description: "The append-only guest event log." },
  { name: "Tables", description: "Curated or filter-defined working lists of guests, and their delivery to email-marketing destinations." },
  { name: "Service", description: "Health, readiness and this description. No credential needed." },
];

export interface RouteProse {
  tag: string;
  summary: string;
  description: string;
  /** Description of the 200 answer. */
  response: string;
  /** Per-route parameter prose, over the shared PARAMETERS. */
  parameters?: Record<string, string>;
  /** The route answers API keys and partner tokens with 403 session_required. */
  sessionOnly?: boolean;
  /** Named examples of the 200 body. */
  examples?: Record<string, { summary: string; value: unknown }>;
}

const GUEST_EXAMPLE = {
  id: "3f1c2a9e-7d4b-4c1a-9e2f-5b6a7c8d9e0f",
  property_id: "0b6f6c1e-2a41-4c36-9b43-2f0d1f0e8a11",
  integration_id: "7d2e5b90-58c4-4d7e-b2a9-1c4e6f8a9b02",
  source_id: "OPERA-100234",
  master_profile_id: "c4a1d2e3-f405-4617-8829-9a0b1c2d3e4f",
  given_name: "Olivia",
  family_name: "Smith",
  email: "olivia.smith@example.com",
  phone: "+447700900123",
  language: "en-GB",
  country_code: "GB",
  city: "London",
  birth_date: "1986-04-12",
  vip_code: null,
  created_at: "2026-01-14T09:30:00.000Z",
  updated_at: "2026-03-02T17:05:12.345Z",
};

export const ROUTES: Record<string, RouteProse> = {
  "GET /v1/properties": {
    tag: "Properties",
    summary: "List properties",
    description: "Every property of the group, by name (or the one property in scope). Not paged.",
    response: "The full roster.",
  },
  "GET /v1/properties/{id}": {
    tag: "Properties",
    summary: "Get a property",
    description: "One property by id.",
    response: "The property.",
  },
  "GET /v1/integrations": {
    tag: "Integrations",
    summary: "List integrations",
    description:
      "The integration roster in the credential's scope: exactly `id`, `provider`, `name`, `property_id`, `status` and " +
      "`source_ref`, never credentials. Not paged. A row's `id` is the `integration_id` sent with `source_id` lookups.",
    response: "The full roster.",
  },
  "GET /v1/integrations/{id}/connection": {
    tag: "Integrations",
    summary: "Get an integration's connection",
    description:
      "How the integration signs in at its source system, never the secret itself. Needs a signed-in web-app " +
      "session: API keys and partner tokens get `403 session_required`.",
    response: "The connection details.",
    sessionOnly: true,
    parameters: { id: "The integration's id." },
  },
  "GET /v1/guests": {
    tag: "Guests",
    summary: "List guest profiles",
    description:
      "Guest profiles, oldest first (`created_at`, then `id`), keyset-paged. A `source_id` lookup needs `integration_id` " +
      "and answers the one matching guest or an empty page, never 404; without `integration_id` it is " +
      "`400 source_id requires integration_id`.",
    response: "A keyset page of guest profiles.",
    examples: {
      page: {
        summary: "A page with more to come",
        value: { data: [GUEST_EXAMPLE], next_cursor: "eyJrIjpbIjIwMjYtMDEtMTRUMDk6MzA6MDAuMDAwWiJdfQ.c2ln", has_more: true },
      },
      miss: { summary: "A source_id lookup that finds nothing", value: { data: [], next_cursor: null, has_more: false } },
    },
  },
  "GET /v1/guests/{id}": {
    tag: "Guests",
    summary: "Get a guest profile",
    description: "One guest profile by id; `404 not_found` when missing or outside scope.",
    response: "The guest profile.",
    examples: { guest: { summary: "A clustered guest", value: { data: GUEST_EXAMPLE } } },
  },
  "GET /v1/master-profiles": {
    tag: "Guests",
    summary: "Search master profiles",
    description:
      "Identity-resolved master profiles, oldest first, keyset-paged. `q` searches names and e-mail. With `include_total` " +
      "and no cursor, the first page also carries `total_count`.",
    response: "A keyset page of master profiles; `total_count` only on a first page asked with `include_total`.",
    parameters: { property_id: "Only master profiles with a guest profile at this property." },
  },
  "GET /v1/master-profiles/{id}": {
    tag: "Guests",
    summary: "Get a master profile",
    description: "One master profile by id, with the ids of the guest profiles clustered into it.",
    response: "The master profile.",
  },
  "GET /v1/reservations": {
    tag: "Stays and spend",
    summary: "List reservations",
    description: "Reservations (stays, dining, spa, events), oldest first, keyset-paged.",
    response: "A keyset page of reservations.",
    parameters: { source_id: "The reservation's id in its source system; needs `integration_id`." },
  },
  "GET /v1/reservations/{id}": {
    tag: "Stays and spend",
    summary: "Get a reservation",
    description: "One reservation by id; `404 not_found` when missing or outside scope.",
    response: "The reservation.",
  },
  "GET /v1/transactions": {
    tag: "Stays and spend",
    summary: "List transactions",
    description: "Folio transactions (charges, payments, refunds, adjustments), oldest first, keyset-paged. Amounts are signed minor units.",
    response: "A keyset page of transactions.",
  },
  "GET /v1/transactions/{id}": {
    tag: "Stays and spend",
    summary: "Get a transaction",
    description: "One transaction by id.",
    response: "The transaction.",
  },
  "GET /v1/consents": {
    tag: "Consent",
    summary: "List consent observations",
    description:
      "Stored consent observations, oldest first, keyset-paged. Only decisive signals are stored (granted, withdrawn, " +
      "denied); no observation means unknown, never eligible.",
    response: "A keyset page of consent observations.",
  },
  "GET /v1/consents/effective": {
    tag: "Consent",
    summary: "List effective consent",
    description:
      "Effective consent per contact point and purpose, ordered by contact then purpose, keyset-paged. `status` is the " +
      "most restrictive observation across the whole group: withdrawn or denied beat granted, whatever came last. A " +
      "contact never observed is absent: unknown, never eligible.",
    response: "A keyset page of effective consent rows.",
    parameters: { guest_profile_id: "The contact points (e-mail and phone) of this guest profile." },
    examples: {
      withdrawn: {
        summary: "A withdrawal beats an earlier grant",
        value: {
          data: [
            {
              contact_type: "email",
              contact_value: "olivia.smith@example.com",
              purpose: "email_marketing",
              status: "withdrawn",
              decided_by: {
                id: "5e0c9a4b-1f2d-4e3a-8b7c-6d5e4f3a2b1c",
                property_id: null,
                integration_id: null,
                guest_profile_id: "3f1c2a9e-7d4b-4c1a-9e2f-5b6a7c8d9e0f",
                contact_type: "email",
                contact_value: "olivia.smith@example.com",
                purpose: "email_marketing",
                channel: "email",
                status: "withdrawn",
                source: "preference_centre",
                observed_at: "2026-02-20T08:00:00.000Z",
                created_at: "2026-02-20T08:00:01.000Z",
              },
              observation_count: 2,
              last_observed_at: "2026-02-20T08:00:00.000Z",
            },
          ],
          next_cursor: null,
          has_more: false,
        },
      },
    },
  },
  "GET /v1/actions": {
    tag: "Actions",
    summary: "List actions",
    description: "Guest actions (tasks, amenities, follow-ups), oldest first, keyset-paged.",
    response: "A keyset page of actions.",
  },
  "GET /v1/actions/{id}": {
    tag: "Actions",
    summary: "Get an action",
    description: "One action by id.",
    response: "The action.",
  },
  "GET /v1/reviews/summary": {
    tag: "Reviews",
    summary: "Summarise reviews",
    description:
      "One object over the reviews the same filters as `GET /v1/reviews` select: count, average rating, count per rating " +
      "1 to 5 (all present), and breakdowns by source, by property and for responded reviews.",
    response: "The aggregates.",
  },
  "GET /v1/reviews": {
    tag: "Reviews",
    summary: "List reviews",
    description: "Guest reviews from every platform, oldest first, keyset-paged. `rating` is normalised to 1–5.",
    response: "A keyset page of reviews.",
  },
  "GET /v1/reviews/{id}": {
    tag: "Reviews",
    summary: "Get a review",
    description: "One review by id.",
    response: "The review.",
  },
  "GET /v1/loyalty/programs": {
    tag: "Loyalty",
    summary: "List loyalty programs",
    description: "Loyalty programs with their tiers (lowest first), oldest first, keyset-paged.",
    response: "A keyset page of loyalty programs.",
  },
  "GET /v1/loyalty/members": {
    tag: "Loyalty",
    summary: "List loyalty members",
    description: "Loyalty memberships (tier, points, status), oldest first, keyset-paged.",
    response: "A keyset page of loyalty members.",
  },
  "GET /v1/loyalty/members/{id}": {
    tag: "Loyalty",
    summary: "Get a loyalty member",
    description: "One loyalty membership by id.",
    response: "The membership.",
  },
  "GET /v1/channels": {
    tag: "Resources",
    summary: "List channels",
    description: "Sales and communication channels, oldest first, keyset-paged. Group-wide channels have `property_id: null`.",
    response: "A keyset page of channels.",
  },
  "GET /v1/spaces": {
    tag: "Resources",
    summary: "List spaces",
    description: "Bookable spaces (rooms, restaurant tables, meeting and treatment rooms), oldest first, keyset-paged.",
    response: "A keyset page of spaces.",
  },
  "GET /v1/events": {
    tag: "Events",
    summary: "Read the event log",
    description:
      "The append-only guest event log. `mode=timeline` (default): the full history, keyset-paged in commit order; a walk " +
      "never skips or repeats an event. `mode=latest`: the newest event of each entity the filters select, most recently " +
      "changed first, in one page (`next_cursor` null; `limit` caps the number of entities and `has_more` says more " +
      "matched). `mode=rollup` is a deprecated alias of `latest`; the answer's `mode` is never `rollup`.",
    response: "A page of events and the mode that produced it.",
    examples: {
      timeline: {
        summary: "A timeline page",
        value: {
          data: [
            {
              seq: "1042",
              entity_type: "reservation",
              entity_id: "9a8b7c6d-5e4f-4a3b-8c2d-1e0f9a8b7c6d",
              guest_profile_id: "3f1c2a9e-7d4b-4c1a-9e2f-5b6a7c8d9e0f",
              property_id: "0b6f6c1e-2a41-4c36-9b43-2f0d1f0e8a11",
              integration_id: "7d2e5b90-58c4-4d7e-b2a9-1c4e6f8a9b02",
              operation: "update",
              delta: { status: "checked_in" },
              occurred_at: "2026-03-14T15:02:00.000Z",
              recorded_at: "2026-03-14T15:02:03.120Z",
            },
          ],
          next_cursor: "eyJzIjoxMDQyfQ.c2ln",
          has_more: true,
          mode: "timeline",
        },
      },
    },
  },
  "GET /v1/tables": {
    tag: "Tables",
    summary: "List tables",
    description: "Tables (curated or filter-defined working lists), oldest first, offset-paged.",
    response: "An offset page of tables; `total_count` only with `include_total`.",
  },
  "POST /v1/tables/preview": {
    tag: "Tables",
    summary: "Preview a filter document",
    description:
      "Who a filter document selects now, as member pages, without saving a table. Without `member_type` or " +
      "`filter_doc`: `400 invalid_request`; an invalid document is a 400 naming the offending part.",
    response: "An offset page of members (`added_at` is null in a preview).",
  },
  "GET /v1/tables/{id}": {
    tag: "Tables",
    summary: "Get a table",
    description: "One table by id, with `member_count` (curated tables) and its destination bindings.",
    response: "The table with its bindings.",
  },
  "POST /v1/tables/{id}/destinations/{provider}/pause": {
    tag: "Tables",
    summary: "Pause delivery to a destination",
    description:
      "Stops delivery of the table to the destination and keeps the confirmed cursor. Idempotent: pausing a paused binding " +
      "returns it unchanged. `404 not_found` when the table or its binding for that provider is not in scope. No body.",
    response: "The binding, paused.",
    parameters: { id: "The table's id." },
  },
  "POST /v1/tables/{id}/destinations/{provider}/resume": {
    tag: "Tables",
    summary: "Resume delivery to a destination",
    description:
      "Resumes delivery (paused or error → active) from the saved cursor. Idempotent on an active binding. `404 not_found` " +
      "when the table or its binding for that provider is not in scope. No body.",
    response: "The binding, active.",
    parameters: { id: "The table's id." },
  },
  "GET /v1/tables/{id}/members": {
    tag: "Tables",
    summary: "List table members",
    description:
      "Members of a table in the order they were added, offset-paged. A filter-defined table's members are what its " +
      "document selects now.",
    response: "An offset page of members; `total_count` only with `include_total`.",
    parameters: { id: "The table's id." },
  },
};

const RANGE = (what: string, inclusive: boolean) =>
  inclusive ? `Only rows whose ${what} is on or before this date (inclusive).` : `Only rows whose ${what} is before this instant (exclusive).`;

/** Prose (and business-rule bounds the parsers leave to the resolvers) per parameter name. */
export const PARAMETERS: Record<string, { description: string; schema?: (base: JsonSchema) => JsonSchema }> = {
  limit: {
    description: `Page size, default ${DEFAULT_LIMIT}. Values above ${MAX_LIMIT} are clamped to ${MAX_LIMIT}; below 1 is a 400.`,
    schema: () => ({ minimum: 1, default: DEFAULT_LIMIT }),
  },
  cursor: { description: "The `next_cursor` of the previous page; omit on the first page. An altered or foreign cursor is `400 invalid_cursor`." },
  offset: {
    description: `Rows to skip, default 0; clamped to ${MAX_OFFSET}, where a walk ends. Send the previous page's \`next_offset\`.`,
    schema: () => ({ minimum: 0, default: 0 }),
  },
  include_total: {
    description: "`true` or `1`: the page also carries `total_count`.",
    schema: (base) => ({ default: base.type === "boolean" ? false : "false" }),
  },
  mode: {
    description: "`timeline` (default): the full history, keyset-paged. `latest`: the newest event per entity, one page. `rollup`: deprecated alias of `latest`.",
    schema: () => ({ default: "timeline" }),
  },
  id: { description: "The resource's id; missing or outside scope is `404 not_found`." },
  provider: { description: "The destination provider, e.g. `mailchimp` or `klaviyo`." },
  property_id: { description: "Only rows of this property." },
  guest_profile_id: { description: "Only rows of this guest profile." },
  master_profile_id: { description: "Only rows of the guest profiles clustered into this master profile (unclustered guests never match)." },
  integration_id: { description: "Only rows from this integration (source system)." },
  reservation_id: { description: "Only rows of this reservation." },
  source_id: { description: "The guest's id in its source system; needs `integration_id`. Answers one guest or an empty page." },
  email: { description: "Exact e-mail address, case-insensitive." },
  updated_since: { description: "Only rows changed at or after this instant." },
  q: { description: "Case-insensitive search in given name, family name and e-mail." },
  vip: { description: "`true`/`1` for VIPs only, `false`/`0` for the others." },
  status: { description: "Only rows with this status." },
  kind: { description: "Only rows of this kind." },
  confirmation_number: { description: "The confirmation number the guest knows." },
  arrival_from: { description: "Only stays arriving on or after this date." },
  arrival_to: { description: RANGE("arrival date", true) },
  departure_from: { description: "Only stays departing on or after this date." },
  departure_to: { description: RANGE("departure date", true) },
  category: { description: "Only transactions of this category (room, food, beverage, spa …)." },
  occurred_from: { description: "Only transactions that occurred at or after this instant." },
  occurred_to: { description: RANGE("occurrence", false) },
  contact_value: { description: "A contact point: an e-mail (case-insensitive) or an E.164 phone number." },
  purpose: { description: "Only this purpose, e.g. `email_marketing`." },
  observed_from: { description: "Only observations made at or after this instant." },
  observed_to: { description: RANGE("observation", false) },
  priority: { description: "Only actions of this priority." },
  due_from: { description: "Only actions due at or after this instant." },
  due_to: { description: RANGE("due time", false) },
  source: { description: "Only reviews from this platform, e.g. `google`." },
  min_rating: { description: "Only reviews rated at least this (normalised 1–5)." },
  max_rating: { description: "Only reviews rated at most this (normalised 1–5)." },
  published_from: { description: "Only reviews published at or after this instant." },
  published_to: { description: RANGE("publication", false) },
  active: { description: "`true`/`1` for active rows only, `false`/`0` for inactive ones." },
  program_id: { description: "Only members of this loyalty program." },
  member_number: { description: "The membership number." },
  tier: { description: "Only members in this tier (a tier code of the program)." },
  min_capacity: { description: "Only spaces holding at least this many people." },
  entity_type: { description: "Only events of this entity type." },
  entity_id: { description: "Only events of this entity." },
  member_type: { description: "Whether members are guest profiles or master profiles." },
  filter_doc: {
    description:
      'The filter document: `{ "and": [node, …] }`, `{ "or": [node, …] }`, `{ "not": node }` or a condition ' +
      '`{ "field": "<field>", "op": "<operator>", "value": <value> }`; at most 8 levels and 100 conditions. See the README.',
  },
};

/** Members of page envelopes, which GraphQL's page types leave undescribed. */
export const ENVELOPE_MEMBERS: Record<string, string> = {
  data: "The rows of this page.",
  next_cursor: "Send as `cursor` for the next page; null on the last page.",
  has_more: "Whether another page follows.",
  next_offset: "Send as `offset` for the next page.",
  total_count: "All matching rows across pages: only when asked with `include_total`.",
  mode: "`timeline` or `latest` (a `rollup` request answers `latest`).",
};

/** Record descriptions by component name; page components are described from their shape. */
export const RECORDS: Record<string, string> = {
  Property: "A property of the group: a hotel, resort, restaurant, bar or spa.",
  Integration: "An integration roster row (spec 2.1): one source system mapped to one property. Connection credentials are never part of it.",
  IntegrationConnection: "How an integration signs in at its source system. Never the secret.",
  Guest: "A guest profile: one guest as one source system knows them.",
  MasterProfile: "A master profile: one real guest, merged across sources and properties.",
  Reservation: "A reservation: a stay, a dining, spa or event booking.",
  Transaction: "A folio transaction: a charge, payment, refund or adjustment, in minor units.",
  ConsentObservation: "A stored consent observation: a decisive signal (granted, withdrawn, denied) for one contact point and purpose.",
  EffectiveConsent: "The effective consent of one contact point for one purpose: the most restrictive observation across the group.",
  Action: "A guest action: a task, amenity, follow-up or complaint.",
  Review: "A guest review, with the platform's own rating and the normalised 1–5 one.",
  ReviewSummary: "Aggregates over the reviews a filter selects.",
  RatingCount: "How many reviews have this rating.",
  ReviewBreakdown: "Count and average rating of a subset of reviews.",
  ReviewSourceBreakdown: "Count and average rating of the reviews from one platform.",
  ReviewPropertyBreakdown: "Count and average rating of the reviews of one property.",
  LoyaltyProgram: "A loyalty program and its tiers.",
  LoyaltyTier: "A tier of a loyalty program.",
  LoyaltyMember: "A loyalty membership: tier, points and status.",
  Channel: "A sales or communication channel; group-wide when `property_id` is null.",
  Space: "A bookable space: a room, restaurant table, meeting or treatment room.",
  Event: "One append-only event: a change to one canonical entity.",
  Table: "A table: a curated or filter-defined working list of guests.",
  TableWithBindings: "A table with the destination lists it is delivered to.",
  TableMember: "A member of a table: a guest profile or a master profile, with the record itself.",
  DestinationBinding: "One table bound to one remote destination list (spec 2.2).",
  FlushCounts: "Counters of the last flush to the destination.",
  BindingGuidance: "Non-blocking advice about the bound table.",
  Error: "Every error body (spec 2.3).",
};
