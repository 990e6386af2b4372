// The ceiling of the MCP guest_context tool (bench/ceiling-server.ts, POST /mcp): one JSON-RPC
// tools/call with a master_profile_id, answered with the statements the service's GuestContext
// operation sends (its statement log, one call: master profile and its guests, then the sections'
// reads and the shown profiles' links, one statement each, then property names) and the same result: structuredContent and the same JSON as text. Precedence and contact
// normalisation are the service's own pure functions, as the cursor is for the REST ceilings. Every
// statement is named, as the service prepares each (its generic plan checked at 1M): ceiling-server.ts
// runs named statements on connections that keep generic plans.
import { effectiveConsent, normaliseContact, type ConsentStatus } from "../src/consent/precedence";

type Query = <R = Record<string, any>>(text: string, values: unknown[], name?: string) => Promise<R[]>;

const ts = (column: string, alias: string) => `to_char(t.${column} AT TIME ZONE 'UTC', 'YYYY-MM-DD"T"HH24:MI:SS.MS"Z"') AS "${alias}"`;
const day = (column: string, alias: string) => `to_char(t.${column}, 'YYYY-MM-DD') AS "${alias}"`;
/** data/sql.ts anyOf: a uuid array as one text parameter. */
const uuids = (ids: string[]) => `{${ids.join(",")}}`;

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
  // src/data/events.ts ofGuests: each guest's newest by occurred_at, merged.
  events: `SELECT page."seq", page."propertyGroupId", page."entityType", page."entityId", page."guestProfileId", page."propertyId", page."integrationId", page."operation", page."delta", page."occurredAt", page."recordedAt", page."txid"
          FROM unnest($2::uuid[]) AS g(id)
          CROSS JOIN LATERAL (SELECT t.seq AS "seq", t.property_group_id AS "propertyGroupId", t.entity_type AS "entityType", t.entity_id AS "entityId", t.guest_profile_id AS "guestProfileId", t.property_id AS "propertyId", t.integration_id AS "integrationId", t.operation AS "operation", t.delta AS "delta", ${ts("occurred_at", "occurredAt")}, ${ts("recorded_at", "recordedAt")}, t.txid AS "txid", t.occurred_at AS sort_at, t.seq AS sort_seq
            FROM events t WHERE t.property_group_id = $1::uuid AND t.guest_profile_id = g.id ORDER BY t.occurred_at DESC, t.seq DESC LIMIT $3) page
          ORDER BY page.sort_at DESC, page.sort_seq DESC LIMIT $3`,
  // src/data/loyalty.ts membershipsOfPerson, engagement.ts reviewsOfPerson, consents.ts decide (EVIDENCE's columns),
  // properties.ts providersByIds and namesByIds.
  memberships: (withMaster: boolean) => `SELECT t.program_id AS "programId", t.member_number AS "memberNumber", t.tier, t.status::text AS status,
            t.points_balance AS "pointsBalance", p.name AS "programName", p.tiers AS "programTiers", p.points_name AS "pointsName"
          FROM loyalty_members t
          LEFT JOIN loyalty_programs p ON p.id = t.program_id AND p.property_group_id = $1::uuid
          WHERE t.property_group_id = $2::uuid AND (t.guest_profile_id = ANY($3::uuid[])${withMaster ? " OR t.master_profile_id = $4::uuid" : ""})
          ORDER BY t.lifetime_points DESC, t.id`,
  reviews: `SELECT s.count, s.average, l.*
          FROM (SELECT count(*)::int AS count, avg(t.rating)::text AS average FROM reviews t
                WHERE t.property_group_id = $1::uuid AND t.guest_profile_id = ANY($2::uuid[])) s
          LEFT JOIN LATERAL (SELECT t.id, t.rating, t.source, t.title, t.body, ${ts("published_at", "publishedAt")},
                t.property_id AS "propertyId"
              FROM reviews t WHERE t.property_group_id = $3::uuid AND t.guest_profile_id = ANY($4::uuid[])
              ORDER BY t.published_at DESC, t.id LIMIT 1) l ON true`,
  observations: `SELECT t.id, t.property_id AS "propertyId", t.contact_type::text AS "contactType", t.contact_value AS "contactValue",
            t.purpose, t.channel, t.status::text AS status, t.source, ${ts("observed_at", "observedAt")}
          FROM consent_observations t
          WHERE t.property_group_id = $1::uuid AND t.contact_value = ANY($2::text[])
          ORDER BY t.observed_at DESC, t.id`,
  // src/data/master-profile-links.ts ofGuests: each shown profile's link (why it joined its master).
  links: `SELECT t.guest_profile_id AS "guestProfileId", t.linked_guest_profile_id AS "linkedGuestProfileId", t.rule::text AS rule,
            t.matched_fields AS "matchedFields", t.confidence::text AS confidence
          FROM master_profile_links t WHERE t.property_group_id = $1::uuid AND t.guest_profile_id = ANY($2::uuid[])`,
  guestIds: `SELECT t.id FROM guest_profiles t WHERE t.property_group_id = $1::uuid AND t.id = ANY($2::uuid[])`,
  integrations: `SELECT t.id, t.provider FROM integrations t WHERE t.property_group_id = $1::uuid AND t.id = ANY($2::uuid[])`,
  properties: `SELECT t.id, t.name FROM properties t WHERE t.property_group_id = $1::uuid AND t.id = ANY($2::uuid[])`,
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
  const [[master], guests] = await Promise.all([query(SQL.master, [group, id, 1], "ceiling_mcp_master"), query(SQL.guests, [group, [id]], "ceiling_mcp_guests")]);
  const result = master ? await sections(group, id, master, guests, query) : { found: false };
  const text = JSON.stringify(result);
  return { result: { content: [{ type: "text", text }], structuredContent: result }, jsonrpc: "2.0", id: message.id };
}

