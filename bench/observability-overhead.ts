// npx tsx bench/observability-overhead.ts: what metrics, Server-Timing and the (off) tracing hooks
// cost on the request path. The service built from OBS_BASE (a git ref; default: where this branch
// left main) and from this tree with GCS_METRICS_PORT set and tracing off run side by side on one
// database and take turns under autocannon on GET /v1/guests?limit=10 with one key, as
// bench/limits-overhead.ts does: the figure to read is the server's CPU time per request.
//
// Environment: OBS_BASE (git ref), OBS_GUESTS (default 5000), OBS_ROUNDS (default 3), OBS_DURATION
// (s, default 6), OBS_CONNECTIONS (default 32), OBS_PROFILE_DIR (write each server's --cpu-prof there).
import { spawn, execFileSync, type ChildProcess } from "node:child_process";
import { mkdtempSync, rmSync } from "node:fs";
import os from "node:os";
import path from "node:path";
import autocannon from "autocannon";
import { freePort } from "../src/embedded/server";
import { startTestPostgres } from "../test/helpers/postgres";
import { buildBaseAndTree, cpuMs, fixtureDatabase, medianSample, stopChildren, waitFor, type Sample } from "./process";

const ROOT = path.resolve(__dirname, "..");
const NODE = path.join(ROOT, "node_modules/.bin/node");
const env = (name: string, fallback: number) => Number(process.env[name] ?? fallback);
const BASE = process.env.OBS_BASE ?? execFileSync("git", ["-C", ROOT, "merge-base", "HEAD", "main"], { encoding: "utf8" }).trim();
const GUESTS = env("OBS_GUESTS", 5000);
const ROUNDS = env("OBS_ROUNDS", 3);
const DURATION = env("OBS_DURATION", 6);
const CONNECTIONS = env("OBS_CONNECTIONS", 32);
const log = (line: string) => process.stderr.write(`[observability] ${line}\n`);

// "after" with GCS_METRICS_PORT set, "no-port" without it: the process metrics (GC observer, event
// loop monitor) run only with the port.
type Variant = "before" | "after" | "no-port";
const VARIANTS: Variant[] = ["before", "after", "no-port"];

async function main() {
  const pg = await startTestPostgres();
  const children: ChildProcess[] = [];
  const baseDir = mkdtempSync(path.join(os.tmpdir(), "gcs-obs-base-"));
  try {
    log(`loading ${GUESTS} guests per group; building ${BASE} and this tree`);
    const { databaseUrl, manifest } = await fixtureDatabase(pg, "observability", GUESTS, path.join(baseDir, "manifest.json"));
    const src = path.join(baseDir, "tree");
    buildBaseAndTree(BASE, src);

    const roots: Record<Variant, string> = { before: src, after: ROOT, "no-port": ROOT };
    const ports: Record<Variant, number> = { before: await freePort(), after: await freePort(), "no-port": await freePort() };
    const pids = {} as Record<Variant, number>;
    for (const v of VARIANTS) {
      const profile = process.env.OBS_PROFILE_DIR ? [`--cpu-prof`, `--cpu-prof-dir=${path.join(process.env.OBS_PROFILE_DIR, v)}`] : [];
      const child = spawn(NODE, [...profile, "--max-semi-space-size=32", "--heap-growing-percent=50", path.join(roots[v], "dist/cli/main.js"), "serve"], {
        cwd: roots[v],
        env: {
          ...process.env, DATABASE_URL: databaseUrl, PORT: String(ports[v]), HOST: "127.0.0.1", NODE_ENV: "production", LOG_LEVEL: "warn",
          GCS_DELIVERY_WORKER: "false", DATABASE_POOL_SIZE: "10", GCS_DELIVERY_SECRET_KEY: "observability-overhead-bench-passphrase",
          GCS_RATE_LIMIT: "0", GCS_CREDENTIAL_MAX_CONCURRENCY: "0",
          ...(v === "after" ? { GCS_METRICS_PORT: String(await freePort()) } : {}),
        },
        stdio: ["ignore", "ignore", "inherit"],
      });
      children.push(child);
      pids[v] = child.pid!;
    }
    const headers = { authorization: `Bearer ${manifest.groups.A.credentials.api_key}` };
    const url = (v: Variant) => `http://127.0.0.1:${ports[v]}/v1/guests?limit=10`;
    for (const v of VARIANTS) await waitFor(url(v), headers);
    const results: Record<Variant, Sample[]> = { before: [], after: [], "no-port": [] };
    for (let round = 1; round <= ROUNDS; round++) {
      const order = VARIANTS.map((_, i) => VARIANTS[(i + round) % VARIANTS.length]); // each goes first in turn
      for (const v of order) {
        await autocannon({ url: url(v), headers, connections: CONNECTIONS, duration: 2 }); // warm-up
        const cpuBefore = cpuMs(pids[v]);
        const r = await autocannon({ url: url(v), headers, connections: CONNECTIONS, duration: DURATION });
        const cpuUs = ((cpuMs(pids[v]) - cpuBefore) * 1000) / r.requests.total;
        if (r.non2xx || r.errors) throw new Error(`${v}: ${r.non2xx} non-2xx, ${r.errors} errors`);
        results[v].push({ rps: r.requests.average, p50: r.latency.p50, p99: r.latency.p99, cpuUs });
        log(`round ${round} ${v}: ${r.requests.average.toFixed(0)} req/s, p50 ${r.latency.p50} ms, p99 ${r.latency.p99} ms, ${cpuUs.toFixed(0)} µs CPU/request`);
      }
    }
    const summary = (v: Variant) => medianSample(results[v]);
    const before = summary("before");
    process.stdout.write(`GET /v1/guests?limit=10, ${CONNECTIONS} connections, one key, median of ${ROUNDS} rounds of ${DURATION} s\n`);
    for (const v of VARIANTS) {
      const m = summary(v);
      process.stdout.write(
        `${v.padEnd(7)} ${m.cpuUs.toFixed(0)} µs CPU/request (${(m.cpuUs - before.cpuUs).toFixed(0)} over before), ` +
          `${m.rps.toFixed(0)} req/s (${(m.rps / before.rps).toFixed(2)} of before), p50 ${m.p50} ms, p99 ${m.p99} ms\n`,
      );
    }
  } finally {
    // Servers exit (writing any CPU profiles) before the database stops.
    await stopChildren(children);
    pg.stop();
    rmSync(baseDir, { recursive: true, force: true });
  }
}

main().catch((err) => {
  process.stderr.write(`${err.stack ?? err}\n`);
  process.exit(1);
});
