// The ceiling of the MCP guest_context tool (bench/ceiling-server.ts, POST /mcp): one JSON-RPC
// tools/call with a master_profile_id, answered with the statements the service's GuestContext
// operation sends (its statement log, one call: master profile and its guests, then the sections'
// reads, then property names and loyalty programs; the Prisma-built ones copied as Prisma writes
// them) and the same result: structuredContent and the same JSON as text. Precedence and contact
// normalisation are the service's own pure functions, as the cursor is for the REST ceilings.
import { effectiveConsent, normaliseContact, type ConsentStatus } from "../src/consent/precedence";

type Query = <R = Record<string, any>>(text: string, values: unknown[], name?: string) => Promise<R[]>;

const ts = (column: string, alias: string) => `to_char(t.${column} AT TIME ZONE 'UTC', 'YYYY-MM-DD"T"HH24:MI:SS.MS"Z"') AS "${alias}"`;
const day = (column: string, alias: string) => `to_char(t.${column}, 'YYYY-MM-DD') AS "${alias}"`;
/** Prisma's select list: every column, table-qualified, enums as text. */
const prismaColumns = (table: string, columns: string) =>
  columns.split(" ").map((c) => (c.endsWith("::text") ? `"public"."${table}"."${c.slice(0, -6)}"::text` : `"public"."${table}"."${c}"`)).join(", ");
/** Prisma's `IN ($a,$b,…)` from `first` on. */
const list = (n: number, first: number) => Array.from({ length: n }, (_, i) => `$${first + i}`).join(",");

