// npm run bench: the service beside the raw-SQL ceiling and PostGraphile 5, on one PostgreSQL 15
// and one data set, under autocannon. Prints a Markdown table and writes bench/results/<date>.md and
// .json. Everything runs on this machine: the load generator shares its cores with the servers.
//
// Environment: BENCH_GUESTS (guests per group, default 1000000), BENCH_DURATION (s, default 15),
// BENCH_WARMUP (s, default 3; BENCH_WARMUP_FIRST, default 15, before a system's first run of a
// scenario: the service takes 15–20 s of load to reach its steady pace), BENCH_ROUNDS (default 2),
// BENCH_CONNECTIONS (default 32), BENCH_PGDATA (the data directory of the server BENCH_DATABASE_URL
// names, for PostgreSQL's CPU per request; known when the script starts its own),
// BENCH_DATABASE_URL (reuse a database instead of starting PostgreSQL), BENCH_ONLY (regexp on
// scenario names), BENCH_ROUTES=1 (only the routes beside their hand-written ceilings of issue 31:
// events timelines, master profiles with include_total, table members at an offset, the consent
// preview, reservations, transactions, the MCP guest_context; combines with BENCH_ONLY),
// BENCH_CPU_PROF=<dir> (the service and the ceiling write V8 CPU profiles there on exit: with
// BENCH_ONLY naming one scenario, where each spends its CPU; bench/profile-top.ts summarises one),
// BENCH_RLS_AB=1 (the tenant wall's cost: a second service with GCS_ROW_SECURITY=false, "service
// (RLS off)", run right after the service on the guests page, the events timeline and nested GraphQL
// in every round; the notes give each scenario's cost, paired by round), BENCH_CHECK=1 (no load: sends each scenario's
// request to the service and the ceiling once and reports where the answers' bytes differ),
// BENCH_SYSTEMS (comma-separated: only these systems, e.g. service,ceiling), BENCH_LABEL (results
// go to <date>-<label>.md; a
// BENCH_ONLY or BENCH_ROUTES run defaults to "partial", so it never overwrites a full run's results).
//
// BENCH_SIZES=20000,200000,1000000 runs the "how cost grows" mode instead (sizes() below): the
// keyset pages, lookups and nested query of the service at each size, p50 per scenario and size,
// results in <date>-sizes.md (or <date>-<BENCH_LABEL>.md). BENCH_SERVER_URL names the PostgreSQL
// server (an admin URL) that holds or gets the per-size databases.
import { randomBytes } from "node:crypto";
import { spawn, execFileSync, type ChildProcess } from "node:child_process";
import { existsSync, mkdirSync, readdirSync, readFileSync, writeFileSync } from "node:fs";
import path from "node:path";
import autocannon from "autocannon";
import { Kind, parse, print, visit, type FragmentDefinitionNode, type OperationDefinitionNode } from "graphql";
import { Client } from "pg";
import { encodeCursor } from "../src/pagination/cursor";
import { freePort } from "../src/embedded/server";
import type { FixtureManifest } from "../src/fixtures";
import { startTestPostgres } from "../test/helpers/postgres";
import { cpuMs, postgresCpuMs } from "./process";

const ROOT = path.resolve(__dirname, "..");
const NODE = path.join(ROOT, "node_modules/.bin/node");
const env = (name: string, fallback: number) => Number(process.env[name] ?? fallback);
// Guests per group of the database being loaded or prepared: BENCH_SIZES sets it per database.
let GUESTS = env("BENCH_GUESTS", 1_000_000);
const DURATION = env("BENCH_DURATION", 15);
const WARMUP = env("BENCH_WARMUP", 3);
// Measured on the events timeline at 1M guests: after 3 s of load the service spent 770–800 µs of CPU
// per request, after 20 s 590–605 (the ceiling 300–370 either way). Round 1 gets the longer warm-up.
const WARMUP_FIRST = env("BENCH_WARMUP_FIRST", 15);
const ROUNDS = env("BENCH_ROUNDS", 2);
const CONNECTIONS = env("BENCH_CONNECTIONS", 32);
const log = (line: string) => process.stderr.write(`[bench] ${line}\n`);
/** BENCH_SYSTEMS=service,ceiling: only these systems' rows (a rerun of the fast ones on a busy machine). */
const SYSTEMS = process.env.BENCH_SYSTEMS?.split(",").map((x) => x.trim());

/** "live GROUP BY": a reference row of the aggregates, served by the ceiling's process (/live/*). */
type System = "service" | "ceiling" | "live GROUP BY" | "postgraphile" | typeof RLS_OFF;
/** The service with the tenant wall's policies out of play (BENCH_RLS_AB=1): statements run as the superuser login. */
const RLS_OFF = "service (RLS off)";
/** The scenarios the RLS A/B measures. */
const RLS_AB = /^(guests page \(limit 100\)|events timeline, one guest|GraphQL: 100 guests \+ reservations)/;
interface Request {
  method?: "GET" | "POST";
  path: string;
  headers?: Record<string, string>;
  body?: string;
  /** Load of this system alone: its connections, a number of requests instead of BENCH_DURATION (no warm-up), autocannon's timeout in s. */
  connections?: number;
  amount?: number;
  timeout?: number;
}
interface Scenario {
  name: string;
  connections?: number;
  systems: Partial<Record<System, Request>>;
  /** Printed under the table: where a peer's answer is not the service's. */
  note?: string;
  /** One of the routes issue 31 put beside a hand-written ceiling (BENCH_ROUTES=1 runs these only). */
  route?: boolean;
}
interface Row {
  scenario: string;
  system: System;
  rps: number;
  p50_ms: number;
  p99_ms: number;
  rss_mb: number;
  cpu_us_per_request: number;
  /** PostgreSQL's CPU time per request, when the bench knows its data directory (BENCH_PGDATA or its own server). */
  postgres_cpu_us_per_request: number | null;
  sql_per_request: number | null;
  vs_ceiling: number | null;
  vs_peer: number | null;
  /** Errors or timeouts in at least one run. */
  failed: boolean;
}

