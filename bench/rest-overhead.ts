// npx tsx bench/rest-overhead.ts: the service's CPU time per request on the guests page beside the
// raw ceiling (bench/ceiling-server.ts), first page and ~90% deep: the service built from REST_BASE
// (a git ref; default where this branch left main) and from this tree, and the ceiling, take turns
// under autocannon on one database. Throughput on a shared machine swings with the others' load;
// CPU time per request (from /proc) is the figure to read: the gap to the ceiling is the service's
// per-request overhead, the gap between base and tree what a change saved. PostgreSQL's and the load
// generator's CPU per request are printed beside it: on two shared cores, throughput is bounded by the
// sum of all three.
// REST_PROFILE=1 also writes V8 CPU profiles (--cpu-prof; REST_PROFILE=heap: sampling heap
// profiles, --heap-prof) to REST_PROFILE_DIR/{base,tree,ceiling} (default /tmp/gcs-rest-profile),
// to read in Chrome DevTools.
//
// Environment: REST_GUESTS (default 20000), REST_ROUNDS (default 3), REST_DURATION (s, default 8),
// REST_CONNECTIONS (default 32), REST_LIMIT (page size, default 100), REST_TREE_ENV (JSON: extra
// environment for this tree's service only; with REST_BASE=HEAD, an A/B of one setting),
// REST_CASES (comma-separated, default "first page,90% deep"; also "empty timeline" (the events
// timeline of a guest with no events: the fixed cost with the database), "guest timeline" and "master
// timeline" (the first events page of a guest, of a master profile), "healthz" (no database),
// "reservations" and "transactions" (their first pages), "master profiles" (its first page with the
// total), "reviews", "loyalty members", "consents" and
// "actions" (their first pages), "review summary" (one guest's), "properties" (the whole list),
// "channels", "tables" (with its total) and "effective consents" (first pages): these base and tree
// only, the ceiling has no such route), "mcp" (tools/call guest_context of a master profile) and
// "consent preview" (POST /v1/tables/preview), both as bench/run.ts sends them,
// REST_DATABASE_URL + REST_PGDATA + REST_MANIFEST (reuse a loaded database, its data directory and
// its fixture manifest instead of starting PostgreSQL and loading one: quicker bisecting).
import { spawn, execFileSync, type ChildProcess } from "node:child_process";
import { mkdtempSync, readFileSync, rmSync } from "node:fs";
import os from "node:os";
import path from "node:path";
import autocannon from "autocannon";
import { Client } from "pg";
import { freePort } from "../src/embedded/server";
import { encodeCursor } from "../src/pagination/cursor";
import type { FixtureManifest } from "../src/fixtures";
import { startTestPostgres } from "../test/helpers/postgres";
import { buildBaseAndTree, cpuMs, recordBaseMigrationTexts, fixtureDatabase, medianSample, postgresCpuMs, stopChildren, waitFor, type Sample } from "./process";

const ROOT = path.resolve(__dirname, "..");
const NODE = path.join(ROOT, "node_modules/.bin/node");
const env = (name: string, fallback: number) => Number(process.env[name] ?? fallback);
const GUESTS = env("REST_GUESTS", 20_000);
const ROUNDS = env("REST_ROUNDS", 3);
const DURATION = env("REST_DURATION", 8);
const CONNECTIONS = env("REST_CONNECTIONS", 32);
const LIMIT = env("REST_LIMIT", 100);
const BASE = process.env.REST_BASE ?? execFileSync("git", ["-C", ROOT, "merge-base", "HEAD", "main"], { encoding: "utf8" }).trim();
// Extra environment for this tree's service only, e.g. '{"LOG_LEVEL":"warn"}' to price the access log.
const TREE_ENV = JSON.parse(process.env.REST_TREE_ENV ?? "{}") as Record<string, string>;
const PROFILE_DIR = process.env.REST_PROFILE_DIR ?? "/tmp/gcs-rest-profile";
const log = (line: string) => process.stderr.write(`[rest] ${line}\n`);

type System = "base" | "tree" | "ceiling";
const SYSTEMS: System[] = ["base", "tree", "ceiling"];

