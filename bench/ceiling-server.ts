// The raw ceiling: node:http + pg running the very SQL the service issues for its most called routes
// (the API key lookup, then the route's statements: text copied from the service's statement log,
// PostgreSQL's log_statement=all, same predicates, tenant predicate, ORDER BY/LIMIT and timestamp
// rendering; named where the service prepares them), with the same signed cursors and envelopes, and
// nothing else: GET /v1/guests, /v1/events (guest or master profile timeline), /v1/reservations,
// /v1/transactions, /v1/master-profiles (include_total), /v1/tables/:id/members (offset), GET /healthz,
// POST /v1/tables/preview (a consent filter), POST /mcp (guest_context), and the dashboard aggregates
// (GET /aggregate/*: the service's rollup read; GET /live/*: the live GROUP BY, a reference row).
// bench/ceiling-check.ts compares its answers with the service's.
// Usage: tsx bench/ceiling-server.ts <database-url> <port> <cursor-secret>
import { createHash } from "node:crypto";
import http from "node:http";
import { Pool } from "pg";
import { decodeCursor, encodeCursor } from "../src/pagination/cursor";
import { guestContext } from "./ceiling-mcp";

const [databaseUrl, port, secret] = process.argv.slice(2);
const pool = new Pool({ connectionString: databaseUrl, max: 10 });
// The route statements the service prepares, it runs on their generic plans (plan_cache_mode sent
// with each, src/db/tenant-pool.ts): here, connections that keep generic plans run them.
const keptPlans = new Pool({ connectionString: databaseUrl, max: 10, options: "-c plan_cache_mode=force_generic_plan" });

// Timestamps as the service renders them: ISO text from PostgreSQL, never a Date.
const ts = (column: string, alias: string) => `to_char(t.${column} AT TIME ZONE 'UTC', 'YYYY-MM-DD"T"HH24:MI:SS.MS"Z"') AS "${alias}"`;
const day = (column: string, alias: string) => `to_char(t.${column}, 'YYYY-MM-DD') AS "${alias}"`;
/** `t.a AS "a"`, …: the service's select lists name each column with its alias. */
const cols = (list: string) => list.split(/\s+/).filter(Boolean).map((c) => { const [col, alias] = c.split(":"); return `t.${col} AS "${alias ?? col}"`; }).join(", ");

// The service's statements (src/data/credentials.ts, sql.ts, json-rows.ts, events.ts, stays.ts,
// master-profiles.ts, table-membership.ts, tables.ts; the text as its statement log shows it).
// Output columns are qualified with the table alias: an unqualified ORDER BY created_at would sort
// by the to_char() text of the same name instead of using the index.
const SQL = {
  // Prepared, as the service's (named gcs_token_api_key): the credential lookup's SECURITY DEFINER function.
  apiKey: "SELECT * FROM gcs_credential_api_key($1)",
  // The guests page, prepared as the service's (its flat-row path names it per select list); the
  // reservations, transactions and master profiles pages too (unfiltered pages: data/keyset.ts), the
  // guest rows by id, a master profile's guest ids, the table, its members and the kept total.
  guests: `SELECT ${cols("id property_id integration_id source_id master_profile_id given_name family_name email phone language country_code city")}, ${day("birth_date", "birth_date")}, t.vip_code AS "vip_code", ${ts("created_at", "created_at")}, ${ts("updated_at", "updated_at")} FROM guest_profiles t WHERE t.property_group_id = $1::uuid`,
  guestRow: `SELECT ${cols("id property_id:propertyId integration_id:integrationId source_id:sourceId master_profile_id:masterProfileId given_name:givenName family_name:familyName email phone language country_code:countryCode city")}, ${day("birth_date", "birthDate")}, t.vip_code AS "vipCode", ${ts("created_at", "createdAt")}, ${ts("updated_at", "updatedAt")} FROM guest_profiles t WHERE t.property_group_id = $1::uuid AND t.id = ANY($2::uuid[])`,
  events: (who: string) => `SELECT ${cols("seq property_group_id:propertyGroupId entity_type:entityType entity_id:entityId guest_profile_id:guestProfileId property_id:propertyId integration_id:integrationId operation delta")}, ${ts("occurred_at", "occurredAt")}, ${ts("recorded_at", "recordedAt")}, t.txid AS "txid" FROM events t WHERE t.property_group_id = $1::uuid AND ${who} AND t.txid < (SELECT pg_snapshot_xmin(pg_current_snapshot())::text::bigint)`,
  guestsOfMasters: `SELECT t.id AS "id", t.master_profile_id AS "masterProfileId" FROM guest_profiles t WHERE t.property_group_id = $1::uuid AND t.master_profile_id = ANY($2::uuid[]) ORDER BY t.created_at, t.id`,
  reservations: `SELECT ${cols("id property_id:propertyId integration_id:integrationId source_id:sourceId guest_profile_id:guestProfileId confirmation_number:confirmationNumber kind status")}, ${day("arrival_date", "arrivalDate")}, ${day("departure_date", "departureDate")}, ${ts("starts_at", "startsAt")}, ${cols("adults children room_type:roomType room_number:roomNumber rate_code:rateCode space_id:spaceId booking_channel:bookingChannel total_amount_minor:totalAmountMinor currency special_requests:specialRequests")}, ${ts("booked_at", "bookedAt")}, ${ts("cancelled_at", "cancelledAt")}, ${ts("created_at", "createdAt")}, ${ts("updated_at", "updatedAt")} FROM reservations t WHERE t.property_group_id = $1::uuid`,
  transactions: `SELECT ${cols("id property_id:propertyId integration_id:integrationId source_id:sourceId guest_profile_id:guestProfileId reservation_id:reservationId kind category description amount_minor:amountMinor currency outlet")}, ${ts("occurred_at", "occurredAt")}, ${ts("created_at", "createdAt")} FROM transactions t WHERE t.property_group_id = $1::uuid`,
  masterProfiles: `SELECT ${cols("id given_name:givenName family_name:familyName email phone language country_code:countryCode")}, ${day("birth_date", "birthDate")}, t.vip AS "vip", ${ts("created_at", "createdAt")}, ${ts("updated_at", "updatedAt")} FROM master_profiles t WHERE t.property_group_id = $1::uuid`,
  masterProfileTotal: `SELECT t.total AS "total" FROM master_profile_counts t WHERE t.property_group_id = $1::uuid`,
  table: `SELECT ${cols("id property_group_id:propertyGroupId property_id:propertyId name description kind member_type:memberType filter_doc:filterDoc created_by:createdBy")}, ${ts("created_at", "createdAt")}, ${ts("updated_at", "updatedAt")} FROM tables t WHERE t.property_group_id = $1::uuid AND t.id = $2::uuid LIMIT $3`,
  members: `SELECT t.member_id AS "memberId", ${ts("added_at", "addedAt")} FROM table_members t WHERE t.property_group_id = $1::uuid AND t.table_id = $2::uuid AND t.position >= (SELECT min(f.position) FROM table_members f WHERE f.table_id = $3::uuid AND f.property_group_id = $4::uuid) + $5 ORDER BY t.position LIMIT $6`,
  // The filter document {field: "consent.<purpose>", op: "eq", value: "granted"} on guest profiles.
  consentGranted: `SELECT t.id AS "id" FROM guest_profiles t WHERE t.property_group_id = $1::uuid AND ((EXISTS (SELECT 1 FROM consent_observations co WHERE co.property_group_id = $2::uuid AND co.contact_type = 'email' AND co.purpose = $3 AND co.contact_value = lower(btrim(t.email)) AND co.status = 'granted') AND NOT EXISTS (SELECT 1 FROM consent_observations co WHERE co.property_group_id = $4::uuid AND co.contact_type = 'email' AND co.purpose = $5 AND co.contact_value = lower(btrim(t.email)) AND co.status <> 'granted'))) ORDER BY t.created_at, t.id LIMIT $6`,
};
const KEYSET = " AND t.created_at >= $2 AND (t.created_at > $3 OR t.id > $4::uuid) ORDER BY t.created_at, t.id LIMIT $5";
const FIRST = " ORDER BY t.created_at, t.id LIMIT $2";

