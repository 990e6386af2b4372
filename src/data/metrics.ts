// Aggregates for dashboards (issue 28): stays, guests, consent and reviews, each one scoped SQL
// statement with one GROUP BY over the caller's rows (data/sql.ts ANDs the tenant predicate of
// every table in). Buckets are the combinations of the asked dimensions that have rows, ordered by
// those values; an entity in several buckets (a guest at two properties) counts in each.
//
// Calendars: a stay's day, week and month are its arrival date's, which is already the property's
// local date; review and consent months are their instants in the property's time zone
// (properties.timezone). Money follows the spend rule of data/stays.ts spendOfGuests, per currency.
// Consent is decided across the whole group by the same SQL as table filters
// (data/filter-document.ts), which agrees with consent/precedence.ts.
import { reviewConditions, type ReviewFilter } from "./engagement";
import type { ConsentValue } from "./filter-document";
import { decidingObservationSql, effectiveConsentSql } from "./filter-document";
import type { Readers } from "./readers";
import { bucketEnd, bucketStart, consentFromRollups, guestsFromRollups, nextDay, previousDay, reviewsFromRollups, staysFromRollups } from "./metric-rollups";
import { empty, join, raw, sql, type Sql, type TenantPredicate } from "./sql";
import { SPEND_AMOUNT, SPEND_KINDS } from "./stays";
import { recordAggregateAnswer } from "../observability/metrics";

export type StayDimension = "property" | "day" | "week" | "month" | "channel" | "guest_country";
/**
 * The stay dimensions, years, and the month of a week's days (`in_month`: a week split at month
 * ends): the rollups keep both (not GraphQL dimensions).
 */
export type StayGrouping = StayDimension | "year" | "in_month";
export type GuestDimension = "property" | "country" | "loyalty_tier" | "vip";
export type ConsentDimension = "property" | "month";
/** The consent dimensions, and the contact type: the rollups keep each type apart (not a GraphQL dimension). */
export type ConsentGrouping = ConsentDimension | "contact_type";
export type ReviewDimension = "property" | "month" | "source";

export interface StayMetricsFilter {
  arrivalFrom: string;
  arrivalTo: string;
  propertyId?: string | null;
  channel?: string | null;
}

/** The reviews reviewMetrics counts: the same filter as the review list (GraphQL ReviewFilter). */
export type ReviewMetricsFilter = ReviewFilter;

/** A dimension as SQL: the expression grouped by and the bucket field it fills. */
interface Key {
  field: string;
  expr: Sql;
}

/** `expr AS "field"` for the select list, and the GROUP BY / ORDER BY positions. */
function keyed(keys: Key[]) {
  return {
    select: keys.length ? sql`${join(keys.map((k) => sql`${k.expr} AS ${raw(`"${k.field}"`)}`), ", ")}, ` : empty,
    groupBy: keys.length ? sql` GROUP BY ${join(keys.map((_, i) => raw(String(i + 1))), ", ")}` : empty,
    orderBy: keys.length ? sql` ORDER BY ${join(keys.map((_, i) => raw(String(i + 1))), ", ")}` : empty,
  };
}

/**
 * Several groupings in one statement (GROUP BY GROUPING SETS), for the rollups: the rows of every
 * set, each with `grouping` (PostgreSQL's GROUPING() bits over every key named) so that `setOf`
 * tells which keys a row is grouped by.
 */
function groupingSets<D extends string>(keysOf: Record<D, Key>, sets: D[][]) {
  const all = [...new Set(sets.flat())];
  const exprs = all.map((d) => keysOf[d].expr);
  return {
    select: all.length
      ? sql`${join(all.map((d) => sql`${keysOf[d].expr} AS ${raw(`"${keysOf[d].field}"`)}`), ", ")}, GROUPING(${join(exprs, ", ")}) AS "grouping", `
      : sql`0 AS "grouping", `,
    groupBy: sql` GROUP BY GROUPING SETS (${join(sets.map((set) => (set.length ? sql`(${join(set.map((d) => keysOf[d].expr), ", ")})` : raw("()"))), ", ")})`,
    /** A row's buckets as one grouping would give them: its set's dimensions, the other keys removed. */
    split(rows: Record<string, unknown>[]): { dims: D[]; bucket: Record<string, unknown> }[] {
      return rows.map(({ grouping, ...bucket }) => {
        const dims = all.filter((_, i) => !((grouping as number) & (1 << (all.length - 1 - i))));
        for (const d of all) if (!dims.includes(d)) delete bucket[keysOf[d].field];
        return { dims, bucket };
      });
    },
  };
}

