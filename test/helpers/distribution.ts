// The path past one database node (docs/scaling.md): Citus, every tenant table distributed by
// property_group_id, reference tables for the rest. This file is the declared side of that plan:
// where each table goes, what in today's schema and SQL Citus would refuse, and the plan for each.
// test/integration/distribution-blockers.test.ts reads the migrated database's catalogue and the
// tenant rules, derives the same lists, and fails when they differ in either direction (a new
// blocker, or one that was fixed); it also holds docs/scaling.md to the blocks it renders from here.
// Nothing at run time reads this file.

export type Placement = "distributed" | "reference" | "local";

/** Why a table that is not tenant data goes where it goes (tenant tables are all "distributed"). */
export interface SharedTable {
  placement: Exclude<Placement, "distributed">;
  why: string;
}

// Distributed by group, a lookup by hash would ask every shard; a reference table's copy on the node
// that receives it answers in one local statement.
const CREDENTIAL = "Credentials: looked up by hash or id before the caller's group is known, once per request; small, rarely written.";

/**
 * Every table that is not tenant data. Tenant data (a model in src/data/tenant.ts TENANT_RULES) is
 * distributed by property_group_id and colocated; the test derives that set from the tenant rules.
 */
export const SHARED_TABLES: Record<string, SharedTable> = {
  organisations: { placement: "reference", why: "One row per customer, referenced by property_groups." },
  property_groups: {
    placement: "reference",
    why: "The tenants themselves, one row each; properties reference them, and web-app sessions find theirs by organisation.",
  },
  api_keys: { placement: "reference", why: CREDENTIAL },
  static_tokens: { placement: "reference", why: CREDENTIAL },
  mcp_tokens: { placement: "reference", why: CREDENTIAL },
  partner_credentials: { placement: "reference", why: CREDENTIAL },
  partner_access_tokens: { placement: "reference", why: CREDENTIAL },
  oauth_clients: {
    placement: "reference",
    why: "Registered by a client before any group is chosen (RFC 7591) and looked up by id at every OAuth step; grants reference it.",
  },
  oauth_grants: { placement: "reference", why: CREDENTIAL },
  oauth_authorization_codes: { placement: "reference", why: CREDENTIAL },
  oauth_refresh_tokens: { placement: "reference", why: CREDENTIAL },
  service_secrets: { placement: "local", why: "Read by name at start-up on the coordinator; secrets need no copy on every worker." },
  rate_limit_counters: {
    placement: "local",
    why: "Keyed by credential or address, not by group; one upsert per instance per sync, never joined; UNLOGGED on purpose.",
  },
  gcs_schema_migrations: { placement: "local", why: "The migration runner's log, written under its advisory lock on the coordinator." },
};

/** Blockers that share one plan, by the ids the test derives (`kind: object`). */
export interface BlockerGroup {
  title: string;
  plan: string;
  blockers: string[];
}