async function sections(group: string, id: string, master: Record<string, any>, guests: Record<string, any>[], query: Query) {
  const ids = guests.map((g) => g.id as string);
  const shown = guests.slice(0, PROFILES_SHOWN);
  const people = [master, ...guests];
  const contacts = distinct([
    ...people.map((x) => x.email && normaliseContact("email", x.email)),
    ...people.map((x) => x.phone && normaliseContact("phone", x.phone)),
  ]);
  const integrationIds = distinct(shown.map((g) => g.integrationId));
  const [[stay], spendRows, members, [review], observations, events, integrations, links] = await Promise.all([
    query(SQL.stays, [group, group, ids], "ceiling_mcp_stays"),
    query<{ currency: string; category: string; amountMinor: string; transactions: number }>(SQL.spend, [group, ids], "ceiling_mcp_spend"),
    query(SQL.memberships(true), [group, group, uuids(ids), id], "ceiling_mcp_memberships"),
    query(SQL.reviews, [group, uuids(ids), group, uuids(ids)], "ceiling_mcp_reviews"),
    contacts.length ? query(SQL.observations, [group, contacts], "ceiling_mcp_observations") : Promise.resolve([]),
    query(SQL.events, [group, ids, EVENTS_SHOWN + 1], "ceiling_mcp_events"),
    integrationIds.length ? query(SQL.integrations, [group, uuids(integrationIds)], "ceiling_mcp_integrations") : Promise.resolve([]),
    query(SQL.links, [group, uuids(shown.map((g) => g.id))], "ceiling_mcp_links"),
  ]);
  // A link names the profile it was matched to when the caller may see it: the master's own profiles
  // are in hand, any other is looked up (in the group: the ceiling's key is group-wide).
  const seen = new Set(ids);
  const elsewhere = distinct(links.map((l) => l.linkedGuestProfileId).filter((x) => x && !seen.has(x)));
  if (elsewhere.length) for (const g of await query(SQL.guestIds, [group, uuids(elsewhere)], "ceiling_mcp_guest_ids")) seen.add(g.id);
  const linkOf = new Map(links.map((l) => [l.guestProfileId as string, l]));
  const linkOfProfile = (guestId: string) => {
    const l = linkOf.get(guestId);
    if (!l) return null;
    const linked = l.linkedGuestProfileId && seen.has(l.linkedGuestProfileId) ? (l.linkedGuestProfileId as string) : null;
    return { linked_to: linked, rule: l.rule, matched_on: (l.matchedFields as { field: string }[]).map((f) => f.field), confidence: Number(l.confidence) };
  };

  // Consent: each contact, purpose and type decided over its observations (latest first), by key.
  const byKey = new Map<string, Record<string, any>[]>();
  for (const o of observations) {
    const key = `${o.contactValue}\u0000${o.purpose}\u0000${o.contactType}`;
    const mine = byKey.get(key);
    if (mine) mine.push(o);
    else byKey.set(key, [o]);
  }
  const decisions = [...byKey.keys()].sort().map((key) => {
    const mine = byKey.get(key)!;
    return { o: mine[0], effective: effectiveConsent(mine.map((x) => ({ id: x.id, status: x.status as ConsentStatus, observedAt: new Date(x.observedAt), row: x }))) };
  });
  const order = (d: (typeof decisions)[number]) => `${d.o.purpose}\u0000${d.o.contactValue}`;
  decisions.sort((a, b) => (order(a) < order(b) ? -1 : order(a) > order(b) ? 1 : 0));
  const consentShown = decisions.slice(0, CONSENTS_SHOWN);

  const latest = review.id == null ? null : review;
  const propertyIds = distinct([...shown.map((g) => g.propertyId), latest?.propertyId, ...consentShown.map((d) => (d.effective.decidedBy as any)?.row.propertyId)]);
  const properties = propertyIds.length ? await query(SQL.properties, [group, uuids(propertyIds)], "ceiling_mcp_properties") : [];
  const names = new Map(properties.map((p) => [p.id as string, p.name as string]));
  const provider = new Map(integrations.map((i) => [i.id as string, i.provider as string]));
  const more = (type: string, extra: Record<string, unknown> = {}) => ({ tool: "list_records", arguments: { type, master_profile_id: id, ...extra } });

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
  const average = review.average == null ? null : Math.round(Number(review.average) * 100) / 100;
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
      profiles: shown.map((g) => ({ guest_profile_id: g.id, property: names.get(g.propertyId) ?? null, source: provider.get(g.integrationId) ?? null, source_id: g.sourceId, link: linkOfProfile(g.id) })),
      truncated: guests.length > shown.length,
      more: more("guests"),
    },
    stays: {
      count: stay.count, nights: stay.nights, first_stay: stay.firstStay, last_stay: stay.lastStay, next_stay: stay.nextStay, upcoming: stay.upcoming,
      cancelled: stay.cancelled, other_bookings: stay.otherBookings, properties: stay.properties ?? [], more: more("reservations"),
    },
    spend: {
      by_currency: spend.map((c) => ({
        currency: c.currency,
        total_minor: Number(c.total),
        by_category: c.categories.map((x) => ({ category: x.category, amount_minor: Number(x.amount), transactions: x.transactions })),
      })),
      more: more("transactions"),
    },
    consent: {
      effective: consentShown.map(({ o, effective }) => {
        const by = (effective.decidedBy as any)?.row as Record<string, any> | undefined;
        return {
          contact_type: o.contactType, contact_value: o.contactValue, purpose: o.purpose, status: effective.status, observation_count: effective.observationCount,
          decided_by: by
            ? { id: by.id, status: by.status, channel: by.channel, source: by.source, observed_at: by.observedAt, property: by.propertyId ? (names.get(by.propertyId) ?? null) : null }
            : null,
        };
      }),
      truncated: decisions.length > consentShown.length,
      more: more("consent_observations"),
    },
    loyalty: {
      memberships: members.map((m) => {
        const tiers: { code: string; name: string }[] = Array.isArray(m.programTiers) ? m.programTiers : [];
        return {
          program: m.programName ?? m.programId, member_number: m.memberNumber, tier: tiers.find((t) => t.code === m.tier)?.name ?? m.tier,
          status: m.status, points_balance: m.pointsBalance, points_name: m.pointsName ?? "points",
        };
      }),
      more: more("loyalty_members"),
    },
    reviews: {
      count: review.count,
      average_rating: average,
      latest: latest
        ? {
            rating: latest.rating, source: latest.source, title: latest.title,
            excerpt: body && body.length > EXCERPT_CHARS ? `${body.slice(0, EXCERPT_CHARS - 1)}…` : body,
            published_at: latest.publishedAt, property: names.get(latest.propertyId) ?? null,
          }
        : null,
      more: more("reviews"),
    },
    recent_events: {
      events: events.slice(0, EVENTS_SHOWN).map((e) => ({ seq: e.seq, entity_type: e.entityType, operation: e.operation, occurred_at: e.occurredAt, changed: changedFields(e.delta) })),
      truncated: events.length > EVENTS_SHOWN,
      more: more("events", { order: "desc" }),
    },
  };
}