const localMonth = (instant: string, timezone: string) => raw(`to_char(date_trunc('month', ${instant} AT TIME ZONE ${timezone}), 'YYYY-MM-DD')`);

const STAY_KEYS: Record<StayGrouping, Key> = {
  property: { field: "propertyId", expr: sql`s.property_id::text` },
  day: { field: "period", expr: sql`to_char(s.arrival_date, 'YYYY-MM-DD')` },
  week: { field: "period", expr: sql`to_char(date_trunc('week', s.arrival_date), 'YYYY-MM-DD')` },
  month: { field: "period", expr: sql`to_char(date_trunc('month', s.arrival_date), 'YYYY-MM-DD')` },
  year: { field: "period", expr: sql`to_char(date_trunc('year', s.arrival_date), 'YYYY-MM-DD')` },
  channel: { field: "channel", expr: sql`s.booking_channel` },
  guest_country: { field: "guestCountry", expr: sql`s.country_code::text` },
  in_month: { field: "inMonth", expr: sql`to_char(date_trunc('month', s.arrival_date), 'YYYY-MM-DD')` },
};

/**
 * The first day of a stay bucket per time grouping (and of a week split at a month end): a guest is
 * returning in a bucket when their first stay arrived before its first day (docs/aggregates.md).
 */
const BUCKET_START: Partial<Record<StayGrouping, Sql>> = {
  day: sql`s.arrival_date`,
  week: sql`date_trunc('week', s.arrival_date)::date`,
  month: sql`date_trunc('month', s.arrival_date)::date`,
  year: sql`date_trunc('year', s.arrival_date)::date`,
  in_month: sql`date_trunc('month', s.arrival_date)::date`,
};

/**
 * Which returning-guest counts a stays statement adds: none; the caller's (first stays among the
 * stays the caller reads); or also each property's own (`propertyReturningGuests`: first stays at
 * the bucket's property, what a caller narrowed to that property reads; the rollups store both).
 */
export type ReturningCounts = "none" | "caller" | "caller-and-property";

/** Returning guests ÷ distinct guests, to 4 decimals; null without guests or without the count. */
export function repeatRate(returningGuests: number | null | undefined, distinctGuests: number): number | null {
  if (returningGuests == null || distinctGuests === 0) return null;
  return Math.round((returningGuests / distinctGuests) * 10_000) / 10_000;
}

const GUEST_KEYS: Record<GuestDimension, Key> = {
  property: { field: "propertyId", expr: sql`g.property_id::text` },
  country: { field: "country", expr: sql`g.country_code::text` },
  loyalty_tier: { field: "loyaltyTier", expr: sql`lt.tier` },
  vip: { field: "vip", expr: sql`(g.vip_code IS NOT NULL)` },
};

const CONSENT_KEYS: Record<ConsentGrouping, Key> = {
  contact_type: { field: "contactType", expr: sql`d.contact_type::text` },
  property: { field: "propertyId", expr: sql`d.property_id::text` },
  month: { field: "period", expr: localMonth("d.observed_at", "d.timezone") },
};

const REVIEW_KEYS: Record<ReviewDimension, Key> = {
  property: { field: "propertyId", expr: sql`rv.property_id::text` },
  month: { field: "period", expr: localMonth("rv.published_at", "p.timezone") },
  source: { field: "source", expr: sql`rv.source` },
};


export interface StayBucketRow {
  propertyId?: string | null;
  period?: string | null;
  channel?: string | null;
  guestCountry?: string | null;
  stays: number;
  nights: number;
  distinctGuests: number;
  /** Distinct guests whose first stay arrived before the bucket's first day; null when not asked. */
  returningGuests: number | null;
  /** The same, by first stays at the bucket's property only (the rollups' copy for narrowed callers). */
  propertyReturningGuests?: number;
  revenue: { currency: string; revenueMinor: string; roomRevenueMinor: string; roomNights: number; averageDailyRateMinor: string | null }[] | null;
  /** The bucket's keys as one text (the statement's join key; not an API field). */
  bucket?: string;
}