async function main() {
  if (process.env.BENCH_SIZES) return sizes(process.env.BENCH_SIZES);
  const pg = process.env.BENCH_DATABASE_URL ? undefined : await startTestPostgres();
  const databaseUrl = process.env.BENCH_DATABASE_URL ?? (await createDatabase(pg!.adminUrl(), "bench"));
  benchDatabaseUrl = databaseUrl;
  pgDataDir = process.env.BENCH_PGDATA ?? pg?.dataDir;
  const children: ChildProcess[] = [];
  try {
    const manifest = await loadData(databaseUrl);
    build();
    const ports: Record<System, number> = { service: await freePort(), ceiling: await freePort(), "live GROUP BY": 0, postgraphile: await freePort(), [RLS_OFF]: await freePort() };
    ports["live GROUP BY"] = ports.ceiling;
    // The schema must be complete before PostGraphile introspects it.
    migrate(databaseUrl);
    await hideFromPostGraphile(databaseUrl);
    await addPostGraphileComputedColumns(databaseUrl);
    // The amber preset plus bench/postgraphile-aggregates.ts (a TypeScript preset: tsx loads it).
    const pgPresets = `postgraphile/presets/amber,${path.join(__dirname, "postgraphile-aggregates.ts")}`;
    const servers: Partial<Record<System, ChildProcess>> = {
      service: startService(children, databaseUrl, ports.service),
      postgraphile: start(children, NODE, ["--require", "tsx/cjs", path.join(ROOT, "node_modules/.bin/postgraphile"), "-c", databaseUrl, "-s", "public", "-P", pgPresets, "-p", String(ports.postgraphile), "-n", "127.0.0.1"], { GRAPHILE_ENV: "production" }),
    };
    if (process.env.BENCH_RLS_AB) servers[RLS_OFF] = startService(children, databaseUrl, ports[RLS_OFF], { GCS_ROW_SECURITY: "false" });
    await Promise.all([waitForPort(ports.service), waitForPort(ports.postgraphile), process.env.BENCH_RLS_AB && waitForPort(ports[RLS_OFF])]);
    // The service has made its cursor secret by now; the ceiling signs cursors with the same one.
    const setup = await prepareDatabase(databaseUrl, manifest);
    // tsx as an in-process loader, so the measured pid is the server itself.
    servers.ceiling = start(children, NODE, [...profileArgs("ceiling"), "--require", "tsx/cjs", path.join(__dirname, "ceiling-server.ts"), databaseUrl, String(ports.ceiling), setup.cursorSecret], {});
    servers["live GROUP BY"] = servers.ceiling;
    await waitForPort(ports.ceiling);

    const scenarios = only(buildScenarios(manifest, setup)).filter((s) => !process.env.BENCH_ROUTES || s.route);
    // "RLS off" runs right after the service, so that the two see the same machine.
    if (process.env.BENCH_RLS_AB)
      for (const s of scenarios) if (RLS_AB.test(s.name) && s.systems.service) s.systems = { service: s.systems.service, [RLS_OFF]: s.systems.service, ...s.systems };
    if (process.env.BENCH_CHECK) return await checkAnswers(scenarios, ports);
    const runs = new Map<string, RunSamples>();
    for (let round = 1; round <= ROUNDS; round++) {
      for (const scenario of scenarios) {
        // Interleaved: each scenario's systems run back to back within a round, in the reverse order
        // every other round, so that a machine growing faster or slower favours none of them.
        const systems = Object.entries(scenario.systems) as [System, Request][];
        for (const [system, request] of round % 2 ? systems : systems.reverse()) {
          if (SYSTEMS && !SYSTEMS.includes(system)) continue;
          const port = ports[system];
          const sql = await sqlCount(port, request); // PostGraphile sends no count: null, but an error still throws
          await measure(runs, `${scenario.name}\u0000${system}`, { round, label: `${scenario.name} / ${system}`, port, pid: servers[system]!.pid!, request, connections: scenario.connections, sql });
        }
      }
    }
    report(summarise(runs), manifest, scenarios, runs);
  } finally {
    for (const child of children) child.kill("SIGTERM");
    // Profiles are written as the servers exit, before the database goes away.
    if (process.env.BENCH_CPU_PROF) {
      const exited = Promise.all(children.map((c) => (c.exitCode === null ? new Promise((r) => c.once("exit", r)) : undefined)));
      await Promise.race([exited, new Promise((r) => setTimeout(r, 20_000))]);
    }
    pg?.stop();
  }
}

/**
 * BENCH_CHECK=1: each scenario's request once to the service and once to the ceiling; prints
 * whether the bodies are the same bytes and, where not, the first difference.
 */
async function checkAnswers(scenarios: Scenario[], ports: Record<System, number>) {
  const answer = async (port: number, request: Request) => {
    const res = await fetch(`http://127.0.0.1:${port}${request.path}`, { method: request.method ?? "GET", headers: request.headers, body: request.body });
    return { status: res.status, body: await res.text(), sql: res.headers.get("x-sql-statements") };
  };
  let differ = 0;
  for (const scenario of scenarios) {
    const { service, ceiling } = scenario.systems;
    if (!service || !ceiling) continue;
    const [a, b] = [await answer(ports.service, service), await answer(ports.ceiling, ceiling)];
    const same = a.status === b.status && a.body === b.body;
    let at = 0;
    while (at < a.body.length && a.body[at] === b.body[at]) at++;
    const where = same ? "" : `; first difference at byte ${at}: service …${a.body.slice(Math.max(0, at - 60), at + 60)}… ceiling …${b.body.slice(Math.max(0, at - 60), at + 60)}…`;
    if (!same) differ++;
    log(`${scenario.name}: ${same ? "same" : "DIFFERENT"} (status ${a.status}/${b.status}, ${Buffer.byteLength(a.body)}/${Buffer.byteLength(b.body)} bytes, SQL ${a.sql}/${b.sql})${where}`);
  }
  log(differ ? `${differ} scenarios answer differently` : "every ceiling answers the service's bytes");
}

let benchDatabaseUrl = "";
/** The bench server's data directory, when known: PostgreSQL's CPU per request is measured from it. */
let pgDataDir: string | undefined;
/**
 * Waits until no statement runs on the bench database: a slow system's statements outlive its run
 * (the client gave up, PostgreSQL did not) and would load the next one. After 30 s the ones left
 * are cancelled, as a server's statement timeout would.
 */
async function databaseQuiet() {
  const db = new Client({ connectionString: benchDatabaseUrl });
  await db.connect();
  const started = Date.now();
  const others = "FROM pg_stat_activity WHERE state = 'active' AND pid <> pg_backend_pid() AND datname = current_database()";
  let cancelled = 0;
  let quietSince: number | undefined;
  try {
    // Quiet for a whole second: a server may still hold queued requests that the next statement
    // starts (a timed-out client does not cancel them). Past 30 s, cancel what runs, until quiet.
    while (Date.now() - started < 180_000) {
      const { rows } = await db.query(`SELECT count(*)::int AS n ${others}`);
      if (rows[0].n === 0) {
        quietSince ??= Date.now();
        if (Date.now() - quietSince >= 1000) break;
      } else {
        quietSince = undefined;
        if (Date.now() - started > 30_000) cancelled += (await db.query(`SELECT pg_cancel_backend(pid) ${others}`)).rowCount ?? 0;
      }
      await new Promise((r) => setTimeout(r, 100));
    }
  } finally {
    await db.end();
  }
  if (cancelled) log(`cancelled ${cancelled} statements of the previous run still running after 30 s`);
  if (Date.now() - started > 2000) log(`waited ${((Date.now() - started) / 1000).toFixed(0)} s for the statements of the previous run to finish`);
}

/** Runs `request` for warm-up and DURATION seconds and adds the figures to `runs` under `key`. */
async function measure(
  runs: Map<string, RunSamples>,
  key: string,
  m: { round: number; label: string; port: number; pid: number; request: Request; connections?: number; sql: number | null },
) {
  await databaseQuiet();
  const connections = m.request.connections ?? m.connections ?? CONNECTIONS;
  // A run of a number of requests has no warm-up: sqlCount() has just sent one.
  if (!m.request.amount) await load(m.port, m.request, connections, m.round === 1 ? WARMUP_FIRST : WARMUP);
  const sampler = sampleRss(m.pid);
  const cpuBefore = cpuMs(m.pid);
  const postgresBefore = pgDataDir ? postgresCpuMs(pgDataDir) : 0;
  const result = await load(m.port, m.request, connections, DURATION);
  const perRequest = (ms: number) => (ms * 1000) / Math.max(result.requests.total, 1);
  const cpuUs = perRequest(cpuMs(m.pid) - cpuBefore);
  const postgresUs = pgDataDir ? perRequest(postgresCpuMs(pgDataDir) - postgresBefore) : undefined;
  const rss = sampler.stop();
  const entry = runs.get(key) ?? { rps: [], p50: [], p99: [], rss: [], cpuUs: [], postgresUs: [], withPostgresUs: [], sql: m.sql, failed: false };
  entry.rps.push(result.requests.average);
  entry.cpuUs.push(cpuUs);
  if (postgresUs !== undefined) {
    entry.postgresUs.push(postgresUs);
    entry.withPostgresUs.push(cpuUs + postgresUs);
  }
  entry.p50.push(result.latency.p50);
  entry.p99.push(result.latency.p99);
  entry.rss.push(rss);
  runs.set(key, entry);
  log(`round ${m.round} ${m.label}: ${result.requests.average.toFixed(0)} req/s, p50 ${result.latency.p50} ms, p99 ${result.latency.p99} ms, ${cpuUs.toFixed(0)} µs CPU/request${postgresUs !== undefined ? ` (PostgreSQL ${postgresUs.toFixed(0)})` : ""}, non-2xx ${result.non2xx}`);
  // A system that fails a scenario (errors, timeouts: PostGraphile's nested query at 1M rows
  // timed out) is reported, not fatal: the other rows still count.
  if (result.non2xx > 0 || result.errors > 0 || result.requests.total === 0) {
    log(`${m.label} FAILED: ${result.requests.total} requests, ${result.non2xx} non-2xx, ${result.errors} errors, ${result.timeouts} timeouts`);
    entry.failed = true;
  }
}