// The dashboard aggregates' reference row "live GROUP BY" (GET /live/<kind>, bench/run.ts
// aggregateScenarios): the live GROUP BY of src/data/metrics.ts written by hand for one grouping, on
// the same tables and indexes, with no GraphQL, scoping layer or tenant helper: what the service
// would cost without its rollups. $1 is the caller's group; `params` come from the query.
const SPEND = "CASE WHEN x.kind = 'refund' THEN -abs(x.amount_minor) ELSE x.amount_minor END";
const LIVE_GROUP_BY: Record<string, { sql: string; params: string[] }> = {
  stays: {
    params: ["from", "to"],
    sql: `WITH s AS (
        SELECT r.id, to_char(date_trunc('month', r.arrival_date), 'YYYY-MM-DD') AS period, r.departure_date - r.arrival_date AS nights,
          coalesce(gp.master_profile_id, gp.id) AS person
        FROM reservations r LEFT JOIN guest_profiles gp ON gp.id = r.guest_profile_id AND gp.property_group_id = $1
        WHERE r.property_group_id = $1 AND r.kind = 'stay' AND r.status NOT IN ('cancelled', 'no_show')
          AND r.arrival_date >= $2::date AND r.arrival_date <= $3::date),
      folio AS (
        SELECT x.reservation_id, x.currency, sum(${SPEND}) AS revenue, sum(${SPEND}) FILTER (WHERE x.category = 'accommodation') AS room
        FROM transactions x
        WHERE x.property_group_id = $1 AND x.kind IN ('charge', 'adjustment', 'refund') AND x.reservation_id IN (SELECT id FROM s)
        GROUP BY 1, 2),
      revenue AS (
        SELECT period, json_agg(json_build_object('currency', currency, 'revenue_minor', revenue, 'room_revenue_minor', room,
            'room_nights', room_nights, 'adr_minor', CASE WHEN room_nights > 0 THEN round(room / room_nights) END) ORDER BY currency) AS revenue
        FROM (SELECT s.period, f.currency, sum(f.revenue) AS revenue, coalesce(sum(f.room), 0) AS room,
            coalesce(sum(s.nights) FILTER (WHERE f.room IS NOT NULL), 0) AS room_nights
          FROM s JOIN folio f ON f.reservation_id = s.id GROUP BY 1, 2) m
        GROUP BY period),
      stay AS (SELECT s.period, count(*)::int AS stays, sum(s.nights)::int AS nights, count(DISTINCT s.person)::int AS distinct_guests
        FROM s GROUP BY s.period)
      SELECT stay.*, coalesce(revenue.revenue, '[]'::json) AS revenue FROM stay LEFT JOIN revenue USING (period) ORDER BY stay.period`,
  },
  guests: {
    params: [],
    sql: `SELECT g.property_id, count(*)::int AS guests, count(DISTINCT g.master_profile_id)::int AS master_profiles,
        count(*) FILTER (WHERE EXISTS (SELECT 1 FROM consent_observations co WHERE co.property_group_id = $1 AND co.purpose = 'email_marketing'
            AND co.contact_type = 'email' AND co.contact_value = lower(btrim(g.email)) AND co.status = 'granted')
          AND NOT EXISTS (SELECT 1 FROM consent_observations co WHERE co.property_group_id = $1 AND co.purpose = 'email_marketing'
            AND co.contact_type = 'email' AND co.contact_value = lower(btrim(g.email)) AND co.status <> 'granted'))::int AS reachable_by_email,
        count(*) FILTER (WHERE EXISTS (SELECT 1 FROM consent_observations co WHERE co.property_group_id = $1 AND co.purpose = 'sms_marketing'
            AND co.contact_type = 'phone' AND co.contact_value = g.phone AND co.status = 'granted')
          AND NOT EXISTS (SELECT 1 FROM consent_observations co WHERE co.property_group_id = $1 AND co.purpose = 'sms_marketing'
            AND co.contact_type = 'phone' AND co.contact_value = g.phone AND co.status <> 'granted'))::int AS reachable_by_sms
      FROM guest_profiles g WHERE g.property_group_id = $1 GROUP BY 1 ORDER BY 1`,
  },
  consent: {
    params: [],
    sql: `WITH cp AS (
        SELECT DISTINCT g.property_id, c.contact_type, c.contact_value
        FROM guest_profiles g
        CROSS JOIN LATERAL (VALUES ('email'::"ContactType", lower(btrim(g.email))), ('phone'::"ContactType", g.phone)) AS c(contact_type, contact_value)
        WHERE g.property_group_id = $1 AND c.contact_value IS NOT NULL AND c.contact_value <> ''),
      d AS (
        SELECT cp.contact_type, cp.contact_value, p.timezone, dec.status, dec.observed_at
        FROM cp JOIN properties p ON p.id = cp.property_id
        LEFT JOIN LATERAL (SELECT co.status, co.observed_at FROM consent_observations co
          WHERE co.property_group_id = $1 AND co.purpose = 'email_marketing' AND co.contact_type = cp.contact_type AND co.contact_value = cp.contact_value
          ORDER BY co.status = 'granted', co.observed_at DESC, co.id LIMIT 1) dec ON true)
      SELECT to_char(date_trunc('month', d.observed_at AT TIME ZONE d.timezone), 'YYYY-MM-DD') AS period,
        count(DISTINCT (d.contact_type, d.contact_value)) FILTER (WHERE d.status = 'granted')::int AS granted,
        count(DISTINCT (d.contact_type, d.contact_value)) FILTER (WHERE d.status = 'withdrawn')::int AS withdrawn,
        count(DISTINCT (d.contact_type, d.contact_value)) FILTER (WHERE d.status = 'denied')::int AS denied,
        count(DISTINCT (d.contact_type, d.contact_value)) FILTER (WHERE d.status IS NULL)::int AS unknown
      FROM d GROUP BY 1 ORDER BY 1`,
  },
  reviews: {
    params: ["from", "to"],
    sql: `SELECT to_char(date_trunc('month', rv.published_at AT TIME ZONE p.timezone), 'YYYY-MM-DD') AS period, count(*)::int AS count,
        round(avg(rv.rating), 2)::float8 AS average_rating,
        ${[1, 2, 3, 4, 5].map((n) => `count(*) FILTER (WHERE rv.rating = ${n})::int AS r${n}`).join(", ")}
      FROM reviews rv JOIN properties p ON p.id = rv.property_id
      WHERE rv.property_group_id = $1 AND rv.published_at >= $2::date AND rv.published_at < $3::date + 1
      GROUP BY 1 ORDER BY 1`,
  },
};

