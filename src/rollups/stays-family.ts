// The stays family follows the writes (issue 44). Every stored stay measure is a sum over disjoint
// units: a person (coalesce(master_profile_id, guest_profile_id)) with all their stays, or a stay
// without a guest profile on its own. Stays, nights and revenue add up over units, and so do
// distinct guests and returning guests (a person is one unit, and their first stay is among their
// own stays). So for touched units T:
//
//   stored bucket − contribution(T as last applied) + contribution(T now)
//
// is exactly the bucket the live statement (data/metrics.ts liveMetrics().stays) gives. "As last
// applied" is stay_rollup_facts: one row per counted stay, with what the buckets need of it (migration
// 20261128211000_stay_rollup_facts). A pass, under the family's lock (rollups/refresh.ts):
//   1. maps the change rows' keys to units, through the facts (where a stay was counted) and the
//      live rows (where it counts now);
//   2. sums the units' facts per bucket (old), replaces the facts from the live rows, sums again (new);
//   3. adds new − old to the stored buckets, dropping those left without stays.
// Re-applying a unit changes nothing (old = new), so a pass racing a write only costs a repeat; a
// write committed during the pass leaves its own change row for the next one. The whole-pair rebuild
// is the same sums over every unit, into empty buckets.
import type { PoolClient } from "pg";
import type { IncrementalFamily } from "./family";
import { STAY_SHAPES, stayShapeKey, type Grain } from "../data/metric-rollups";
import { SPEND_AMOUNT, SPEND_KINDS } from "../data/stays";
import { empty, raw, sql, type Sql } from "../data/sql";

const run = <T extends object>(client: PoolClient, q: Sql) => client.query<T>(q.text, q.values);

// ---- facts from the live rows --------------------------------------------------------------------

/**
 * The facts of the counted stays (kind stay, not cancelled or no-show) among `stays` (reservations
 * aliased r), as liveMetrics().stays reads them: the person of the guest profile, the arrival date
 * (already the property's local date), nights, channel, the guest's country, and the folio per
 * currency by the spend rule (SPEND_AMOUNT, SPEND_KINDS), accommodation apart.
 */
const liveFacts = (stays: Sql) => sql`
  SELECT r.property_group_id, r.id AS reservation_id, coalesce(gp.master_profile_id, gp.id, r.id) AS unit,
    coalesce(gp.master_profile_id, gp.id) AS person, gp.id AS guest_profile_id, r.property_id, r.arrival_date,
    (r.departure_date - r.arrival_date) AS nights, r.booking_channel AS channel, gp.country_code::text AS guest_country,
    coalesce(fo.folio, '[]'::jsonb) AS folio
  FROM (${stays}) r
  LEFT JOIN guest_profiles gp ON gp.id = r.guest_profile_id AND gp.property_group_id = r.property_group_id
  LEFT JOIN LATERAL (
    SELECT jsonb_agg(jsonb_build_object('c', f.currency, 'r', f.revenue, 'a', f.room) ORDER BY f.currency) AS folio
    FROM (SELECT x.currency::text AS currency, sum(${SPEND_AMOUNT}) AS revenue, sum(${SPEND_AMOUNT}) FILTER (WHERE x.category = 'accommodation') AS room
          FROM transactions x
          WHERE x.property_group_id = r.property_group_id AND x.reservation_id = r.id AND ${SPEND_KINDS}
          GROUP BY 1) f) fo ON true
  WHERE r.kind = 'stay' AND r.status NOT IN ('cancelled', 'no_show')`;

const FACT_COLUMNS = raw(
  "property_group_id, reservation_id, unit, person, guest_profile_id, property_id, arrival_date, nights, channel, guest_country, folio",
);

/** Every stay of the group. */
const allStays = (groupId: string) => sql`SELECT * FROM reservations WHERE property_group_id = ${groupId}::uuid`;

/**
 * The stays of these units, by index (three lookups, not one OR, which would scan the group's
 * guests): the reservations of the guest profiles whose master profile is a unit, of those without
 * one that are a unit, and the units that are stays without a guest profile.
 */
