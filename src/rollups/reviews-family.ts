// The reviews family, applied incrementally (issue 44). Reviews are additive and their stored rows in
// review_rollups (counts per property, grain day|month, local period and source) are already the
// facts: a touched review moves exactly two rows, its local day and its local month for its property
// and source. Applying touches recomputes those rows (its day from the reviews, its month from the
// stored days) and deletes the ones that fell to zero. Recomputing rather than adding a delta makes a repeat harmless: re-applying a touch, or
// applying one a whole rebuild already covered, stores the same rows.
import type { PoolClient } from "pg";
import type { IncrementalFamily } from "./family";

/** One touched review, as the reviews trigger records it from its old and new rows. */
interface ReviewKey {
  /** property_id */
  p: string;
  /** published_at (timestamptz text) */
  d: string;
  /** source */
  s: string;
}

// The touched (property, local day, source) rows, with what the statements below compare as plain
// columns. A review's day and month are its instant's in the property's time zone, exactly as the
// rebuild (refresh.ts writeReviews) and the live statement count them; a property of another group is
// never read. The refresher runs as the review's group, under the tenant wall's policy, where only a
// condition free of non-LEAKPROOF functions (AT TIME ZONE, date arithmetic) may be an index condition:
// so the local day's instant range (its midnights in the property's time zone, DST included) and the
// month's bounds are computed here, and the joins compare columns. (With the range computed in the
// join, PostgreSQL read every review of the group per pass: 300,000 at a million guests.)
const TOUCHED = `
  touched AS MATERIALIZED (
    SELECT x.*, (x.day::timestamp AT TIME ZONE x.timezone) AS lo, ((x.day + 1)::timestamp AT TIME ZONE x.timezone) AS hi,
      date_trunc('month', x.day)::date AS month, (date_trunc('month', x.day) + interval '1 month')::date AS month_end
    FROM (SELECT DISTINCT k.p::uuid AS property_id, (k.d AT TIME ZONE pr.timezone)::date AS day, k.s AS source, pr.timezone
      FROM jsonb_to_recordset($2::jsonb) AS k(p text, d timestamptz, s text)
      JOIN properties pr ON pr.id = k.p::uuid AND pr.property_group_id = $1) x)`;

/**
 * Recomputes the touched rows: each touched day from its reviews (one range of reviews_rollup_day_idx,
 * read without the table), then each touched month as the sum of its stored days (at most 31
 * rows of review_rollups' key), so a touch reads one day of reviews, never a month.
 */
async function applyTouches(client: PoolClient, groupId: string, _variants: string[], touched: unknown[][]): Promise<number> {
  const keys = touched.flat() as ReviewKey[];
  if (!keys.length) return 0;
  const params = [groupId, JSON.stringify(keys)];
  await client.query(
    `WITH ${TOUCHED},
     rows AS (SELECT property_id, 'day' AS grain, day AS period, source FROM touched
       UNION SELECT property_id, 'month', month, source FROM touched)
     DELETE FROM review_rollups x USING rows t
     WHERE x.property_group_id = $1 AND x.grain = t.grain AND x.property_id = t.property_id AND x.period = t.period AND x.source = t.source`,
    params,
  );
  // Only periods that still have reviews get a row (inner joins): one that fell to zero stays
  // deleted, as the rebuild never stores one. The local date decides a review's day exactly.
  const { rows: [{ n }] } = await client.query<{ n: number }>(
    `WITH ${TOUCHED},
     days AS (
       INSERT INTO review_rollups (property_group_id, property_id, grain, period, source, reviews, rating_sum, r1, r2, r3, r4, r5)
       SELECT $1, t.property_id, 'day', t.day, t.source, count(*), sum(rv.rating),
         count(*) FILTER (WHERE rv.rating = 1), count(*) FILTER (WHERE rv.rating = 2), count(*) FILTER (WHERE rv.rating = 3),
         count(*) FILTER (WHERE rv.rating = 4), count(*) FILTER (WHERE rv.rating = 5)
       FROM touched t
       JOIN reviews rv ON rv.property_group_id = $1 AND rv.property_id = t.property_id AND rv.source = t.source
         AND rv.published_at >= t.lo AND rv.published_at < t.hi
       WHERE (rv.published_at AT TIME ZONE t.timezone)::date = t.day
       GROUP BY t.property_id, t.day, t.source
       RETURNING 1)
     SELECT (SELECT count(*) FROM touched)::int AS n`,
    params,
  );
  // A separate statement: a data-modifying CTE's rows are not visible to the rest of its statement.
  await client.query(
    `WITH ${TOUCHED},
     months AS (SELECT DISTINCT property_id, month, month_end, source FROM touched)
     INSERT INTO review_rollups (property_group_id, property_id, grain, period, source, reviews, rating_sum, r1, r2, r3, r4, r5)
     SELECT $1, m.property_id, 'month', m.month, m.source, sum(d.reviews), sum(d.rating_sum), sum(d.r1), sum(d.r2), sum(d.r3), sum(d.r4), sum(d.r5)
     FROM months m
     JOIN review_rollups d ON d.property_group_id = $1 AND d.grain = 'day' AND d.property_id = m.property_id
       AND d.period >= m.month AND d.period < m.month_end AND d.source = m.source
     GROUP BY m.property_id, m.month, m.source`,
    params,
  );
  return n;
}

export const reviewsFamily: IncrementalFamily = {
  // The review_rollups rows are the facts: the whole rebuild (refresh.ts) already rewrites them.
  rebuildFacts: async () => undefined,
  applyTouches,
};
