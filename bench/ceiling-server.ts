// The raw ceiling: node:http + pg running the very SQL the service issues for GET /v1/guests (the
// API key lookup and the keyset page), with the same signed cursor and envelope, and nothing else.
// Usage: tsx bench/ceiling-server.ts <database-url> <port> <cursor-secret>
import { createHash } from "node:crypto";
import http from "node:http";
import { Pool } from "pg";
import { decodeCursor, encodeCursor } from "../src/pagination/cursor";

const [databaseUrl, port, secret] = process.argv.slice(2);
const pool = new Pool({ connectionString: databaseUrl, max: 10 });

// Output columns are qualified with the table alias: an unqualified ORDER BY created_at would sort
// by the to_char() text of the same name instead of using the index.
const COLUMNS = `id, property_id, integration_id, source_id, master_profile_id, given_name, family_name, email, phone,
  language, country_code, city, to_char(birth_date, 'YYYY-MM-DD') AS birth_date, vip_code,
  to_char(created_at AT TIME ZONE 'UTC', 'YYYY-MM-DD"T"HH24:MI:SS.MS"Z"') AS created_at,
  to_char(updated_at AT TIME ZONE 'UTC', 'YYYY-MM-DD"T"HH24:MI:SS.MS"Z"') AS updated_at`;

// The ceiling of the dashboard aggregates (bench/run.ts aggregateScenarios): the same GROUP BY as
// src/data/metrics.ts written by hand for one grouping, on the same tables and indexes, with no
// GraphQL, scoping layer or tenant helper. $1 is the caller's group; `params` come from the query.
const SPEND = "CASE WHEN x.kind = 'refund' THEN -abs(x.amount_minor) ELSE x.amount_minor END";
const AGGREGATES: Record<string, { sql: string; params: string[] }> = {
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

const send = (res: http.ServerResponse, status: number, body: unknown) => {
  const text = JSON.stringify(body);
  res.writeHead(status, { "content-type": "application/json", "content-length": Buffer.byteLength(text), "x-sql-statements": "2" });
  res.end(text);
};

const server = http.createServer(async (req, res) => {
  try {
    const url = new URL(req.url ?? "/", "http://x");
    const aggregate = /^\/aggregate\/(\w+)$/.exec(url.pathname)?.[1];
    if (aggregate !== undefined && !Object.hasOwn(AGGREGATES, aggregate)) return send(res, 404, { error: "not_found" });
    if (aggregate === undefined && url.pathname !== "/v1/guests") return send(res, 404, { error: "not_found" });
    const token = /^Bearer (\S+)$/.exec(req.headers.authorization ?? "")?.[1];
    const hash = createHash("sha256").update(token ?? "").digest("hex");
    const key = await pool.query("SELECT property_group_id FROM api_keys WHERE token_hash = $1 AND revoked_at IS NULL", [hash]);
    if (key.rowCount === 0) return send(res, 401, { error: "unauthorized" });
    const group: string = key.rows[0].property_group_id;
    if (aggregate !== undefined) {
      const { sql, params } = AGGREGATES[aggregate];
      const rows = await pool.query(sql, [group, ...params.map((p) => url.searchParams.get(p))]);
      return send(res, 200, { data: rows.rows });
    }
    const limit = Math.min(Number(url.searchParams.get("limit") ?? 100), 500);
    const binding = { family: "guests", propertyGroupId: group, query: { filter: {}, propertyId: null } };
    const cursor = url.searchParams.get("cursor");
    const after = cursor ? decodeCursor(cursor, binding, secret) : null;
    const rows = after
      ? await pool.query(
          `SELECT ${COLUMNS} FROM guest_profiles g WHERE property_group_id = $1
           AND g.created_at >= $2 AND (g.created_at > $2 OR g.id > $3) ORDER BY g.created_at, g.id LIMIT $4`,
          [group, after[0], after[1], limit + 1],
        )
      : await pool.query(`SELECT ${COLUMNS} FROM guest_profiles g WHERE property_group_id = $1 ORDER BY g.created_at, g.id LIMIT $2`, [group, limit + 1]);
    const hasMore = rows.rows.length > limit;
    const data = rows.rows.slice(0, limit);
    const last = data[data.length - 1];
    send(res, 200, { data, next_cursor: hasMore ? encodeCursor([last.created_at, last.id], binding, secret) : null, has_more: hasMore });
  } catch {
    send(res, 400, { error: "invalid_cursor" });
  }
});
server.listen(Number(port), "127.0.0.1");
// Exit cleanly on SIGTERM, so a --cpu-prof profile gets written (bench/rest-overhead.ts).
process.on("SIGTERM", () => process.exit(0));