export const BLOCKERS: BlockerGroup[] = [
  {
    title: "Primary keys without property_group_id",
    plan:
      "Citus enforces a unique key only within a shard, so every key of a distributed table must contain the distribution " +
      "column. Each becomes (property_group_id, …). Ids are random uuids, unique on their own, so nothing is lost. In " +
      "schema.prisma: @@id([propertyGroupId, id]); Prisma calls that find or update by id alone (findUnique, update) name " +
      "the compound key, which the scoped client already has the group for.",
    blockers: [
      "unique key: actions.actions_pkey (id)",
      "unique key: channels.channels_pkey (id)",
      "unique key: consent_observations.consent_observations_pkey (id)",
      "unique key: destination_bindings.destination_bindings_pkey (id)",
      "unique key: destination_connections.destination_connections_pkey (id)",
      "unique key: events.events_pkey (seq)",
      "unique key: guest_profiles.guest_profiles_pkey (id)",
      "unique key: integration_connections.integration_connections_pkey (id)",
      "unique key: integrations.integrations_pkey (id)",
      "unique key: loyalty_members.loyalty_members_pkey (id)",
      "unique key: loyalty_programs.loyalty_programs_pkey (id)",
      "unique key: master_profiles.master_profiles_pkey (id)",
      "unique key: master_profile_links.master_profile_links_pkey (id)",
      "unique key: properties.properties_pkey (id)",
      "unique key: reservations.reservations_pkey (id)",
      "unique key: reviews.reviews_pkey (id)",
      "unique key: spaces.spaces_pkey (id)",
      "unique key: table_members.table_members_pkey (table_id, member_id)",
      "unique key: table_membership_changes.table_membership_changes_pkey (table_id, seq)",
      "unique key: tables.tables_pkey (id)",
      "unique key: transactions.transactions_pkey (id)",
    ],
  },
  {
    title: "Natural unique keys without property_group_id",
    plan:
      "Prefixed with property_group_id. An integration, a table and a loyalty programme each belong to one group (the " +
      "composite foreign keys below make that a constraint), so (group, integration_id, source_id) is unique exactly when " +
      "(integration_id, source_id) is. Upserts that name these keys (ON CONFLICT, Prisma's @@unique inputs) name the new ones.",
    blockers: [
      "unique key: destination_bindings.destination_bindings_table_id_provider_key (table_id, provider)",
      "unique key: guest_profiles.guest_profiles_integration_id_source_id_key (integration_id, source_id)",
      "unique key: integration_connections.integration_connections_integration_id_key (integration_id)",
      "unique key: loyalty_members.loyalty_members_program_id_member_number_key (program_id, member_number)",
      "unique key: master_profile_links.master_profile_links_guest_profile_id_key (guest_profile_id)",
      "unique key: reservations.reservations_integration_id_source_id_key (integration_id, source_id)",
      "unique key: transactions.transactions_integration_id_source_id_key (integration_id, source_id)",
      "unique key: webhook_deliveries.webhook_deliveries_pkey (id)",
      "unique key: webhook_endpoints.webhook_endpoints_pkey (id)",
    ],
  },
  {
    title: "Foreign keys between tenant tables without property_group_id",
    plan:
      "Citus keeps a foreign key between distributed tables only when both are colocated and the distribution column is in " +
      "it at the same position on both sides. Each becomes (property_group_id, x_id) REFERENCES parent (property_group_id, " +
      "id), after the parent's primary key above. On one node this already makes the database refuse a child whose parent " +
      "is in another group, which today only the application prevents.",
    blockers: [
      "foreign key: destination_bindings.destination_bindings_connection_id_fkey (connection_id) → destination_connections (id)",
      "foreign key: destination_bindings.destination_bindings_table_id_fkey (table_id) → tables (id)",
      "foreign key: guest_profiles.guest_profiles_integration_id_fkey (integration_id) → integrations (id)",
      "foreign key: guest_profiles.guest_profiles_master_profile_id_fkey (master_profile_id) → master_profiles (id)",
      "foreign key: integration_connections.integration_connections_integration_id_fkey (integration_id) → integrations (id)",
      "foreign key: integrations.integrations_property_id_fkey (property_id) → properties (id)",
      "foreign key: loyalty_members.loyalty_members_program_id_fkey (program_id) → loyalty_programs (id)",
      "foreign key: master_profile_links.master_profile_links_guest_profile_id_fkey (guest_profile_id) → guest_profiles (id)",
      "foreign key: master_profile_links.master_profile_links_linked_guest_profile_id_fkey (linked_guest_profile_id) → guest_profiles (id)",
      "foreign key: master_profile_links.master_profile_links_master_profile_id_fkey (master_profile_id) → master_profiles (id)",
      "foreign key: reservations.reservations_guest_profile_id_fkey (guest_profile_id) → guest_profiles (id)",
      "foreign key: table_members.table_members_table_id_fkey (table_id) → tables (id)",
      "foreign key: transactions.transactions_guest_profile_id_fkey (guest_profile_id) → guest_profiles (id)",
      "foreign key: transactions.transactions_reservation_id_fkey (reservation_id) → reservations (id)",
      "foreign key: webhook_deliveries.webhook_deliveries_endpoint_id_fkey (endpoint_id) → webhook_endpoints (id)",
    ],
  },
  {
    title: "Foreign key actions Citus refuses once property_group_id is in the key",
    plan:
      "Citus refuses ON UPDATE CASCADE / SET NULL / SET DEFAULT and ON DELETE SET NULL / SET DEFAULT on a foreign key that " +
      "contains the distribution column, towards a distributed or a reference table; its check reads the action only, so " +
      "PostgreSQL 15's SET NULL (column) form is refused as well. ON UPDATE becomes NO ACTION: ids and groups never change " +
      "(Citus refuses updates of the distribution column anyway). ON DELETE SET NULL becomes NO ACTION: the only deleter " +
      "today is the fixture reset, which deletes children first; a future delete path clears the reference itself in the " +
      "same transaction.",
    blockers: [
      "foreign key action: destination_bindings.destination_bindings_connection_id_fkey ON UPDATE CASCADE",
      "foreign key action: destination_bindings.destination_bindings_table_id_fkey ON UPDATE CASCADE",
      "foreign key action: guest_profiles.guest_profiles_integration_id_fkey ON UPDATE CASCADE",
      "foreign key action: guest_profiles.guest_profiles_master_profile_id_fkey ON DELETE SET NULL, ON UPDATE CASCADE",
      "foreign key action: integration_connections.integration_connections_integration_id_fkey ON UPDATE CASCADE",
      "foreign key action: integrations.integrations_property_id_fkey ON UPDATE CASCADE",
      "foreign key action: loyalty_members.loyalty_members_program_id_fkey ON UPDATE CASCADE",
      "foreign key action: properties.properties_property_group_id_fkey ON UPDATE CASCADE",
      "foreign key action: reservations.reservations_guest_profile_id_fkey ON DELETE SET NULL, ON UPDATE CASCADE",
      "foreign key action: table_members.table_members_table_id_fkey ON UPDATE CASCADE",
      "foreign key action: transactions.transactions_guest_profile_id_fkey ON DELETE SET NULL, ON UPDATE CASCADE",
      "foreign key action: transactions.transactions_reservation_id_fkey ON DELETE SET NULL, ON UPDATE CASCADE",
      "foreign key action: webhook_deliveries.webhook_deliveries_endpoint_id_fkey ON UPDATE CASCADE",
    ],
  },
  {
    title: "Statement triggers that keep master_profile_counts",
    plan:
      "Citus refuses triggers on distributed (and reference) tables unless citus.enable_unsafe_triggers is on, and then each fires per shard " +
      "on a worker and writes master_profile_counts from there. The count moves into the writer instead: the fixture loader, " +
      "the only writer of master profiles, upserts the group's total in the same transaction (one router statement per " +
      "group); the triggers and their functions are dropped. ENABLE ALWAYS triggers would also fire in logical replication " +
      "apply, which shard moves use.",
    blockers: [
      "trigger: master_profiles.master_profile_counts_add → master_profile_counts_add()",
      "trigger: master_profiles.master_profile_counts_remove → master_profile_counts_remove()",
      "trigger: master_profiles.master_profile_counts_truncate → master_profile_counts_truncate()",
    ],
  },
  {
    title: "The trigger that keeps a master profile in its group",
    plan:
      "Dropped: Citus refuses every UPDATE of the distribution column (\"modifying the partition value of rows is not " +
      "allowed\"), so the rule holds without it.",
    blockers: ["trigger: master_profiles.master_profiles_stay_in_group → master_profiles_stay_in_group()"],
  },
  {
    title: "The dashboard rollups: statement triggers, and keys without property_group_id",
    plan:
      "The change log and the stored answers are keyed (property_group_id, id) and their sequences become identity columns " +
      "drawn per node (order within a group is not needed: the refresher consumes all of a group's changes at once). " +
      "Triggers on distributed tables fire per shard on a worker, so the change rows move into the writers: the one writer " +
      "of each fed table (fixture loader, event append) appends its group's change row in the same transaction, and the " +
      "triggers go. A truncation (an operator's act) deletes the rollups in the same transaction instead of by trigger.",
    blockers: [
      "sequence key: metric_rollup_changes.id DEFAULT nextval('metric_rollup_changes_id_seq'::regclass)",
      "sequence key: metric_rollups.id DEFAULT nextval('metric_rollups_id_seq'::regclass)",
      "unique key: metric_rollup_changes.metric_rollup_changes_pkey (id)",
      "unique key: metric_rollups.metric_rollups_pkey (id)",
      // Each fed table records its rows' keys with its own function (migration 20261128210000_rollup_touches);
      // properties records none (a time zone moves every bucket).
      ...["consent_observations", "guest_profiles", "loyalty_members", "properties", "reservations", "reviews", "transactions"].flatMap((t) => {
        const changed = t === "properties" ? "metric_rollups_changed()" : `metric_rollups_changed_${t}()`;
        return [
          `trigger: ${t}.metric_rollups_delete → ${changed}`,
          `trigger: ${t}.metric_rollups_insert → ${changed}`,
          `trigger: ${t}.metric_rollups_truncate → metric_rollups_truncated()`,
          `trigger: ${t}.metric_rollups_update → ${changed}`,
        ];
      }),
    ],
  },
  {
    title: "The event log's order: the writer's transaction id and a global sequence",
    plan:
      "The timeline (src/data/events.ts) orders by (txid, seq) and reads only below its snapshot's xmin: one node's " +
      "transaction ids and snapshots. On Citus both come from the coordinator (INSERT defaults and nextval are evaluated " +
      "there, and so is the watermark query), which holds while every events write is a single-node transaction; a " +
      "transaction committed with two-phase commit becomes visible on the worker after the coordinator's xid has finished, " +
      "and a walk could pass it. Before distributing events: a per-group position assigned under the group's lock, gap-free " +
      "and in commit order, as table_membership_changes has had since 20261123020000; the key becomes (property_group_id, " +
      "position) and the sequence and txid columns go.",
    blockers: [
      "node-local default: events.txid DEFAULT ((pg_current_xact_id())::text)::bigint",
      "sequence key: events.seq DEFAULT nextval('events_seq_seq'::regclass)",
    ],
  },
  {
    title: "The trigger that keeps master profile links true when a guest profile moves",
    plan:
      "Moves into the writer: whoever changes a guest profile's master_profile_id deletes the links of that profile and the " +
      "links matched to it in the old master profile in the same transaction (one router statement: both are the group's " +
      "rows), and whoever changes its property_id sets its link's property_id with it, as the trigger does today " +
      "(docs/identity-resolution.md); the trigger and its function are dropped. Today no code of the service moves a guest profile.",
    blockers: ["trigger: guest_profiles.master_profile_links_follow_guest → master_profile_links_follow_guest()"],
  },
];