// The dashboard aggregates' ceiling (GET /aggregate/<kind>?by=<dimension>[&from&to]): the statement
// the service runs for that request (src/data/metric-rollups.ts, text from its statement log, the
// same parameters) after the same API-key lookup, and the GraphQL body the service answers for the
// bench's selection (bench/run.ts aggregateScenarios), built by hand. Only what the bench asks: one
// grouping, a calendar year, purpose email_marketing (guests: with sms_marketing).
// The freshness check of every stored read (freshState), on group $g and metric $m.
const fresh = (g: string, m: string) => `SELECT s.variants FROM metric_rollup_state s WHERE s.property_group_id = ${g}::uuid AND s.metric = ${m} AND NOT EXISTS (SELECT 1 FROM metric_rollup_changes c WHERE c.property_group_id = s.property_group_id AND c.metric = s.metric AND c.changed_at < now() - interval '600 seconds')`;
const rollupRead = (shapeIs: string, variantIs: string, required = "") =>
  `WITH st AS (${fresh("$1", "$2")}) SELECT (SELECT st.variants FROM st${required}) AS variants, coalesce((SELECT json_agg(json_build_object('v', m.variant, 'b', m.bucket) ORDER BY m.bucket->>$3) FROM metric_rollups m WHERE m.property_group_id = $4::uuid AND m.metric = $5 AND ${shapeIs} AND ${variantIs} ), '[]'::json) AS rows`;
