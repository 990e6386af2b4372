// The reviews family, applied incrementally (issue 44). Reviews are additive and their stored rows in
// review_rollups (counts per property, grain day|month, local period and source) are already the
// facts: a touched review moves exactly two rows, its local day and its local month for its property
// and source. Applying touches recomputes those rows from the reviews (a day or a month of one
// property, read by the (group, property, published_at) index) and deletes the ones that fell to
// zero. Recomputing rather than adding a delta makes a repeat harmless: re-applying a touch, or
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

// The touched (property, grain, local period, source) rows. A review's day and month are its
// instant's in the property's time zone, exactly as the rebuild (refresh.ts writeReviews) and the
// live statement count them; a property of another group is never read.
const TOUCHED_ROWS = `
  touched AS (
    SELECT DISTINCT k.p::uuid AS property_id, g.grain, g.period, k.s AS source, pr.timezone
    FROM jsonb_to_recordset($2::jsonb) AS k(p text, d timestamptz, s text)
    JOIN properties pr ON pr.id = k.p::uuid AND pr.property_group_id = $1
    CROSS JOIN LATERAL (VALUES ('day', (k.d AT TIME ZONE pr.timezone)::date),
      ('month', date_trunc('month', k.d AT TIME ZONE pr.timezone)::date)) AS g(grain, period))`;

async function applyTouches(client: PoolClient, groupId: string, _variants: string[], touched: unknown[][]): Promise<number> {
  const keys = touched.flat() as ReviewKey[];
  if (!keys.length) return 0;
  const params = [groupId, JSON.stringify(keys)];
  await client.query(
    `WITH ${TOUCHED_ROWS}
     DELETE FROM review_rollups x USING touched t
     WHERE x.property_group_id = $1 AND x.property_id = t.property_id AND x.grain = t.grain AND x.period = t.period AND x.source = t.source`,
    params,
  );
  // Only periods that still have reviews get a row (an inner join): a period that fell to zero stays
  // deleted, as the rebuild never stores one. The instant range is a day wider on each side than the
  // local period (time-zone and DST safe) so the index reads it; the local date decides exactly.
  const { rows: [{ n }] } = await client.query<{ n: number }>(
    `WITH ${TOUCHED_ROWS},
     inserted AS (
       INSERT INTO review_rollups (property_group_id, property_id, grain, period, source, reviews, rating_sum, r1, r2, r3, r4, r5)
       SELECT $1, t.property_id, t.grain, t.period, t.source, count(*), sum(rv.rating),
         count(*) FILTER (WHERE rv.rating = 1), count(*) FILTER (WHERE rv.rating = 2), count(*) FILTER (WHERE rv.rating = 3),
         count(*) FILTER (WHERE rv.rating = 4), count(*) FILTER (WHERE rv.rating = 5)
       FROM touched t
       JOIN reviews rv ON rv.property_group_id = $1 AND rv.property_id = t.property_id AND rv.source = t.source
         AND rv.published_at >= ((t.period - 1)::timestamp AT TIME ZONE t.timezone)
         AND rv.published_at < (((CASE t.grain WHEN 'day' THEN t.period + 1 ELSE (t.period + interval '1 month')::date END) + 1)::timestamp AT TIME ZONE t.timezone)
         AND CASE t.grain WHEN 'day' THEN (rv.published_at AT TIME ZONE t.timezone)::date
           ELSE date_trunc('month', rv.published_at AT TIME ZONE t.timezone)::date END = t.period
       GROUP BY t.property_id, t.grain, t.period, t.source
       RETURNING 1)
     SELECT (SELECT count(*) FROM touched)::int AS n`,
    params,
  );
  return n;
}

export const reviewsFamily: IncrementalFamily = {
  // The review_rollups rows are the facts: the whole rebuild (refresh.ts) already rewrites them.
  rebuildFacts: async () => undefined,
  applyTouches,
};
