// Keeps the dashboard rollups (data/metric-rollups.ts) current. Statement triggers append a row to
// metric_rollup_changes for each group and family a write touches; every GCS_ROLLUP_REFRESH_MS this
// worker rebuilds each family with changes (or never built) from the live statements of
// data/metrics.ts, so a stored answer is what the live statement gave when the rebuild began.
//
// One rebuild is one transaction on the primary: it takes the family's advisory lock (another
// instance skips it), consumes the change rows, recomputes on the same connection without the
// request statement timeout, and swaps the stored rows. A change committed during a rebuild leaves a
// new change row, so the next pass picks it up; a failed rebuild rolls back and keeps its changes.
import type { PoolClient, Pool } from "pg";
import type { Database } from "../db/database";
import type { Logger } from "../logger";
import { liveMetrics } from "../data/metrics";
import { CONSENT_SHAPES, GUEST_SHAPES, METRICS, STAY_SHAPES, consentShapeKey, dimsKey, stayShapeKey, type Metric } from "../data/metric-rollups";
import { scopedSql } from "../data/sql";
import type { Readers } from "../data/readers";
import { startPoller, type Poller } from "../delivery/poller";
import { acrossGroups, asGroup } from "../db/session";
import type { IncrementalFamily } from "./family";
import { consentFamily } from "./consent-family";
import { guestsFamily } from "./guests-family";
import { PurposesChanged } from "./purposes";

/** The families that apply what a change touched (issue 44); the others are rebuilt whole. */
const FAMILIES: Record<Metric, IncrementalFamily | undefined> = {
  stays: undefined,
  guests: guestsFamily,
  consent: consentFamily,
  reviews: undefined,
};

/** At most this many consent purposes per group get guest and consent rollups (the most observed). */
const MAX_PURPOSES = 20;
/** A rebuild's own statement timeout: whole-history scans at a million guests take seconds. */
const REBUILD_STATEMENT_TIMEOUT = "10min";
const ALL_DATES = { arrivalFrom: "0001-01-01", arrivalTo: "9999-12-31" };

export interface RebuildReport {
  groupId: string;
  metric: Metric;
  /** False when another instance was rebuilding it. */
  rebuilt: boolean;
  rows: number;
  durationMs: number;
}

interface StoredRow {
  shape: string;
  variant: string;
  period: string | null;
  bucket: Record<string, unknown>;
}

/** Families with changes not yet applied, and families never built (`groupId`: only that group's). */
async function dueFamilies(pool: Pool, groupId?: string): Promise<{ groupId: string; metric: Metric }[]> {
  const { rows } = await pool.query<{ groupId: string; metric: Metric }>(
    `SELECT DISTINCT property_group_id AS "groupId", metric FROM metric_rollup_changes WHERE $1::uuid IS NULL OR property_group_id = $1::uuid
     UNION
     SELECT g.id, m FROM property_groups g CROSS JOIN unnest($2::text[]) AS m
     WHERE ($1::uuid IS NULL OR g.id = $1::uuid)
       AND NOT EXISTS (SELECT 1 FROM metric_rollup_state s WHERE s.property_group_id = g.id AND s.metric = m)
     ORDER BY 1, 2`,
    [groupId ?? null, METRICS],
  );
  return rows;
}

/** The consent purposes the group's observations name, most observed first. */
async function purposesOf(client: PoolClient, groupId: string): Promise<string[]> {
  const { rows } = await client.query<{ purpose: string }>(
    `SELECT purpose FROM consent_observations WHERE property_group_id = $1 GROUP BY purpose ORDER BY count(*) DESC, purpose LIMIT ${MAX_PURPOSES}`,
    [groupId],
  );
  return rows.map((r) => r.purpose).sort();
}