const only = <S extends { name: string }>(scenarios: S[]) => scenarios.filter((s) => !process.env.BENCH_ONLY || new RegExp(process.env.BENCH_ONLY).test(s.name));

function build() {
  log("building the service (npm run build)");
  execFileSync("npm", ["run", "build", "--silent"], { cwd: ROOT, stdio: "inherit" });
}

function migrate(databaseUrl: string) {
  execFileSync(NODE, [path.join(ROOT, "bin/gcs.js"), "migrate"], { cwd: ROOT, env: { ...process.env, DATABASE_URL: databaseUrl }, stdio: "inherit" });
}

/** --cpu-prof into BENCH_CPU_PROF/<name>, when set. */
const profileArgs = (name: string) => (process.env.BENCH_CPU_PROF ? ["--cpu-prof", `--cpu-prof-dir=${path.join(path.resolve(process.env.BENCH_CPU_PROF), name)}`] : []);

function startService(children: ChildProcess[], databaseUrl: string, port: number, extraEnv: Record<string, string> = {}): ChildProcess {
  return start(children, NODE, [...profileArgs("service"), ...productionArgs()], {
    DATABASE_URL: databaseUrl, PORT: String(port), HOST: "127.0.0.1", NODE_ENV: "production", LOG_LEVEL: "info",
    GCS_DELIVERY_WORKER: "false", DATABASE_POOL_SIZE: "10",
    // Production refuses to start without it; no worker runs here, so any key will do.
    GCS_DELIVERY_SECRET_KEY: `base64:${randomBytes(32).toString("base64")}`,
    // Limits on, as in production, but out of the way: one credential drives every scenario at
    // thousands of requests per second over 32 connections. The rate limit is set far above that;
    // the per-credential cap on concurrent requests is set above the connection count, because it
    // exists to share the pool between credentials and by design throttles one credential that
    // alone opens more connections than its share (measured: cap = pool size, 1,436–1,576 req/s;
    // a cap that never binds, 1,589–2,225; off, 1,891–2,397, bench/limits-overhead.ts).
    // Set them in the environment to measure their cost (GCS_RATE_LIMIT=0 turns limits off).
    GCS_RATE_LIMIT: process.env.GCS_RATE_LIMIT ?? "1000000",
    GCS_CREDENTIAL_MAX_CONCURRENCY: process.env.GCS_CREDENTIAL_MAX_CONCURRENCY ?? "1000",
    GCS_CREDENTIAL_QUEUE_MS: process.env.GCS_CREDENTIAL_QUEUE_MS ?? "60000",
    ...extraEnv,
  });
}

/** prepare() on its own connection, once the service has made its cursor secret. */
async function prepareDatabase(databaseUrl: string, manifest: FixtureManifest): Promise<Setup> {
  const db = new Client({ connectionString: databaseUrl });
  await db.connect();
  try {
    return await prepare(db, manifest);
  } finally {
    await db.end();
  }
}

// ---------------------------------------------------------------------------------------------
// How cost grows with the data (BENCH_SIZES)
// ---------------------------------------------------------------------------------------------

/** Keyset pages and lookups must not slow down as the data grows; the nested query is recorded. */
type SizeKind = "keyset page" | "lookup" | "nested";
/** p50 at the largest size over p50 at the smallest, at most (the issue's "within 20%"). */
const FLAT = 1.2;

/**
 * The service alone at several data sizes: one database per size on one PostgreSQL server
 * (BENCH_SERVER_URL, an admin URL, or else a private server), named bench_<size> unless the entry
 * names it (`BENCH_SIZES=20000:bench20k,200000:bench,1000000:bench1m`); a database already holding
 * its size is reused, otherwise created and loaded. One service per database, all running at once,
 * so each scenario runs at every size back to back within a round.
 */
async function sizes(spec: string) {
  const wanted = spec.split(",").map((entry) => {
    const [size, database] = entry.trim().split(":");
    const guests = Number(size);
    if (!Number.isInteger(guests) || guests < 1000) throw new Error(`BENCH_SIZES: "${entry}" is not a number of guests of at least 1000`);
    if (database !== undefined && !/^\w+$/.test(database)) throw new Error(`BENCH_SIZES: "${database}" is not a plain database name`);
    return { guests, database: database ?? `bench_${guests}` };
  }).sort((a, b) => a.guests - b.guests);
  const pg = process.env.BENCH_SERVER_URL ? undefined : await startTestPostgres();
  const adminUrl = process.env.BENCH_SERVER_URL ?? pg!.adminUrl();
  const children: ChildProcess[] = [];
  try {
    build();
    const targets: { guests: number; port: number; pid: number; scenarios: SizeScenario[] }[] = [];
    for (const { guests, database } of wanted) {
      GUESTS = guests; // loadData() and prepare() read it
      const databaseUrl = await ensureDatabase(adminUrl, database);
      const manifest = await loadData(databaseUrl);
      migrate(databaseUrl);
      const port = await freePort();
      const service = startService(children, databaseUrl, port);
      await waitForPort(port);
      const setup = await prepareDatabase(databaseUrl, manifest);
      targets.push({ guests, port, pid: service.pid!, scenarios: only(sizeScenarios(manifest, setup)) });
    }
    const runs = new Map<string, RunSamples>();
    for (let round = 1; round <= ROUNDS; round++) {
      for (const [i, scenario] of targets[0].scenarios.entries()) {
        for (const target of targets) {
          const request = target.scenarios[i].request;
          const sql = await sqlCount(target.port, request);
          await measure(runs, `${scenario.name}\u0000${target.guests}`, { round, label: `${scenario.name} / ${target.guests} guests`, port: target.port, pid: target.pid, request, sql });
        }
      }
    }
    reportSizes(targets[0].scenarios, targets.map((t) => t.guests), runs);
  } finally {
    for (const child of children) child.kill("SIGTERM");
    pg?.stop();
  }
}

/** The URL of `name` on the server of `adminUrl`, created (empty) if it does not exist. */
async function ensureDatabase(adminUrl: string, name: string): Promise<string> {
  const admin = new Client({ connectionString: adminUrl });
  await admin.connect();
  const { rowCount } = await admin.query("SELECT 1 FROM pg_database WHERE datname = $1", [name]);
  await admin.end();
  if (rowCount) {
    const u = new URL(adminUrl);
    u.pathname = `/${name}`;
    return u.toString();
  }
  return createDatabase(adminUrl, name);
}

interface SizeScenario {
  name: string;
  kind: SizeKind;
  request: Request;
}

/** The keyset pages, the lookups and the nested query, as the main run sends them. */
function sizeScenarios(manifest: FixtureManifest, setup: Setup): SizeScenario[] {
  const main = buildScenarios(manifest, setup);
  const service = (name: string): Request => {
    const request = main.find((s) => s.name === name)?.systems.service;
    if (!request) throw new Error(`bench/run.ts has no service scenario named "${name}"`);
    return request;
  };
  const auth = { authorization: `Bearer ${manifest.groups.A.credentials.api_key}` };
  return [
    { name: "guests page (limit 100)", kind: "keyset page", request: service("guests page (limit 100)") },
    // prepare() puts the cursor 90% in (at most 900,000 rows).
    { name: "guests page 90% deep", kind: "keyset page", request: service("guests page at ~900,000 deep") },
    { name: "master profiles page (limit 100)", kind: "keyset page", request: { path: "/v1/master-profiles?limit=100", headers: auth } },
    { name: "events timeline, one guest", kind: "keyset page", request: service("events timeline, one guest") },
    { name: "guest by id", kind: "lookup", request: service("guest by id") },
    { name: "guest by source_id", kind: "lookup", request: service("guest by source_id") },
    { name: "guest by e-mail (any case)", kind: "lookup", request: service("guest by e-mail (any case)") },
    { name: "GraphQL: 100 guests + reservations + transactions", kind: "nested", request: service("GraphQL: 100 guests + reservations + transactions") },
  ];
}

