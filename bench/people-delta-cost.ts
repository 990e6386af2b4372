// What one delta pass of the guest and consent rollups costs PostgreSQL (issue 44): on a fresh
// PostgreSQL with GUESTS guests per group, after the whole rebuild has built the facts, WRITES writes
// (new guests, master merges, country changes, loyalty memberships, consent observations, e-mail
// changes) leave their change rows; the pass that applies them is timed, then run again on the same
// touches under EXPLAIN (ANALYZE, BUFFERS), statement by statement inside a savepoint, to show each
// statement's execution time and that none scans a table whole (only index lookups). Prints one JSON.
// Usage: npx tsx bench/people-delta-cost.ts   (GUESTS=100000 WRITES=50)
import { execFileSync } from "node:child_process";
import { mkdirSync, readFileSync } from "node:fs";
import { Client, type PoolClient } from "pg";
import { startTestPostgres } from "../test/helpers/postgres";
import { consentFamily } from "../src/rollups/consent-family";
import { guestsFamily } from "../src/rollups/guests-family";
import type { IncrementalFamily } from "../src/rollups/family";

const GUESTS = Number(process.env.GUESTS ?? 100_000);
const WRITES = Number(process.env.WRITES ?? 50);
/** Tables whose whole scan would make the pass grow with the group. */
const BIG = ["guest_profiles", "consent_observations", "loyalty_members", "guest_rollup_facts", "consent_rollup_points", "contact_consent_state", "metric_rollups"];

interface Explained {
  statement: string;
  executionMs: number;
  planningMs: number;
  wholeScans: string[];
  /** The plan's nodes: type and relation or index. */
  plan: string;
}

/** A client that runs each statement first under EXPLAIN ANALYZE in a savepoint (rolled back), then for real. */
function explaining(c: Client, out: Explained[]): PoolClient {
  const walk = (node: Record<string, unknown>, scans: string[], nodes: string[]) => {
    if (node["Node Type"] === "Seq Scan" && BIG.includes(node["Relation Name"] as string)) scans.push(node["Relation Name"] as string);
    nodes.push(`${node["Node Type"]}${node["Index Name"] ? `(${node["Index Name"]})` : node["Relation Name"] ? `(${node["Relation Name"]})` : ""}`);
    for (const child of (node.Plans as Record<string, unknown>[] | undefined) ?? []) walk(child, scans, nodes);
  };
  return {
    async query(text: string, values?: unknown[]) {
      await c.query("SAVEPOINT explain");
      const { rows } = await c.query<{ "QUERY PLAN": Record<string, unknown>[] }>(`EXPLAIN (ANALYZE, BUFFERS, FORMAT JSON) ${text}`, values);
      await c.query("ROLLBACK TO SAVEPOINT explain");
      const [plan] = rows[0]["QUERY PLAN"];
      const scans: string[] = [];
      const nodes: string[] = [];
      walk(plan.Plan as Record<string, unknown>, scans, nodes);
      out.push({ statement: text.replace(/\s+/g, " ").slice(0, 90), executionMs: plan["Execution Time"] as number, planningMs: plan["Planning Time"] as number, wholeScans: scans, plan: nodes.join(" > ") });
      return c.query(text, values);
    },
  } as unknown as PoolClient;
}

async function main() {
  const pg = await startTestPostgres();
  try {
    await measure(pg.adminUrl.bind(pg));
  } finally {
    // KEEP=1 leaves the server running for a look at its data (its URL is printed); stop it by its pid.
    if (process.env.KEEP) console.error(`kept: ${pg.adminUrl("d")} (data ${pg.dataDir})`);
    else pg.stop();
  }
}