const staysOfUnits = (groupId: string, units: string[]) => sql`
  SELECT r.* FROM guest_profiles g JOIN reservations r ON r.guest_profile_id = g.id AND r.property_group_id = g.property_group_id
  WHERE g.property_group_id = ${groupId}::uuid AND g.master_profile_id = ANY(${units}::uuid[])
  UNION ALL
  SELECT r.* FROM guest_profiles g JOIN reservations r ON r.guest_profile_id = g.id AND r.property_group_id = g.property_group_id
  WHERE g.property_group_id = ${groupId}::uuid AND g.id = ANY(${units}::uuid[]) AND g.master_profile_id IS NULL
  UNION ALL
  SELECT r.* FROM reservations r
  WHERE r.property_group_id = ${groupId}::uuid AND r.id = ANY(${units}::uuid[])
    AND NOT EXISTS (SELECT 1 FROM guest_profiles g WHERE g.id = r.guest_profile_id AND g.property_group_id = r.property_group_id)`;

/**
 * The units the change keys touch: where their stays were counted (the facts: by reservation, by
 * guest profile) and where they count now (the live rows: a reservation's person, a guest profile's
 * person, a master profile named in a guest profile's keys).
 */
async function touchedUnits(client: PoolClient, groupId: string, keys: Record<string, unknown>[]): Promise<string[]> {
  const ids = (name: string) => [...new Set(keys.map((k) => k[name]).filter((v): v is string => typeof v === "string"))];
  const [reservations, guests, masters] = [ids("r"), ids("g"), ids("m")];
  if (!reservations.length && !guests.length && !masters.length) return [];
  const { rows } = await run<{ unit: string }>(
    client,
    sql`SELECT f.unit FROM stay_rollup_facts f WHERE f.property_group_id = ${groupId}::uuid AND f.reservation_id = ANY(${reservations}::uuid[])
      UNION SELECT f.unit FROM stay_rollup_facts f WHERE f.property_group_id = ${groupId}::uuid AND f.guest_profile_id = ANY(${guests}::uuid[])
      UNION SELECT coalesce(gp.master_profile_id, gp.id, r.id) FROM reservations r
        LEFT JOIN guest_profiles gp ON gp.id = r.guest_profile_id AND gp.property_group_id = r.property_group_id
        WHERE r.property_group_id = ${groupId}::uuid AND r.id = ANY(${reservations}::uuid[])
      UNION SELECT coalesce(gp.master_profile_id, gp.id) FROM guest_profiles gp WHERE gp.property_group_id = ${groupId}::uuid AND gp.id = ANY(${guests}::uuid[])
      UNION SELECT unnest(${masters}::uuid[])`,
  );
  return rows.map((r) => r.unit);
}

// ---- contributions: the facts summed per stored bucket -------------------------------------------

/** A fact's period per grain: columns of `facts` below, computed once per fact. */
const PERIOD: Record<Grain, string> = { day: "f.arrival_date", week: "f.week", month: "f.month", year: "f.year" };

/**
 * One row per stored shape for each fact (LATERAL VALUES from STAY_SHAPES): the shape, its period,
 * the first day a returning guest's first stay must precede (a week split at a month end starts
 * at the later of the two), and its dimensions (null where the shape has none).
 */
const SHAPE_ROWS = raw(
  STAY_SHAPES.map(({ grain, dims }) => {
    const inMonth = dims.includes("in_month");
    const starts = inMonth ? `greatest(${PERIOD[grain]}, f.month)` : PERIOD[grain];
    return `('${stayShapeKey(grain, dims)}', ${PERIOD[grain]}, ${starts}, ${dims.includes("property") ? "f.property_id" : "NULL::uuid"}, ` +
      `${dims.includes("channel") ? "f.channel" : "NULL::text"}, ${dims.includes("guest_country") ? "f.guest_country" : "NULL::text"}, ` +
      `${inMonth ? "f.month" : "NULL::date"})`;
  }).join(",\n      "),
);

