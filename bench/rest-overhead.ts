// npx tsx bench/rest-overhead.ts: the service's CPU time per request on the guests page beside the
// raw ceiling (bench/ceiling-server.ts), first page and ~90% deep, the two taking turns under
// autocannon. Throughput on a shared machine swings with the others' load; CPU time per request
// (from /proc) is the figure to read: the gap between the two is the service's per-request overhead.
// REST_PROFILE=1 also writes a V8 CPU profile of the service (--cpu-prof) to REST_PROFILE_DIR
// (default /tmp/gcs-rest-profile), to read in Chrome DevTools or with `node --cpu-prof` tooling.
//
// Environment: REST_GUESTS (default 20000), REST_ROUNDS (default 3), REST_DURATION (s, default 8),
// REST_CONNECTIONS (default 32), REST_LIMIT (page size, default 100).
import { spawn, execFileSync, type ChildProcess } from "node:child_process";
import { readFileSync, mkdtempSync } from "node:fs";
import os from "node:os";
import path from "node:path";
import autocannon from "autocannon";
import { Client } from "pg";
import { freePort } from "../src/db/embedded";
import { encodeCursor } from "../src/pagination/cursor";
import type { FixtureManifest } from "../src/fixtures";
import { startTestPostgres } from "../test/helpers/postgres";
import { cpuMs, medianSample, waitFor, type Sample } from "./process";

const ROOT = path.resolve(__dirname, "..");
const NODE = path.join(ROOT, "node_modules/.bin/node");
const env = (name: string, fallback: number) => Number(process.env[name] ?? fallback);
const GUESTS = env("REST_GUESTS", 20_000);
const ROUNDS = env("REST_ROUNDS", 3);
const DURATION = env("REST_DURATION", 8);
const CONNECTIONS = env("REST_CONNECTIONS", 32);
const LIMIT = env("REST_LIMIT", 100);
const PROFILE_DIR = process.env.REST_PROFILE_DIR ?? "/tmp/gcs-rest-profile";
const log = (line: string) => process.stderr.write(`[rest] ${line}\n`);

type System = "service" | "ceiling";

