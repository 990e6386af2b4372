// The hand-written part of the OpenAPI document: what a person or an agent reads. Everything a
// machine checks (paths, parameters, types, statuses) is derived from the code in generate.ts;
// records, their members and filter parameters are described once, in schema.graphql. A unit test
// fails when a route, parameter or record has no prose here or there.
import { DEFAULT_LIMIT, MAX_LIMIT } from "../pagination/keyset";
import { MAX_OFFSET } from "../pagination/offset";
import { ROLLUP_DEPRECATION } from "./routes";
import { CURSOR_EXAMPLE, FILTER_DOC_EXAMPLE, IDS, RECORD_EXAMPLES } from "./examples";
import type { JsonSchema } from "./selection-schema";

export const API_VERSION = "1.0.0";

const isoDate = (d: Date) => d.toISOString().slice(0, 10);

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
must be a uuid (else \`400 invalid_request\`, an empty header too: only an absent one means the whole
group) of a property of the group (else \`403 forbidden\`);
session tokens may not send it; a property-pinned API key ignores it.

## Browsers (CORS)
Cross-origin access is off unless the operator lists origins in \`GCS_CORS_ORIGINS\`. A listed origin
gets \`Access-Control-Allow-Origin\` on its responses and \`204\` answers to its \`OPTIONS\` preflights
(methods \`GET\`, \`POST\`; headers \`Authorization\`, \`Content-Type\`, \`X-Property-Id\`,
\`X-Request-Id\`), and may read \`X-Request-Id\`, \`RateLimit\`, \`RateLimit-Policy\`, \`Retry-After\`,
\`Deprecation\` and \`Sunset\`.
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
\`*_from\` is inclusive; \`*_to\` is inclusive for dates and exclusive for instants. Every range
parameter (\`*_from\`, \`*_to\`, \`updated_since\`) takes a date \`2026-11-01\` or an instant
\`2026-11-01T00:00:00Z\` alike: a date where an instant is kept means that day's start in UTC, and as
\`*_to\` the whole day (up to the next day's start); an instant where a date is kept
(\`arrival_*\`, \`departure_*\`) means the date it is written in (\`2026-03-14T00:00:00+01:00\` is 14 March). E-mail filters ignore case and surrounding
spaces. Amounts are integers in the currency's minor unit.

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
\`GET /v1/events\` is a deprecated alias of \`mode=latest\`: answers say \`latest\` and carry
\`Deprecation: @${ROLLUP_DEPRECATION.deprecatedAt.getTime() / 1000}\` (RFC 9745: deprecated since ${isoDate(ROLLUP_DEPRECATION.deprecatedAt)}) and
\`Sunset: ${ROLLUP_DEPRECATION.sunsetAt.toUTCString()}\` (RFC 8594: it may be refused from then on).
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
  /** More named examples of the 200 body, beside the one generate.ts composes from examples.ts. */
  examples?: Record<string, { summary: string; value: unknown }>;
  /** The 200 example, where the one composed from examples.ts would mislead. */
  responseExample?: unknown;
  /** Per-route parameter examples, over the shared PARAMETERS (a `kind` is an enum on some routes). */
  parameterExamples?: Record<string, unknown>;
  /** An example request body: a test posts it to a real server and expects 200. */
  requestExample?: Record<string, unknown>;
}

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
      miss: { summary: "A source_id lookup that finds nothing", value: { data: [], next_cursor: null, has_more: false } },
    },
  },
  "GET /v1/guests/{id}": {
    tag: "Guests",
    summary: "Get a guest profile",
    description: "One guest profile by id; `404 not_found` when missing or outside scope.",
    response: "The guest profile.",
  },
  "POST /v1/guests/lookup": {
    tag: "Guests",
    summary: "Look up many guests at once",
    description:
      "One compact row per person (a master profile; a guest profile without one is its own person) for up to 100 " +
      "`guest_profile_ids`, `master_profile_ids`, `emails` and `phones` in all (e-mails case-insensitive, phones in any " +
      "formatting with their country code), or for `table_id`'s members, 100 per call paged by `offset` (`next_offset` is " +
      "null on the last page and at the offset clamp). Inputs that find nobody in scope are listed in `not_found`, and so " +
      "are those that cannot be looked up, with a `reason` (an e-mail without @, a phone without its country code); " +
      "`matched` says which inputs found each person. With `purpose`, each contact point carries its effective consent " +
      "for it (an unknown purpose is a 400 listing the group's; a stored phone without country code has none, null). A " +
      "caller narrowed to one property sees the person's guest profiles, stays and spend at that property only.",
    response: "The people found, the inputs that found nobody, and with `table_id` the next offset.",
    requestExample: { emails: ["olivia.smith.0@example.com"], phones: ["+44 7700 900123", "07700 900123"], purpose: "email_marketing" },
  },
  "GET /v1/master-profiles": {
    tag: "Guests",
    summary: "Search master profiles",
    description:
      "Identity-resolved master profiles, oldest first, keyset-paged. `q` searches names (a full name in either order too) " +
      "and e-mail; when it matches nothing, the first page carries `candidates`: the closest names with their `similarity` (0 to 1), " +
      "not matches. With `include_total` and no cursor, the first page also carries `total_count`.",
    response:
      "A keyset page of master profiles; `total_count` only on a first page asked with `include_total`, `candidates` only " +
      "when `q` matched nothing.",
  },
  "GET /v1/master-profiles/{id}": {
    tag: "Guests",
    summary: "Get a master profile",
    description: "One master profile by id, with the ids of the guest profiles clustered into it.",
    response: "The master profile.",
  },
  "GET /v1/master-profiles/{id}/links": {
    tag: "Guests",
    summary: "Why a master profile's guest profiles were merged",
    description:
      "How identity resolution made the master profile: one link per guest profile, oldest first (`linked_at`, then `id`), " +
      "each with the profile it was matched to (null for the first), the rule, the fields that matched with their " +
      "value, a confidence from 0 to 1, the source system and property of both sides, when and by whom. A property-pinned " +
      "caller sees the links of its property's profiles, and the matched profile's id and source only when it is at that " +
      "property too (else null). Unpaged: one link per guest profile, as many as the master profile's guest_profile_ids. " +
      "A master profile clustered before links were recorded has none (`data: []`) until identity resolution or " +
      "`gcs fixtures` writes them. `404 not_found` when the master profile is missing or outside scope.",
    response: "The master profile's links.",
  },
  "GET /v1/reservations": {
    tag: "Stays and spend",
    summary: "List reservations",
    description: "Reservations (stays, dining, spa, events), oldest first, keyset-paged.",
    response: "A keyset page of reservations.",
    parameterExamples: { source_id: "2000468" },
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
    parameters: {
      expand:
        "`guest`: each row also carries `guest` ({ id, master_profile_id, name, vip }): the guest profile in your scope " +
        "that holds the contact point, the oldest of them when all are one master profile; null when none, or when " +
        "different people hold it. One batch per page; needs the scope `read:guests`. Comma-separated (`expand[]=guest` " +
        "too); another value is `invalid_request`.",
    },
  },
  "GET /v1/actions": {
    tag: "Actions",
    summary: "List actions",
    description: "Guest actions (tasks, amenities, follow-ups), oldest first, keyset-paged.",
    response: "A keyset page of actions.",
    parameterExamples: { kind: "vip_amenity" },
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
    parameterExamples: { kind: "ota" },
  },
  "GET /v1/spaces": {
    tag: "Resources",
    summary: "List spaces",
    description: "Bookable spaces (rooms, restaurant tables, meeting and treatment rooms), oldest first, keyset-paged.",
    response: "A keyset page of spaces.",
    parameterExamples: { kind: "room" },
  },
  "GET /v1/events": {
    tag: "Events",
    summary: "Read the event log",
    description:
      "The append-only guest event log. `mode=timeline` (default): the full history, keyset-paged in commit order; a walk " +
      "never skips or repeats an event. `mode=latest`: the newest event of each entity the filters select, most recently " +
      "changed first, in one page (`next_cursor` null; `limit` caps the number of entities and `has_more` says more " +
      "matched). `mode=rollup` is a deprecated alias of `latest`; the answer's `mode` is never `rollup`. `order=desc` walks " +
      "the timeline newest first: the same commit order backwards from the newest finished event; events committed while " +
      "you walk appear at the head (a new first page), never inside the pages you are walking. A cursor is bound to its " +
      "order: one of the other order is `400 invalid_cursor`.",
    response: "A page of events and the mode that produced it.",
    examples: {
      latest: {
        summary: "mode=latest: the newest event of each entity, in one page",
        value: { data: [RECORD_EXAMPLES.Event], next_cursor: null, has_more: false, mode: "latest" },
      },
      newest: {
        summary: "order=desc&expand=guest: the timeline newest first, each event with its guest",
        value: {
          data: [{ ...(RECORD_EXAMPLES.Event as object), guest: RECORD_EXAMPLES.GuestSummary }],
          next_cursor: CURSOR_EXAMPLE,
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
    parameters: { member_type: "Whether members are guest profiles or master profiles." },
    requestExample: { member_type: "guest_profile", filter_doc: FILTER_DOC_EXAMPLE, limit: 50, include_total: true },
    responseExample: {
      data: [{ ...(RECORD_EXAMPLES.TableMember as object), added_at: null }],
      has_more: true,
      next_offset: 50,
      total_count: 312,
    },
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
  "GET /v1/tables/{id}/reachability": {
    tag: "Tables",
    summary: "Count who on a table may be contacted",
    description:
      "The table's members in the caller's scope counted by the effective consent for `purpose` of their own e-mail and " +
      "phone (`granted`, `withdrawn`, `denied`, `unknown`, or `no_contact`), exactly as `check_contact_permission` " +
      "decides each one (spec 1.5, group-wide), with how many are reachable and each destination binding's state and " +
      "lag. A filter-defined table counts whoever its document selects now. `purpose` is required; one the group does " +
      "not record consent for is a 400 listing the ones it does.",
    response: "The counts and the destinations.",
    parameters: { id: "The table's id.", purpose: "The purpose, e.g. email_marketing." },
  },
  "GET /v1/tables/{id}/members": {
    tag: "Tables",
    summary: "List table members",
    description:
      "Members of a table in the order they were added, offset-paged. A filter-defined table's members are what its " +
      "document selects now. A caller narrowed to one property (a pinned API key or `X-Property-Id`) sees only the " +
      "members in its scope (guest profiles at that property, master profiles with a guest there), never another " +
      "property's member ids: `offset`, `next_offset`, `total_count` and the table's `member_count` count those members only.",
    response: "An offset page of members; `total_count` only with `include_total`.",
    parameters: {
      id: "The table's id.",
      expand:
        "`guest`: a guest profile member's `guest` also carries `name` and `vip`. A master profile member is already the " +
        "person (`master_profile` has the name and `vip`): its `guest` stays null. Comma-separated (`expand[]=guest` too); " +
        "another value is `invalid_request`.",
    },
  },
};

/**
 * Parameters that feed a GraphQL argument (paging, ids): their prose, example and the business-rule
 * bounds the parsers leave to the resolvers. schema.graphql repeats the prose on each argument (a
 * test keeps them equal). Filter parameters take their prose from the GraphQL input field they feed,
 * and here have at most an example; without one, an enum parameter shows its first value.
 */
export const PARAMETERS: Record<string, { description?: string; example?: unknown; schema?: (base: JsonSchema) => JsonSchema }> = {
  limit: {
    example: 50,
    description: `Page size, default ${DEFAULT_LIMIT}. Values above ${MAX_LIMIT} are clamped to ${MAX_LIMIT}; below 1 is \`invalid_request\`.`,
    schema: () => ({ minimum: 1, default: DEFAULT_LIMIT }),
  },
  cursor: {
    example: CURSOR_EXAMPLE,
    description: "The next cursor of the previous page; omit on the first page. An altered or foreign cursor is `invalid_cursor`.",
  },
  offset: {
    example: 50,
    description: `Rows to skip, default 0; clamped to ${MAX_OFFSET}, where a walk ends. Send the previous page's next offset.`,
    schema: () => ({ minimum: 0, default: 0 }),
  },
  include_total: {
    description: "True: the page also carries the total count of matching rows.",
    schema: (base) => ({ default: base.type === "boolean" ? false : "false" }),
  },
  mode: {
    example: "latest",
    description: "`timeline` (default): the full history, keyset-paged. `latest`: the newest event per entity, one page. `rollup`: deprecated alias of `latest`.",
    schema: () => ({ default: "timeline" }),
  },
  id: { description: "The resource's id; missing or outside scope is `not_found`." },
  expand: {
    example: ["guest"],
    description:
      "`guest`: each row also carries `guest` ({ id, master_profile_id, name, vip }, null when the row has no guest profile " +
      "or it is outside your scope), read in one batch per page; needs the scope `read:guests`. Comma-separated " +
      "(`expand[]=guest` too); another value is `invalid_request`.",
  },
  order: {
    example: "desc",
    description:
      "The timeline's order: ascending (default, oldest first in commit order) or descending (newest first). A cursor is bound to its order. `latest` is newest first whatever the order.",
    schema: () => ({ default: "asc" }),
  },
  provider: { example: "mailchimp", description: "The destination provider, e.g. `mailchimp` or `klaviyo`." },
  filter_doc: {
    example: FILTER_DOC_EXAMPLE,
    description:
      'The filter document: `{ "and": [node, …] }`, `{ "or": [node, …] }`, `{ "not": node }` or a condition ' +
      '`{ "field": "<field>", "op": "<operator>", "value": <value> }`; at most 8 levels and 100 conditions. See the README.',
  },
  property_id: { example: IDS.property },
  guest_profile_id: { example: IDS.guest },
  master_profile_id: { example: IDS.masterProfile },
  integration_id: { example: IDS.integration },
  reservation_id: { example: IDS.reservation },
  program_id: { example: IDS.loyaltyProgram },
  entity_id: { example: IDS.reservation },
  source_id: { example: "100234" },
  email: { example: "olivia.smith@example.com" },
  contact_value: { example: "olivia.smith@example.com" },
  q: { example: "smith" },
  confirmation_number: { example: "10000468" },
  category: { example: "accommodation" },
  purpose: { example: "email_marketing" },
  source: { example: "google" },
  member_number: { example: "HVC-000000234" },
  tier: { example: "gold" },
  min_rating: { example: 4 },
  max_rating: { example: 5 },
  min_capacity: { example: 2 },
  arrival_from: { example: "2026-03-01" },
  arrival_to: { example: "2026-03-31" },
  departure_from: { example: "2026-03-01" },
  departure_to: { example: "2026-03-31" },
  updated_since: { example: "2026-03-01T00:00:00Z" },
  occurred_from: { example: "2026-03-01T00:00:00Z" },
  occurred_to: { example: "2026-04-01T00:00:00Z" },
  observed_from: { example: "2026-01-01T00:00:00Z" },
  observed_to: { example: "2026-04-01T00:00:00Z" },
  due_from: { example: "2026-03-14T00:00:00Z" },
  due_to: { example: "2026-03-15T00:00:00Z" },
  published_from: { example: "2026-01-01T00:00:00Z" },
  published_to: { example: "2026-04-01T00:00:00Z" },
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

/**
 * Descriptions of the records that are not a GraphQL type; every other record takes its type's
 * description from schema.graphql, and page records are described from their shape.
 */
export const RECORDS: Record<string, string> = {
  TableWithBindings: "A table with the destination lists it is delivered to.",
  GuestLookupResult: "One row per person found, the inputs that found nobody, and with `table_id` the offset of the next 100 members.",
  Error: "Every error body (spec 2.3).",
};