/** What the live statements answer for every stored shape of the family, across the whole group. */
async function compute(client: PoolClient, groupId: string, metric: Metric, variants: string[]): Promise<StoredRow[]> {
  // The live statements, on this transaction's connection: a data/ Readers needs only scope and sql.
  const readers = { scope: { propertyGroupId: groupId, propertyId: null }, sql: scopedSql(client as unknown as Pool, { propertyGroupId: groupId, propertyId: null }) } as Readers;
  const live = liveMetrics(readers);
  const out: StoredRow[] = [];
  const store = (shape: string, variant: string, rows: Record<string, unknown>[], withPeriod: boolean) => {
    for (const { bucket: _key, ...bucket } of rows) out.push({ shape, variant, period: withPeriod ? (bucket.period as string) : null, bucket });
  };
  switch (metric) {
    case "stays":
      for (const { grain, dims } of STAY_SHAPES) {
        // Shapes by property also keep each property's own returning guests, for callers narrowed to it.
        const returning = dims.includes("property") ? "caller-and-property" : "caller";
        store(stayShapeKey(grain, dims), "", (await live.stays(ALL_DATES, [grain, ...dims], true, returning)) as unknown as Record<string, unknown>[], true);
      }
      break;
    case "guests":
      // Every shape in one statement per purpose: the effective consent is decided once per guest.
      for (const purpose of variants.length ? variants : [null]) {
        for (const { dims, bucket } of await live.guestsBySets(GUEST_SHAPES, purpose === null ? null : { email: purpose, sms: purpose })) {
          out.push({ shape: dimsKey(dims), variant: purpose ?? "", period: null, bucket });
        }
      }
      break;
    case "consent":
      for (const purpose of variants) {
        // Each contact type is a grouping by contact_type (one set for both types: a set named twice returns its rows twice).
        const sets = [...new Map(CONSENT_SHAPES.map(({ contactType, dims }) => (contactType ? ["contact_type" as const, ...dims] : dims)).map((set) => [set.join(","), set])).values()];
        for (const { dims, bucket } of await live.consentBySets(purpose, sets)) {
          const { contactType, ...rest } = bucket;
          out.push({ shape: consentShapeKey((contactType as string | undefined) ?? null, dims.filter((d) => d !== "contact_type")), variant: purpose, period: null, bucket: rest });
        }
      }
      break;
    case "reviews":
      break;
  }
  return out;
}

async function writeReviews(client: PoolClient, groupId: string): Promise<number> {
  await client.query("DELETE FROM review_rollups WHERE property_group_id = $1", [groupId]);
  // A review's day and month are its instant's in the property's time zone, as data/metrics.ts counts them.
  const { rowCount } = await client.query(
    `INSERT INTO review_rollups (property_group_id, property_id, grain, period, source, reviews, rating_sum, r1, r2, r3, r4, r5)
     SELECT rv.property_group_id, rv.property_id, g.grain, g.period, rv.source, count(*), sum(rv.rating),
       count(*) FILTER (WHERE rv.rating = 1), count(*) FILTER (WHERE rv.rating = 2), count(*) FILTER (WHERE rv.rating = 3),
       count(*) FILTER (WHERE rv.rating = 4), count(*) FILTER (WHERE rv.rating = 5)
     FROM reviews rv JOIN properties p ON p.id = rv.property_id AND p.property_group_id = $1
     CROSS JOIN LATERAL (VALUES ('day', (rv.published_at AT TIME ZONE p.timezone)::date),
       ('month', date_trunc('month', rv.published_at AT TIME ZONE p.timezone)::date)) AS g(grain, period)
     WHERE rv.property_group_id = $1
     GROUP BY 1, 2, 3, 4, 5`,
    [groupId],
  );
  return rowCount ?? 0;
}

/**
 * Rebuilds one family of one group in one transaction; skipped when another instance holds it. It
 * reads and writes that group's rows only, as that group (db/session.ts).
 */
export function rebuildFamily(db: Database, groupId: string, metric: Metric): Promise<RebuildReport> {
  return asGroup(groupId, () => rebuildGroupFamily(db, groupId, metric));
}

