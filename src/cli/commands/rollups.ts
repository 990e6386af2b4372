// `gcs rollups rebuild` (issue 44): the repair path of the dashboard rollups. The refresher applies
// what each write touched; a whole-pair rebuild recomputes a (group, aggregate) pair from the live
// tables, as after a migration that changes what is stored, or when an operator doubts a rollup.
import { METRICS, type Metric } from "../../data/metric-rollups";
import { rebuildFamily, type RebuildReport } from "../../rollups/refresh";
import { cliConfig, printJson, withDatabase } from "../database";

/** How long to wait for a pair another instance's refresher holds before giving up on it. */
const LOCK_WAIT_MS = 15 * 60_000;
const RETRY_MS = 500;

export async function rebuild(opts: { group?: string; aggregate?: Metric; json?: boolean }): Promise<void> {
  const reports = await withDatabase(cliConfig(), true, async (db) => {
    const { rows } = await db.primaryPool.query<{ id: string }>(
      "SELECT id::text FROM property_groups WHERE $1::uuid IS NULL OR id = $1::uuid ORDER BY id", [opts.group ?? null]);
    if (opts.group && !rows.length) throw new Error(`no property group ${opts.group} (see the start banner or gcs keys list)`);
    const out: RebuildReport[] = [];
    for (const { id } of rows) {
      for (const metric of opts.aggregate ? [opts.aggregate] : METRICS) out.push(await rebuildWhenFree(() => rebuildFamily(db, id, metric)));
    }
    return out;
  });
  if (opts.json) return printJson(reports.map((r) => ({ group: r.groupId, aggregate: r.metric, rows: r.rows, duration_ms: r.durationMs })));
  if (!reports.length) return console.log("no property groups: nothing to rebuild");
  for (const r of reports) console.log(`rebuilt ${r.metric} of group ${r.groupId}: ${r.rows} rows in ${r.durationMs} ms`);
}

/** A running `gcs serve` may hold the pair's lock for one refresh: wait for it rather than skip. */
async function rebuildWhenFree(attempt: () => Promise<RebuildReport>): Promise<RebuildReport> {
  const deadline = Date.now() + LOCK_WAIT_MS;
  for (;;) {
    const report = await attempt();
    if (report.rebuilt) return report;
    if (Date.now() > deadline) throw new Error(`${report.metric} of group ${report.groupId} stayed locked by another instance for ${LOCK_WAIT_MS / 60_000} minutes; nothing more rebuilt`);
    await new Promise((resolve) => setTimeout(resolve, RETRY_MS));
  }
}
