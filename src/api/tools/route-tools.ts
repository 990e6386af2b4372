// The MCP route tools as a table: one entry per REST route that has a tool, its name and a
// description written for a model. src/mcp/tools.ts builds the tools from it and the route table;
// the docs (src/docs/mcp-tools.ts) describe them from it.
import { MAX_LIMIT } from "../../pagination/keyset";

/** Page size when a tool call names none: a page a model can read (REST's default is 100). */
export const MCP_DEFAULT_LIMIT = 20;

/**
 * How the route tools' pages and filters work, said once in the server's instructions (which a model
 * reads once) rather than in every tool; the arguments it explains are listed with their types only.
 */
export const CONVENTIONS =
  `List tools answer {data, has_more, next_cursor}: pages of ${MCP_DEFAULT_LIMIT} rows unless you pass limit (at most ` +
  `${MAX_LIMIT}); while has_more is true and you need more, pass next_cursor back as cursor (tables: next_offset as offset); ` +
  "include_total: true adds total_count. get_ tools take an id and answer {data}. Filters: an argument named after a " +
  "record's id (property_id, master_profile_id …) keeps that record's rows; _from, _to, updated_since and the summary " +
  "tools' from and to take a date (YYYY-MM-DD) or an ISO 8601 instant alike: _from and updated_since are inclusive " +
  "(a date: from its start, UTC), _to and to are exclusive for an instant and take a date's whole day in; an instant " +
  "where a date is kept (arrival, departure) is the date it is written in; min_ and max_ are inclusive; kind, status, priority, " +
  "category, tier, vip and active match exactly; e-mails ignore case and surrounding spaces; expand: \"guest\" adds each row's guest " +
  "{id, master_profile_id, name, vip}; order: \"desc\" reads events newest first.";

const MATCHED_EXACTLY = new Set(["kind", "status", "priority", "category", "tier", "vip", "active"]);
const PAGE_ARGUMENTS = new Set(["limit", "cursor", "offset", "include_total", "id"]);

/** Whether CONVENTIONS says what a route tool's argument does (it is then listed without a description). */
export function describedByConvention(name: string): boolean {
  if (PAGE_ARGUMENTS.has(name) || MATCHED_EXACTLY.has(name) || name === "updated_since" || name === "expand" || name === "order") return true;
  if (name.endsWith("_id")) return name !== "source_id" && name !== "entity_id"; // those two are not a record's id here
  return /_(from|to)$/.test(name) || /^(min|max)_/.test(name);
}

export interface RouteToolEntry {
  name: string;
  description: string;
  /**
   * An id this tool does not find may be one of another kind, a model's common slip: when this route
   * (`METHOD /path/{id}`) finds it, the not_found error says `detail` instead.
   */
  otherId?: { route: string; detail: string };
}