const SQL = {
  master: `SELECT t.id AS "id", t.given_name AS "givenName", t.family_name AS "familyName", t.email AS "email", t.phone AS "phone", t.language AS "language", t.country_code AS "countryCode", ${day("birth_date", "birthDate")}, t.vip AS "vip", ${ts("created_at", "createdAt")}, ${ts("updated_at", "updatedAt")} FROM master_profiles t WHERE t.property_group_id = $1::uuid AND t.id = $2::uuid LIMIT $3`,
  guests: `SELECT t.id AS "id", t.property_id AS "propertyId", t.integration_id AS "integrationId", t.source_id AS "sourceId", t.master_profile_id AS "masterProfileId", t.given_name AS "givenName", t.family_name AS "familyName", t.email AS "email", t.phone AS "phone", t.language AS "language", t.country_code AS "countryCode", t.city AS "city", ${day("birth_date", "birthDate")}, t.vip_code AS "vipCode", ${ts("created_at", "createdAt")}, ${ts("updated_at", "updatedAt")} FROM guest_profiles t WHERE t.property_group_id = $1::uuid AND t.master_profile_id = ANY($2::uuid[]) ORDER BY t.created_at, t.id`,
  // src/data/stays.ts summaryOfGuests and spendOfGuests.
  stays: `SELECT
            count(*) FILTER (WHERE s.begun)::int AS count,
            coalesce(sum(r.departure_date - r.arrival_date) FILTER (WHERE s.begun), 0)::int AS nights,
            to_char(min(r.arrival_date) FILTER (WHERE s.begun), 'YYYY-MM-DD') AS "firstStay",
            to_char(max(r.arrival_date) FILTER (WHERE s.begun), 'YYYY-MM-DD') AS "lastStay",
            to_char(min(r.arrival_date) FILTER (WHERE s.upcoming), 'YYYY-MM-DD') AS "nextStay",
            count(*) FILTER (WHERE s.upcoming)::int AS upcoming,
            count(*) FILTER (WHERE r.kind = 'stay' AND r.status IN ('cancelled', 'no_show'))::int AS cancelled,
            count(*) FILTER (WHERE r.kind <> 'stay')::int AS "otherBookings",
            array_agg(DISTINCT p.name) FILTER (WHERE s.begun) AS properties
          FROM reservations r
          JOIN properties p ON p.id = r.property_id AND p.property_group_id = $1::uuid
          CROSS JOIN LATERAL (SELECT
              r.kind = 'stay' AND r.status NOT IN ('cancelled', 'no_show') AND r.arrival_date <= current_date AS begun,
              r.kind = 'stay' AND r.status IN ('tentative', 'confirmed') AND r.arrival_date > current_date AS upcoming) s
          WHERE r.property_group_id = $2::uuid AND r.guest_profile_id = ANY($3::uuid[])`,
  spend: `SELECT x.currency, x.category,
            sum(CASE WHEN x.kind = 'refund' THEN -abs(x.amount_minor) ELSE x.amount_minor END)::text AS "amountMinor",
            count(*)::int AS transactions
          FROM transactions x
          WHERE x.property_group_id = $1::uuid AND x.guest_profile_id = ANY($2::uuid[])
            AND x.kind IN ('charge', 'adjustment', 'refund')
          GROUP BY x.currency, x.category`,
  events: `SELECT t.seq AS "seq", t.property_group_id AS "propertyGroupId", t.entity_type AS "entityType", t.entity_id AS "entityId", t.guest_profile_id AS "guestProfileId", t.property_id AS "propertyId", t.integration_id AS "integrationId", t.operation AS "operation", t.delta AS "delta", ${ts("occurred_at", "occurredAt")}, ${ts("recorded_at", "recordedAt")}, t.txid AS "txid" FROM events t WHERE t.property_group_id = $1::uuid AND t.guest_profile_id = ANY($2::uuid[]) ORDER BY t.seq DESC LIMIT $3`,
  // Prisma's statements (src/data/loyalty.ts, engagement.ts, consents.ts and the property and integration loaders).
  loyaltyMembers: (n: number) => `SELECT ${prismaColumns("loyalty_members", "id property_group_id program_id guest_profile_id master_profile_id enrolment_property_id member_number tier status::text points_balance lifetime_points enrolled_at tier_expires_at created_at updated_at")} FROM "public"."loyalty_members" WHERE (("public"."loyalty_members"."guest_profile_id" IN (${list(n, 1)}) OR "public"."loyalty_members"."master_profile_id" = $${n + 1}) AND "public"."loyalty_members"."property_group_id" = $${n + 2}) ORDER BY "public"."loyalty_members"."lifetime_points" DESC, "public"."loyalty_members"."id" ASC OFFSET $${n + 3}`,
  latestReview: (n: number) => `SELECT ${prismaColumns("reviews", "id property_group_id property_id integration_id source_id guest_profile_id reservation_id source rating source_rating source_scale title body language published_at response_body responded_at created_at")} FROM "public"."reviews" WHERE ("public"."reviews"."guest_profile_id" IN (${list(n, 1)}) AND "public"."reviews"."property_group_id" = $${n + 1}) ORDER BY "public"."reviews"."published_at" DESC, "public"."reviews"."id" ASC LIMIT $${n + 2} OFFSET $${n + 3}`,
  reviewSummary: (n: number) => `SELECT COUNT(*) AS "_count$_all", AVG("rating") AS "_avg$rating" FROM (SELECT "public"."reviews"."id", "public"."reviews"."rating" FROM "public"."reviews" WHERE ("public"."reviews"."guest_profile_id" IN (${list(n, 1)}) AND "public"."reviews"."property_group_id" = $${n + 1}) OFFSET $${n + 2}) AS "sub"`,
  observations: (n: number) => `SELECT ${prismaColumns("consent_observations", "id property_group_id property_id integration_id guest_profile_id contact_type::text contact_value purpose channel status::text source observed_at created_at")} FROM "public"."consent_observations" WHERE ("public"."consent_observations"."property_group_id" = $1 AND "public"."consent_observations"."contact_value" IN (${list(n, 2)}) AND "public"."consent_observations"."property_group_id" = $${n + 2}) ORDER BY "public"."consent_observations"."observed_at" DESC, "public"."consent_observations"."id" ASC OFFSET $${n + 3}`,
  integrations: (n: number) => `SELECT ${prismaColumns("integrations", "id property_group_id property_id provider name status::text status_detail source_ref last_synced_at created_at updated_at")} FROM "public"."integrations" WHERE ("public"."integrations"."id" IN (${list(n, 1)}) AND "public"."integrations"."property_group_id" = $${n + 1}) OFFSET $${n + 2}`,
  properties: (n: number) => `SELECT ${prismaColumns("properties", "id property_group_id name code kind::text timezone country_code city address_line currency room_count seat_count created_at updated_at")} FROM "public"."properties" WHERE ("public"."properties"."id" IN (${list(n, 1)}) AND "public"."properties"."property_group_id" = $${n + 1}) OFFSET $${n + 2}`,
  programs: (n: number) => `SELECT ${prismaColumns("loyalty_programs", "id property_group_id name code points_name tiers active created_at updated_at")} FROM "public"."loyalty_programs" WHERE ("public"."loyalty_programs"."id" IN (${list(n, 1)}) AND "public"."loyalty_programs"."property_group_id" = $${n + 1}) OFFSET $${n + 2}`,
};