/** A statement that reads or writes across groups today (or before a group is known), and its plan. */
export interface CrossGroupStatement {
  name: string;
  /** `file#identifier` (from the repository root): where it is written; the test checks it still is. */
  where: string[];
  plan: string;
}

/**
 * Every statement that does not carry one group's predicate. The first entries are the exemptions of
 * the statement-isolation test (test/helpers/tenant-isolation.ts EXEMPTIONS, by name: the test holds
 * this list to them); the rest run outside a request (start-up, background work, the CLI).
 */
export const CROSS_GROUP_STATEMENTS: CrossGroupStatement[] = [
  {
    name: "credential lookup by token hash",
    where: ["src/data/stores/credentials.ts#findTokenByHash"],
    plan: "Credential tables are reference tables: the lookup reads the copy on the node that receives it, still one statement.",
  },
  {
    name: "consent precedence across the group",
    where: ["src/data/consents.ts#decideConsent"],
    plan: "Not cross-group: it is excused from the property predicate only and still carries the group's, so it is a router query.",
  },
  {
    name: "the group's consent purposes",
    where: ["src/data/consents.ts#consents"],
    plan: "Not cross-group: the distinct purposes of one group (excused from the property predicate only), a router query.",
  },
  {
    name: "OAuth clients, codes and tokens by id or hash",
    where: [
      "src/data/stores/oauth.ts#findClient",
      "src/data/stores/oauth.ts#findCodeWithGrant",
      "src/data/stores/oauth.ts#findRefreshTokenWithGrant",
      "src/data/stores/oauth.ts#findAccessTokenWithGrant",
    ],
    plan:
      "Reference tables, read locally. Their writes (registration, approval, token rotation) commit on every node with " +
      "two-phase commit: about one per connector per hour (access tokens live an hour).",
  },
  {
    name: "groups, organisations and credentials without a group (web-app sessions, gcs keys, gcs connectors)",
    where: [
      "src/data/stores/credentials.ts#groupIdOfOrganisation",
      "src/data/stores/credentials.ts#listApiKeys",
      "src/data/stores/credentials.ts#revokeApiKeysNamed",
      "src/data/stores/credentials.ts#firstPropertyGroup",
      "src/data/stores/oauth.ts#listGrants",
    ],
    plan: "Reference tables: unchanged.",
  },
  {
    name: "the delivery engine's claim of a due binding (SKIP LOCKED across all groups)",
    where: ["src/data/stores/delivery.ts#claimDueBinding"],
    plan:
      "Citus refuses FOR UPDATE on a multi-shard query, and the EXISTS joins the membership log on table_id alone. Two " +
      "steps: a multi-shard read, without locks, of due bindings' (property_group_id, id), with the EXISTS also joined on " +
      "property_group_id; then, for each candidate in order, the claim as a router statement (property_group_id = $g AND " +
      "id = $id … FOR UPDATE SKIP LOCKED) that re-checks due and state on the locked row, as today. The binding's " +
      "connection and table, read by id today, are read with the group too.",
  },
  {
    name: "a delivery batch's reads and bookkeeping by table or binding id",
    where: [
      "src/data/stores/delivery.ts#membershipChangesAfter",
      "src/data/stores/delivery.ts#emailsOfCurrentMembers",
      "src/data/stores/delivery.ts#checkpoint",
      "src/data/stores/delivery.ts#releaseLease",
      "src/data/stores/delivery.ts#recordBackoff",
      "src/data/stores/delivery.ts#recordError",
    ],
    plan:
      "The claimed binding carries its group: every statement of the batch adds property_group_id = $g (and the members " +
      "join adds m.property_group_id = p.property_group_id), so each is a router statement on the group's node. Without it " +
      "the reads and updates fan out to every shard, and the join on member_id = id is refused.",
  },
  {
    name: "the delivery gauges of /metrics",
    where: ["src/data/stores/delivery.ts#deliveryGaugeRows"],
    plan: "A multi-shard read is right for a scrape; its correlated subquery also joins on property_group_id so Citus can push it down.",
  },
  {
    name: "rotation of destination connection secrets",
    where: ["src/data/stores/delivery.ts#resealConnectionBatch"],
    plan:
      "Citus refuses FOR UPDATE on a multi-shard query: rotation walks the groups (property_groups, a reference table) and " +
      "locks each group's batch with a router statement.",
  },
  {
    name: "rate limit counters",
    where: ["src/data/stores/rate-limit-counters.ts#postgresCounterTable"],
    plan: "A local table on the coordinator: unchanged.",
  },
  {
    name: "service secrets",
    where: ["src/db/service-secrets.ts#serviceSecret", "src/data/stores/delivery.ts#existingServiceSecret"],
    plan: "A local table on the coordinator: unchanged.",
  },
  {
    name: "migrations",
    where: ["src/db/migrate.ts#migrate"],
    plan:
      "Run against the coordinator, where the advisory lock and gcs_schema_migrations stay; Citus applies DDL on " +
      "distributed and reference tables to every shard. A migration's data statements are written per group (router) or " +
      "colocated: the kind of UPDATE … FROM a window over every group that 20261123020000 ran would be refused.",
  },
  {
    name: "fixture reset",
    where: ["src/fixtures/reset.ts#resetFixtures"],
    plan:
      "DELETE … WHERE property_group_id = ANY($1) is a multi-shard write (two-phase commit): it works. Its SET LOCAL " +
      "session_replication_role reaches the shards only with citus.propagate_set_commands = 'local', so foreign key " +
      "actions may run there; once the actions are NO ACTION (above), child-first order is all it needs.",
  },
];