const round2 = (n: number | null) => (n == null ? null : Math.round(n * 100) / 100);

/** An answer, counted on /metrics by where it came from (gcs_aggregate_answers_total). */
function answered<T>(aggregate: "stays" | "guests" | "consent" | "reviews", source: "rollup" | "live", rows: T): T {
  recordAggregateAnswer(aggregate, source);
  return rows;
}

/**
 * The aggregates as dashboards read them: from the rollups (data/metric-rollups.ts) when a stored
 * shape answers the arguments and the family has been built, else live.
 */
export function metrics(r: Readers) {
  const live = liveMetrics(r);
  /** The stay buckets' counts, from the rollups where they answer, else live (repeatRate not derived yet). */
  async function staysCounted(filter: StayMetricsFilter, groupBy: StayDimension[], withRevenue: boolean, withReturning: boolean): Promise<Record<string, unknown>[]> {
    const returning: ReturningCounts = withReturning ? "caller" : "none";
    const stored = await staysFromRollups(r, filter, groupBy, withRevenue, withReturning);
    if (stored) return answered("stays", "rollup", stored);
    // Grouped by time first, over a range that starts or ends inside a bucket: the whole buckets
    // from the rollups, the (at most two) part buckets counted live over just their days. Each
    // bucket counts only its own days, so the parts join in period order.
    const time = groupBy[0];
    if (time === "day" || time === "week" || time === "month") {
      const { arrivalFrom: from, arrivalTo: to } = filter;
      const wholeFrom = bucketStart(time, from) === from ? from : nextDay(bucketEnd(time, from));
      const wholeTo = bucketEnd(time, to) === to ? to : previousDay(bucketStart(time, to));
      if (wholeFrom <= wholeTo) {
        const middle = await staysFromRollups(r, { ...filter, arrivalFrom: wholeFrom, arrivalTo: wholeTo }, groupBy, withRevenue, withReturning);
        if (middle) {
          const part = async (arrivalFrom: string, arrivalTo: string) =>
            arrivalFrom <= arrivalTo ? (await live.stays({ ...filter, arrivalFrom, arrivalTo }, groupBy, withRevenue, returning)).map(({ bucket: _key, ...row }) => row) : [];
          return answered("stays", "rollup", [...(await part(from, previousDay(wholeFrom))), ...middle, ...(await part(nextDay(wholeTo), to))]);
        }
      }
    }
    return answered("stays", "live", (await live.stays(filter, groupBy, withRevenue, returning)).map(({ bucket: _key, ...row }) => row));
  }
  return {
    /** Stay buckets; `withReturning` adds returningGuests and repeatRate (one more pass over the stays' history). */
    async stays(filter: StayMetricsFilter, groupBy: StayDimension[], withRevenue: boolean, withReturning = false) {
      const rows = await staysCounted(filter, groupBy, withRevenue, withReturning);
      return rows.map((b) => ({ ...b, repeatRate: repeatRate(b.returningGuests as number | null, b.distinctGuests as number) }));
    },
    staysCounted,
    async guests(groupBy: GuestDimension[], purposes: { email: string; sms: string } | null) {
      const stored = await guestsFromRollups(r, groupBy, purposes);
      return stored ? answered("guests", "rollup", stored) : answered("guests", "live", await live.guests(groupBy, purposes));
    },
    async consent(purpose: string, contactType: "email" | "phone" | null, groupBy: ConsentDimension[]) {
      const stored = await consentFromRollups(r, purpose, contactType, groupBy);
      return stored ? answered("consent", "rollup", stored) : answered("consent", "live", await live.consent(purpose, contactType, groupBy));
    },
    async reviews(filter: ReviewMetricsFilter, groupBy: ReviewDimension[]) {
      const stored = await reviewsFromRollups(r, filter, groupBy);
      return stored ? answered("reviews", "rollup", stored) : answered("reviews", "live", await live.reviews(filter, groupBy));
    },
  };
}