function reportSizes(scenarios: SizeScenario[], guests: number[], runs: Map<string, RunSamples>) {
  const date = new Date().toISOString().slice(0, 10);
  const n = (value: number) => value.toLocaleString("en");
  const rows = scenarios.map((scenario) => {
    const at = guests.map((size) => {
      const r = runs.get(`${scenario.name}\u0000${size}`)!;
      return { guests: size, p50_ms: median(r.p50), p99_ms: median(r.p99), rps: Math.round(median(r.rps)), cpu_us_per_request: Math.round(median(r.cpuUs)), sql_per_request: r.sql, failed: r.failed };
    });
    const [smallest, largest] = [at[0], at[at.length - 1]];
    const p50Ratio = smallest.p50_ms > 0 ? Math.round((largest.p50_ms / smallest.p50_ms) * 100) / 100 : null;
    const rpsRatio = largest.rps > 0 ? Math.round((smallest.rps / largest.rps) * 100) / 100 : null;
    const flat = scenario.kind === "nested" ? null : p50Ratio !== null && p50Ratio <= FLAT && !at.some((a) => a.failed);
    return { scenario: scenario.name, kind: scenario.kind, sizes: at, p50_ratio: p50Ratio, rps_ratio: rpsRatio, flat };
  });
  const header = `# How cost grows ${date}\n\nThe service alone at ${guests.map(n).join(", ")} guests per group (one database each, one PostgreSQL 15), ` +
    `autocannon ${CONNECTIONS} connections, ${WARMUP} s warm-up, ${DURATION} s runs, median of ${ROUNDS} interleaved rounds, Node ${process.versions.node}, ` +
    `${require("node:os").cpus().length} cores shared with the load generator. Each cell: p50 ms / req/s / the service's CPU µs per request. ` +
    `Keyset pages and lookups pass when p50 at the largest size is within ${Math.round((FLAT - 1) * 100)}% of p50 at the smallest ` +
    `(autocannon's p50 is in whole milliseconds); the nested query is recorded only.\n\n`;
  const table = [
    `| scenario | kind | ${guests.map((g) => `${n(g)} guests`).join(" | ")} | p50 largest/smallest | req/s smallest/largest | flat |`,
    `|---|---|${guests.map(() => "---:").join("|")}|---:|---:|---|`,
    ...rows.map((r) =>
      `| ${r.scenario} | ${r.kind} | ${r.sizes.map((a) => `${a.p50_ms} / ${n(a.rps)} / ${n(a.cpu_us_per_request)}${a.failed ? " (failed)" : ""}`).join(" | ")} | ${r.p50_ratio ?? "–"} | ${r.rps_ratio ?? "–"} | ${r.flat === null ? "–" : r.flat ? "pass" : "FAIL"} |`),
  ].join("\n");
  const markdown = `${header}${table}\n`;
  process.stdout.write(markdown);
  const dir = path.join(__dirname, "results");
  mkdirSync(dir, { recursive: true });
  const name = `${date}-${process.env.BENCH_LABEL ?? "sizes"}`;
  writeFileSync(path.join(dir, `${name}.md`), markdown);
  writeFileSync(path.join(dir, `${name}.json`), JSON.stringify(rows, null, 2) + "\n");
  log(`written bench/results/${name}.md and .json`);
}

// ---------------------------------------------------------------------------------------------
// Data
// ---------------------------------------------------------------------------------------------

async function createDatabase(adminUrl: string, name: string): Promise<string> {
  const admin = new Client({ connectionString: adminUrl });
  await admin.connect();
  await admin.query(`CREATE DATABASE ${name}`);
  await admin.end();
  const u = new URL(adminUrl);
  u.pathname = `/${name}`;
  return u.toString();
}

/** `gcs fixtures --guests N`, unless this database already holds that load (its manifest is kept). */
async function loadData(databaseUrl: string): Promise<FixtureManifest> {
  const dataDir = path.join(__dirname, ".data");
  mkdirSync(dataDir, { recursive: true });
  const manifestPath = path.join(dataDir, `manifest-${GUESTS}-${Buffer.from(databaseUrl).toString("base64url").slice(-24)}.json`);
  if (existsSync(manifestPath)) {
    const manifest = JSON.parse(readFileSync(manifestPath, "utf8")) as FixtureManifest;
    const db = new Client({ connectionString: databaseUrl });
    await db.connect();
    const { rows } = await db.query("SELECT count(*)::int AS n FROM guest_profiles WHERE property_group_id = $1", [manifest.groups.A.id]).catch(() => ({ rows: [{ n: 0 }] }));
    await db.end();
    if (rows[0].n >= GUESTS) {
      log(`reusing the loaded data (${rows[0].n} guests in group A)`);
      return manifest;
    }
  }
  log(`loading fixtures: ${GUESTS} guests per group (gcs fixtures)`);
  const started = Date.now();
  execFileSync(NODE, [path.join(ROOT, "bin/gcs.js"), "fixtures", "--out", manifestPath, "--guests", String(GUESTS), "--seed", "1"], {
    cwd: ROOT,
    env: { ...process.env, DATABASE_URL: databaseUrl, LOG_LEVEL: "warn" },
    stdio: ["ignore", "inherit", "inherit"],
  });
  log(`loaded in ${((Date.now() - started) / 1000).toFixed(0)} s`);
  return JSON.parse(readFileSync(manifestPath, "utf8"));
}

/**
 * PostGraphile names the connection type of `integrations` IntegrationConnection, which clashes with
 * the `integration_connections` table's type; that table (credentials) is not part of the comparison.
 */
async function hideFromPostGraphile(databaseUrl: string) {
  const db = new Client({ connectionString: databaseUrl });
  await db.connect();
  await db.query(`COMMENT ON TABLE integration_connections IS E'@behavior -*'`);
  await db.end();
}

interface Setup {
  cursorSecret: string;
  deepCursor: string;
  ceilingDeepCursor: string;
  bigTableId: string;
  /** Where the members page starts: 40,000, or 80% in when the table is smaller (a small BENCH_GUESTS). */
  memberOffset: number;
  /** An e-mail address of a guest in group A, upper-cased (lookups ignore case). */
  guestEmail: string;
}

/** What the scenarios need beyond the manifest: a cursor ~900,000 rows deep, a big table, an e-mail. */
async function prepare(db: Client, manifest: FixtureManifest): Promise<Setup> {
  const A = manifest.groups.A;
  const secret = (await db.query("SELECT value FROM service_secrets WHERE name = 'cursor_hmac'")).rows[0]?.value;
  if (!secret) throw new Error("the service has not made its cursor secret yet (start it once)");
  const depth = Math.min(900_000, Math.floor(GUESTS * 0.9));
  const row = (
    await db.query(
      `SELECT to_char(created_at AT TIME ZONE 'UTC', 'YYYY-MM-DD"T"HH24:MI:SS.MS"Z"') AS created_at, id FROM guest_profiles
       WHERE property_group_id = $1 ORDER BY created_at, id OFFSET $2 LIMIT 1`,
      [A.id, depth],
    )
  ).rows[0];
  const binding = { family: "guests", propertyGroupId: A.id, query: { filter: {}, propertyId: null } };
  const deepCursor = encodeCursor([row.created_at, row.id], binding, secret);
  // A curated table of 50,000 members for the offset-40,000 members page.
  const bigTableId = "b0000000-0000-4000-8000-000000000001";
  const members = Math.min(50_000, GUESTS);
  await db.query(
    `INSERT INTO tables (id, property_group_id, name, kind, member_type) VALUES ($1, $2, 'Bench: big curated table', 'curated', 'guest_profile')
     ON CONFLICT (id) DO NOTHING`,
    [bigTableId, A.id],
  );
  // Positions 1, 2, 3 … in added_at order, as the write path numbers them; a reused database already
  // holds these same rows with these same positions.
  await db.query(
    `INSERT INTO table_members (table_id, member_id, property_group_id, added_at, position)
     SELECT $1, id, property_group_id, created_at, row_number() OVER (ORDER BY created_at, id)
     FROM (SELECT id, property_group_id, created_at FROM guest_profiles WHERE property_group_id = $2 ORDER BY created_at, id LIMIT $3) g
     ON CONFLICT DO NOTHING`,
    [bigTableId, A.id, members],
  );
  // The newest guest with an address: a lookup that the created_at index cannot shortcut.
  const { email } = (
    await db.query("SELECT email FROM guest_profiles WHERE property_group_id = $1 AND email IS NOT NULL ORDER BY created_at DESC, id DESC LIMIT 1", [A.id])
  ).rows[0];
  return { cursorSecret: secret, deepCursor, ceilingDeepCursor: deepCursor, bigTableId, memberOffset: Math.min(40_000, Math.floor(members * 0.8)), guestEmail: String(email).toUpperCase() };
}

