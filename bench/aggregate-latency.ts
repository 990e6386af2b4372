// One request at a time: the latency of each dashboard aggregate's data-layer call (one SQL statement),
// median of 5 after a warm-up, on a fresh PostgreSQL loaded with GUESTS guests per group (default
// 20,000). The service's HTTP and GraphQL layers are not in it: see bench/run.ts for those.
// Usage: GUESTS=20000 npx tsx bench/aggregate-latency.ts
import { execFileSync } from "node:child_process";
import { Client } from "pg";
import { startTestPostgres } from "../test/helpers/postgres";
import { openDatabase } from "../src/db/database";
import { createData } from "../src/data";
import { createReaders } from "../src/data/readers";
import { liveMetrics } from "../src/data/metrics";
import { STAY_SHAPES } from "../src/data/metric-rollups";
import { createLogger } from "../src/logger";
import { readFileSync } from "node:fs";

async function main() {
  const pg = await startTestPostgres();
  const admin = new Client({ connectionString: pg.adminUrl() });
  await admin.connect();
  await admin.query("CREATE DATABASE m");
  await admin.end();
  const url = pg.adminUrl("m");
  const env = { ...process.env, DATABASE_URL: url };
  execFileSync("node_modules/.bin/node", ["bin/gcs.js", "migrate"], { env, stdio: "inherit" });
  execFileSync("node_modules/.bin/node", ["bin/gcs.js", "fixtures", "--out", "bench/.data/aggregate-latency-manifest.json", "--guests", process.env.GUESTS ?? "20000"], { env, stdio: "inherit" });
  const manifest = JSON.parse(readFileSync("bench/.data/aggregate-latency-manifest.json", "utf8"));
  const db = await openDatabase({ databaseUrl: url, replica: undefined as never, logger: createLogger("silent"), dataDir: "", poolSize: 5 });
  const data = createData(db, { propertyGroupId: manifest.groups.A.id, propertyId: null });
  const live = liveMetrics(createReaders(db, { propertyGroupId: manifest.groups.A.id, propertyId: null }));
  const livePinned = liveMetrics(createReaders(db, { propertyGroupId: manifest.groups.A.id, propertyId: manifest.groups.A.properties[0] }));
  const year = Number(manifest.anchor_date.slice(0, 4)) - 1;
  const anchor = new Date(`${manifest.anchor_date}T00:00:00Z`);
  const day = (o: number) => new Date(anchor.getTime() + o * 86400000).toISOString().slice(0, 10);
  const cases: [string, () => Promise<unknown>][] = [
    ["stays by month + revenue", () => data.metrics.stays({ arrivalFrom: day(-364), arrivalTo: day(0) }, ["month"], true)],
    ["stays by month", () => data.metrics.stays({ arrivalFrom: day(-364), arrivalTo: day(0) }, ["month"], false)],
    ["guests by property + reach", () => data.metrics.guests(["property"], { email: "email_marketing", sms: "sms_marketing" })],
    ["guests by property", () => data.metrics.guests(["property"], null)],
    ["consent by month", () => data.metrics.consent("email_marketing", null, ["month"])],
    ["reviews by month", () => data.metrics.reviews({ publishedFrom: new Date(`${day(-364)}T00:00:00Z`) }, ["month"])],
    // Returning guests (issue 42): the live statement without and with them, for the group and a
    // property; the rollups' read of a year by property; the rebuild's statements (every stay shape).
    ...(["none", "caller"] as const).flatMap((returning): [string, () => Promise<unknown>][] => [
      [`live stays by month, returning ${returning}`, () => live.stays({ arrivalFrom: day(-364), arrivalTo: day(0) }, ["month"], false, returning)],
      [`live stays by property, returning ${returning}`, () => live.stays({ arrivalFrom: day(-364), arrivalTo: day(0) }, ["property"], false, returning)],
      [`live stays of one property, returning ${returning}`, () => livePinned.stays({ arrivalFrom: day(-364), arrivalTo: day(0) }, [], false, returning)],
    ]),
    ["rollups: a year by property with returning", () => data.metrics.stays({ arrivalFrom: `${year}-01-01`, arrivalTo: `${year}-12-31` }, ["property"], false, true)],
    ...(["none", "with"] as const).map((mode): [string, () => Promise<unknown>] => [
      `rebuild statements (every stay shape), returning ${mode}`,
      async () => {
        for (const { grain, dims } of STAY_SHAPES) {
          await live.stays({ arrivalFrom: "0001-01-01", arrivalTo: "9999-12-31" }, [grain, ...dims], true, mode === "none" ? "none" : dims.includes("property") ? "caller-and-property" : "caller");
        }
      },
    ]),
  ];
  for (const [name, run] of cases) {
    await run();
    const times: number[] = [];
    for (let i = 0; i < 5; i++) { const t = performance.now(); await run(); times.push(performance.now() - t); }
    times.sort((a, b) => a - b);
    console.log(`${name}: median ${times[2].toFixed(1)} ms`);
  }
  await db.close();
  pg.stop();
}
main().catch((e) => { console.error(e); process.exit(1); });