/** The aggregates counted from the rows, one grouped statement each: what the rollups store. */
export function liveMetrics(r: Readers) {
  return {
    /**
     * Stays arriving in [arrivalFrom, arrivalTo] (kind stay, not cancelled or no-show) per bucket,
     * with revenue per currency from their folio lines when `withRevenue`, and the returning guests
     * `returning` asks for.
     */
    async stays(filter: StayMetricsFilter, groupBy: StayGrouping[], withRevenue: boolean, returning: ReturningCounts = "none"): Promise<StayBucketRow[]> {
      const keys = groupBy.map((d) => STAY_KEYS[d]);
      // A bucket's first day: its period's, or arrivalFrom when later (a part bucket, or no time grouping).
      const bucketStart = sql`greatest(${join([...groupBy.flatMap((d) => BUCKET_START[d] ?? []), sql`${filter.arrivalFrom}::date`], ", ")})`;
      // Each person's first stay (same stays as s), across every property and channel the caller
      // reads and any earlier date; per property too when asked. Only stays before arrivalTo can
      // be before a bucket.
      const firstStays = (scoped: TenantPredicate, perProperty: boolean) => sql`
            SELECT coalesce(gp.master_profile_id, gp.id) AS person, ${perProperty ? sql`r.property_id, ` : empty}min(r.arrival_date) AS arrival
            FROM reservations r JOIN guest_profiles gp ON gp.id = r.guest_profile_id AND ${scoped("GuestProfile", "gp")}
            WHERE ${scoped("Reservation", "r")} AND r.kind = 'stay' AND r.status NOT IN ('cancelled', 'no_show') AND r.arrival_date < ${filter.arrivalTo}::date
            GROUP BY 1${perProperty ? sql`, 2` : empty}`;
      const history = (scoped: TenantPredicate) => returning === "none"
        ? empty
        : sql`,
          first_stay AS (${firstStays(scoped, false)})${returning === "caller-and-property" ? sql`,
          first_stay_here AS (${firstStays(scoped, true)})` : empty}`;
      const returningMeasures = returning === "none"
        ? sql`, NULL::int AS "returningGuests"`
        : sql`, count(DISTINCT s.person) FILTER (WHERE fs.arrival < ${bucketStart})::int AS "returningGuests"${returning === "caller-and-property"
          ? sql`, count(DISTINCT s.person) FILTER (WHERE fh.arrival < ${bucketStart})::int AS "propertyReturningGuests"`
          : empty}`;
      const returningJoins = returning === "none"
        ? empty
        : sql` LEFT JOIN first_stay fs ON fs.person = s.person${returning === "caller-and-property" ? sql` LEFT JOIN first_stay_here fh ON fh.person = s.person AND fh.property_id = s.property_id` : empty}`;
      const k = keyed(keys);
      // Every bucket's key as one text, so the revenue rows join their bucket with an equality
      // even where a dimension's value is null.
      const bucketKey = keys.length ? sql`json_build_array(${join(keys.map((x) => x.expr), ", ")})::text` : sql`''`;
      const moneyOf = (scoped: (model: "Transaction", alias: string) => Sql) => withRevenue
        ? sql`,
          folio AS (
            SELECT x.reservation_id, x.currency::text AS currency, sum(${SPEND_AMOUNT}) AS revenue,
              sum(${SPEND_AMOUNT}) FILTER (WHERE x.category = 'accommodation') AS room
            FROM transactions x
            WHERE ${scoped("Transaction", "x")} AND ${SPEND_KINDS} AND x.reservation_id IN (SELECT id FROM s)
            GROUP BY 1, 2),
          money AS (
            SELECT ${bucketKey} AS bucket, f.currency, sum(f.revenue) AS revenue, coalesce(sum(f.room), 0) AS room,
              coalesce(sum(s.nights) FILTER (WHERE f.room IS NOT NULL), 0) AS room_nights
            FROM s JOIN folio f ON f.reservation_id = s.id
            GROUP BY 1, 2),
          revenue AS (
            SELECT bucket, json_agg(json_build_object('currency', currency, 'revenueMinor', revenue::text, 'roomRevenueMinor', room::text,
                'roomNights', room_nights,
                'averageDailyRateMinor', CASE WHEN room_nights > 0 THEN round(room / room_nights)::text END) ORDER BY currency) AS revenue
            FROM money GROUP BY bucket)`
        : empty;
      return r.sql.query<StayBucketRow>((scoped) => sql`WITH s AS (
            SELECT r.id, r.property_id, r.booking_channel, r.arrival_date, (r.departure_date - r.arrival_date) AS nights,
              coalesce(gp.master_profile_id, gp.id) AS person, gp.country_code
            FROM reservations r
            LEFT JOIN guest_profiles gp ON gp.id = r.guest_profile_id AND ${scoped("GuestProfile", "gp")}
            WHERE ${scoped("Reservation", "r")} AND r.kind = 'stay' AND r.status NOT IN ('cancelled', 'no_show')
              AND r.arrival_date >= ${filter.arrivalFrom}::date AND r.arrival_date <= ${filter.arrivalTo}::date
              ${filter.propertyId == null ? empty : sql`AND r.property_id = ${filter.propertyId}::uuid`}
              ${filter.channel == null ? empty : sql`AND r.booking_channel = ${filter.channel}`})${moneyOf(scoped)}${history(scoped)}
          , stay AS (
            SELECT ${bucketKey} AS bucket, ${k.select}count(*)::int AS stays, coalesce(sum(s.nights), 0)::int AS nights,
              count(DISTINCT s.person)::int AS "distinctGuests"${returningMeasures}
            FROM s${returningJoins}${keys.length ? sql` GROUP BY ${join(keys.map((_, i) => raw(String(i + 1))), ", ")}, ${raw(String(keys.length + 1))}` : empty})
          SELECT stay.*, ${withRevenue ? sql`coalesce(rv.revenue, '[]'::json)` : sql`NULL`} AS revenue
          FROM stay${withRevenue ? sql` LEFT JOIN revenue rv ON rv.bucket = stay.bucket` : empty}
          ${keys.length ? sql`ORDER BY ${join(keys.map((x) => raw(`stay."${x.field}"`)), ", ")}` : empty}`);
    },

    /** Guest profiles per bucket, with the ones reachable by e-mail and SMS when `purposes` is given. */
    async guests(groupBy: GuestDimension[], purposes: { email: string; sms: string } | null) {
      return this.guestsIn(keyed(groupBy.map((d) => GUEST_KEYS[d])), groupBy.includes("loyalty_tier"), purposes);
    },

    /** Every grouping of `sets` in one statement (the rollups' rebuild). */
    async guestsBySets(sets: GuestDimension[][], purposes: { email: string; sms: string } | null) {
      const g = groupingSets(GUEST_KEYS, sets);
      return g.split(await this.guestsIn({ select: g.select, groupBy: g.groupBy, orderBy: empty }, sets.some((s) => s.includes("loyalty_tier")), purposes));
    },

    async guestsIn(k: { select: Sql; groupBy: Sql; orderBy: Sql }, withTier: boolean, purposes: { email: string; sms: string } | null) {
      const granted: ConsentValue[] = ["granted"];
      // Consent is decided across the whole group, also for a request narrowed to one property (spec 1.5).
      const group = { ...r.scope, propertyId: null };
      const rows = await r.sql.query<Record<string, unknown>>((scoped) => sql`SELECT ${k.select}count(*)::int AS guests,
          count(DISTINCT g.master_profile_id)::int AS "masterProfiles",
          ${purposes
            ? sql`count(*) FILTER (WHERE ${effectiveConsentSql(group, "email", sql`g.email`, purposes.email, granted)})::int AS "reachableByEmail",
              count(*) FILTER (WHERE ${effectiveConsentSql(group, "phone", sql`g.phone`, purposes.sms, granted)})::int AS "reachableBySms"`
            : sql`NULL AS "reachableByEmail", NULL AS "reachableBySms"`}
        FROM guest_profiles g
        ${withTier
          ? sql`LEFT JOIN LATERAL (SELECT lm.tier FROM loyalty_members lm
              WHERE ${scoped("LoyaltyMember", "lm")} AND lm.guest_profile_id = g.id AND lm.status = 'active'
              ORDER BY lm.lifetime_points DESC, lm.id LIMIT 1) lt ON true`
          : empty}
        WHERE ${scoped("GuestProfile", "g")}${k.groupBy}${k.orderBy}`);
      return rows;
    },

    /** Contact points of the guest profiles in scope per bucket, by effective consent for `purpose`. */
    async consent(purpose: string, contactType: "email" | "phone" | null, groupBy: ConsentDimension[]) {
      return this.consentIn(purpose, contactType, keyed(groupBy.map((d) => CONSENT_KEYS[d])));
    },

    /** Every grouping of `sets` (contact type among them) in one statement (the rollups' rebuild). */
    async consentBySets(purpose: string, sets: ConsentGrouping[][]) {
      const g = groupingSets(CONSENT_KEYS, sets);
      return g.split(await this.consentIn(purpose, null, { select: g.select, groupBy: g.groupBy, orderBy: empty }));
    },

    async consentIn(purpose: string, contactType: "email" | "phone" | null, k: { select: Sql; groupBy: Sql; orderBy: Sql }) {
      const point = sql`(d.contact_type::text || ':' || d.contact_value)`;
      return r.sql.query<Record<string, unknown>>((scoped) => sql`WITH cp AS (
          SELECT DISTINCT g.property_id, c.contact_type, c.contact_value
          FROM guest_profiles g
          CROSS JOIN LATERAL (VALUES ('email'::"ContactType", lower(btrim(g.email))), ('phone'::"ContactType", g.phone)) AS c(contact_type, contact_value)
          WHERE ${scoped("GuestProfile", "g")} AND c.contact_value IS NOT NULL AND c.contact_value <> ''
            ${contactType ? sql`AND c.contact_type = ${raw(`'${contactType}'`)}` : empty}),
        d AS (
          SELECT cp.property_id, cp.contact_type, cp.contact_value, p.timezone, dec.status, dec.observed_at
          FROM cp JOIN properties p ON p.id = cp.property_id AND ${scoped("Property", "p")}
          LEFT JOIN LATERAL ${decidingObservationSql(r.scope, sql`cp.contact_type`, sql`cp.contact_value`, purpose)} AS dec ON true)
        SELECT ${k.select}
          count(DISTINCT ${point}) FILTER (WHERE d.status = 'granted')::int AS granted,
          count(DISTINCT ${point}) FILTER (WHERE d.status = 'withdrawn')::int AS withdrawn,
          count(DISTINCT ${point}) FILTER (WHERE d.status = 'denied')::int AS denied,
          count(DISTINCT ${point}) FILTER (WHERE d.status IS NULL)::int AS unknown
        FROM d${k.groupBy}${k.orderBy}`);
    },

    /** Reviews the filter selects per bucket: count, average rating and count per rating. */
    async reviews(filter: ReviewMetricsFilter, groupBy: ReviewDimension[]) {
      const k = keyed(groupBy.map((d) => REVIEW_KEYS[d]));
      const conditions = reviewConditions(r, filter, "rv");
      const rows = await r.sql.query<Record<string, unknown> & { averageRating: number | null; r1: number; r2: number; r3: number; r4: number; r5: number }>(
        (scoped) => sql`SELECT ${k.select}count(*)::int AS count, avg(rv.rating)::float8 AS "averageRating",
            ${join([1, 2, 3, 4, 5].map((n) => sql`count(*) FILTER (WHERE rv.rating = ${raw(String(n))})::int AS ${raw(`r${n}`)}`), ", ")}
          FROM reviews rv JOIN properties p ON p.id = rv.property_id AND ${scoped("Property", "p")}
          WHERE ${scoped("Review", "rv")}${conditions.length ? sql` AND ${join(conditions, " AND ")}` : empty}${k.groupBy}${k.orderBy}`,
      );
      return rows.map(({ r1, r2, r3, r4, r5, averageRating, ...rest }) => ({
        ...rest,
        averageRating: round2(averageRating),
        byRating: [r1, r2, r3, r4, r5].map((count, i) => ({ rating: i + 1, count })),
      }));
    },
  };
}