/** Each row of `relation` (as f) in every stored bucket it counts in (b: shape, period, starts and the dimensions). */
const inBuckets = (relation: string) => sql`${raw(relation)} f CROSS JOIN LATERAL (VALUES
      ${SHAPE_ROWS}) AS b(shape, period, starts, property_id, channel, guest_country, in_month)`;

/** The bucket key columns of a contributions row, as the stored bucket names them. */
const KEY_COLUMNS = raw(`b.shape, to_char(b.period, 'YYYY-MM-DD') AS period, b.property_id::text AS "propertyId", b.channel,
  b.guest_country AS "guestCountry", to_char(b.in_month, 'YYYY-MM-DD') AS "inMonth"`);
const BY_BUCKET = raw("b.shape, b.period, b.property_id, b.channel, b.guest_country, b.in_month");

interface Money {
  revenue: bigint;
  room: bigint;
  roomNights: number;
  /** Stays of the bucket with a folio line in this currency: the live statement lists a currency while any has one. */
  stays: number;
}

/** A bucket's measures, as a sum over units. */
interface Sums {
  stays: number;
  nights: number;
  distinctGuests: number;
  returningGuests: number;
  propertyReturningGuests: number;
  money: Map<string, Money>;
}

interface BucketKey {
  shape: string;
  period: string;
  propertyId: string | null;
  channel: string | null;
  guestCountry: string | null;
  inMonth: string | null;
}

const keyText = (k: BucketKey) => JSON.stringify([k.shape, k.period, k.propertyId, k.channel, k.guestCountry, k.inMonth]);

type ContributionRow = BucketKey & Omit<Sums, "money"> & { currency: string | null; revenue: string | null; room: string | null; roomNights: number };

/**
 * The facts rows `facts` names (a relation: the rows a data-modifying CTE of `change` returns, or a
 * selection of stay_rollup_facts) summed per stored bucket, as the live statement counts them, in one
 * statement: stays, nights, distinct persons, persons whose first stay (among their own facts: all of
 * a person's stays are one unit) precedes the bucket, the same at the bucket's property; and, in rows
 * of their own, the folio per currency with its stays.
 */
async function contributions(client: PoolClient, change: Sql, facts: Sql): Promise<Map<string, BucketKey & Sums>> {
  const { rows } = await run<ContributionRow>(
    client,
    sql`WITH ${change}
      f AS (
        SELECT sf.*, date_trunc('week', sf.arrival_date)::date AS week, date_trunc('month', sf.arrival_date)::date AS month,
          date_trunc('year', sf.arrival_date)::date AS year,
          min(sf.arrival_date) OVER (PARTITION BY sf.person) AS first_stay,
          min(sf.arrival_date) OVER (PARTITION BY sf.person, sf.property_id) AS first_stay_here
        FROM ${facts} sf),
      -- Per person first (the stays without a guest profile share a null person), so that the
      -- distinct counts are plain counts.
      per_person AS (
        SELECT ${BY_BUCKET}, f.person, count(*) AS stays, sum(f.nights) AS nights,
          bool_or(f.first_stay < b.starts) AS returning_in_group, bool_or(f.first_stay_here < b.starts) AS returning_at_property
        FROM ${inBuckets("f")} GROUP BY ${BY_BUCKET}, f.person),
      folio AS (
        SELECT f.*, m->>'c' AS currency, (m->>'r')::numeric AS revenue, (m->>'a')::numeric AS room
        FROM f CROSS JOIN LATERAL jsonb_array_elements(f.folio) AS m)
      SELECT ${KEY_COLUMNS}, NULL AS currency, sum(b.stays)::int AS stays, sum(b.nights)::int AS nights, count(b.person)::int AS "distinctGuests",
        (count(b.person) FILTER (WHERE b.returning_in_group))::int AS "returningGuests",
        -- (only the shapes by property store it)
        (count(b.person) FILTER (WHERE b.returning_at_property AND b.property_id IS NOT NULL))::int AS "propertyReturningGuests",
        NULL AS revenue, NULL AS room, 0 AS "roomNights"
      FROM per_person b GROUP BY ${BY_BUCKET}
      UNION ALL
      SELECT ${KEY_COLUMNS}, f.currency, count(*)::int, 0, 0, 0, 0, sum(f.revenue)::text, sum(f.room)::text,
        (coalesce(sum(f.nights) FILTER (WHERE f.room IS NOT NULL), 0))::int
      FROM ${inBuckets("folio")} GROUP BY ${BY_BUCKET}, f.currency`,
  );
  const out = new Map<string, BucketKey & Sums>();
  for (const { currency, revenue, room, roomNights, ...row } of rows) {
    if (currency === null) out.set(keyText(row), { ...row, money: out.get(keyText(row))?.money ?? new Map() });
  }
  for (const { currency, revenue, room, roomNights, stays, ...key } of rows) {
    if (currency !== null) out.get(keyText(key))!.money.set(currency, { revenue: BigInt(revenue!), room: BigInt(room ?? "0"), roomNights, stays });
  }
  return out;
}

