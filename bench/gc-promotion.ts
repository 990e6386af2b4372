// npx tsx bench/gc-promotion.ts: how much of each request outlives V8's young generation. The service
// built from GC_BASE (a git ref; default where this branch left main) and from this tree run in turn
// with --trace-gc-nvp under autocannon, one route at a time; the script reads the collections V8
// reports during each run. A stateless service should promote almost nothing: what a request makes
// dies with it. Objects that survive two scavenges are copied into the old generation, which only a
// full (mark-compact) collection frees, so promotion costs twice: longer scavenges, and full
// collections that would otherwise hardly run.
//
// Printed per route and build: KB promoted per scavenge, scavenges and mark-compacts per 1,000
// requests, main-thread GC pause per request, CPU per request (/proc) and req/s.
//
// Environment: GC_GUESTS (default 20000), GC_DURATION (s, default 8), GC_CONNECTIONS (default 32).
import { spawn, execFileSync, type ChildProcess } from "node:child_process";
import { mkdtempSync, rmSync } from "node:fs";
import os from "node:os";
import path from "node:path";
import autocannon from "autocannon";
import { freePort } from "../src/embedded/server";
import { startTestPostgres } from "../test/helpers/postgres";
import { buildBaseAndTree, cpuMs, fixtureDatabase, stopChildren, waitFor } from "./process";

const ROOT = path.resolve(__dirname, "..");
const NODE = path.join(ROOT, "node_modules/.bin/node");
const env = (name: string, fallback: number) => Number(process.env[name] ?? fallback);
const GUESTS = env("GC_GUESTS", 20_000);
const DURATION = env("GC_DURATION", 8);
const CONNECTIONS = env("GC_CONNECTIONS", 32);
const BASE = process.env.GC_BASE ?? execFileSync("git", ["-C", ROOT, "merge-base", "HEAD", "main"], { encoding: "utf8" }).trim();
const log = (line: string) => process.stderr.write(`[gc] ${line}\n`);

const NESTED = `{ guests(limit: 100) { nodes { id givenName familyName email reservations { id confirmationNumber status arrivalDate departureDate totalAmountMinor currency } transactions { id kind category amountMinor currency occurredAt } } nextCursor hasMore } }`;

interface Collection {
  kind: string;
  /** Main-thread pause, ms. */
  pause: number;
  promotedBytes: number;
}

/** A service whose --trace-gc-nvp lines (on its standard output, among the JSON log lines) are kept. */
function startService(root: string, databaseUrl: string, port: number): { child: ChildProcess; collections: Collection[] } {
  const collections: Collection[] = [];
  // As bench/run.ts runs it (`start:production`'s flags): limits on but out of the way, the request log at info.
  const child = spawn(NODE, ["--max-semi-space-size=32", "--heap-growing-percent=50", "--trace-gc-nvp", path.join(root, "dist/cli/main.js"), "serve"], {
    cwd: root,
    env: { ...process.env, DATABASE_URL: databaseUrl, PORT: String(port), HOST: "127.0.0.1", NODE_ENV: "production", LOG_LEVEL: "info",
      GCS_DELIVERY_WORKER: "false", DATABASE_POOL_SIZE: "10", GCS_DELIVERY_SECRET_KEY: "gc-promotion-bench-passphrase",
      GCS_RATE_LIMIT: "1000000", GCS_CREDENTIAL_MAX_CONCURRENCY: "1000", GCS_CREDENTIAL_QUEUE_MS: "60000" },
    stdio: ["ignore", "pipe", "inherit"],
  });
  let pending = "";
  child.stdout!.setEncoding("utf8").on("data", (chunk: string) => {
    const lines = (pending + chunk).split("\n");
    pending = lines.pop()!;
    for (const line of lines) {
      const kind = / gc=(\w+) /.exec(line)?.[1];
      if (!kind) continue;
      collections.push({ kind, pause: Number(/ pause=([\d.]+)/.exec(line)?.[1] ?? 0), promotedBytes: Number(/ promoted=(\d+)/.exec(line)?.[1] ?? 0) });
    }
  });
  return { child, collections };
}

async function main() {
  const pg = await startTestPostgres();
  const children: ChildProcess[] = [];
  const baseDir = mkdtempSync(path.join(os.tmpdir(), "gcs-gc-base-"));
  try {
    log(`loading ${GUESTS} guests per group; building ${BASE} and this tree`);
    const { databaseUrl, manifest } = await fixtureDatabase(pg, "gc", GUESTS, path.join(baseDir, "manifest.json"));
    const baseRoot = path.join(baseDir, "tree");
    buildBaseAndTree(BASE, baseRoot);
    const auth = { authorization: `Bearer ${manifest.groups.A.credentials.api_key}` };
    const routes: { name: string; request: autocannon.Options }[] = [
      { name: "GET /healthz", request: { url: "/healthz" } },
      { name: "GET /v1/guests?limit=100", request: { url: "/v1/guests?limit=100", headers: auth } },
      { name: "GET /v1/properties", request: { url: "/v1/properties", headers: auth } },
      { name: "POST /graphql (nested guests page)", request: { url: "/graphql", method: "POST", headers: { ...auth, "content-type": "application/json" }, body: JSON.stringify({ query: NESTED }) } },
    ];
    const rows: string[] = [];
    for (const [label, root] of [["base", baseRoot], ["tree", ROOT]] as const) {
      const port = await freePort();
      const service = startService(root, databaseUrl, port);
      children.push(service.child);
      await waitFor(`http://127.0.0.1:${port}/v1/guests?limit=1`, auth);
      for (const route of routes) {
        const url = `http://127.0.0.1:${port}${route.request.url}`;
        await autocannon({ ...route.request, url, connections: CONNECTIONS, duration: 2 }); // warm-up
        const seen = service.collections.length;
        const before = cpuMs(service.child.pid!);
        const r = await autocannon({ ...route.request, url, connections: CONNECTIONS, duration: DURATION });
        const cpuUs = ((cpuMs(service.child.pid!) - before) * 1000) / r.requests.total;
        if (r.non2xx || r.errors) throw new Error(`${label} ${route.name}: ${r.non2xx} non-2xx, ${r.errors} errors`);
        const during = service.collections.slice(seen);
        const scavenges = during.filter((c) => c.kind === "s");
        const fulls = during.filter((c) => c.kind === "mc");
        const perThousand = (n: number) => ((n * 1000) / r.requests.total).toFixed(1);
        const promotedKb = scavenges.reduce((sum, c) => sum + c.promotedBytes, 0) / Math.max(1, scavenges.length) / 1024;
        const pauseUs = (during.reduce((sum, c) => sum + c.pause, 0) * 1000) / r.requests.total;
        const row = `| ${route.name} | ${label} | ${promotedKb.toFixed(0)} | ${perThousand(scavenges.length)} | ${perThousand(fulls.length)} | ${pauseUs.toFixed(1)} | ${cpuUs.toFixed(0)} | ${r.requests.average.toFixed(0)} |`;
        log(row);
        rows.push(row);
      }
      service.child.kill("SIGTERM");
    }
    process.stdout.write(`${GUESTS} guests per group, ${CONNECTIONS} connections, ${DURATION} s per route; base ${BASE.slice(0, 7)}\n\n`);
    process.stdout.write("| route | build | KB promoted per scavenge | scavenges per 1,000 requests | mark-compacts per 1,000 requests | GC pause µs/request | CPU µs/request | req/s |\n|---|---|---:|---:|---:|---:|---:|---:|\n");
    process.stdout.write(`${[...rows].sort().join("\n")}\n`);
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