const PROFILES_SHOWN = 10;
const CONSENTS_SHOWN = 12;
const EVENTS_SHOWN = 5;
const EXCERPT_CHARS = 160;
const CHANGED_SHOWN = 6;

const distinct = (values: (string | null | undefined)[]) => [...new Set(values.filter((v): v is string => Boolean(v)))];
const changedFields = (delta: unknown): string[] => {
  const names = delta && typeof delta === "object" && !Array.isArray(delta) ? Object.keys(delta) : [];
  return names.length <= CHANGED_SHOWN ? names : [...names.slice(0, CHANGED_SHOWN - 1), `+${names.length - CHANGED_SHOWN + 1} more`];
};
const bySize = (a: bigint, b: bigint) => (b > a ? 1 : b < a ? -1 : 0);

class McpError extends Error {}

/** A JSON-RPC tools/call of guest_context with a master_profile_id → the JSON-RPC answer. */
export async function guestContext(message: any, group: string, query: Query) {
  const args = message?.params?.arguments ?? {};
  if (message?.method !== "tools/call" || message.params?.name !== "guest_context" || typeof args.master_profile_id !== "string" || Object.keys(args).length !== 1) {
    throw new McpError("the ceiling answers tools/call guest_context with a master_profile_id only");
  }
  const id: string = args.master_profile_id;
  const [[master], guests] = await Promise.all([query(SQL.master, [group, id, 1]), query(SQL.guests, [group, [id]])]);
  const result = master ? await sections(group, id, master, guests, query) : { found: false };
  const text = JSON.stringify(result);
  return { result: { content: [{ type: "text", text }], structuredContent: result }, jsonrpc: "2.0", id: message.id };
}