// ---------------------------------------------------------------------------------------------
// Scenarios
// ---------------------------------------------------------------------------------------------

/** A well-formed guest id no group holds: a timeline of no rows. */
const NO_SUCH_GUEST = "00000000-0000-4000-8000-000000000000";
const GUEST_FIELDS_PG = "rowId propertyId integrationId sourceId masterProfileId givenName familyName email phone language countryCode city birthDate vipCode createdAt updatedAt";

function buildScenarios(manifest: FixtureManifest, setup: Setup): Scenario[] {
  const A = manifest.groups.A;
  const auth = { authorization: `Bearer ${A.credentials.api_key}` };
  const json = { ...auth, "content-type": "application/json" };
  const get = (p: string): Request => ({ path: p, headers: auth });
  const gql = (query: string, headers: Record<string, string> = json): Request => ({ method: "POST", path: "/graphql", headers, body: JSON.stringify({ query }) });
  const gqlWith = (query: string, operationName: string, variables: Record<string, unknown>): Request =>
    ({ method: "POST", path: "/graphql", headers: json, body: JSON.stringify({ query, operationName, variables }) });
  const { integration_id, source_id, guest_id } = A.guest_lookup;
  const ceilingToo = (request: Request) => ({ service: request, ceiling: request });
  const pgGuests = `{ allGuestProfiles(first: 100, condition: { propertyGroupId: "${A.id}" }, orderBy: [CREATED_AT_ASC, PRIMARY_KEY_ASC]) { nodes { ${GUEST_FIELDS_PG} } pageInfo { hasNextPage endCursor } } }`;
  const nested = `{ guests(limit: 100) { nodes { id givenName familyName email reservations { id confirmationNumber status arrivalDate departureDate totalAmountMinor currency } transactions { id kind category amountMinor currency occurredAt } } nextCursor hasMore } }`;
  const pgNested = `{ allGuestProfiles(first: 100, condition: { propertyGroupId: "${A.id}" }, orderBy: [CREATED_AT_ASC, PRIMARY_KEY_ASC]) { nodes { rowId givenName familyName email
    reservationsByGuestProfileId { nodes { rowId confirmationNumber status arrivalDate departureDate totalAmountMinor currency } }
    transactionsByGuestProfileId { nodes { rowId kind category amountMinor currency occurredAt } } } pageInfo { hasNextPage endCursor } } }`;
  return [
    { name: "guests page (limit 100)", systems: { service: get("/v1/guests?limit=100"), ceiling: get("/v1/guests?limit=100"), postgraphile: gql(pgGuests, { "content-type": "application/json" }) } },
    { name: "guests page, 1 connection", connections: 1, systems: { service: get("/v1/guests?limit=100"), ceiling: get("/v1/guests?limit=100") } },
    { name: "guests page at ~900,000 deep", systems: { service: get(`/v1/guests?limit=100&cursor=${encodeURIComponent(setup.deepCursor)}`), ceiling: get(`/v1/guests?limit=100&cursor=${encodeURIComponent(setup.ceilingDeepCursor)}`) } },
    { name: "guest by source_id", systems: { service: get(`/v1/guests?integration_id=${integration_id}&source_id=${encodeURIComponent(source_id)}`) } },
    { name: "guest by e-mail (any case)", systems: { service: get(`/v1/guests?email=${encodeURIComponent(setup.guestEmail)}`) } },
    { name: "guest by id", systems: { service: get(`/v1/guests/${guest_id}`) } },
    // Issue 31's routes, each beside its ceiling: the same statements and body, by hand (bench/ceiling-server.ts).
    { name: "events timeline, one guest", route: true, systems: ceilingToo(get(`/v1/events?guest_profile_id=${A.guest_with_events}&limit=100`)) },
    { name: "events timeline, master profile", route: true, systems: ceilingToo(get(`/v1/events?master_profile_id=${A.master_with_two_guests}&limit=100`)) },
    // Reference rows for the routes above, not targets of their own: what every request costs beside
    // its rows. A guest with no events (both statements, no row to read or write) and /healthz (no
    // credential, no statement): the service's layers (Express, the access log and metrics, the
    // credential context, the GraphQL operation) against node:http alone.
    { name: "events timeline, a guest with no events (fixed cost)", route: true, systems: ceilingToo(get(`/v1/events?guest_profile_id=${NO_SUCH_GUEST}&limit=100`)) },
    { name: "GET /healthz (fixed cost, no database)", route: true, systems: ceilingToo({ path: "/healthz" }) },
    { name: "events latest, master profile", systems: { service: get(`/v1/events?mode=latest&master_profile_id=${A.master_with_two_guests}`) } },
    { name: "reservations page (limit 100)", route: true, systems: ceilingToo(get("/v1/reservations?limit=100")) },
    { name: "transactions page (limit 100)", route: true, systems: ceilingToo(get("/v1/transactions?limit=100")) },
    { name: "master profiles include_total", route: true, systems: ceilingToo(get("/v1/master-profiles?include_total=1&limit=100")) },
    { name: `table members at offset ${setup.memberOffset.toLocaleString("en")}`, route: true, systems: ceilingToo(get(`/v1/tables/${setup.bigTableId}/members?limit=100&offset=${setup.memberOffset}`)) },
    // Consent evaluated in SQL: EXISTS subqueries per member, a constant handful of bind parameters.
    { name: "consent preview (POST /v1/tables/preview)", route: true, systems: ceilingToo({
      method: "POST", path: "/v1/tables/preview", headers: json,
      body: JSON.stringify({ member_type: "guest_profile", filter_doc: { field: "consent.email_marketing", op: "eq", value: "granted" } }),
    }) },
    // The MCP tool an agent calls most: one tools/call over stateless streamable HTTP, a JSON answer.
    { name: "MCP guest_context (master profile)", route: true, systems: ceilingToo({
      method: "POST", path: "/mcp", headers: { ...json, accept: "application/json, text/event-stream" },
      body: JSON.stringify({ jsonrpc: "2.0", id: 1, method: "tools/call", params: { name: "guest_context", arguments: { master_profile_id: A.master_with_two_guests } } }),
    }) },
    { name: "GraphQL: 100 guests + reservations + transactions", systems: { service: gql(nested), postgraphile: gql(pgNested, { "content-type": "application/json" }) } },
    // The two doors on one operation (issue 43): the route's own operation text posted to /graphql as
    // a dashboard sends a trusted document, beside the REST route that runs it compiled in-process.
    ...doorScenarios(A, gqlWith, get),
    ...postGraphileAggregates(aggregateScenarios(manifest, gql, get), A.id),
  ];
}

/** A route operation's document as the REST door runs it: the operation and the fragments it spreads. */
function routeOperationText(name: string): string {
  const dir = path.join(ROOT, "src/api/operations/routes");
  const source = readdirSync(dir).filter((f) => f.endsWith(".graphql")).map((f) => readFileSync(path.join(dir, f), "utf8")).join("\n");
  const document = parse(source);
  const operation = document.definitions.find((d): d is OperationDefinitionNode => d.kind === Kind.OPERATION_DEFINITION && d.name?.value === name);
  if (!operation) throw new Error(`no operation ${name} in ${dir}`);
  const fragments = new Map(document.definitions.filter((d): d is FragmentDefinitionNode => d.kind === Kind.FRAGMENT_DEFINITION).map((f) => [f.name.value, f]));
  const used = new Map<string, FragmentDefinitionNode>();
  const collect = (node: OperationDefinitionNode | FragmentDefinitionNode) => visit(node, {
    FragmentSpread(spread) {
      const fragment = fragments.get(spread.name.value)!;
      if (!used.has(fragment.name.value)) (used.set(fragment.name.value, fragment), collect(fragment));
    },
  });
  collect(operation);
  return [operation, ...used.values()].map((d) => print(d)).join("\n\n");
}