async function rebuildGroupFamily(db: Database, groupId: string, metric: Metric): Promise<RebuildReport> {
  const started = performance.now();
  const client = await db.primaryPool.connect();
  try {
    await client.query("BEGIN");
    const { rows: [lock] } = await client.query<{ locked: boolean }>("SELECT pg_try_advisory_xact_lock(hashtext('metric_rollups'), hashtext($1 || ':' || $2)) AS locked", [groupId, metric]);
    if (!lock.locked) {
      await client.query("ROLLBACK");
      return { groupId, metric, rebuilt: false, rows: 0, durationMs: 0 };
    }
    await client.query(`SET LOCAL statement_timeout = '${REBUILD_STATEMENT_TIMEOUT}'`);
    // Consumed first: every change committed before this point is visible to the statements below.
    const { rows: changes } = await client.query<{ touched: unknown[] | null }>(
      "DELETE FROM metric_rollup_changes WHERE property_group_id = $1 AND metric = $2 RETURNING touched", [groupId, metric]);
    const { rows: [{ now }] } = await client.query<{ now: Date }>("SELECT clock_timestamp() AS now");
    const family = FAMILIES[metric];
    const { rows: [built] } = await client.query<{ variants: string[] }>("SELECT variants FROM metric_rollup_state WHERE property_group_id = $1 AND metric = $2", [groupId, metric]);
    let applied: number | undefined;
    if (family && built && changes.every((c) => c.touched !== null)) {
      try {
        applied = await family.applyTouches(client, groupId, built.variants, changes.map((c) => c.touched!));
      } catch (err) {
        if (!(err instanceof PurposesChanged)) throw err;
      }
    }
    const variants = applied !== undefined ? built.variants : metric === "guests" || metric === "consent" ? await purposesOf(client, groupId) : [];
    let rows: number;
    if (applied !== undefined) {
      rows = applied;
    } else if (metric === "reviews") {
      rows = await writeReviews(client, groupId);
    } else {
      const stored = await compute(client, groupId, metric, variants);
      await client.query("DELETE FROM metric_rollups WHERE property_group_id = $1 AND metric = $2", [groupId, metric]);
      await client.query(
        `INSERT INTO metric_rollups (property_group_id, metric, shape, variant, period, bucket)
         SELECT $1, $2, x.shape, x.variant, x.period::date, x.bucket FROM jsonb_to_recordset($3::jsonb) AS x(shape text, variant text, period text, bucket jsonb)`,
        [groupId, metric, JSON.stringify(stored)],
      );
      rows = stored.length;
      await family?.rebuildFacts(client, groupId, variants);
    }
    const durationMs = Math.round(performance.now() - started);
    await client.query(
      `INSERT INTO metric_rollup_state (property_group_id, metric, computed_from, refreshed_at, duration_ms, variants)
       VALUES ($1, $2, $3, clock_timestamp(), $4, $5)
       ON CONFLICT (property_group_id, metric) DO UPDATE SET computed_from = EXCLUDED.computed_from,
         refreshed_at = EXCLUDED.refreshed_at, duration_ms = EXCLUDED.duration_ms, variants = EXCLUDED.variants`,
      [groupId, metric, now, durationMs, variants],
    );
    await client.query("COMMIT");
    return { groupId, metric, rebuilt: true, rows, durationMs };
  } catch (err) {
    await client.query("ROLLBACK").catch(() => undefined);
    throw err;
  } finally {
    client.release();
  }
}

/**
 * One pass: rebuilds every family that is due (of `groupId` only, when given). Finding them crosses
 * groups: the rollup refresher's cross-group path (db/session.ts).
 */
export function refreshRollups(db: Database, opts: { groupId?: string; signal?: AbortSignal } = {}): Promise<RebuildReport[]> {
  return acrossGroups("rollup refresher", () => rebuildDue(db, opts));
}

async function rebuildDue(db: Database, opts: { groupId?: string; signal?: AbortSignal }): Promise<RebuildReport[]> {
  const reports: RebuildReport[] = [];
  for (const { groupId, metric } of await dueFamilies(db.primaryPool, opts.groupId)) {
    if (opts.signal?.aborted) break;
    reports.push(await rebuildFamily(db, groupId, metric));
  }
  return reports;
}

/** The background refresher of `gcs serve`: any number of instances may run it. */
export function startRollupRefresher(db: Database, logger: Logger, intervalMs: number): Poller {
  return startPoller(intervalMs, async (signal) => {
    try {
      for (const report of await refreshRollups(db, { signal })) {
        if (report.rebuilt) logger.debug(report, "rollups rebuilt");
      }
    } catch (err) {
      logger.warn({ err: (err as Error).message }, "rollup refresh failed; it is retried on the next pass");
    }
  });
}