async function sections(group: string, id: string, master: Record<string, any>, guests: Record<string, any>[], query: Query) {
  const ids = guests.map((g) => g.id as string);
  const n = ids.length;
  const shown = guests.slice(0, PROFILES_SHOWN);
  const people = [master, ...guests];
  const contacts = distinct([
    ...people.map((x) => x.email && normaliseContact("email", x.email)),
    ...people.map((x) => x.phone && normaliseContact("phone", x.phone)),
  ]);
  const integrationIds = distinct(shown.map((g) => g.integrationId));
  const [[stay], spendRows, members, [latest], [summary], observations, events, integrations] = await Promise.all([
    query(SQL.stays, [group, group, ids]),
    query<{ currency: string; category: string; amountMinor: string; transactions: number }>(SQL.spend, [group, ids]),
    query(SQL.loyaltyMembers(n), [...ids, id, group, 0]),
    query(SQL.latestReview(n), [...ids, group, 1, 0]),
    query(SQL.reviewSummary(n), [...ids, group, 0]),
    contacts.length ? query(SQL.observations(contacts.length), [group, ...contacts, group, 0]) : Promise.resolve([]),
    query(SQL.events, [group, ids, EVENTS_SHOWN + 1]),
    integrationIds.length ? query(SQL.integrations(integrationIds.length), [...integrationIds, group, 0]) : Promise.resolve([]),
  ]);

  // Consent: each contact, purpose and type decided over its observations (latest first), by key.
  const byKey = new Map<string, Record<string, any>[]>();
  for (const o of observations) {
    const key = `${o.contact_value}\u0000${o.purpose}\u0000${o.contact_type}`;
    const mine = byKey.get(key);
    if (mine) mine.push(o);
    else byKey.set(key, [o]);
  }
  const decisions = [...byKey.keys()].sort().map((key) => {
    const mine = byKey.get(key)!;
    return { o: mine[0], effective: effectiveConsent(mine.map((x) => ({ id: x.id, status: x.status as ConsentStatus, observedAt: x.observed_at, row: x }))) };
  });
  const order = (d: (typeof decisions)[number]) => `${d.o.purpose}\u0000${d.o.contact_value}`;
  decisions.sort((a, b) => (order(a) < order(b) ? -1 : order(a) > order(b) ? 1 : 0));
  const consentShown = decisions.slice(0, CONSENTS_SHOWN);

  const programIds = distinct(members.map((m) => m.program_id));
  const propertyIds = distinct([...shown.map((g) => g.propertyId), latest?.property_id, ...consentShown.map((d) => (d.effective.decidedBy as any)?.row.property_id)]);
  const [properties, programs] = await Promise.all([
    propertyIds.length ? query(SQL.properties(propertyIds.length), [...propertyIds, group, 0]) : Promise.resolve([]),
    programIds.length ? query(SQL.programs(programIds.length), [...programIds, group, 0]) : Promise.resolve([]),
  ]);
  const names = new Map(properties.map((p) => [p.id as string, p.name as string]));
  const provider = new Map(integrations.map((i) => [i.id as string, i.provider as string]));
  const programById = new Map(programs.map((p) => [p.id as string, p]));
  const more = (tool: string, extra: Record<string, unknown> = {}) => ({ tool, arguments: { master_profile_id: id, ...extra } });

  const currencies = new Map<string, { currency: string; total: bigint; categories: { category: string; amount: bigint; transactions: number }[] }>();
  for (const g of spendRows) {
    const amount = BigInt(g.amountMinor);
    const entry = currencies.get(g.currency) ?? { currency: g.currency, total: 0n, categories: [] };
    entry.total += amount;
    entry.categories.push({ category: g.category, amount, transactions: g.transactions });
    currencies.set(g.currency, entry);
  }
  const spend = [...currencies.values()].sort((a, b) => bySize(a.total, b.total) || a.currency.localeCompare(b.currency));
  for (const c of spend) c.categories.sort((a, b) => bySize(a.amount, b.amount) || a.category.localeCompare(b.category));

  const body: string | null = latest?.body ?? null;
  const average = summary._avg$rating == null ? null : Math.round(Number(summary._avg$rating) * 100) / 100;
  return {
    found: true,
    master_profile_id: id,
    identity: {
      given_name: master.givenName,
      family_name: master.familyName,
      emails: distinct([master.email, ...guests.map((g) => g.email)].map((e) => e?.toLowerCase())),
      phones: distinct([master.phone, ...guests.map((g) => g.phone)]),
      language: master.language,
      country_code: master.countryCode,
      vip: master.vip,
      profiles: shown.map((g) => ({ guest_profile_id: g.id, property: names.get(g.propertyId) ?? null, source: provider.get(g.integrationId) ?? null, source_id: g.sourceId })),
      truncated: guests.length > shown.length,
      more: more("list_guests"),
    },
    stays: {
      count: stay.count, nights: stay.nights, first_stay: stay.firstStay, last_stay: stay.lastStay, next_stay: stay.nextStay, upcoming: stay.upcoming,
      cancelled: stay.cancelled, other_bookings: stay.otherBookings, properties: stay.properties ?? [], more: more("list_reservations"),
    },
    spend: {
      by_currency: spend.map((c) => ({
        currency: c.currency,
        total_minor: Number(c.total),
        by_category: c.categories.map((x) => ({ category: x.category, amount_minor: Number(x.amount), transactions: x.transactions })),
      })),
      more: more("list_transactions"),
    },
    consent: {
      effective: consentShown.map(({ o, effective }) => {
        const by = (effective.decidedBy as any)?.row as Record<string, any> | undefined;
        return {
          contact_type: o.contact_type, contact_value: o.contact_value, purpose: o.purpose, status: effective.status, observation_count: effective.observationCount,
          decided_by: by
            ? { id: by.id, status: by.status, channel: by.channel, source: by.source, observed_at: (by.observed_at as Date).toISOString(), property: by.property_id ? (names.get(by.property_id) ?? null) : null }
            : null,
        };
      }),
      truncated: decisions.length > consentShown.length,
      more: more("list_consent_observations"),
    },
    loyalty: {
      memberships: members.map((m) => {
        const program = programById.get(m.program_id);
        const tiers: { code: string; name: string }[] = Array.isArray(program?.tiers) ? program.tiers : [];
        return {
          program: program?.name ?? m.program_id, member_number: m.member_number, tier: tiers.find((t) => t.code === m.tier)?.name ?? m.tier,
          status: m.status, points_balance: Number(m.points_balance), points_name: program?.points_name ?? "points",
        };
      }),
      more: more("list_loyalty_members"),
    },
    reviews: {
      count: Number(summary._count$_all),
      average_rating: average,
      latest: latest
        ? {
            rating: latest.rating, source: latest.source, title: latest.title,
            excerpt: body && body.length > EXCERPT_CHARS ? `${body.slice(0, EXCERPT_CHARS - 1)}…` : body,
            published_at: (latest.published_at as Date).toISOString(), property: names.get(latest.property_id) ?? null,
          }
        : null,
      more: more("list_reviews"),
    },
    recent_events: {
      events: events.slice(0, EVENTS_SHOWN).map((e) => ({ seq: e.seq, entity_type: e.entityType, operation: e.operation, occurred_at: e.occurredAt, changed: changedFields(e.delta) })),
      truncated: events.length > EVENTS_SHOWN,
      more: more("guest_events", { mode: "timeline" }),
    },
  };
}