/**
 * One operation through both doors (issue 43: a trusted operation over /graphql costs at most 1.3×
 * the REST door's): a review summary (an aggregate, of one guest's reviews: read by index) and the
 * events timeline of a guest with no events (the fixed cost). Same variables, same rows.
 */
function doorScenarios(A: FixtureManifest["groups"]["A"], gqlWith: (query: string, operationName: string, variables: Record<string, unknown>) => Request, get: (p: string) => Request): Scenario[] {
  const summary = routeOperationText("GetReviewSummary");
  const events = routeOperationText("ListEvents");
  const pair = (name: string, rest: Request, graphql: Request): Scenario[] => [
    { name: `${name} (REST door)`, systems: { service: rest } },
    { name: `${name} (GraphQL door)`, systems: { service: graphql } },
  ];
  return [
    ...pair("aggregate: review summary of one guest",
      get(`/v1/reviews/summary?guest_profile_id=${A.guest_with_events}`),
      gqlWith(summary, "GetReviewSummary", { filter: { guestProfileId: A.guest_with_events } })),
    ...pair("events timeline, a guest with no events",
      get(`/v1/events?guest_profile_id=${NO_SUCH_GUEST}&limit=100`),
      gqlWith(events, "ListEvents", { filter: { guestProfileId: NO_SUCH_GUEST }, limit: 100 })),
  ];
}

/**
 * The dashboard aggregates (issue 28), every one grouping, over a year where the aggregate takes a
 * range, each beside its ceiling: a hand-written node:http + pg handler that runs the statement the
 * service runs for that request (the API-key lookup, then the same rollup read on the same tables)
 * and answers the same bytes (bench/ceiling-server.ts /aggregate/*; BENCH_CHECK=1 compares them).
 * One scenario per aggregate also runs the live GROUP BY (/live/*, what the rollups save: one
 * connection, a few requests, each given 120 s, so that it records a p50 instead of timing out) and
 * PostGraphile with @graphile/pg-aggregates (postGraphileAggregates() below).
 */
function aggregateScenarios(manifest: FixtureManifest, gql: (query: string) => Request, get: (p: string) => Request): Scenario[] {
  // The calendar year before the anchor's, as a dashboard asks (the rollups keep calendar buckets;
  // data/metric-rollups.ts); by week its first and last weeks are part weeks. Group A's properties
  // are in Europe/London, where 1 January starts at 00:00Z, so the review range is whole local days.
  const y = Number(manifest.anchor_date.slice(0, 4)) - 1;
  const [from, to] = [`${y}-01-01`, `${y}-12-31`];
  const year = `from=${from}&to=${to}`;
  const field: Record<string, string> = { property: "propertyId", month: "period", week: "period", channel: "channel", guest_country: "guestCountry", country: "country", loyalty_tier: "loyaltyTier", vip: "vip", source: "source" };
  const live = (p: string): Request => ({ ...get(p), connections: 1, amount: 3, timeout: 120 });
  const aggregates: { kind: string; name: (dim: string) => string; dims: string[]; query: (dim: string) => string; range: boolean }[] = [
    {
      kind: "stays", name: (dim) => `stayMetrics by ${dim}, one year`, dims: ["month", "property", "channel", "guest_country", "week"], range: true,
      query: (dim) => `{ stayMetrics(filter: { arrivalFrom: "${from}", arrivalTo: "${to}" }, groupBy: [${dim}]) { ${field[dim]} stays nights distinctGuests revenue { currency revenueMinor roomRevenueMinor roomNights averageDailyRateMinor } } }`,
    },
    {
      kind: "guests", name: (dim) => `guestMetrics by ${dim}`, dims: ["property", "country", "loyalty_tier", "vip"], range: false,
      query: (dim) => `{ guestMetrics(groupBy: [${dim}]) { ${field[dim]} guests masterProfiles reachableByEmail reachableBySms } }`,
    },
    {
      kind: "consent", name: (dim) => `consentMetrics by ${dim}`, dims: ["month", "property"], range: false,
      query: (dim) => `{ consentMetrics(purpose: "email_marketing", groupBy: [${dim}]) { ${field[dim]} granted withdrawn denied unknown } }`,
    },
    {
      kind: "reviews", name: (dim) => `reviewMetrics by ${dim}, one year`, dims: ["month", "property", "source"], range: true,
      query: (dim) => `{ reviewMetrics(filter: { publishedFrom: "${from}T00:00:00.000Z", publishedTo: "${y + 1}-01-01T00:00:00.000Z" }, groupBy: [${dim}]) { ${field[dim]} count averageRating byRating { rating count } } }`,
    },
  ];
  return aggregates.flatMap(({ kind, name, dims, query, range }) => dims.map((dim, i) => ({
    name: `aggregate: ${name(dim)}`,
    systems: {
      service: gql(query(dim)),
      ceiling: get(`/aggregate/${kind}?by=${dim}${range ? `&${year}` : ""}`),
      // The first grouping of each: the live GROUP BY reference row (PostGraphile joins it).
      ...(i === 0 ? { "live GROUP BY": live(`/live/${kind}${range ? `?${year}` : ""}`) } : {}),
    },
  })));
}

/**
 * Adds PostGraphile (with @graphile/pg-aggregates, the connection filter and a month group-by:
 * bench/postgraphile-aggregates.ts) to each aggregate scenario with a live GROUP BY row, reading the
 * date range from its URL so that all of them answer over the same days. It is the closest query the plugin can
 * express, scoped like the other PostGraphile scenarios by a propertyGroupId condition (it has no
 * API keys). It knows no hospitality rules, so parts differ from the service's answer (each
 * scenario's note, printed under the results table):
 * - stays: distinct guest profiles, not master profiles; revenue is the reservations' booked
 *   total_amount_minor per currency, not the folio with the money sign rule, and there is no room
 *   revenue or average daily rate. Nights come from a computed column (addPostGraphileComputedColumns).
 * - guests: no reachable-by-e-mail/SMS: effective consent needs precedence between observations.
 * - consent: distinct contact values per observed status and month, not each contact point's
 *   deciding observation, and no "unknown" (a contact point without observations has no row).
 * - reviews: months are UTC, not the property's time zone.
 */