// ---- stored buckets ------------------------------------------------------------------------------

/**
 * A stored bucket keeps, besides what the live statement returns, the count of its stays with a
 * folio line per currency (`folioStays`, never served: data/metric-rollups.ts picks the measures),
 * so that a currency leaves `revenue` when its last stay does.
 */
interface StoredBucket extends Record<string, unknown> {
  stays: number;
  nights: number;
  distinctGuests: number;
  returningGuests: number;
  propertyReturningGuests?: number;
  revenue: { currency: string; revenueMinor: string; roomRevenueMinor: string; roomNights: number; averageDailyRateMinor: string | null }[];
  folioStays: Record<string, number>;
}

function sumsOf(b: StoredBucket): Sums {
  if (!b.folioStays) throw new StayRollupDrift("a stored stay bucket without folioStays: built before the facts");
  return {
    stays: b.stays,
    nights: b.nights,
    distinctGuests: b.distinctGuests,
    returningGuests: b.returningGuests,
    propertyReturningGuests: b.propertyReturningGuests ?? 0,
    money: new Map(b.revenue.map((m) => [m.currency, { revenue: BigInt(m.revenueMinor), room: BigInt(m.roomRevenueMinor), roomNights: m.roomNights, stays: b.folioStays[m.currency] }])),
  };
}

/** round(room / roomNights) as PostgreSQL rounds a numeric: half away from zero. */
function averageDailyRate(room: bigint, roomNights: number): string | null {
  if (roomNights <= 0) return null;
  const n = BigInt(roomNights);
  let q = room / n;
  const r = room % n;
  if (2n * (r < 0n ? -r : r) >= n) q += room < 0n ? -1n : 1n;
  return q.toString();
}

/** The bucket as the live statement returns it (the dimensions of its shape only), with folioStays. */
function bucketOf(key: BucketKey, s: Sums): StoredBucket {
  const dims = key.shape.slice(key.shape.indexOf(":") + 1).split(",");
  const currencies = [...s.money.keys()].sort();
  return {
    ...(dims.includes("property") ? { propertyId: key.propertyId } : {}),
    period: key.period,
    ...(dims.includes("channel") ? { channel: key.channel } : {}),
    ...(dims.includes("guest_country") ? { guestCountry: key.guestCountry } : {}),
    ...(dims.includes("in_month") ? { inMonth: key.inMonth } : {}),
    stays: s.stays,
    nights: s.nights,
    distinctGuests: s.distinctGuests,
    returningGuests: s.returningGuests,
    ...(dims.includes("property") ? { propertyReturningGuests: s.propertyReturningGuests } : {}),
    revenue: currencies.map((c) => {
      const m = s.money.get(c)!;
      return { currency: c, revenueMinor: m.revenue.toString(), roomRevenueMinor: m.room.toString(), roomNights: m.roomNights, averageDailyRateMinor: averageDailyRate(m.room, m.roomNights) };
    }),
    folioStays: Object.fromEntries(currencies.map((c) => [c, s.money.get(c)!.stays])),
  };
}

const ZERO: Sums = { stays: 0, nights: 0, distinctGuests: 0, returningGuests: 0, propertyReturningGuests: 0, money: new Map() };

