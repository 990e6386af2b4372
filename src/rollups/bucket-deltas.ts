// Moving stored buckets by a delta (issue 44): a family that re-applies some units computes, per
// stored bucket, its measures over those units as last applied and as they are now; the difference
// is added to the bucket in metric_rollups. A bucket that does not exist yet is inserted; one whose
// measures all fall to zero is deleted (the live statement never returns an empty bucket), except a
// shape's grand total, which the live statement returns even over no rows (GROUP BY GROUPING SETS
// with the empty set). Guest and consent buckets have no period column (it is NULL).
import type { PoolClient } from "pg";
import type { Metric } from "../data/metric-rollups";

/** One bucket's measures over some units: its shape, variant and key fields (as the bucket names them). */
export interface BucketCount {
  shape: string;
  variant: string;
  keys: Record<string, unknown>;
  /** Counts; null where the bucket has none (guests without purposes have no reach). */
  measures: Record<string, number | null>;
}

const identity = (c: Pick<BucketCount, "shape" | "variant" | "keys">) =>
  JSON.stringify([c.shape, c.variant, Object.keys(c.keys).sort().map((k) => [k, c.keys[k]])]);

/**
 * Adds `after − before` to the stored buckets of the family. `grandTotal(shape)` says which shapes
 * keep their one bucket at zero. Returns the number of buckets written.
 */
export async function applyBucketDeltas(
  client: PoolClient, groupId: string, metric: Metric, before: BucketCount[], after: BucketCount[], grandTotal: (shape: string) => boolean,
): Promise<number> {
  const deltas = new Map<string, BucketCount>();
  const add = (c: BucketCount, sign: 1 | -1) => {
    const id = identity(c);
    const d = deltas.get(id) ?? { shape: c.shape, variant: c.variant, keys: c.keys, measures: {} };
    for (const [m, v] of Object.entries(c.measures)) {
      const prior = d.measures[m];
      d.measures[m] = v === null ? (prior ?? null) : (prior ?? 0) + sign * v;
    }
    deltas.set(id, d);
  };
  for (const c of before) add(c, -1);
  for (const c of after) add(c, 1);
  const changed = [...deltas.values()].filter((d) => Object.values(d.measures).some((v) => v !== null && v !== 0));
  if (!changed.length) return 0;

  // The stored buckets the deltas name: every bucket of a shape has the same key fields, so a bucket
  // containing the delta's keys is that bucket.
  const { rows: stored } = await client.query<{ i: number; id: string; bucket: Record<string, unknown> }>(
    `SELECT x.i::int AS i, m.id::text AS id, m.bucket
     FROM jsonb_array_elements($3::jsonb) WITH ORDINALITY AS x(d, i)
     JOIN metric_rollups m ON m.property_group_id = $1 AND m.metric = $2 AND m.shape = x.d->>'shape' AND m.variant = x.d->>'variant'
       AND m.bucket @> (x.d->'keys')`,
    [groupId, metric, JSON.stringify(changed.map(({ shape, variant, keys }) => ({ shape, variant, keys })))],
  );
  const storedOf = new Map(stored.map((s) => [s.i - 1, s]));
  const updates: { id: string; bucket: Record<string, unknown> }[] = [];
  const inserts: { shape: string; variant: string; bucket: Record<string, unknown> }[] = [];
  const deletes: string[] = [];
  changed.forEach((d, i) => {
    const s = storedOf.get(i);
    const bucket: Record<string, unknown> = { ...d.keys, ...(s?.bucket ?? {}) };
    for (const [m, v] of Object.entries(d.measures)) {
      const prior = (s?.bucket[m] as number | null | undefined) ?? null;
      bucket[m] = v === null ? prior : (prior ?? 0) + v;
    }
    const empty = Object.keys(d.measures).every((m) => !bucket[m]);
    if (empty && !grandTotal(d.shape)) {
      if (s) deletes.push(s.id);
    } else if (s) updates.push({ id: s.id, bucket });
    else inserts.push({ shape: d.shape, variant: d.variant, bucket });
  });
  if (deletes.length) await client.query("DELETE FROM metric_rollups WHERE property_group_id = $1 AND id = ANY($2::bigint[])", [groupId, deletes]);
  if (updates.length) {
    // By primary key: each bucket its new JSON, looked up by id in one object.
    await client.query(
      "UPDATE metric_rollups m SET bucket = $3::jsonb -> (m.id::text) WHERE m.property_group_id = $1 AND m.id = ANY($2::bigint[])",
      [groupId, updates.map((u) => u.id), JSON.stringify(Object.fromEntries(updates.map((u) => [u.id, u.bucket])))],
    );
  }
  if (inserts.length) {
    await client.query(
      `INSERT INTO metric_rollups (property_group_id, metric, shape, variant, period, bucket)
       SELECT $1, $2, x.shape, x.variant, NULL, x.bucket FROM jsonb_to_recordset($3::jsonb) AS x(shape text, variant text, bucket jsonb)`,
      [groupId, metric, JSON.stringify(inserts)],
    );
  }
  return deletes.length + updates.length + inserts.length;
}

/** Replaces every stored bucket of the family with `counts` (a whole rebuild from the facts). */
export async function replaceBuckets(client: PoolClient, groupId: string, metric: Metric, counts: BucketCount[]): Promise<number> {
  await client.query("DELETE FROM metric_rollups WHERE property_group_id = $1 AND metric = $2", [groupId, metric]);
  await client.query(
    `INSERT INTO metric_rollups (property_group_id, metric, shape, variant, period, bucket)
     SELECT $1, $2, x.shape, x.variant, NULL, x.bucket FROM jsonb_to_recordset($3::jsonb) AS x(shape text, variant text, bucket jsonb)`,
    [groupId, metric, JSON.stringify(counts.map(({ shape, variant, keys, measures }) => ({ shape, variant, bucket: { ...keys, ...measures } })))],
  );
  return counts.length;
}

/**
 * Runs a whole group's aggregate over facts this transaction has just rewritten: their statistics
 * still describe the tables before (often empty), so the planner would pick nested loops meant for a
 * few rows; over every row, hash joins are the plan.
 */
export async function wholeGroup<T>(client: PoolClient, run: () => Promise<T>): Promise<T> {
  await client.query("SET LOCAL enable_nestloop = off");
  const result = await run();
  // On failure the transaction rolls back, and SET LOCAL with it.
  await client.query("RESET enable_nestloop");
  return result;
}