const ROLLUP_SQL = {
  // A stay grouping over whole buckets (by month), or a range that is one year (by anything else).
  stays: rollupRead("m.shape = $6 AND m.period >= $7::date AND m.period <= $8::date", "m.variant = (SELECT coalesce(st.variants[1], '') FROM st)"),
  // Weeks over a calendar year: the whole weeks, and the two part weeks split at the year's ends.
  staysWeeks: `WITH st AS (${fresh("$1", "$2")}) SELECT (SELECT st.variants FROM st WHERE EXISTS (SELECT 1 FROM metric_rollups x WHERE x.property_group_id = $3::uuid AND x.metric = $4 AND x.shape = $5)) AS variants, coalesce((SELECT json_agg(json_build_object('v', m.variant, 'b', m.bucket) ORDER BY m.bucket->>$6) FROM metric_rollups m WHERE m.property_group_id = $7::uuid AND m.metric = $8 AND ((m.shape = $9 AND m.period >= $10::date AND m.period <= $11::date) OR (m.shape = $12 AND (m.period, m.bucket->>'inMonth') IN (($13::date, $14), ($15::date, $16)))) AND m.variant = (SELECT coalesce(st.variants[1], '') FROM st) ), '[]'::json) AS rows`,
  purposes: rollupRead("m.shape = $6", "m.variant = ANY($7::text[])"),
  reviews: (key: string, field: string) => `WITH b AS ( SELECT p.id, p.timezone, ($1::timestamptz AT TIME ZONE p.timezone) AS lf, ($2::timestamptz AT TIME ZONE p.timezone) AS lt FROM properties p WHERE p.property_group_id = $3::uuid), d AS (SELECT b.*, CASE WHEN b.lf::time = '00:00' THEN b.lf::date ELSE b.lf::date + 1 END AS hs, b.lt::date AS te FROM b), w AS (SELECT d.*, date_trunc('month', d.hs + interval '1 month' - interval '1 day')::date AS he, date_trunc('month', d.te)::date AS ts FROM d), stored AS ( SELECT x.property_id, x.period, x.source, x.reviews, x.rating_sum, x.r1, x.r2, x.r3, x.r4, x.r5 FROM review_rollups x JOIN w ON w.id = x.property_id WHERE x.property_group_id = $4::uuid AND CASE WHEN coalesce(w.he, '-infinity'::date) <= coalesce(w.ts, 'infinity'::date) THEN (x.grain = 'month' AND x.period >= coalesce(w.he, '-infinity'::date) AND x.period < coalesce(w.ts, 'infinity'::date)) OR (x.grain = 'day' AND ((x.period >= w.hs AND x.period < w.he) OR (x.period >= w.ts AND x.period < w.te))) ELSE x.grain = 'day' AND x.period >= w.hs AND x.period < w.te END), ranges AS ( SELECT w.id, w.timezone, v.a, v.b FROM w CROSS JOIN LATERAL (VALUES (CASE WHEN w.hs > w.te OR w.lf::time <> '00:00' THEN $5::timestamptz END, CASE WHEN w.hs > w.te THEN $6::timestamptz WHEN w.lf::time <> '00:00' THEN w.hs::timestamp AT TIME ZONE w.timezone END), (CASE WHEN w.hs <= w.te AND w.lt::time <> '00:00' THEN w.te::timestamp AT TIME ZONE w.timezone END, CASE WHEN w.hs <= w.te AND w.lt::time <> '00:00' THEN $7::timestamptz END)) AS v(a, b) WHERE v.a IS NOT NULL AND v.b IS NOT NULL), partial AS ( SELECT x.property_id, (x.published_at AT TIME ZONE ranges.timezone)::date AS period, x.source, 1 AS reviews, x.rating AS rating_sum, (x.rating = 1)::int AS r1, (x.rating = 2)::int AS r2, (x.rating = 3)::int AS r3, (x.rating = 4)::int AS r4, (x.rating = 5)::int AS r5 FROM ranges CROSS JOIN LATERAL (SELECT * FROM reviews x WHERE x.property_group_id = $8::uuid AND x.property_id = ranges.id AND x.published_at >= ranges.a AND x.published_at < ranges.b OFFSET 0) x), x AS (SELECT * FROM stored UNION ALL SELECT * FROM partial), g AS ( SELECT ${key} AS "${field}", coalesce(sum(x.reviews), 0)::int AS n, sum(x.rating_sum)::text AS "ratingSum", ARRAY[coalesce(sum(x.r1), 0)::int, coalesce(sum(x.r2), 0)::int, coalesce(sum(x.r3), 0)::int, coalesce(sum(x.r4), 0)::int, coalesce(sum(x.r5), 0)::int] AS r FROM x GROUP BY 1) SELECT EXISTS (${fresh("$9", "$10")}) AS built, coalesce((SELECT json_agg(g ORDER BY g."${field}") FROM g WHERE g.n > 0), '[]'::json) AS rows`,
};
const REVIEW_KEYS: Record<string, string> = { property: "x.property_id::text", month: "to_char(date_trunc('month', x.period), 'YYYY-MM-DD')", source: "x.source" };
/** The bucket field of each dimension (data/metric-rollups.ts FIELD). */
const FIELD: Record<string, string> = { property: "propertyId", month: "period", week: "period", channel: "channel", guest_country: "guestCountry", country: "country", loyalty_tier: "loyaltyTier", vip: "vip", source: "source" };
const DIMENSIONS: Record<string, string[]> = {
  stays: ["month", "week", "property", "channel", "guest_country"], guests: ["property", "country", "loyalty_tier", "vip"], consent: ["month", "property"], reviews: ["month", "property", "source"],
};
const ROOT_FIELD: Record<string, string> = { stays: "stayMetrics", guests: "guestMetrics", consent: "consentMetrics", reviews: "reviewMetrics" };
const addDays = (date: string, days: number) => new Date(Date.parse(`${date}T00:00:00Z`) + days * 86_400_000).toISOString().slice(0, 10);
/** The Monday of a date's ISO week. */
const monday = (date: string) => addDays(date, -((new Date(`${date}T00:00:00Z`).getUTCDay() + 6) % 7));
type Bucket = Record<string, any>;