function postGraphileAggregates(scenarios: Scenario[], groupId: string): Scenario[] {
  const group = `propertyGroupId: "${groupId}"`;
  const queries: Record<string, (from: string, to: string) => { query: string; note: string }> = {
    stays: (from, to) => ({
      query: `{ allReservations(condition: { ${group}, kind: stay }, filter: { arrivalDate: { greaterThanOrEqualTo: "${from}", lessThanOrEqualTo: "${to}" }, status: { notIn: [cancelled, no_show] } }) {
        byMonth: groupedAggregates(groupBy: [ARRIVAL_DATE_TRUNCATED_TO_MONTH]) { keys distinctCount { rowId guestProfileId } sum { nights } }
        byCurrency: groupedAggregates(groupBy: [ARRIVAL_DATE_TRUNCATED_TO_MONTH, CURRENCY]) { keys sum { totalAmountMinor nights } } } }`,
      note: "PostGraphile counts distinct guest profiles, not master profiles, and sums the reservations' booked totals per currency instead of the folio with the money sign rule (no room revenue, no ADR).",
    }),
    guests: () => ({
      query: `{ allGuestProfiles(condition: { ${group} }) { groupedAggregates(groupBy: [PROPERTY_ID]) { keys distinctCount { rowId masterProfileId } } } }`,
      note: "PostGraphile gives guests and master profiles only: reachability needs consent precedence.",
    }),
    consent: () => ({
      query: `{ allConsentObservations(condition: { ${group}, purpose: "email_marketing" }) { groupedAggregates(groupBy: [OBSERVED_AT_TRUNCATED_TO_MONTH, STATUS]) { keys distinctCount { contactValue } } } }`,
      note: "PostGraphile counts distinct contact values per observed status and UTC month, not each contact point's deciding observation, and cannot count unknown.",
    }),
    reviews: (from, to) => ({
      query: `{ allReviews(condition: { ${group} }, filter: { publishedAt: { greaterThanOrEqualTo: "${from}T00:00:00.000Z", lessThan: "${nextDay(to)}T00:00:00.000Z" } }) {
        byMonth: groupedAggregates(groupBy: [PUBLISHED_AT_TRUNCATED_TO_MONTH]) { keys distinctCount { rowId } average { rating } }
        byRating: groupedAggregates(groupBy: [PUBLISHED_AT_TRUNCATED_TO_MONTH, RATING]) { keys distinctCount { rowId } } } }`,
      note: "PostGraphile's months are UTC, not the property's time zone.",
    }),
  };
  return scenarios.map((scenario) => {
    const [, kind, search] = /^\/live\/(\w+)\??(.*)$/.exec(scenario.systems["live GROUP BY"]?.path ?? "") ?? [];
    if (!kind || !queries[kind]) return scenario;
    const range = new URLSearchParams(search);
    const { query, note } = queries[kind](range.get("from") ?? "", range.get("to") ?? "");
    const postgraphile: Request = { method: "POST", path: "/graphql", headers: { "content-type": "application/json" }, body: JSON.stringify({ query }) };
    return { ...scenario, systems: { ...scenario.systems, postgraphile }, note };
  });
}

const plusDays = (date: string, days: number) => new Date(Date.parse(`${date}T00:00:00Z`) + days * 86_400_000).toISOString().slice(0, 10);
const nextDay = (date: string) => plusDays(date, 1);

/** A reservation's nights as a PostGraphile computed column, so that the plugin can sum them. */
async function addPostGraphileComputedColumns(databaseUrl: string) {
  const db = new Client({ connectionString: databaseUrl });
  await db.connect();
  await db.query("CREATE OR REPLACE FUNCTION reservations_nights(r reservations) RETURNS integer LANGUAGE sql STABLE AS 'SELECT r.departure_date - r.arrival_date'");
  await db.end();
}

// ---------------------------------------------------------------------------------------------
// Load, measurements, report
// ---------------------------------------------------------------------------------------------

function load(port: number, request: Request, connections: number, duration: number): Promise<autocannon.Result> {
  return autocannon({
    url: `http://127.0.0.1:${port}${request.path}`,
    method: request.method ?? "GET",
    headers: request.headers,
    body: request.body,
    connections,
    ...(request.amount ? { amount: request.amount } : { duration }),
    ...(request.timeout ? { timeout: request.timeout } : {}),
  });
}

async function sqlCount(port: number, request: Request): Promise<number | null> {
  // A server whose statements the quiet wait cancelled may answer 503 for a moment.
  for (let attempt = 1; ; attempt++) {
    try {
      return await sqlCountOnce(port, request);
    } catch (err) {
      if (attempt >= 10 || !/answered 503/.test((err as Error).message)) throw err;
      await new Promise((r) => setTimeout(r, 3000));
    }
  }
}

async function sqlCountOnce(port: number, request: Request): Promise<number | null> {
  const res = await fetch(`http://127.0.0.1:${port}${request.path}`, { method: request.method ?? "GET", headers: request.headers, body: request.body });
  const text = await res.text();
  // GraphQL answers errors with 200: a query that fails would otherwise be measured as a success.
  if (!res.ok || (request.path === "/graphql" && JSON.parse(text).errors) || (request.path === "/mcp" && (JSON.parse(text).error || JSON.parse(text).result?.isError))) throw new Error(`${request.path} answered ${res.status}: ${text.slice(0, 300)}`);
  const header = res.headers.get("x-sql-statements");
  return header === null ? null : Number(header);
}

/** Samples a process's resident memory every 100 ms; stop() gives the peak in MB. */
function sampleRss(pid: number) {
  let peak = 0;
  const read = () => {
    const status = readFileSync(`/proc/${pid}/status`, "utf8");
    peak = Math.max(peak, Number(/VmRSS:\s+(\d+)/.exec(status)?.[1] ?? 0) / 1024);
  };
  read();
  const timer = setInterval(read, 100);
  return { stop: () => (clearInterval(timer), read(), Math.round(peak)) };
}

/** The service as production runs it: the node flags and script of `npm run start:production`. */
function productionArgs(): string[] {
  const script: string = JSON.parse(readFileSync(path.join(ROOT, "package.json"), "utf8")).scripts["start:production"];
  const [node, ...args] = script.split(/\s+/);
  if (node !== "node") throw new Error(`start:production should run node, not ${node}`);
  return args.map((arg) => (arg.startsWith("dist/") ? path.join(ROOT, arg) : arg));
}

function start(children: ChildProcess[], cmd: string, args: string[], extraEnv: Record<string, string>): ChildProcess {
  const child = spawn(cmd, args, { cwd: ROOT, env: { ...process.env, ...extraEnv }, stdio: ["ignore", "ignore", "inherit"] });
  children.push(child);
  return child;
}

async function waitForPort(port: number) {
  const deadline = Date.now() + 120_000;
  for (;;) {
    try {
      await fetch(`http://127.0.0.1:${port}/`);
      return;
    } catch {
      if (Date.now() > deadline) throw new Error(`nothing listens on ${port}`);
      await new Promise((r) => setTimeout(r, 250));
    }
  }
}

const median = (values: number[]) => {
  const sorted = [...values].sort((a, b) => a - b);
  const mid = Math.floor(sorted.length / 2);
  return sorted.length % 2 ? sorted[mid] : (sorted[mid - 1] + sorted[mid]) / 2;
};

interface RunSamples {
  rps: number[];
  p50: number[];
  p99: number[];
  rss: number[];
  /** The server's CPU time per request (user + system, from /proc): what the others' load disturbs least. */
  cpuUs: number[];
  /** PostgreSQL's CPU time per request (every backend of the server, from /proc), when its data directory is known. */
  postgresUs: number[];
  /** The server's and PostgreSQL's together, per request: what the tenant wall's A/B compares. */
  withPostgresUs: number[];
  sql: number | null;
  failed: boolean;
}

function summarise(runs: Map<string, RunSamples>): Row[] {
  const rows: Row[] = [...runs].map(([key, r]) => {
    const [scenario, system] = key.split("\u0000") as [string, System];
    return {
      // Whole requests per second, or tenths below 10 (the live GROUP BY).
      scenario, system, rps: median(r.rps) < 10 ? Math.round(median(r.rps) * 10) / 10 : Math.round(median(r.rps)), p50_ms: median(r.p50), p99_ms: median(r.p99),
      rss_mb: Math.max(...r.rss), cpu_us_per_request: Math.round(median(r.cpuUs)),
      postgres_cpu_us_per_request: r.postgresUs.length ? Math.round(median(r.postgresUs)) : null, sql_per_request: r.sql, vs_ceiling: null, vs_peer: null, failed: r.failed,
    };
  });
  for (const row of rows) {
    row.vs_ceiling = pairedRatio(runs, row.scenario, row.system, "ceiling");
    row.vs_peer = pairedRatio(runs, row.scenario, row.system, "postgraphile");
  }
  return rows;
}

/**
 * `system`'s req/s over `other`'s, as the median of each round's ratio (both ran in that round, back
 * to back), not the ratio of the medians: the machine's pace drifts between rounds (it shares its
 * host), and a ratio taken within a round cancels it. Null when `other` did not run.
 */
function pairedRatio(runs: Map<string, RunSamples>, scenario: string, system: System, other: System, of: "rps" | "cpuUs" | "withPostgresUs" = "rps", digits = 2): number | null {
  const a = runs.get(`${scenario}\u0000${system}`)?.[of];
  const b = runs.get(`${scenario}\u0000${other}`)?.[of];
  if (!a?.length || !b || a.length !== b.length || b.some((x) => x <= 0)) return null;
  const scale = 10 ** digits;
  return Math.round(median(a.map((x, i) => x / b[i])) * scale) / scale;
}