async function main() {
  const pg = await startTestPostgres();
  const children: ChildProcess[] = [];
  try {
    const admin = new Client({ connectionString: pg.adminUrl() });
    await admin.connect();
    await admin.query("CREATE DATABASE rest");
    await admin.end();
    const databaseUrl = pg.adminUrl("rest");
    const manifestPath = path.join(mkdtempSync(path.join(os.tmpdir(), "gcs-rest-")), "manifest.json");
    log(`loading ${GUESTS} guests per group, building`);
    execFileSync(NODE, [path.join(ROOT, "bin/gcs.js"), "fixtures", "--out", manifestPath, "--guests", String(GUESTS), "--seed", "1"], {
      cwd: ROOT, env: { ...process.env, DATABASE_URL: databaseUrl, LOG_LEVEL: "warn" }, stdio: ["ignore", "ignore", "inherit"],
    });
    execFileSync("npm", ["run", "build", "--silent"], { cwd: ROOT, stdio: "inherit" });
    const manifest = JSON.parse(readFileSync(manifestPath, "utf8")) as FixtureManifest;
    const ports: Record<System, number> = { service: await freePort(), ceiling: await freePort() };
    const profile = process.env.REST_PROFILE ? [`--cpu-prof`, `--cpu-prof-dir=${PROFILE_DIR}`] : [];
    const service = spawn(NODE, ["--max-semi-space-size=32", "--heap-growing-percent=50", ...profile, path.join(ROOT, "dist/cli/main.js"), "serve"], {
      cwd: ROOT,
      // As bench/run.ts runs it: limits on but out of the way, the request log at info.
      env: { ...process.env, DATABASE_URL: databaseUrl, PORT: String(ports.service), HOST: "127.0.0.1", NODE_ENV: "production", LOG_LEVEL: "info",
        GCS_DELIVERY_WORKER: "false", DATABASE_POOL_SIZE: "10", GCS_DELIVERY_SECRET_KEY: "rest-overhead-bench-passphrase",
        GCS_RATE_LIMIT: "1000000", GCS_CREDENTIAL_MAX_CONCURRENCY: "1000", GCS_CREDENTIAL_QUEUE_MS: "60000" },
      stdio: ["ignore", "ignore", "inherit"],
    });
    children.push(service);
    const headers = { authorization: `Bearer ${manifest.groups.A.credentials.api_key}` };
    const first = `/v1/guests?limit=${LIMIT}`;
    await waitFor(`http://127.0.0.1:${ports.service}${first}`, headers);
    const db = new Client({ connectionString: databaseUrl });
    await db.connect();
    const secret = (await db.query("SELECT value FROM service_secrets WHERE name = 'cursor_hmac'")).rows[0].value as string;
    const A = manifest.groups.A;
    const row = (await db.query(
      `SELECT to_char(created_at AT TIME ZONE 'UTC', 'YYYY-MM-DD"T"HH24:MI:SS.MS"Z"') AS created_at, id FROM guest_profiles
       WHERE property_group_id = $1 ORDER BY created_at, id OFFSET $2 LIMIT 1`, [A.id, Math.floor(GUESTS * 0.9)])).rows[0];
    await db.end();
    const deep = `${first}&cursor=${encodeURIComponent(encodeCursor([row.created_at, row.id], { family: "guests", propertyGroupId: A.id, query: { filter: {}, propertyId: null } }, secret))}`;
    const ceiling = spawn(NODE, ["--require", "tsx/cjs", path.join(__dirname, "ceiling-server.ts"), databaseUrl, String(ports.ceiling), secret], { cwd: ROOT, stdio: ["ignore", "ignore", "inherit"] });
    children.push(ceiling);
    await waitFor(`http://127.0.0.1:${ports.ceiling}${first}`, headers);
    const pids: Record<System, number> = { service: service.pid!, ceiling: ceiling.pid! };

    const cases = { "first page": first, "90% deep": deep };
    const results = new Map<string, Sample[]>();
    for (let round = 1; round <= ROUNDS; round++) {
      for (const [name, p] of Object.entries(cases)) {
        const systems: System[] = round % 2 ? ["service", "ceiling"] : ["ceiling", "service"]; // each goes first in turn
        for (const system of systems) {
          const url = `http://127.0.0.1:${ports[system]}${p}`;
          await autocannon({ url, headers, connections: CONNECTIONS, duration: 2 }); // warm-up
          const before = cpuMs(pids[system]);
          const r = await autocannon({ url, headers, connections: CONNECTIONS, duration: DURATION });
          const cpuUs = ((cpuMs(pids[system]) - before) * 1000) / r.requests.total;
          if (r.non2xx || r.errors) throw new Error(`${system} ${name}: ${r.non2xx} non-2xx, ${r.errors} errors`);
          const key = `${name} / ${system}`;
          results.set(key, [...(results.get(key) ?? []), { rps: r.requests.average, p50: r.latency.p50, p99: r.latency.p99, cpuUs }]);
          log(`round ${round} ${key}: ${r.requests.average.toFixed(0)} req/s, p50 ${r.latency.p50} ms, ${cpuUs.toFixed(0)} µs CPU/request`);
        }
      }
    }
    process.stdout.write(`GET /v1/guests?limit=${LIMIT}, ${GUESTS} guests per group, ${CONNECTIONS} connections, median of ${ROUNDS} rounds of ${DURATION} s\n`);
    for (const name of Object.keys(cases)) {
      const s = medianSample(results.get(`${name} / service`)!);
      const c = medianSample(results.get(`${name} / ceiling`)!);
      process.stdout.write(
        `${name}: service ${s.cpuUs.toFixed(0)} µs CPU/request, ceiling ${c.cpuUs.toFixed(0)} (service/ceiling ${(s.cpuUs / c.cpuUs).toFixed(2)}); ` +
          `${s.rps.toFixed(0)} vs ${c.rps.toFixed(0)} req/s (${(s.rps / c.rps).toFixed(2)})\n`,
      );
    }
  } finally {
    for (const child of children) child.kill("SIGTERM");
    await new Promise((r) => setTimeout(r, 2000)); // the service writes its profile as it exits
    pg.stop();
  }
}

main().catch((err) => {
  process.stderr.write(`${err.stack ?? err}\n`);
  process.exit(1);
});