/** One rollup read, as the service reads it for the bench's request, and the buckets as it answers them. */
async function rollupAggregate(kind: string, by: string, url: URL, group: string): Promise<Bucket[]> {
  const field = FIELD[by];
  const notBuilt = () => new HttpError(503, "rollups_not_built");
  if (kind === "reviews") {
    const [from, to] = [url.searchParams.get("from"), url.searchParams.get("to")];
    const [a, b] = [new Date(`${from}T00:00:00Z`).toISOString(), new Date(`${addDays(to!, 1)}T00:00:00Z`).toISOString()];
    const [row] = await query<{ built: boolean; rows: { n: number; ratingSum: string | null; r: number[] }[] }>(ROLLUP_SQL.reviews(REVIEW_KEYS[by], field), [a, b, group, group, a, b, b, group, group, "reviews"], `reviews_${by}`);
    if (!row.built) throw notBuilt();
    return row.rows.map(({ n, ratingSum, r, ...key }) => ({
      [field]: (key as Bucket)[field], count: n, averageRating: n > 0 && ratingSum != null ? Math.round((Number(ratingSum) / n) * 100) / 100 : null,
      byRating: r.map((count, i) => ({ rating: i + 1, count })),
    }));
  }
  let text: string;
  let values: unknown[];
  if (kind === "stays") {
    const [from, to] = [url.searchParams.get("from")!, url.searchParams.get("to")!];
    if (!/^\d{4}-01-01$/.test(from) || to !== `${from.slice(0, 4)}-12-31`) throw new HttpError(400, "the ceiling counts stays over a calendar year");
    if (by === "week") {
      // Whole weeks from the year's first Monday to its last Sunday; the part weeks around them.
      const [first, last] = [monday(from) === from ? from : addDays(monday(from), 7), addDays(monday(to), -1)];
      text = ROLLUP_SQL.staysWeeks;
      values = [group, "stays", group, "stays", "week:in_month", "period", group, "stays", "week:", first, last, "week:in_month", monday(from), from, monday(to), `${to.slice(0, 7)}-01`];
    } else {
      text = ROLLUP_SQL.stays;
      values = [group, "stays", field, group, "stays", by === "month" ? "month:" : `year:${by}`, from, to];
    }
  } else {
    text = ROLLUP_SQL.purposes;
    const [shape, variants] = kind === "guests" ? [by, ["email_marketing", "sms_marketing"]] : [`any:${by}`, ["email_marketing"]];
    values = [group, kind, field, group, kind, shape, variants];
  }
  const [row] = await query<{ variants: string[] | null; rows: { v: string; b: Bucket }[] }>(text, values);
  if (!row.variants) throw notBuilt();
  switch (kind) {
    case "stays":
      return row.rows.map(({ b }) => ({
        [field]: b[field], stays: b.stays, nights: b.nights, distinctGuests: b.distinctGuests,
        revenue: b.revenue.map((m: Bucket) => ({
          currency: m.currency, revenueMinor: Number(m.revenueMinor), roomRevenueMinor: Number(m.roomRevenueMinor), roomNights: m.roomNights,
          averageDailyRateMinor: m.averageDailyRateMinor == null ? null : Number(m.averageDailyRateMinor),
        })),
      }));
    case "guests": {
      // Each bucket comes once per purpose: e-mail reach from one, SMS reach from the other.
      const sms = new Map(row.rows.filter((x) => x.v === "sms_marketing").map(({ b }) => [b[field], b.reachableBySms]));
      return row.rows.filter((x) => x.v === "email_marketing")
        .map(({ b }) => ({ [field]: b[field], guests: b.guests, masterProfiles: b.masterProfiles, reachableByEmail: b.reachableByEmail, reachableBySms: sms.get(b[field]) ?? 0 }));
    }
    default:
      return row.rows.map(({ b }) => ({ [field]: b[field], granted: b.granted, withdrawn: b.withdrawn, denied: b.denied, unknown: b.unknown }));
  }
}

