// Keeps the dashboard rollups (data/metric-rollups.ts) current. Statement triggers append a row to
// metric_rollup_changes for each group and family a write touches, with the keys of the rows it
// touched; every GCS_ROLLUP_REFRESH_MS this worker refreshes each family with changes (or never
// built), so a stored answer is what the live statement gives on the rows as of when the refresh began.
//
// Two paths (issue 44). The daily one applies the change rows' touches: a family that follows the
// writes (FAMILIES, src/rollups/family.ts) moves only the buckets the touched units count in. The
// repair path rebuilds the pair whole from the live statements (and the family's facts): for a pair
// never built, or built before its family kept facts, a change that recorded no keys (a bulk
// statement, a property's time zone), a family with no incremental module, a failed application, or
// on demand (rebuildFamily).
//
// Either is one transaction on the primary: it takes the family's advisory lock (another instance
// skips it), consumes the change rows, recomputes on the same connection without the request
// statement timeout, and writes the stored rows. A change committed during a refresh leaves a new
// change row, so the next pass picks it up; a failed refresh rolls back and keeps its changes.
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
import { staysFamily } from "./stays-family";
import { guestsFamily } from "./guests-family";
import { consentFamily } from "./consent-family";
import { reviewsFamily } from "./reviews-family";
import { purposesOf } from "./purposes";

/** The families that follow the writes; undefined: rebuilt whole after every change. */
export const FAMILIES: Record<Metric, IncrementalFamily | undefined> = {
  stays: staysFamily,
  guests: guestsFamily,
  consent: consentFamily,
  reviews: reviewsFamily,
};

/** A rebuild's own statement timeout: whole-history scans at a million guests take seconds. */
const REBUILD_STATEMENT_TIMEOUT = "10min";
const ALL_DATES = { arrivalFrom: "0001-01-01", arrivalTo: "9999-12-31" };

