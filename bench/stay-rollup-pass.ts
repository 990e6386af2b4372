// What one refresh pass of the stay rollups costs when it applies touches (issue 44), against the
// whole-pair rebuild it replaces. On a fresh PostgreSQL with `gcs fixtures --guests GUESTS`: builds
// every rollup, then for each N in SIZES writes N single-row updates to the stays of N distinct
// persons of group A (nights +1, then back), and refreshes once; prints the pass's duration (the
// refresh transaction: lock, change rows, facts, delta, state) and the server's CPU time per pass
// (all its processes, from /proc), per N; then the whole rebuild's.
// Usage: npx tsx bench/stay-rollup-pass.ts   (GUESTS=20000 SIZES=1,10,50,200 ROUNDS=3 EXPLAIN=1)
import { execFileSync } from "node:child_process";
import { copyFileSync, mkdirSync, readdirSync, readFileSync } from "node:fs";
import path from "node:path";
import { Client } from "pg";
import { openDatabase } from "../src/db/database";
import { rebuildFamily, refreshRollups } from "../src/rollups/refresh";
import { startTestPostgres, type TestPostgres } from "../test/helpers/postgres";

const GUESTS = Number(process.env.GUESTS ?? 20000);
const SIZES = (process.env.SIZES ?? "1,10,50,200").split(",").map(Number);
const ROUNDS = Number(process.env.ROUNDS ?? 3);

const median = (xs: number[]) => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)];

/** CPU time (user + system, ms) of the server's processes so far: the postmaster's and its children's. */
function serverCpuMs(dataDir: string): number {
  const postmaster = Number(readFileSync(path.join(dataDir, "postmaster.pid"), "utf8").split("\n")[0]);
  let ticks = 0;
  for (const pid of readdirSync("/proc").filter((d) => /^\d+$/.test(d))) {
    let stat: string;
    try {
      stat = readFileSync(`/proc/${pid}/stat`, "utf8");
    } catch {
      continue; // exited meanwhile
    }
    const fields = stat.slice(stat.lastIndexOf(")") + 2).split(" ");
    if (Number(pid) === postmaster || Number(fields[1]) === postmaster) ticks += Number(fields[11]) + Number(fields[12]);
  }
  return (ticks * 1000) / 100; // USER_HZ: 100 ticks a second
}

async function main() {
  const pg = await startTestPostgres();
  try {
    await measure(pg);
  } finally {
    pg.stop(); // also when a step failed: no server is left behind
  }
}

async function measure(pg: TestPostgres) {
  const admin = new Client({ connectionString: pg.adminUrl() });
  await admin.connect();
  await admin.query("CREATE DATABASE p");
  await admin.end();
  const url = pg.adminUrl("p");
  const env = { ...process.env, DATABASE_URL: url, LOG_LEVEL: "warn" };
  execFileSync(process.execPath, ["bin/gcs.js", "migrate"], { env, stdio: "inherit" });
  mkdirSync("bench/.data", { recursive: true });
  const started = performance.now();
  execFileSync(process.execPath, ["bin/gcs.js", "fixtures", "--out", "bench/.data/stay-rollup-pass-manifest.json", "--guests", String(GUESTS)], { env, stdio: "inherit" });
  console.log(`fixtures and first build: ${((performance.now() - started) / 1000).toFixed(1)} s`);
  const manifest = JSON.parse(readFileSync("bench/.data/stay-rollup-pass-manifest.json", "utf8"));
  const groupId: string = manifest.groups.A.id;
  const c = new Client({ connectionString: url });
  await c.connect();
  // EXPLAIN=1: the plans of the statements over 1 ms land in bench/.data/stay-rollup-pass-plans.log (auto_explain).
  if (process.env.EXPLAIN) {
    await c.query("ALTER DATABASE p SET session_preload_libraries = 'auto_explain'");
    await c.query("ALTER DATABASE p SET auto_explain.log_min_duration = '1ms'");
    await c.query("ALTER DATABASE p SET auto_explain.log_analyze = on");
    await c.query("ALTER DATABASE p SET auto_explain.log_buffers = on");
  }
  const db = await openDatabase({ databaseUrl: url, dataDir: "", poolSize: 2 });
  const { rows: [size] } = await c.query(
    "SELECT (SELECT count(*) FROM guest_profiles WHERE property_group_id = $1)::int AS guests, (SELECT count(*) FROM stay_rollup_facts WHERE property_group_id = $1)::int AS stays",
    [groupId],
  );
  console.log(`group A: ${size.guests.toLocaleString("en")} guest profiles, ${size.stays.toLocaleString("en")} counted stays`);
  await refreshRollups(db);
  // One stay of each of many persons, each updated by its own statement (its own change row).
  const { rows: stays } = await c.query<{ id: string }>(
    `SELECT DISTINCT ON (unit) reservation_id AS id FROM stay_rollup_facts WHERE property_group_id = $1 AND person IS NOT NULL ORDER BY unit, reservation_id LIMIT $2`,
    [groupId, Math.max(...SIZES) * ROUNDS * 2],
  );
  let next = 0;
  console.log("| touched persons | pass (median of " + ROUNDS + " × 2) | PostgreSQL CPU per pass (mean) | units re-applied |");
  console.log("|---:|---:|---:|---:|");
  for (const n of SIZES) {
    const durations: number[] = [];
    let cpuMs = 0;
    let units = 0;
    for (let round = 0; round < ROUNDS * 2; round++) {
      const delta = round % 2 ? -1 : 1;
      for (let i = 0; i < n; i++) {
        await c.query("UPDATE reservations SET departure_date = departure_date + $2::int WHERE id = $1", [stays[(next + i) % stays.length].id, delta]);
      }
      if (round % 2) next += n;
      const cpuBefore = serverCpuMs(pg.dataDir);
      const [report] = (await refreshRollups(db, { groupId })).filter((r) => r.metric === "stays");
      cpuMs += serverCpuMs(pg.dataDir) - cpuBefore;
      if (report.path !== "touches") throw new Error(`expected the touches path, got ${JSON.stringify(report)}`);
      durations.push(report.durationMs);
      units = report.rows;
    }
    console.log(`| ${n} | ${median(durations)} ms | ${(cpuMs / (ROUNDS * 2)).toFixed(1)} ms | ${units} |`);
  }
  const cpuBefore = serverCpuMs(pg.dataDir);
  const whole = await rebuildFamily(db, groupId, "stays");
  console.log(`whole rebuild of group A's stays: ${whole.durationMs} ms, PostgreSQL CPU ${Math.round(serverCpuMs(pg.dataDir) - cpuBefore)} ms (${whole.rows} buckets)`);
  await c.end();
  await db.close();
  if (process.env.EXPLAIN) copyFileSync(pg.logFile, "bench/.data/stay-rollup-pass-plans.log");
}

main().catch((e) => {
  console.error(e);
  process.exit(1);
});