async function main() {
  const reuse = process.env.REST_DATABASE_URL;
  const pg = reuse ? undefined : await startTestPostgres();
  const pgDataDir = process.env.REST_PGDATA ?? pg?.dataDir;
  if (!pgDataDir) throw new Error("REST_DATABASE_URL needs REST_PGDATA (the server's data directory, for its CPU time)");
  const children: ChildProcess[] = [];
  const baseDir = mkdtempSync(path.join(os.tmpdir(), "gcs-rest-base-"));
  try {
    log(`loading ${GUESTS} guests per group; building ${BASE} and this tree`);
    const { databaseUrl, manifest } = reuse
      ? { databaseUrl: reuse, manifest: JSON.parse(readFileSync(process.env.REST_MANIFEST!, "utf8")) as FixtureManifest }
      : await fixtureDatabase(pg!, "rest", GUESTS, path.join(baseDir, "manifest.json"));
    const baseRoot = path.join(baseDir, "tree");
    buildBaseAndTree(BASE, baseRoot);
    await recordBaseMigrationTexts(databaseUrl, baseRoot);
    const ports: Record<System, number> = { base: await freePort(), tree: await freePort(), ceiling: await freePort() };
    const kind = process.env.REST_PROFILE === "heap" ? "heap" : "cpu";
    const profile = (system: System) => (process.env.REST_PROFILE ? [`--${kind}-prof`, `--${kind}-prof-dir=${path.join(PROFILE_DIR, system)}`] : []);
    const pids = {} as Record<System, number>;
    for (const system of ["base", "tree"] as const) {
      const root = system === "base" ? baseRoot : ROOT;
      const service = spawn(NODE, ["--max-semi-space-size=32", "--heap-growing-percent=50", ...profile(system), path.join(root, "dist/cli/main.js"), "serve"], {
        cwd: root,
        // As bench/run.ts runs it: limits on but out of the way, the request log at info.
        env: { ...process.env, DATABASE_URL: databaseUrl, PORT: String(ports[system]), HOST: "127.0.0.1", NODE_ENV: "production", LOG_LEVEL: "info",
          GCS_DELIVERY_WORKER: "false", DATABASE_POOL_SIZE: "10", GCS_DELIVERY_SECRET_KEY: "rest-overhead-bench-passphrase",
          GCS_RATE_LIMIT: "1000000", GCS_CREDENTIAL_MAX_CONCURRENCY: "1000", GCS_CREDENTIAL_QUEUE_MS: "60000",
          ...(system === "tree" ? TREE_ENV : {}) },
        stdio: ["ignore", "ignore", "inherit"],
      });
      children.push(service);
      pids[system] = service.pid!;
    }
    const headers = { authorization: `Bearer ${manifest.groups.A.credentials.api_key}` };
    const first = `/v1/guests?limit=${LIMIT}`;
    for (const system of ["base", "tree"] as const) await waitFor(`http://127.0.0.1:${ports[system]}${first}`, headers);
    const db = new Client({ connectionString: databaseUrl });
    await db.connect();
    const secret = (await db.query("SELECT value FROM service_secrets WHERE name = 'cursor_hmac'")).rows[0].value as string;
    const A = manifest.groups.A;
    const row = (await db.query(
      `SELECT to_char(created_at AT TIME ZONE 'UTC', 'YYYY-MM-DD"T"HH24:MI:SS.MS"Z"') AS created_at, id FROM guest_profiles
       WHERE property_group_id = $1 ORDER BY created_at, id OFFSET $2 LIMIT 1`, [A.id, Math.floor(GUESTS * 0.9)])).rows[0];
    await db.end();
    const deep = `${first}&cursor=${encodeURIComponent(encodeCursor([row.created_at, row.id], { family: "guests", propertyGroupId: A.id, query: { filter: {}, propertyId: null } }, secret))}`;
    const ceiling = spawn(NODE, [...profile("ceiling"), "--require", "tsx/cjs", path.join(__dirname, "ceiling-server.ts"), databaseUrl, String(ports.ceiling), secret], { cwd: ROOT, stdio: ["ignore", "ignore", "inherit"] });
    children.push(ceiling);
    await waitFor(`http://127.0.0.1:${ports.ceiling}${first}`, headers);
    pids.ceiling = ceiling.pid!;

    // A case is a GET path, or a POST with its JSON body.
    type Case = string | { path: string; body: unknown; headers?: Record<string, string> };
    const allCases: Record<string, Case> = {
      "first page": first,
      "90% deep": deep,
      "empty timeline": `/v1/events?guest_profile_id=00000000-0000-4000-8000-000000000000&limit=${LIMIT}`,
      "guest timeline": `/v1/events?guest_profile_id=${manifest.groups.A.guest_with_events}&limit=${LIMIT}`,
      "master timeline": `/v1/events?master_profile_id=${manifest.groups.A.master_with_two_guests}&limit=${LIMIT}`,
      healthz: "/healthz",
      reservations: `/v1/reservations?limit=${LIMIT}`,
      transactions: `/v1/transactions?limit=${LIMIT}`,
      "master profiles": `/v1/master-profiles?limit=${LIMIT}&include_total=true`,
      reviews: `/v1/reviews?limit=${LIMIT}`,
      "loyalty members": `/v1/loyalty/members?limit=${LIMIT}`,
      consents: `/v1/consents?limit=${LIMIT}`,
      actions: `/v1/actions?limit=${LIMIT}`,
      "review summary": `/v1/reviews/summary?guest_profile_id=${manifest.groups.A.guest_with_events}`,
      properties: "/v1/properties",
      channels: `/v1/channels?limit=${LIMIT}`,
      tables: `/v1/tables?limit=${LIMIT}&include_total=true`,
      "effective consents": `/v1/consents/effective?limit=${LIMIT}`,
      // As bench/run.ts sends them.
      mcp: {
        path: "/mcp",
        headers: { accept: "application/json, text/event-stream" },
        body: { jsonrpc: "2.0", id: 1, method: "tools/call", params: { name: "guest_context", arguments: { master_profile_id: manifest.groups.A.master_with_two_guests } } },
      },
      "consent preview": { path: "/v1/tables/preview", body: { member_type: "guest_profile", filter_doc: { field: "consent.email_marketing", op: "eq", value: "granted" } } },
    };
    const pathOf = (c: Case) => (typeof c === "string" ? c : `POST ${c.path}`);
    const requestOf = (c: Case) =>
      typeof c === "string"
        ? { path: c, headers }
        : { path: c.path, method: "POST" as const, body: JSON.stringify(c.body), headers: { ...headers, "content-type": "application/json", ...c.headers } };
    const BASE_ONLY = ["reviews", "loyalty members", "consents", "actions", "review summary", "properties", "channels", "tables", "effective consents"];
    const ceilingServes = (name: string) => !BASE_ONLY.includes(name);
    const wanted = (process.env.REST_CASES ?? "first page,90% deep").split(",").map((c) => c.trim());
    for (const name of wanted) if (!(name in allCases)) throw new Error(`REST_CASES: no case "${name}" (${Object.keys(allCases).join(", ")})`);
    const cases = Object.fromEntries(wanted.map((name) => [name, allCases[name]]));
    const results = new Map<string, Sample[]>();
    for (let round = 1; round <= ROUNDS; round++) {
      for (const [name, p] of Object.entries(cases)) {
        const systems = SYSTEMS.map((_, i) => SYSTEMS[(i + round) % SYSTEMS.length]); // each goes first in turn
        for (const system of systems) {
          if (system === "ceiling" && !ceilingServes(name)) continue;
          const { path: casePath, ...request } = requestOf(p);
          const url = `http://127.0.0.1:${ports[system]}${casePath}`;
          await autocannon({ url, ...request, connections: CONNECTIONS, duration: 2 }); // warm-up
          const before = cpuMs(pids[system]);
          const postgresBefore = postgresCpuMs(pgDataDir);
          const loadBefore = process.cpuUsage();
          const r = await autocannon({ url, ...request, connections: CONNECTIONS, duration: DURATION });
          const perRequest = (ms: number) => (ms * 1000) / r.requests.total;
          const cpuUs = perRequest(cpuMs(pids[system]) - before);
          const postgresUs = perRequest(postgresCpuMs(pgDataDir) - postgresBefore);
          const load = process.cpuUsage(loadBefore);
          const loadUs = perRequest((load.user + load.system) / 1000);
          if (r.non2xx || r.errors) throw new Error(`${system} ${name}: ${r.non2xx} non-2xx, ${r.errors} errors`);
          const key = `${name} / ${system}`;
          results.set(key, [...(results.get(key) ?? []), { rps: r.requests.average, p50: r.latency.p50, p99: r.latency.p99, cpuUs, postgresUs, loadUs }]);
          log(`round ${round} ${key}: ${r.requests.average.toFixed(0)} req/s, p50 ${r.latency.p50} ms, ${cpuUs.toFixed(0)} µs CPU/request (PostgreSQL ${postgresUs.toFixed(0)}, load generator ${loadUs.toFixed(0)})`);
        }
      }
    }
    process.stdout.write(`${Object.values(cases).map(pathOf).join(", ")}; ${GUESTS} guests per group, ${CONNECTIONS} connections, median of ${ROUNDS} rounds of ${DURATION} s\n`);
    for (const name of Object.keys(cases)) {
      // Against the ceiling, or against the base where the ceiling has no such route.
      const reference = ceilingServes(name) ? "ceiling" : "base";
      const c = medianSample(results.get(`${name} / ${reference}`)!);
      for (const system of ["base", "tree", "ceiling"] as const) {
        if (!results.has(`${name} / ${system}`)) continue;
        const s = medianSample(results.get(`${name} / ${system}`)!);
        process.stdout.write(
          `${name} ${system.padEnd(7)} ${s.cpuUs.toFixed(0)} µs CPU/request (${(s.cpuUs / c.cpuUs).toFixed(2)} of the ${reference}'s), ` +
            `${s.rps.toFixed(0)} req/s (${(s.rps / c.rps).toFixed(2)}), p50 ${s.p50} ms; PostgreSQL ${s.postgresUs!.toFixed(0)} µs, load generator ${s.loadUs!.toFixed(0)} µs\n`,
        );
      }
    }
  } finally {
    // Servers exit (writing any CPU profiles) before the database stops.
    await stopChildren(children);
    pg?.stop();
    rmSync(baseDir, { recursive: true, force: true });
  }
}

main().catch((err) => {
  process.stderr.write(`${err.stack ?? err}\n`);
  process.exit(1);
});