export interface RebuildReport {
  groupId: string;
  metric: Metric;
  /** False when another instance was refreshing it. */
  rebuilt: boolean;
  /** Which path ran: the change rows' touches applied, or the whole pair rebuilt. */
  path: "touches" | "whole" | null;
  /** Whole: the stored rows written. Touches: the units re-applied. */
  rows: number;
  durationMs: number;
  /** Why applying the touches failed, when the pair was rebuilt whole instead. */
  repaired?: string;
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
 * Rebuilds one family of one group whole (the repair path) in one transaction; skipped when another
 * instance holds it. It reads and writes that group's rows only, as that group (db/session.ts).
 */
export function rebuildFamily(db: Database, groupId: string, metric: Metric): Promise<RebuildReport> {
  return asGroup(groupId, () => refreshPair(db, groupId, metric, "whole"));
}

/** Refreshes one family of one group: its change rows' touches applied when it can, else rebuilt whole. */
export function refreshFamily(db: Database, groupId: string, metric: Metric): Promise<RebuildReport> {
  return asGroup(groupId, () => refreshPair(db, groupId, metric, "touches"));
}

/** The whole-pair rebuild, on the refresh's transaction: the stored rows and the family's facts. */
async function rebuildWhole(client: PoolClient, groupId: string, metric: Metric, variants: string[]): Promise<number> {
  const family = FAMILIES[metric];
  let rows = 0;
  if (metric === "reviews") {
    rows = await writeReviews(client, groupId);
  } else if (!family?.rebuildsBuckets) {
    const stored = await compute(client, groupId, metric, variants);
    await client.query("DELETE FROM metric_rollups WHERE property_group_id = $1 AND metric = $2", [groupId, metric]);
    await client.query(
      `INSERT INTO metric_rollups (property_group_id, metric, shape, variant, period, bucket)
       SELECT $1, $2, x.shape, x.variant, x.period::date, x.bucket FROM jsonb_to_recordset($3::jsonb) AS x(shape text, variant text, period text, bucket jsonb)`,
      [groupId, metric, JSON.stringify(stored)],
    );
    rows = stored.length;
  }
  if (family) await family.rebuildFacts(client, groupId, variants);
  if (family?.rebuildsBuckets) {
    const { rows: [{ n }] } = await client.query<{ n: number }>("SELECT count(*)::int AS n FROM metric_rollups WHERE property_group_id = $1 AND metric = $2", [groupId, metric]);
    rows = n;
  }
  return rows;
}

async function refreshPair(db: Database, groupId: string, metric: Metric, wanted: "touches" | "whole"): Promise<RebuildReport> {
  const started = performance.now();
  const client = await db.primaryPool.connect();
  try {
    await client.query("BEGIN");
    const { rows: [lock] } = await client.query<{ locked: boolean }>("SELECT pg_try_advisory_xact_lock(hashtext('metric_rollups'), hashtext($1 || ':' || $2)) AS locked", [groupId, metric]);
    if (!lock.locked) {
      await client.query("ROLLBACK");
      return { groupId, metric, rebuilt: false, path: null, rows: 0, durationMs: 0 };
    }
    await client.query(`SET LOCAL statement_timeout = '${REBUILD_STATEMENT_TIMEOUT}'`);
    // Consumed first: every change committed before this point is visible to the statements below.
    const { rows: changes } = await client.query<{ touched: unknown[] | null }>(
      "DELETE FROM metric_rollup_changes WHERE property_group_id = $1 AND metric = $2 RETURNING touched",
      [groupId, metric],
    );
    const { rows: [{ now }] } = await client.query<{ now: Date }>("SELECT clock_timestamp() AS now");
    const { rows: [state] } = await client.query<{ variants: string[]; factsBuilt: boolean }>(
      `SELECT variants, facts_built AS "factsBuilt" FROM metric_rollup_state WHERE property_group_id = $1 AND metric = $2`,
      [groupId, metric],
    );
    const family = FAMILIES[metric];
    let path: "touches" | "whole" = "whole";
    let rows = 0;
    let variants: string[] = [];
    let repaired: string | undefined;
    if (wanted === "touches" && family && state?.factsBuilt && changes.every((c) => c.touched !== null)) {
      variants = state.variants;
      // A failed application (stored buckets that disagree with the facts) is repaired by the
      // whole rebuild at once, in the same transaction.
      await client.query("SAVEPOINT touches");
      try {
        rows = await family.applyTouches(client, groupId, variants, changes.map((c) => c.touched!));
        path = "touches";
      } catch (err) {
        await client.query("ROLLBACK TO SAVEPOINT touches");
        repaired = (err as Error).message;
      }
    }
    if (path === "whole") {
      variants = metric === "guests" || metric === "consent" ? await purposesOf(client, groupId) : [];
      rows = await rebuildWhole(client, groupId, metric, variants);
    }
    const durationMs = Math.round(performance.now() - started);
    await client.query(
      `INSERT INTO metric_rollup_state (property_group_id, metric, computed_from, refreshed_at, duration_ms, variants, facts_built, last_path)
       VALUES ($1, $2, $3, clock_timestamp(), $4, $5, $6, $7)
       ON CONFLICT (property_group_id, metric) DO UPDATE SET computed_from = EXCLUDED.computed_from,
         refreshed_at = EXCLUDED.refreshed_at, duration_ms = EXCLUDED.duration_ms, variants = EXCLUDED.variants,
         facts_built = EXCLUDED.facts_built, last_path = EXCLUDED.last_path`,
      [groupId, metric, now, durationMs, variants, family !== undefined, path],
    );
    await client.query("COMMIT");
    return { groupId, metric, rebuilt: true, path, rows, durationMs, ...(repaired ? { repaired } : {}) };
  } catch (err) {
    await client.query("ROLLBACK").catch(() => undefined);
    throw err;
  } finally {
    client.release();
  }
}

/**
 * One pass: refreshes every family that is due (of `groupId` only, when given). Finding them crosses
 * groups: the rollup refresher's cross-group path (db/session.ts).
 */
export function refreshRollups(db: Database, opts: RefreshOptions = {}): Promise<RebuildReport[]> {
  return acrossGroups("rollup refresher", () => rebuildDue(db, opts));
}

interface RefreshOptions {
  groupId?: string;
  signal?: AbortSignal;
  /** False: rebuild every due pair whole (GCS_ROLLUP_INCREMENTAL=false). Default true. */
  incremental?: boolean;
}

async function rebuildDue(db: Database, opts: RefreshOptions): Promise<RebuildReport[]> {
  const reports: RebuildReport[] = [];
  for (const { groupId, metric } of await dueFamilies(db.primaryPool, opts.groupId)) {
    if (opts.signal?.aborted) break;
    reports.push(await (opts.incremental === false ? rebuildFamily : refreshFamily)(db, groupId, metric));
  }
  return reports;
}

/** The background refresher of `gcs serve`: any number of instances may run it. */
export function startRollupRefresher(db: Database, logger: Logger, intervalMs: number, opts: { incremental?: boolean } = {}): Poller {
  return startPoller(intervalMs, async (signal) => {
    try {
      for (const report of await refreshRollups(db, { signal, incremental: opts.incremental })) {
        if (report.repaired) logger.warn(report, "rollup touches could not be applied; the pair was rebuilt whole");
        else if (report.rebuilt) logger.debug(report, "rollups refreshed");
      }
    } catch (err) {
      logger.warn({ err: (err as Error).message }, "rollup refresh failed; it is retried on the next pass");
    }
  });
}
