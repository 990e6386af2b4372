// How long a rebuild of each dashboard rollup takes on a loaded database (the freshness bound of
// docs/aggregates.md is one refresh interval plus one rebuild). Rebuilds every family of every group
// once, in turn, on an otherwise idle database, and prints the durations and stored rows.
// Usage: DATABASE_URL=postgresql://… npx tsx bench/rollup-rebuild.ts   (ONLY=consent,guests: those
// rollups only; GROUPS=1: the largest group only)
import { Client } from "pg";
import { openDatabase } from "../src/db/database";
import { METRICS } from "../src/data/metric-rollups";
import { rebuildFamily } from "../src/rollups/refresh";

async function main() {
  const url = process.env.DATABASE_URL;
  if (!url) throw new Error("DATABASE_URL names the database to rebuild the rollups of");
  const admin = new Client({ connectionString: url });
  await admin.connect();
  const { rows: groups } = await admin.query<{ id: string; guests: number }>(
    "SELECT g.id, (SELECT count(*)::int FROM guest_profiles gp WHERE gp.property_group_id = g.id) AS guests FROM property_groups g ORDER BY 2 DESC",
  );
  await admin.end();
  const db = await openDatabase({ databaseUrl: url, dataDir: "", poolSize: 2 });
  console.log("| group (guests) | rollup | rebuild | rows stored |");
  console.log("|---|---|---:|---:|");
  const only = process.env.ONLY?.split(",");
  for (const g of groups.filter((x) => x.guests > 0).slice(0, Number(process.env.GROUPS ?? groups.length))) {
    for (const metric of METRICS.filter((m) => !only || only.includes(m))) {
      const report = await rebuildFamily(db, g.id, metric);
      console.log(`| ${g.id.slice(0, 8)}… (${g.guests.toLocaleString("en")}) | ${metric} | ${(report.durationMs / 1000).toFixed(1)} s | ${report.rows.toLocaleString("en")} |`);
    }
  }
  await db.close();
}
main().catch((e) => {
  console.error(e);
  process.exit(1);
});