async function measure(adminUrl: (database?: string) => string) {
  mkdirSync("bench/.data", { recursive: true });
  const setup = new Client({ connectionString: adminUrl() });
  await setup.connect();
  await setup.query("CREATE DATABASE d");
  await setup.end();
  const url = adminUrl("d");
  const env = { ...process.env, DATABASE_URL: url, LOG_LEVEL: "warn" };
  execFileSync(process.execPath, ["bin/gcs.js", "migrate"], { env, stdio: ["ignore", 2, 2] });
  execFileSync(process.execPath, ["bin/gcs.js", "fixtures", "--out", "bench/.data/people-delta-cost-manifest.json", "--guests", String(GUESTS)], { env, stdio: ["ignore", 2, 2] });
  const manifest = JSON.parse(readFileSync("bench/.data/people-delta-cost-manifest.json", "utf8"));
  const group: string = manifest.groups.A.id;
  const c = new Client({ connectionString: url });
  await c.connect();
  await c.query("ANALYZE");
  const { rows: [built] } = await c.query<{ variants: string[]; facts: boolean }>(
    "SELECT variants, facts_built AS facts FROM metric_rollup_state WHERE property_group_id = $1 AND metric = 'guests'", [group]);
  // The whole rebuild `gcs fixtures` ran (the repair path), per family, for scale.
  const { rows: rebuilt } = await c.query<{ metric: string; ms: number }>(
    "SELECT metric, duration_ms AS ms FROM metric_rollup_state WHERE property_group_id = $1 AND metric IN ('guests', 'consent')", [group]);
  const facts = Number((await c.query("SELECT count(*) AS n FROM guest_rollup_facts WHERE property_group_id = $1", [group])).rows[0].n);

  // The writes a property system's sync makes, one statement each.
  const { rows: guests } = await c.query<{ id: string; email: string; phone: string | null }>(
    "SELECT id, lower(btrim(email)) AS email, phone FROM guest_profiles WHERE property_group_id = $1 AND email IS NOT NULL ORDER BY id LIMIT $2", [group, WRITES]);
  const { rows: [master] } = await c.query<{ id: string }>("SELECT master_profile_id AS id FROM guest_profiles WHERE property_group_id = $1 AND master_profile_id IS NOT NULL LIMIT 1", [group]);
  const guestCols = (await c.query<{ c: string }>(
    "SELECT string_agg(quote_ident(column_name), ', ') AS c FROM information_schema.columns WHERE table_schema = 'public' AND table_name = 'guest_profiles' AND column_name NOT IN ('id', 'source_id', 'email')")).rows[0].c;
  for (let i = 0; i < WRITES; i++) {
    const g = guests[i % guests.length];
    switch (i % 6) {
      case 0:
        await c.query(`INSERT INTO guest_profiles (id, source_id, email, ${guestCols}) SELECT gen_random_uuid(), source_id || '-b' || $2, 'bench' || $2 || '@example.org', ${guestCols} FROM guest_profiles WHERE id = $1`, [g.id, i]);
        break;
      case 1:
        await c.query("UPDATE guest_profiles SET master_profile_id = $2 WHERE id = $1", [g.id, master.id]);
        break;
      case 2:
        await c.query("UPDATE guest_profiles SET country_code = 'IS' WHERE id = $1", [g.id]);
        break;
      case 3:
        await c.query("UPDATE loyalty_members SET lifetime_points = lifetime_points + 100 WHERE id = (SELECT id FROM loyalty_members WHERE property_group_id = $1 ORDER BY id OFFSET $2 LIMIT 1)", [group, i]);
        break;
      case 4:
        await c.query(
          `INSERT INTO consent_observations (id, property_group_id, contact_type, contact_value, purpose, channel, status, source, observed_at)
           VALUES (gen_random_uuid(), $1, 'email', $2, 'email_marketing', 'web', $3, 'bench', now())`, [group, g.email, i % 12 === 4 ? "withdrawn" : "granted"]);
        break;
      case 5:
        await c.query("UPDATE guest_profiles SET email = 'changed' || $2 || '@example.org' WHERE id = $1", [g.id, i]);
        break;
    }
  }

  const result: Record<string, unknown> = { guests_per_group: GUESTS, writes: WRITES, variants: built.variants, facts_built: built.facts, guest_facts: facts,
    whole_rebuild_ms: Object.fromEntries(rebuilt.map((r) => [r.metric, r.ms])), families: {} };
  for (const [metric, family] of [["guests", guestsFamily], ["consent", consentFamily]] as [string, IncrementalFamily][]) {
    const { rows: changes } = await c.query<{ touched: unknown[] }>("SELECT touched FROM metric_rollup_changes WHERE property_group_id = $1 AND metric = $2", [group, metric]);
    const touched = changes.map((r) => r.touched);
    // Timed: the pass as the refresher runs it (its statements and their round trips on loopback).
    await c.query("BEGIN");
    const started = performance.now();
    const units = await family.applyTouches(c as unknown as PoolClient, group, built.variants, touched);
    const passMs = performance.now() - started;
    await c.query("ROLLBACK");
    // Explained: the same pass again, each statement under EXPLAIN ANALYZE first.
    const explained: Explained[] = [];
    await c.query("BEGIN");
    await family.applyTouches(explaining(c, explained), group, built.variants, touched);
    await c.query("ROLLBACK");
    (result.families as Record<string, unknown>)[metric] = {
      change_rows: changes.length,
      units,
      pass_ms: Math.round(passMs * 10) / 10,
      postgres_execution_ms: Math.round(explained.reduce((s, e) => s + e.executionMs, 0) * 10) / 10,
      postgres_planning_ms: Math.round(explained.reduce((s, e) => s + e.planningMs, 0) * 10) / 10,
      whole_scans: explained.flatMap((e) => e.wholeScans),
      statements: explained.map((e) => ({ ...e, executionMs: Math.round(e.executionMs * 100) / 100, planningMs: Math.round(e.planningMs * 100) / 100 })),
    };
  }
  console.log(JSON.stringify(result, null, 2));
  await c.end();
}

main().catch((e) => {
  console.error(e);
  process.exit(1);
});
