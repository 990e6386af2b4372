// What the dashboard rollups cost the writes that feed them (issue 28): the statement triggers of
// migration 20261127150000_metric_rollups append one change row per statement and group. Measured
// as an A/B on a fresh PostgreSQL with the fixtures: single-row inserts of stays (each its own
// transaction), one 1,000-row insert, and 8 writers at once, with the triggers on and then off,
// interleaved over ROUNDS. Prints µs per statement and per row.
// Usage: npx tsx bench/rollup-write-cost.ts   (GUESTS=2000 ROUNDS=3 STATEMENTS=2000)
import { execFileSync } from "node:child_process";
import { readFileSync } from "node:fs";
import { Client, Pool } from "pg";
import { startTestPostgres } from "../test/helpers/postgres";

const GUESTS = Number(process.env.GUESTS ?? 2000);
const ROUNDS = Number(process.env.ROUNDS ?? 3);
const STATEMENTS = Number(process.env.STATEMENTS ?? 2000);
const TRIGGERS = ["metric_rollups_insert", "metric_rollups_update", "metric_rollups_delete"];

async function main() {
  const pg = await startTestPostgres();
  const admin = new Client({ connectionString: pg.adminUrl() });
  await admin.connect();
  await admin.query("CREATE DATABASE w");
  await admin.end();
  const url = pg.adminUrl("w");
  const env = { ...process.env, DATABASE_URL: url, LOG_LEVEL: "warn" };
  execFileSync(process.execPath, ["bin/gcs.js", "migrate"], { env, stdio: "inherit" });
  execFileSync(process.execPath, ["bin/gcs.js", "fixtures", "--out", "bench/.data/rollup-write-cost-manifest.json", "--guests", String(GUESTS)], { env, stdio: "inherit" });
  const manifest = JSON.parse(readFileSync("bench/.data/rollup-write-cost-manifest.json", "utf8"));
  const pool = new Pool({ connectionString: url, max: 8 });
  const { rows: [template] } = await pool.query("SELECT id FROM reservations WHERE property_group_id = $1 AND kind = 'stay' LIMIT 1", [manifest.groups.A.id]);
  // A copy of one stay, inserted with a new id and source id: the row shape a loader writes.
  await pool.query("CREATE TABLE stay_template AS SELECT * FROM reservations WHERE id = $1", [template.id]);
  const cols = (await pool.query<{ c: string }>(
    "SELECT string_agg(quote_ident(column_name), ', ' ORDER BY ordinal_position) AS c FROM information_schema.columns WHERE table_name = 'reservations' AND table_schema = 'public'",
  )).rows[0].c;
  const others = cols.split(", ").filter((c) => c !== "id" && c !== "source_id").join(", ");
  const single = (c: Pool | Client, tag: string) =>
    c.query(`INSERT INTO reservations (id, source_id, ${others}) SELECT gen_random_uuid(), $1, ${others} FROM stay_template`, [tag]);
  const batch = (c: Pool | Client, tag: string, rows: number) =>
    c.query(`INSERT INTO reservations (id, source_id, ${others}) SELECT gen_random_uuid(), $1 || i, ${others} FROM stay_template, generate_series(1, ${rows}) i`, [tag]);

  const setTriggers = async (on: boolean) => {
    for (const t of TRIGGERS) await pool.query(`ALTER TABLE reservations ${on ? "ENABLE ALWAYS" : "DISABLE"} TRIGGER ${t}`);
  };
  const results: Record<string, Record<string, number[]>> = { on: {}, off: {} };
  const record = (mode: string, name: string, value: number) => ((results[mode][name] ??= []).push(value));
  let tag = 0;
  for (let round = 1; round <= ROUNDS; round++) {
    for (const mode of ["off", "on"] as const) {
      await setTriggers(mode === "on");
      const client = await pool.connect();
      let t = performance.now();
      for (let i = 0; i < STATEMENTS; i++) await single(client, `wc-${round}-${mode}-${tag++}`);
      record(mode, "single-row insert, µs per statement", ((performance.now() - t) * 1000) / STATEMENTS);
      t = performance.now();
      await batch(client, `wcb-${round}-${mode}-${tag++}-`, 1000);
      record(mode, "1,000-row insert, µs per row", (performance.now() - t));
      client.release();
      t = performance.now();
      await Promise.all(Array.from({ length: 8 }, async (_, w) => {
        for (let i = 0; i < STATEMENTS / 8; i++) await single(pool, `wcc-${round}-${mode}-${w}-${tag++}`);
      }));
      record(mode, "8 concurrent writers, single-row inserts per second", STATEMENTS / ((performance.now() - t) / 1000));
    }
  }
  const median = (xs: number[]) => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)];
  console.log(`\nRollup change triggers: cost to writes (${GUESTS} guests per group, ${STATEMENTS} statements per run, median of ${ROUNDS} rounds)\n`);
  console.log("| measure | triggers off | triggers on | change |");
  console.log("|---|---:|---:|---:|");
  for (const name of Object.keys(results.on)) {
    const [off, on] = [median(results.off[name]), median(results.on[name])];
    console.log(`| ${name} | ${off.toFixed(1)} | ${on.toFixed(1)} | ${(((on - off) / off) * 100).toFixed(1)}% |`);
  }
  const { rows: [changes] } = await pool.query("SELECT count(*)::int AS n FROM metric_rollup_changes");
  console.log(`\nchange rows appended (triggers on): ${changes.n}`);
  await pool.end();
  pg.stop();
}
main().catch((e) => {
  console.error(e);
  process.exit(1);
});