/** a + sign × b, per measure and currency. */
function add(a: Sums, b: Sums, sign: 1 | -1): Sums {
  const money = new Map(a.money);
  for (const [c, m] of b.money) {
    const was = money.get(c) ?? { revenue: 0n, room: 0n, roomNights: 0, stays: 0 };
    const s = BigInt(sign);
    money.set(c, { revenue: was.revenue + s * m.revenue, room: was.room + s * m.room, roomNights: was.roomNights + sign * m.roomNights, stays: was.stays + sign * m.stays });
  }
  return {
    stays: a.stays + sign * b.stays,
    nights: a.nights + sign * b.nights,
    distinctGuests: a.distinctGuests + sign * b.distinctGuests,
    returningGuests: a.returningGuests + sign * b.returningGuests,
    propertyReturningGuests: a.propertyReturningGuests + sign * b.propertyReturningGuests,
    money,
  };
}

function sameSums(a: Sums, b: Sums): boolean {
  const same = (x: Money, y: Money | undefined) => y !== undefined && x.revenue === y.revenue && x.room === y.room && x.roomNights === y.roomNights && x.stays === y.stays;
  return a.stays === b.stays && a.nights === b.nights && a.distinctGuests === b.distinctGuests && a.returningGuests === b.returningGuests
    && a.propertyReturningGuests === b.propertyReturningGuests && a.money.size === b.money.size && [...a.money].every(([c, m]) => same(m, b.money.get(c)));
}

/** Stored buckets that disagree with the facts (a count below zero, measures without stays): rebuild the pair whole. */
export class StayRollupDrift extends Error {}

/**
 * Moves the stored buckets by new − old (each a map of bucket key to sums): the buckets whose sums
 * change are read, added to, and written back; one left without stays is deleted (the live
 * statement returns no empty bucket).
 */
async function applyDelta(client: PoolClient, groupId: string, old: Map<string, BucketKey & Sums>, now: Map<string, BucketKey & Sums>): Promise<void> {
  const deltas = new Map<string, { key: BucketKey; delta: Sums }>();
  for (const k of new Set([...old.keys(), ...now.keys()])) {
    const before = old.get(k) ?? ZERO;
    const after = now.get(k) ?? ZERO;
    if (sameSums(before, after)) continue;
    deltas.set(k, { key: (now.get(k) ?? old.get(k))!, delta: add(after, before, -1) });
  }
  if (!deltas.size) return;
  const wanted = [...deltas.values()].map(({ key }) => [key.shape, key.period]);
  const { rows: stored } = await client.query<{ id: string; shape: string; period: string; bucket: StoredBucket }>(
    `SELECT m.id, m.shape, to_char(m.period, 'YYYY-MM-DD') AS period, m.bucket FROM metric_rollups m
     WHERE m.property_group_id = $1 AND m.metric = 'stays' AND m.variant = ''
       AND (m.shape, m.period) IN (SELECT * FROM unnest($2::text[], $3::date[]))`,
    [groupId, wanted.map((w) => w[0]), wanted.map((w) => w[1])],
  );
  const storedByKey = new Map<string, { id: string; bucket: StoredBucket }>();
  for (const row of stored) {
    const b = row.bucket;
    const k = keyText({ shape: row.shape, period: row.period, propertyId: (b.propertyId as string) ?? null, channel: (b.channel as string) ?? null, guestCountry: (b.guestCountry as string) ?? null, inMonth: (b.inMonth as string) ?? null });
    if (deltas.has(k)) {
      if (storedByKey.has(k)) throw new StayRollupDrift(`two stored stay buckets ${k}`);
      storedByKey.set(k, row);
    }
  }
  const inserts: { shape: string; period: string; bucket: StoredBucket }[] = [];
  const updates: { id: string; bucket: StoredBucket }[] = [];
  const deletes: string[] = [];
  for (const [k, { key, delta }] of deltas) {
    const was = storedByKey.get(k);
    const next = add(was ? sumsOf(was.bucket) : ZERO, delta, 1);
    // A currency leaves the bucket with its last stay (its sums must be zero by then).
    for (const [c, m] of next.money) {
      if (m.stays < 0 || (m.stays === 0 && (m.revenue !== 0n || m.room !== 0n || m.roomNights !== 0))) throw new StayRollupDrift(`stay bucket ${k}: ${c} ${JSON.stringify({ ...m, revenue: String(m.revenue), room: String(m.room) })}`);
      if (m.stays === 0) next.money.delete(c);
    }
    const negative = [next.stays, next.distinctGuests, next.returningGuests, next.propertyReturningGuests].some((n) => n < 0);
    if (negative || (next.stays === 0 && (next.distinctGuests !== 0 || next.nights !== 0 || next.money.size !== 0))) throw new StayRollupDrift(`stay bucket ${k} would be ${JSON.stringify(bucketOf(key, next))}`);
    if (next.stays === 0) {
      if (was) deletes.push(was.id);
    } else if (was) {
      updates.push({ id: was.id, bucket: bucketOf(key, next) });
    } else {
      inserts.push({ shape: key.shape, period: key.period, bucket: bucketOf(key, next) });
    }
  }
  // One statement: the buckets deleted, updated and inserted.
  await client.query(
    `WITH gone AS (DELETE FROM metric_rollups WHERE property_group_id = $1 AND id = ANY($2::bigint[])),
       changed AS (UPDATE metric_rollups m SET bucket = x.bucket FROM jsonb_to_recordset($3::jsonb) AS x(id bigint, bucket jsonb)
         WHERE m.property_group_id = $1 AND m.id = x.id)
     INSERT INTO metric_rollups (property_group_id, metric, shape, variant, period, bucket)
     SELECT $1, 'stays', x.shape, '', x.period::date, x.bucket FROM jsonb_to_recordset($4::jsonb) AS x(shape text, period text, bucket jsonb)`,
    [groupId, deletes, JSON.stringify(updates), JSON.stringify(inserts)],
  );
}