/** " (1 connection, 3 requests)" for a system measured with its own load. */
function loadNote(scenarios: Scenario[], row: Row): string {
  const request = scenarios.find((s) => s.name === row.scenario)?.systems[row.system];
  if (!request?.connections && !request?.amount) return "";
  const c = request.connections ?? CONNECTIONS;
  return ` (${c} connection${c === 1 ? "" : "s"}${request.amount ? `, ${request.amount} requests` : ""})`;
}

function report(rows: Row[], manifest: FixtureManifest, scenarios: Scenario[], runs: Map<string, RunSamples>) {
  const date = new Date().toISOString().slice(0, 10);
  const header = `# Benchmark ${date}\n\n${GUESTS.toLocaleString("en")} guests per group (${manifest.groups.A.counts.events?.toLocaleString("en") ?? "?"} events in group A), ` +
    `autocannon ${CONNECTIONS} connections (unless noted), ${WARMUP_FIRST} s warm-up in round 1 and ${WARMUP} s after, ${DURATION} s runs, median of ${ROUNDS} interleaved rounds (ratios: the median of each round's ratio), ` +
    `Node ${process.versions.node}, PostgreSQL 15, ${require("node:os").cpus().length} cores shared with the load generator. ` +
    `The service runs as \`npm run start:production\` does (\`node ${productionArgs().filter((a) => a.startsWith("--")).join(" ")}\`).\n\n`;
  const table = [
    "| scenario | system | req/s | p50 ms | p99 ms | CPU µs/request | PostgreSQL CPU µs/request | peak RSS MB | SQL/request | vs ceiling | vs PostGraphile |",
    "|---|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|",
    ...rows.map((r) => `| ${r.scenario} | ${r.system}${loadNote(scenarios, r)}${r.failed ? " (failed)" : ""} | ${r.rps} | ${r.p50_ms} | ${r.p99_ms} | ${r.cpu_us_per_request} | ${r.postgres_cpu_us_per_request ?? "–"} | ${r.rss_mb} | ${r.sql_per_request ?? "–"} | ${r.vs_ceiling ?? "–"} | ${r.vs_peer ?? "–"} |`),
  ].join("\n");
  const notes = scenarios.filter((s) => s.note).map((s) => `- ${s.name}: ${s.note}`);
  const markdown = `${header}${table}\n${notes.length ? `\nNot equivalent:\n${notes.join("\n")}\n` : ""}${targets(rows)}${rlsCost(rows, runs)}`;
  process.stdout.write(markdown);
  const dir = path.join(__dirname, "results");
  mkdirSync(dir, { recursive: true });
  const label = process.env.BENCH_LABEL ?? (process.env.BENCH_ONLY || process.env.BENCH_ROUTES ? "partial" : "");
  const name = label ? `${date}-${label}` : date;
  writeFileSync(path.join(dir, `${name}.md`), markdown);
  writeFileSync(path.join(dir, `${name}.json`), JSON.stringify(rows, null, 2) + "\n");
  log(`written bench/results/${name}.md and .json`);
}

/**
 * Issue 43's targets, each figure beside its bound (CPU per request is the service's plus
 * PostgreSQL's where the bench knows PostgreSQL's; medians of the rounds).
 */
function targets(rows: Row[]): string {
  const row = (scenario: string, system: System) => rows.find((r) => r.scenario === scenario && r.system === system);
  const both = (r: Row) => r.cpu_us_per_request + (r.postgres_cpu_us_per_request ?? 0);
  const lines: string[] = [];
  const check = (what: string, value: number, bound: string, ok: boolean) => lines.push(`- ${what}: ${value} (${bound}) ${ok ? "met" : "NOT met"}`);
  const fixed = row("events timeline, a guest with no events (fixed cost)", "service");
  const fixedCeiling = row("events timeline, a guest with no events (fixed cost)", "ceiling");
  if (fixed && fixedCeiling) check("empty timeline, service + PostgreSQL CPU beyond the ceiling's, µs", both(fixed) - both(fixedCeiling), "at most 100", both(fixed) - both(fixedCeiling) <= 100);
  const health = row("GET /healthz (fixed cost, no database)", "service");
  const healthCeiling = row("GET /healthz (fixed cost, no database)", "ceiling");
  if (health && healthCeiling) check("GET /healthz, CPU against the ceiling's", round2(health.cpu_us_per_request / healthCeiling.cpu_us_per_request), "at most 1.5", health.cpu_us_per_request <= 1.5 * healthCeiling.cpu_us_per_request);
  for (const r of rows.filter((x) => x.system === "service" && row(x.scenario, "ceiling") && !/fixed cost|^aggregate:/.test(x.scenario))) {
    const bound = /^guests page \(limit 100\)$/.test(r.scenario) ? 1.15 : 1.25;
    const ratio = round2(both(r) / both(row(r.scenario, "ceiling")!));
    check(`${r.scenario}, service + PostgreSQL CPU against the ceiling's`, ratio, `at most ${bound}`, ratio <= bound);
  }
  for (const [scenario, bound] of [["guests page (limit 100)", 2], ["GraphQL: 100 guests + reservations + transactions", 1.5]] as const) {
    const service = row(scenario, "service");
    const peer = row(scenario, "postgraphile");
    if (service && peer) check(`${scenario}, req/s against PostGraphile's`, round2(service.rps / peer.rps), `at least ${bound}`, service.rps >= bound * peer.rps);
  }
  for (const graphql of rows.filter((r) => r.system === "service" && r.scenario.endsWith(" (GraphQL door)"))) {
    const rest = row(graphql.scenario.replace(" (GraphQL door)", " (REST door)"), "service");
    if (rest) check(`${graphql.scenario.replace(" (GraphQL door)", "")}, GraphQL door's CPU against the REST door's`, round2(graphql.cpu_us_per_request / rest.cpu_us_per_request), "at most 1.3", graphql.cpu_us_per_request <= 1.3 * rest.cpu_us_per_request);
  }
  return lines.length ? `\nTargets (issue 43):\n${lines.join("\n")}\n` : "";
}

const round2 = (x: number) => Math.round(x * 100) / 100;

/** What the tenant wall costs each A/B scenario: req/s and CPU per request, on against off, paired by round. */
function rlsCost(rows: Row[], runs: Map<string, RunSamples>): string {
  const lines = rows
    .filter((r) => r.system === RLS_OFF)
    .map((off) => {
      const on = rows.find((r) => r.scenario === off.scenario && r.system === "service")!;
      const pct = (ratio: number | null) => (ratio == null ? "–" : `${((ratio - 1) * 100).toFixed(1)}%`);
      const rps = pairedRatio(runs, off.scenario, "service", RLS_OFF, "rps", 4);
      const cpu = pairedRatio(runs, off.scenario, "service", RLS_OFF, "cpuUs", 4);
      // The wall's work is mostly PostgreSQL's (the settings statement, the policies): counted too.
      const both = pairedRatio(runs, off.scenario, "service", RLS_OFF, "withPostgresUs", 4);
      const withPostgres = both == null ? "" : `, ${pct(both)} CPU per request with PostgreSQL's`;
      return `- ${off.scenario}: ${pct(rps)} req/s, ${pct(cpu)} CPU per request${withPostgres} (median of the rounds' paired ratios); medians ${on.rps} against ${off.rps} req/s, ${on.cpu_us_per_request} against ${off.cpu_us_per_request} µs, p50 ${on.p50_ms} against ${off.p50_ms} ms`;
    });
  return lines.length ? `\nRow Level Security A/B (run back to back with the service in every round; "RLS off" sends no role or group, so a superuser login skips the policies; with no settings statement to carry the credential check it remembers no credential either, so each of its requests also runs the credential lookup, one statement more):\n${lines.join("\n")}\n` : "";
}

main().catch((err) => {
  console.error(err);
  process.exit(1);
});