/** `end`: "\n" after a GraphQL body, as the service's GraphQL server ends it. */
const send = (res: http.ServerResponse, status: number, body: unknown, statements: number, end = "") => {
  const text = JSON.stringify(body) + end;
  res.writeHead(status, { "content-type": "application/json; charset=utf-8", "content-length": Buffer.byteLength(text), "x-sql-statements": String(statements) });
  res.end(text);
};

class HttpError extends Error {
  constructor(readonly status: number, readonly code: string) {
    super(code);
  }
}

/**
 * Runs a statement; `name` prepares it per connection and keeps its generic plan, as the service does
 * for the same ones (the credential lookup, which the service sends as it is, keeps PostgreSQL's choice).
 */
let statements = 0;
async function query<R = Record<string, any>>(text: string, values: unknown[], name?: string): Promise<R[]> {
  statements++;
  const on = name && name !== CREDENTIAL_LOOKUP ? keptPlans : pool;
  return (await on.query({ text, values, name })).rows as R[];
}
const CREDENTIAL_LOOKUP = "gcs_token_api_key";

/** The caller's group, from the same prepared lookup as the service's (src/data/credentials.ts). */
async function groupOf(req: http.IncomingMessage, scope: string): Promise<string> {
  const token = /^Bearer (\S+)$/.exec(req.headers.authorization ?? "")?.[1];
  if (!token) throw new HttpError(401, "unauthorized");
  const hash = createHash("sha256").update(token).digest("hex");
  const [key] = await query<{ property_group_id: string; property_id: string | null; scopes: string; revoked: boolean }>(SQL.apiKey, [hash], CREDENTIAL_LOOKUP);
  if (!key || key.revoked) throw new HttpError(401, "unauthorized");
  if (!key.scopes.split(" ").includes(scope)) throw new HttpError(403, "forbidden");
  if (key.property_id !== null) throw new HttpError(400, "pinned keys are not handled by the ceiling");
  return key.property_group_id;
}

const limitOf = (url: URL) => Math.min(Number(url.searchParams.get("limit") ?? 100), 500);
const binding = (family: string, group: string, filter: object = {}) => ({ family, propertyGroupId: group, query: { filter, propertyId: null } });

/** A (created_at, id) keyset page of `select` as the service reads it, with its cursor. */
async function createdAtPage<R extends Record<string, any>>(url: URL, group: string, family: string, select: string, name?: string) {
  const limit = limitOf(url);
  const b = binding(family, group);
  const cursor = url.searchParams.get("cursor");
  const after = cursor ? decodeCursor(cursor, b, secret) : null;
  if (after) {
    const iso = new Date(String(after[0])).toISOString();
    return keysetEnd(await query<R>(select + KEYSET, [group, iso, iso, after[1], limit + 1], name && `${name}_after`), limit, b);
  }
  return keysetEnd(await query<R>(select + FIRST, [group, limit + 1], name), limit, b);
}

function keysetEnd<R extends Record<string, any>>(rows: R[], limit: number, b: ReturnType<typeof binding>) {
  const hasMore = rows.length > limit;
  if (hasMore) rows.length = limit;
  const last = rows[rows.length - 1];
  const createdAt = last?.created_at ?? last?.createdAt;
  return { rows, nextCursor: hasMore ? encodeCursor([createdAt, last.id], b, secret) : null, hasMore };
}

// The REST bodies: snake_case keys in the service's order (its operations' selections).
const guestBody = (g: Record<string, any>) => ({
  id: g.id, property_id: g.propertyId, integration_id: g.integrationId, source_id: g.sourceId, master_profile_id: g.masterProfileId,
  given_name: g.givenName, family_name: g.familyName, email: g.email, phone: g.phone, language: g.language, country_code: g.countryCode,
  city: g.city, birth_date: g.birthDate, vip_code: g.vipCode, created_at: g.createdAt, updated_at: g.updatedAt,
});
const eventBody = (e: Record<string, any>) => ({
  seq: e.seq, entity_type: e.entityType, entity_id: e.entityId, guest_profile_id: e.guestProfileId, property_id: e.propertyId,
  integration_id: e.integrationId, operation: e.operation, delta: e.delta, occurred_at: e.occurredAt, recorded_at: e.recordedAt,
});
const DAY_MS = 86_400_000;
const reservationBody = (r: Record<string, any>) => ({
  id: r.id, property_id: r.propertyId, integration_id: r.integrationId, source_id: r.sourceId, guest_profile_id: r.guestProfileId,
  confirmation_number: r.confirmationNumber, kind: r.kind, status: r.status, arrival_date: r.arrivalDate, departure_date: r.departureDate,
  nights: Math.max(0, Math.round((Date.parse(r.departureDate) - Date.parse(r.arrivalDate)) / DAY_MS)),
  starts_at: r.startsAt, adults: r.adults, children: r.children, room_type: r.roomType, room_number: r.roomNumber, rate_code: r.rateCode,
  space_id: r.spaceId, booking_channel: r.bookingChannel, total_amount_minor: Number(r.totalAmountMinor), currency: r.currency,
  special_requests: r.specialRequests, booked_at: r.bookedAt, cancelled_at: r.cancelledAt, created_at: r.createdAt, updated_at: r.updatedAt,
});
const transactionBody = (x: Record<string, any>) => ({
  id: x.id, property_id: x.propertyId, integration_id: x.integrationId, source_id: x.sourceId, guest_profile_id: x.guestProfileId,
  reservation_id: x.reservationId, kind: x.kind, category: x.category, description: x.description, amount_minor: Number(x.amountMinor),
  currency: x.currency, outlet: x.outlet, occurred_at: x.occurredAt, created_at: x.createdAt,
});