// ---- the family ----------------------------------------------------------------------------------

export const staysFamily: IncrementalFamily = {
  /** The stays family stores its buckets from its facts, also when rebuilt whole (refresh.ts then computes none live). */
  rebuildsBuckets: true,

  async rebuildFacts(client, groupId) {
    await client.query("DELETE FROM stay_rollup_facts WHERE property_group_id = $1", [groupId]);
    await run(client, sql`INSERT INTO stay_rollup_facts (${FACT_COLUMNS}) ${liveFacts(allStays(groupId))}`);
    await client.query("DELETE FROM metric_rollups WHERE property_group_id = $1 AND metric = 'stays'", [groupId]);
    const all = await contributions(client, empty, sql`(SELECT * FROM stay_rollup_facts WHERE property_group_id = ${groupId}::uuid)`);
    await applyDelta(client, groupId, new Map(), all);
    // Fresh statistics (as the table's owner: migration 20261128211500), or the planner takes the
    // next passes' lookups by person for scans of the group's facts until autovacuum analyzes them.
    await client.query("SELECT stay_rollup_facts_analyze()");
  },

  async applyTouches(client, groupId, _variants, touched) {
    const units = await touchedUnits(client, groupId, touched.flat() as Record<string, unknown>[]);
    if (!units.length) return 0;
    // The units' facts as last applied, deleted and summed in one statement; then their facts from
    // the live rows, inserted and summed. A stay that still has a fact is counted under a unit not
    // touched here: a write moved it after this pass read its keys, and that write's change row
    // re-applies both units on the next pass.
    const old = await contributions(
      client,
      sql`gone AS (DELETE FROM stay_rollup_facts WHERE property_group_id = ${groupId}::uuid AND unit = ANY(${units}::uuid[]) RETURNING *),`,
      raw("gone"),
    );
    const now = await contributions(
      client,
      sql`added AS (INSERT INTO stay_rollup_facts (${FACT_COLUMNS}) ${liveFacts(staysOfUnits(groupId, units))}
        ON CONFLICT (property_group_id, reservation_id) DO NOTHING RETURNING *),`,
      raw("added"),
    );
    await applyDelta(client, groupId, old, now);
    return units.length;
  },
};

