// npx tsx bench/limits-overhead.ts: what the rate limit and the per-credential concurrency cap cost.
// Two copies of the built service on one database, one with both on (as bench/run.ts runs it) and
// one with both off, take turns under autocannon on GET /v1/guests?limit=10 with one key. Taking
// turns matters on a shared machine: the load of others drifts, and every copy sees the same drift.
// Throughput on a shared machine swings by a third between identical runs, so the figure to read is
// the server's CPU time per request (from /proc), which the others' load disturbs much less.
//
// Environment: LIMITS_GUESTS (default 20000), LIMITS_ROUNDS (default 5), LIMITS_DURATION (s, default
// 8), LIMITS_CONNECTIONS (default 32).
import { spawn, execFileSync, type ChildProcess } from "node:child_process";
import { mkdtempSync } from "node:fs";
import os from "node:os";
import path from "node:path";
import autocannon from "autocannon";
import { freePort } from "../src/embedded/server";
import { startTestPostgres } from "../test/helpers/postgres";
import { cpuMs, fixtureDatabase, medianSample, waitFor, type Sample } from "./process";

const ROOT = path.resolve(__dirname, "..");
const NODE = path.join(ROOT, "node_modules/.bin/node"); // the Node the benchmark runs (bench/run.ts)
const env = (name: string, fallback: number) => Number(process.env[name] ?? fallback);
const GUESTS = env("LIMITS_GUESTS", 20_000);
const ROUNDS = env("LIMITS_ROUNDS", 5);
const DURATION = env("LIMITS_DURATION", 8);
const CONNECTIONS = env("LIMITS_CONNECTIONS", 32);
const log = (line: string) => process.stderr.write(`[limits] ${line}\n`);

// "on" is how bench/run.ts runs the service; "wide" has a cap that never binds (the bookkeeping
// alone); "off" has neither.
const VARIANTS = {
  on: { GCS_RATE_LIMIT: "1000000", GCS_CREDENTIAL_MAX_CONCURRENCY: "10", GCS_CREDENTIAL_QUEUE_MS: "60000" },
  wide: { GCS_RATE_LIMIT: "1000000", GCS_CREDENTIAL_MAX_CONCURRENCY: "1000" },
  off: { GCS_RATE_LIMIT: "0", GCS_CREDENTIAL_MAX_CONCURRENCY: "0" },
};
type Variant = keyof typeof VARIANTS;

async function main() {
  const pg = await startTestPostgres();
  const children: ChildProcess[] = [];
  try {
    log(`loading ${GUESTS} guests per group, building`);
    const { databaseUrl, manifest } = await fixtureDatabase(pg, "limits", GUESTS, path.join(mkdtempSync(path.join(os.tmpdir(), "gcs-limits-")), "manifest.json"));
    execFileSync("npm", ["run", "build", "--silent"], { cwd: ROOT, stdio: "inherit" });
    const ports: Record<Variant, number> = { on: await freePort(), wide: await freePort(), off: await freePort() };
    const pids = {} as Record<Variant, number>;
    for (const variant of Object.keys(VARIANTS) as Variant[]) {
      const child = spawn(NODE, ["--max-semi-space-size=32", "--heap-growing-percent=50", path.join(ROOT, "dist/cli/main.js"), "serve"], {
        cwd: ROOT,
        env: { ...process.env, DATABASE_URL: databaseUrl, PORT: String(ports[variant]), HOST: "127.0.0.1", NODE_ENV: "production", LOG_LEVEL: "warn", GCS_DELIVERY_WORKER: "false", DATABASE_POOL_SIZE: "10",
          GCS_DELIVERY_SECRET_KEY: "limits-overhead-bench-passphrase", ...VARIANTS[variant] },
        stdio: ["ignore", "ignore", "inherit"],
      });
      children.push(child);
      pids[variant] = child.pid!;
    }
    const headers = { authorization: `Bearer ${manifest.groups.A.credentials.api_key}` };
    const url = (v: Variant) => `http://127.0.0.1:${ports[v]}/v1/guests?limit=10`;
    for (const v of Object.keys(ports) as Variant[]) await waitFor(url(v), headers);
    const variants = Object.keys(VARIANTS) as Variant[];
    const results = Object.fromEntries(variants.map((v) => [v, [] as Sample[]])) as Record<Variant, Sample[]>;
    for (let round = 1; round <= ROUNDS; round++) {
      const order = variants.map((_, i) => variants[(i + round) % variants.length]); // each goes first in turn
      for (const v of order) {
        await autocannon({ url: url(v), headers, connections: CONNECTIONS, duration: 2 }); // warm-up
        const cpuBefore = cpuMs(pids[v]);
        const r = await autocannon({ url: url(v), headers, connections: CONNECTIONS, duration: DURATION });
        const cpuUs = ((cpuMs(pids[v]) - cpuBefore) * 1000) / r.requests.total;
        if (r.non2xx || r.errors) throw new Error(`${v}: ${r.non2xx} non-2xx, ${r.errors} errors`);
        results[v].push({ rps: r.requests.average, p50: r.latency.p50, p99: r.latency.p99, cpuUs });
        log(`round ${round} limits ${v}: ${r.requests.average.toFixed(0)} req/s, p50 ${r.latency.p50} ms, p99 ${r.latency.p99} ms, ${cpuUs.toFixed(0)} µs CPU/request`);
      }
    }
    const summary = (v: Variant) => medianSample(results[v]);
    const off = summary("off");
    process.stdout.write(`GET /v1/guests?limit=10, ${CONNECTIONS} connections, one key, median of ${ROUNDS} rounds of ${DURATION} s\n`);
    for (const v of variants) {
      const m = summary(v);
      process.stdout.write(
        `${v.padEnd(5)} ${JSON.stringify(VARIANTS[v])}: ${m.cpuUs.toFixed(0)} µs CPU/request (${(m.cpuUs - off.cpuUs).toFixed(0)} over off), ` +
          `${m.rps.toFixed(0)} req/s (${(m.rps / off.rps).toFixed(2)} of off), p50 ${m.p50} ms, p99 ${m.p99} ms\n`,
      );
    }
  } finally {
    for (const child of children) child.kill("SIGTERM");
    pg.stop();
  }
}

main().catch((err) => {
  process.stderr.write(`${err.stack ?? err}\n`);
  process.exit(1);
});