const UUID = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/i;
const uuidParam = (url: URL, name: string) => {
  const value = url.searchParams.get(name);
  if (value !== null && !UUID.test(value)) throw new HttpError(400, "invalid_request");
  return value;
};

/** GET /v1/events, timeline mode, of one guest or of one master profile's guests (src/data/events.ts). */
async function events(url: URL, group: string) {
  const limit = limitOf(url);
  const guest = uuidParam(url, "guest_profile_id");
  const master = uuidParam(url, "master_profile_id");
  if ((guest === null) === (master === null) || url.searchParams.has("mode") || url.searchParams.has("cursor")) throw new HttpError(400, "the ceiling reads first timeline pages of one guest or master profile");
  // A master profile's guests are read inside the events statement (src/data/where.ts guestConditions).
  const rows = guest !== null
    ? await query(SQL.events("t.guest_profile_id = $2") + " ORDER BY t.txid, t.seq LIMIT $3", [group, guest, limit + 1], "ceiling_events_guest")
    : await query(SQL.events("t.guest_profile_id = ANY(ARRAY(SELECT g.id FROM guest_profiles g WHERE g.property_group_id = $1::uuid AND g.master_profile_id = $2::uuid))") + " ORDER BY t.txid, t.seq LIMIT $3", [group, master, limit + 1], "ceiling_events_master");
  const hasMore = rows.length > limit;
  if (hasMore) rows.length = limit;
  const last = rows[rows.length - 1];
  const filter = guest !== null ? { guestProfileId: guest } : { masterProfileId: master };
  const nextCursor = hasMore ? encodeCursor([last.txid, last.seq], binding("events", group, filter), secret) : null;
  return { data: rows.map(eventBody), next_cursor: nextCursor, has_more: hasMore, mode: "timeline" };
}

/** GET /v1/master-profiles(?include_total=1): the page, the kept total, each profile's guest ids. */
async function masterProfiles(url: URL, group: string) {
  const page = await createdAtPage(url, group, "master_profiles", SQL.masterProfiles, "ceiling_master_profiles");
  const total = url.searchParams.has("include_total") && !url.searchParams.has("cursor")
    ? Number((await query<{ total: string }>(SQL.masterProfileTotal, [group], "ceiling_master_profile_total"))[0]?.total ?? 0) : null;
  const guests = await query<{ id: string; masterProfileId: string }>(SQL.guestsOfMasters, [group, page.rows.map((m) => m.id)], "ceiling_guests_of_masters");
  const ids = new Map<string, string[]>();
  for (const g of guests) {
    const list = ids.get(g.masterProfileId);
    if (list) list.push(g.id);
    else ids.set(g.masterProfileId, [g.id]);
  }
  const data = page.rows.map((m) => ({
    id: m.id, given_name: m.givenName, family_name: m.familyName, email: m.email, phone: m.phone, language: m.language,
    country_code: m.countryCode, birth_date: m.birthDate, vip: m.vip, guest_profile_ids: ids.get(m.id) ?? [], created_at: m.createdAt, updated_at: m.updatedAt,
  }));
  const body: Record<string, unknown> = { data, next_cursor: page.nextCursor, has_more: page.hasMore };
  if (total !== null) body.total_count = total;
  return body;
}

/** Members (or preview rows) with their guests, read by id, in member order. */
async function withGuests(group: string, members: { memberId: string; addedAt: string | null }[], limit: number, offset: number) {
  const hasMore = members.length > limit;
  if (hasMore) members.length = limit;
  const guests = await query(SQL.guestRow, [group, members.map((m) => m.memberId)], "ceiling_guest_rows");
  const byId = new Map(guests.map((g) => [g.id as string, g]));
  const data = members.map((m) => {
    const g = byId.get(m.memberId);
    return { member_id: m.memberId, member_type: "guest_profile", added_at: m.addedAt, guest: g ? guestBody(g) : null, master_profile: null };
  });
  return { data, has_more: hasMore, next_offset: hasMore ? offset + limit : null };
}

/** GET /v1/tables/:id/members?offset=n: the table, then a seek on (table_id, position). */
async function tableMembers(url: URL, group: string, tableId: string) {
  if (!UUID.test(tableId)) throw new HttpError(404, "not_found");
  const [table] = await query(SQL.table, [group, tableId, 1], "ceiling_table");
  if (!table) throw new HttpError(404, "not_found");
  if (table.memberType !== "guest_profile" || table.kind !== "curated") throw new HttpError(400, "the ceiling reads curated guest tables");
  const limit = limitOf(url);
  const offset = Number(url.searchParams.get("offset") ?? 0);
  const members = await query<{ memberId: string; addedAt: string }>(SQL.members, [group, tableId, tableId, group, offset, limit + 1], "ceiling_members");
  return withGuests(group, members, limit, offset);
}