/** Route (as `METHOD /path`) → tool. Routes not listed here have no tool. */
export const ROUTE_TOOLS: Record<string, RouteToolEntry> = {
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
      `pass it to get_master_profile or to the other list tools.`,
  },
  "GET /v1/guests/{id}": {
    name: "get_guest",
    description: "Gets one guest profile by its id (a guest_profile_id from any row).",
    otherId: {
      route: "GET /v1/master-profiles/{id}",
      detail: "is a master profile id, not a guest profile id: use guest_context or get_master_profile (get_record with type master_profile)",
    },
  },
  "POST /v1/guests/lookup": {
    name: "lookup_guests",
    description:
      "Many people in one call: up to 100 guest_profile_ids, master_profile_ids, emails and phones in all, or table_id's " +
      "members (100 per call, paged by offset). One row per person: ids, name, VIP, loyalty, properties, stay count, last " +
      "and next stay, spend per currency, contacts with their consent for purpose; not_found lists inputs that found nobody.",
  },
  "GET /v1/master-profiles": {
    name: "search_master_profiles",
    description:
      "Lists master profiles (one real person merged across source systems and properties) by filters: q is a " +
      "case-insensitive substring of given name, family name, the full name or e-mail (matching nothing: candidates with " +
      "a similarity, not matches), email matches exactly, vip, property_id. To find someone by phone or any other identifier, " +
      "use find_guests. Each row's id is the " +
      "master_profile_id that list_reservations, list_transactions, list_consent_observations, list_reviews, " +
      `list_loyalty_members, list_actions and guest_events filter by.`,
  },
  "GET /v1/master-profiles/{id}": {
    name: "get_master_profile",
    description:
      "Gets one master profile by id with the ids of the guest profiles merged into it (get_guest takes them).",
    otherId: {
      route: "GET /v1/guests/{id}",
      detail: "is a guest profile id, not a master profile id: use get_guest (get_record with type guest) or guest_context with guest_profile_id",
    },
  },
  "GET /v1/reservations": {
    name: "list_reservations",
    description:
      "Lists reservations (stays, dining, spa, events): dates, status, property, room or space, amounts. Filter by " +
      "master_profile_id or guest_profile_id for one person's stays, by confirmation_number, or by arrival and " +
      `departure dates. A row's id is the reservation_id list_transactions and list_reviews filter by.`,
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
      `category or a time range.`,
  },
  "GET /v1/consents": {
    name: "list_consent_observations",
    description:
      "Lists the stored consent observations (granted, withdrawn or denied, per contact point, purpose and channel, with " +
      "source and time): the evidence behind effective_consent. Use effective_consent to decide whether a contact may " +
      `be used.`,
  },
  "GET /v1/consents/effective": {
    name: "effective_consent",
    description:
      "Effective consent, one row per contact point and purpose, with the status and deciding observation (withdrawn or " +
      "denied beat granted). For one contact: check_contact_permission.",
  },
  "GET /v1/actions": {
    name: "list_actions",
    description:
      "Lists guest actions (tasks, amenities, follow-ups, complaints) with status, priority and due time. Filter by " +
      `master_profile_id, reservation_id, status or priority.`,
  },
  "GET /v1/reviews/summary": {
    name: "review_summary",
    description:
      "Summarises reviews in one object: count, average rating (1 to 5), count per rating, by source, property and " +
      "responded, over list_records' review filters.",
  },
  "GET /v1/reviews": {
    name: "list_reviews",
    description:
      "Lists guest reviews from every platform with the text, the platform's rating and the normalised 1 to 5 rating. " +
      `Filter by master_profile_id, property_id, source, rating or publication time.`,
  },
  "GET /v1/loyalty/programs": {
    name: "list_loyalty_programs",
    description:
      "Lists the group's loyalty programs with their tiers (lowest first). A program's id is the program_id " +
      `list_loyalty_members filters by.`,
  },
  "GET /v1/loyalty/members": {
    name: "list_loyalty_members",
    description:
      "Lists loyalty memberships: program, member number, tier, points and status. Filter by master_profile_id for one " +
      `person, by member_number, program_id or tier.`,
  },
  "GET /v1/channels": {
    name: "list_channels",
    description:
      "Lists sales and communication channels (booking engine, OTA, e-mail, phone …); property_id null means group-wide.",
  },
  "GET /v1/spaces": {
    name: "list_spaces",
    description:
      "Lists bookable spaces (rooms, restaurant tables, meeting and treatment rooms) with kind and capacity. Filter by " +
      `property_id, kind or min_capacity.`,
  },
  "GET /v1/events": {
    name: "guest_events",
    description:
      "Reads the guest event log: what changed, when, on which entity (guest, reservation, transaction …). " +
      "mode=timeline (default) is the full history in commit order; mode=latest is the newest event per entity in one " +
      `page. Filter by master_profile_id, guest_profile_id or entity.`,
  },
  "GET /v1/tables": {
    name: "list_tables",
    description:
      "Lists tables: saved working lists of guests, curated or defined by a filter document, that can be delivered to " +
      "e-mail marketing destinations. A table's id is what get_table and list_table_members take.",
  },
  "POST /v1/tables/preview": {
    name: "preview_table",
    description:
      "Shows who a filter document selects now, as pages of members, saving nothing; an error names a bad document's part.",
  },
  "GET /v1/tables/{id}": {
    name: "get_table",
    description:
      "Gets one table by id with its member count and its destination bindings: per provider the delivery state " +
      "(active, paused, error), lag, last flush and last error. Use it to answer whether a list is being delivered.",
  },
  "GET /v1/tables/{id}/members": {
    name: "list_table_members",
    description: `Lists the members of a table (guest or master profiles, with the record itself).`,
  },
  "GET /v1/tables/{id}/reachability": {
    name: "table_reachability",
    description:
      "How many members of a table may be contacted for a purpose, in one call: counts per consent status for e-mail and " +
      "phone, the reachable totals, and each destination's state and lag.",
  },
  "POST /v1/tables/{id}/destinations/{provider}/pause": {
    name: "pause_table_destination",
    description:
      "Pauses a table's delivery to one destination provider, keeping its place for resume_table_destination " +
      "(idempotent). Returns the binding.",
  },
  "POST /v1/tables/{id}/destinations/{provider}/resume": {
    name: "resume_table_destination",
    description:
      "Resumes a table's delivery to one destination provider where it stopped (paused or error → active; " +
      "idempotent). Returns the binding.",
  },
};

/**
 * Tools that stand for several route tools: `type` picks one, the other arguments are its own. They
 * keep the list a model reads short (one typed argument list for sixteen families); the tools they
 * stand for keep answering under their names, unlisted.
 */
export const MERGED_TOOLS: { name: string; title: string; description: string; types: Record<string, string> }[] = [
  {
    name: "list_records",
    title: "List records of one type",
    description:
      "Lists records of one type by the filters that type takes (an error names them): guests (one source's " +
      "profile; source_id needs integration_id), master_profiles (a person across sources; q: name or e-mail; no match: candidates), " +
      "consent_observations (effective_consent's evidence), actions (guest tasks), events (change log; mode latest: " +
      "newest per entity), tables (guest lists), table_members (id: the table's), and the rest by name. To find a person: find_guests.",
    types: {
      properties: "list_properties",
      integrations: "list_integrations",
      guests: "list_guests",
      master_profiles: "search_master_profiles",
      reservations: "list_reservations",
      transactions: "list_transactions",
      consent_observations: "list_consent_observations",
      actions: "list_actions",
      reviews: "list_reviews",
      loyalty_programs: "list_loyalty_programs",
      loyalty_members: "list_loyalty_members",
      channels: "list_channels",
      spaces: "list_spaces",
      events: "guest_events",
      tables: "list_tables",
      table_members: "list_table_members",
    },
  },
  {
    name: "get_record",
    title: "Get one record by id",
    description:
      "Gets one record by id: property, guest (profile), master_profile (with its guest profile ids), reservation or " +
      "table (with each destination's delivery state, lag and last error).",
    types: {
      property: "get_property",
      guest: "get_guest",
      master_profile: "get_master_profile",
      reservation: "get_reservation",
      table: "get_table",
    },
  },
];
