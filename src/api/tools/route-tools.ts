// The MCP route tools as a table: one entry per REST route that has a tool, its name and a
// description written for a model. src/mcp/tools.ts builds the tools from it and the route table;
// the docs (src/docs/mcp-tools.ts) describe them from it.
import { MAX_LIMIT } from "../../pagination/keyset";

/** Page size when a tool call names none: a page a model can read (REST's default is 100). */
export const MCP_DEFAULT_LIMIT = 20;

const PAGING =
  `Pages hold ${MCP_DEFAULT_LIMIT} rows unless you pass limit (at most ${MAX_LIMIT}); while has_more is true, ` +
  "pass next_cursor back as cursor for the next page.";
const OFFSET_PAGING =
  `Pages hold ${MCP_DEFAULT_LIMIT} rows unless you pass limit (at most ${MAX_LIMIT}); while has_more is true, ` +
  "pass next_offset back as offset.";

/** Route (as `METHOD /path`) → tool. Routes not listed here have no tool. */
export const ROUTE_TOOLS: Record<string, { name: string; description: string }> = {
  "GET /v1/properties": {
    name: "list_properties",
    description:
      "Lists every property (hotel, resort, restaurant, bar, spa) of the group you are connected to, with its id, name, " +
      "kind and time zone. Call it first when a question names a property: other tools filter by its id (property_id).",
  },
  "GET /v1/properties/{id}": {
    name: "get_property",
    description: "Gets one property by its id (from list_properties or any row's property_id).",
  },
  "GET /v1/integrations": {
    name: "list_integrations",
    description:
      "Lists the source systems (PMS, POS, review and loyalty platforms) feeding the group, each mapped to one property. " +
      "A row's id is the integration_id that list_guests and list_reservations need for a source_id lookup.",
  },
  "GET /v1/guests": {
    name: "list_guests",
    description:
      "Lists guest profiles: one guest as one source system knows them (name, e-mail, phone, language, country). " +
      "Filter by email, property_id, master_profile_id, or source_id with integration_id. To find a person by name or " +
      "any contact point, use find_guests (it searches every identifier at once). Each row's master_profile_id is the person across sources: " +
      `pass it to get_master_profile or to the other list tools. ${PAGING}`,
  },
  "GET /v1/guests/{id}": {
    name: "get_guest",
    description: "Gets one guest profile by its id (a guest_profile_id from any row).",
  },
  "GET /v1/master-profiles": {
    name: "search_master_profiles",
    description:
      "Lists master profiles (one real person merged across source systems and properties) by filters: q is a " +
      "case-insensitive substring of given name, family name or e-mail (one field), email matches exactly, vip, " +
      "property_id. To find someone by full name, phone or any other identifier, use find_guests. Each row's id is the " +
      "master_profile_id that list_reservations, list_transactions, list_consent_observations, list_reviews, " +
      `list_loyalty_members, list_actions and guest_events filter by. ${PAGING}`,
  },
  "GET /v1/master-profiles/{id}": {
    name: "get_master_profile",
    description:
      "Gets one master profile by id with the ids of the guest profiles merged into it (get_guest takes them).",
  },
  "GET /v1/reservations": {
    name: "list_reservations",
    description:
      "Lists reservations (stays, dining, spa, events): dates, status, property, room or space, amounts. Filter by " +
      "master_profile_id or guest_profile_id for one person's stays, by confirmation_number, or by arrival and " +
      `departure dates. A row's id is the reservation_id list_transactions and list_reviews filter by. ${PAGING}`,
  },
  "GET /v1/reservations/{id}": {
    name: "get_reservation",
    description: "Gets one reservation by id (a reservation_id from any row).",
  },
  "GET /v1/transactions": {
    name: "list_transactions",
    description:
      "Lists folio transactions (charges, payments, refunds, adjustments): what a guest spent, by category, with amounts " +
      "as integers in the currency's minor unit (12050 EUR is 120.50). Filter by master_profile_id, reservation_id, " +
      `category or a time range. ${PAGING}`,
  },
  "GET /v1/consents": {
    name: "list_consent_observations",
    description:
      "Lists the stored consent observations (granted, withdrawn or denied, per contact point, purpose and channel, with " +
      "source and time): the evidence behind effective_consent. Use effective_consent to decide whether a contact may " +
      `be used. ${PAGING}`,
  },
  "GET /v1/consents/effective": {
    name: "effective_consent",
    description:
      "Answers whether a contact point may be used for a purpose: one row per contact and purpose with the effective " +
      "status and the observation that decided it. Withdrawn or denied beat granted whatever came last; a contact with " +
      "no row is unknown, which never means allowed. Filter by email (or contact_value), purpose (e.g. " +
      `email_marketing) or guest_profile_id. ${PAGING}`,
  },
  "GET /v1/actions": {
    name: "list_actions",
    description:
      "Lists guest actions (tasks, amenities, follow-ups, complaints) with status, priority and due time. Filter by " +
      `master_profile_id, reservation_id, status or priority. ${PAGING}`,
  },
  "GET /v1/reviews/summary": {
    name: "review_summary",
    description:
      "Summarises reviews in one small object: count, average rating (1 to 5), count per rating, and breakdowns by " +
      "source, property and responded. Takes the same filters as list_reviews; prefer it to paging through reviews.",
  },
  "GET /v1/reviews": {
    name: "list_reviews",
    description:
      "Lists guest reviews from every platform with the text, the platform's rating and the normalised 1 to 5 rating. " +
      `Filter by master_profile_id, property_id, source, rating or publication time. ${PAGING}`,
  },
  "GET /v1/loyalty/programs": {
    name: "list_loyalty_programs",
    description:
      "Lists the group's loyalty programs with their tiers (lowest first). A program's id is the program_id " +
      `list_loyalty_members filters by. ${PAGING}`,
  },
  "GET /v1/loyalty/members": {
    name: "list_loyalty_members",
    description:
      "Lists loyalty memberships: program, member number, tier, points and status. Filter by master_profile_id for one " +
      `person, by member_number, program_id or tier. ${PAGING}`,
  },
  "GET /v1/channels": {
    name: "list_channels",
    description:
      "Lists sales and communication channels (booking engine, OTA, e-mail, phone …); property_id null means group-wide. " +
      PAGING,
  },
  "GET /v1/spaces": {
    name: "list_spaces",
    description:
      "Lists bookable spaces (rooms, restaurant tables, meeting and treatment rooms) with kind and capacity. Filter by " +
      `property_id, kind or min_capacity. ${PAGING}`,
  },
  "GET /v1/events": {
    name: "guest_events",
    description:
      "Reads the guest event log: what changed, when, on which entity (guest, reservation, transaction …). " +
      "mode=timeline (default) is the full history in commit order; mode=latest is the newest event per entity in one " +
      `page. Filter by master_profile_id, guest_profile_id or entity. ${PAGING}`,
  },
  "GET /v1/tables": {
    name: "list_tables",
    description:
      "Lists tables: saved working lists of guests, curated or defined by a filter document, that can be delivered to " +
      "e-mail marketing destinations. A table's id is what get_table and list_table_members take. " +
      OFFSET_PAGING,
  },
  "POST /v1/tables/preview": {
    name: "preview_table",
    description:
      "Shows who a filter document selects right now, as pages of members, without saving anything. Give member_type " +
      "and filter_doc (an object); an invalid document is an error naming the offending part. " +
      OFFSET_PAGING,
  },
  "GET /v1/tables/{id}": {
    name: "get_table",
    description:
      "Gets one table by id with its member count and its destination bindings: per provider the delivery state " +
      "(active, paused, error), lag, last flush and last error. Use it to answer whether a list is being delivered.",
  },
  "GET /v1/tables/{id}/members": {
    name: "list_table_members",
    description: `Lists the members of a table (guest or master profiles, with the record itself). ${OFFSET_PAGING}`,
  },
  "POST /v1/tables/{id}/destinations/{provider}/pause": {
    name: "pause_table_destination",
    description:
      "Pauses delivery of a table to one destination provider (e.g. mailchimp), keeping its place: resume_table_destination " +
      "continues where it stopped. Pausing a paused binding changes nothing. Returns the binding; get_table shows them all.",
  },
  "POST /v1/tables/{id}/destinations/{provider}/resume": {
    name: "resume_table_destination",
    description:
      "Resumes delivery of a table to one destination provider from where it stopped (paused or error → active). " +
      "Resuming an active binding changes nothing. Returns the binding.",
  },
};