/** POST /v1/tables/preview with {member_type: guest_profile, filter_doc: consent.<purpose> eq granted}. */
async function preview(body: any, group: string) {
  const doc = body?.filter_doc;
  const purpose = /^consent\.(\w+)$/.exec(doc?.field ?? "")?.[1];
  if (body?.member_type !== "guest_profile" || !purpose || doc.op !== "eq" || doc.value !== "granted" || body.offset || body.include_total) {
    throw new HttpError(400, "the ceiling previews consent.<purpose> = granted on guest profiles");
  }
  const limit = Math.min(Number(body.limit ?? 100), 500);
  const ids = await query<{ id: string }>(SQL.consentGranted, [group, group, purpose, group, purpose, limit + 1]);
  return withGuests(group, ids.map((r) => ({ memberId: r.id, addedAt: null })), limit, 0);
}

const readBody = (req: http.IncomingMessage) =>
  new Promise<string>((resolve, reject) => {
    const chunks: Buffer[] = [];
    req.on("data", (c: Buffer) => chunks.push(c)).on("end", () => resolve(Buffer.concat(chunks).toString("utf8"))).on("error", reject);
  });

const server = http.createServer(async (req, res) => {
  // X-Sql-Statements: exact for a request alone (bench/run.ts's sqlCount), approximate under load.
  statements = 0;
  const at = () => statements;
  try {
    const url = new URL(req.url ?? "/", "http://x");
    const path = url.pathname;
    const [, mode, aggregate] = /^\/(aggregate|live)\/(\w+)$/.exec(path) ?? [];
    if (aggregate !== undefined) {
      if (!Object.hasOwn(LIVE_GROUP_BY, aggregate)) throw new HttpError(404, "not_found");
      // The scope of the aggregate's root field (schema.graphql @requiresScope).
      const scope = { stays: "read:reservations", guests: "read:guests", consent: "read:consents", reviews: "read:reviews" }[aggregate]!;
      const group = await groupOf(req, scope);
      if (mode === "live") {
        const { sql, params } = LIVE_GROUP_BY[aggregate];
        return send(res, 200, { data: await query(sql, [group, ...params.map((p) => url.searchParams.get(p))]) }, at());
      }
      const by = url.searchParams.get("by") ?? "";
      if (!DIMENSIONS[aggregate].includes(by)) throw new HttpError(400, "invalid_request");
      return send(res, 200, { data: { [ROOT_FIELD[aggregate]]: await rollupAggregate(aggregate, by, url, group) } }, at(), "\n");
    }
    if (req.method === "POST" && path === "/mcp") {
      const message = JSON.parse(await readBody(req));
      const group = await groupOf(req, "read:guests");
      return send(res, 200, await guestContext(message, group, query), at());
    }
    if (req.method === "POST" && path === "/v1/tables/preview") {
      const body = JSON.parse(await readBody(req));
      return send(res, 200, await preview(body, await groupOf(req, "read:tables")), at());
    }
    const members = /^\/v1\/tables\/([^/]+)\/members$/.exec(path)?.[1];
    if (members !== undefined) return send(res, 200, await tableMembers(url, await groupOf(req, "read:tables"), members), at());
    switch (path) {
      case "/healthz": // the service's liveness answer: the cost of a request with no credential and no statement
        return send(res, 200, { status: "ok" }, at());
      case "/v1/guests": {
        const page = await createdAtPage(url, await groupOf(req, "read:guests"), "guests", SQL.guests, "ceiling_guests");
        return send(res, 200, { data: page.rows, next_cursor: page.nextCursor, has_more: page.hasMore }, at());
      }
      case "/v1/events":
        return send(res, 200, await events(url, await groupOf(req, "read:events")), at());
      case "/v1/reservations": {
        const page = await createdAtPage(url, await groupOf(req, "read:reservations"), "reservations", SQL.reservations, "ceiling_reservations");
        return send(res, 200, { data: page.rows.map(reservationBody), next_cursor: page.nextCursor, has_more: page.hasMore }, at());
      }
      case "/v1/transactions": {
        const page = await createdAtPage(url, await groupOf(req, "read:transactions"), "transactions", SQL.transactions, "ceiling_transactions");
        return send(res, 200, { data: page.rows.map(transactionBody), next_cursor: page.nextCursor, has_more: page.hasMore }, at());
      }
      case "/v1/master-profiles":
        return send(res, 200, await masterProfiles(url, await groupOf(req, "read:guests")), at());
    }
    throw new HttpError(404, "not_found");
  } catch (err) {
    if (err instanceof HttpError) return send(res, err.status, { error: err.code }, at());
    if (err instanceof SyntaxError) return send(res, 400, { error: "invalid_json" }, at());
    if ((err as { extensions?: { code?: string } }).extensions?.code === "invalid_cursor") return send(res, 400, { error: "invalid_cursor" }, at());
    process.stderr.write(`ceiling: ${(err as Error).stack}\n`);
    send(res, 500, { error: "internal" }, at());
  }
});
server.listen(Number(port), "127.0.0.1");
// Exit cleanly on SIGTERM, so a --cpu-prof profile gets written (bench/rest-overhead.ts).
process.on("SIGTERM", () => process.exit(0));
