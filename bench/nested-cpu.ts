// npx tsx bench/nested-cpu.ts: CPU per nested GraphQL request (bench/run.ts's `nested` query), for the
// service and for PostGraphile on the same private PostgreSQL, split into the server's own CPU and
// PostgreSQL's. Throughput on a shared machine is noise; CPU time per request is what decides when
// the servers, PostgreSQL and the load generator share the cores, and the others' load disturbs it
// much less. Variants take turns within each round, so every one sees the same drift.
//
// PostgreSQL's CPU is the postmaster's and its backends' (user + system, /proc), reaped ones
// included: nothing but the measured variant talks to this server during a round.
//
// Environment: NESTED_GUESTS (default 20000), NESTED_ROUNDS (default 3), NESTED_DURATION (s, default
// 10), NESTED_CONNECTIONS (default 32), NESTED_DIST (extra builds to compare, `name=dir,...`, each a
// build of another commit: its dist/ beside schema.graphql, package.json, prisma/migrations and a node_modules link), NESTED_PROFILE (a directory:
// the service runs with --cpu-prof and writes its profile there on exit).
import { randomBytes } from "node:crypto";
import { spawn, execFileSync, type ChildProcess } from "node:child_process";
import { mkdtempSync } from "node:fs";
import os from "node:os";
import path from "node:path";
import autocannon from "autocannon";
import { Client } from "pg";
import { freePort } from "../src/embedded/server";
import { startTestPostgres } from "../test/helpers/postgres";
import { cpuMs, fixtureDatabase, postgresCpuMs, waitFor } from "./process";

const ROOT = path.resolve(__dirname, "..");
const NODE = path.join(ROOT, "node_modules/.bin/node");
const env = (name: string, fallback: number) => Number(process.env[name] ?? fallback);
const GUESTS = env("NESTED_GUESTS", 20_000);
const ROUNDS = env("NESTED_ROUNDS", 3);
const DURATION = env("NESTED_DURATION", 10);
const CONNECTIONS = env("NESTED_CONNECTIONS", 32);
const log = (line: string) => process.stderr.write(`[nested] ${line}\n`);

const NESTED = `{ guests(limit: 100) { nodes { id givenName familyName email reservations { id confirmationNumber status arrivalDate departureDate totalAmountMinor currency } transactions { id kind category amountMinor currency occurredAt } } nextCursor hasMore } }`;
const pgNested = (groupId: string) => `{ allGuestProfiles(first: 100, condition: { propertyGroupId: "${groupId}" }, orderBy: [CREATED_AT_ASC, PRIMARY_KEY_ASC]) { nodes { rowId givenName familyName email
    reservationsByGuestProfileId { nodes { rowId confirmationNumber status arrivalDate departureDate totalAmountMinor currency } }
    transactionsByGuestProfileId { nodes { rowId kind category amountMinor currency occurredAt } } } pageInfo { hasNextPage endCursor } } }`;

interface Variant {
  name: string;
  port: number;
  pid: number;
  body: string;
}

async function main() {
  const pg = await startTestPostgres();
  const children: ChildProcess[] = [];
  try {
    log(`loading ${GUESTS} guests per group, building`);
    const { databaseUrl, manifest } = await fixtureDatabase(pg, "nested", GUESTS, path.join(mkdtempSync(path.join(os.tmpdir(), "gcs-nested-")), "manifest.json"));
    execFileSync("npm", ["run", "build", "--silent"], { cwd: ROOT, stdio: "inherit" });
    const db = new Client({ connectionString: databaseUrl });
    await db.connect();
    // As bench/run.ts: a table PostGraphile would name-clash on stays out of its schema.
    await db.query(`COMMENT ON TABLE integration_connections IS E'@behavior -*'`);
    await db.end();

    const builds: [string, string][] = [
      ...(process.env.NESTED_DIST ?? "").split(",").filter(Boolean).map((pair) => pair.split("=") as [string, string]),
      ["service", "dist"],
    ];
    const variants: Variant[] = [];
    const serviceBody = JSON.stringify({ query: NESTED });
    for (const [name, dist] of builds) {
      const port = await freePort();
      const profile = process.env.NESTED_PROFILE ? ["--cpu-prof", `--cpu-prof-dir=${process.env.NESTED_PROFILE}`] : [];
      const child = spawn(NODE, ["--max-semi-space-size=32", "--heap-growing-percent=50", ...profile, path.resolve(ROOT, dist, "cli/main.js"), "serve"], {
        cwd: ROOT,
        env: {
          ...process.env, DATABASE_URL: databaseUrl, PORT: String(port), HOST: "127.0.0.1", NODE_ENV: "production", LOG_LEVEL: "info", // as bench/run.ts
          GCS_DELIVERY_WORKER: "false", DATABASE_POOL_SIZE: "10", GCS_DELIVERY_SECRET_KEY: `base64:${randomBytes(32).toString("base64")}`,
          GCS_RATE_LIMIT: "1000000", GCS_CREDENTIAL_MAX_CONCURRENCY: "1000", GCS_CREDENTIAL_QUEUE_MS: "60000",
        },
        stdio: ["ignore", "ignore", "ignore"],
      });
      children.push(child);
      variants.push({ name, port, pid: child.pid!, body: serviceBody });
    }
    const pgPort = await freePort();
    const postgraphile = spawn(NODE, [path.join(ROOT, "node_modules/.bin/postgraphile"), "-c", databaseUrl, "-s", "public", "-P", "postgraphile/presets/amber", "-p", String(pgPort), "-n", "127.0.0.1"], {
      cwd: ROOT, env: { ...process.env, GRAPHILE_ENV: "production" }, stdio: ["ignore", "ignore", "inherit"],
    });
    children.push(postgraphile);
    variants.push({ name: "postgraphile", port: pgPort, pid: postgraphile.pid!, body: JSON.stringify({ query: pgNested(manifest.groups.A.id) }) });

    const auth = { authorization: `Bearer ${manifest.groups.A.credentials.api_key}` };
    const headersOf = (v: Variant) => ({ "content-type": "application/json", ...(v.name === "postgraphile" ? {} : auth) });
    for (const v of variants) {
      if (v.name === "postgraphile") await waitForPost(v);
      else await waitFor(`http://127.0.0.1:${v.port}/v1/guests?limit=1`, auth);
      const res = await fetch(`http://127.0.0.1:${v.port}/graphql`, { method: "POST", headers: headersOf(v), body: v.body });
      const text = await res.text();
      if (!res.ok || text.includes('"errors"')) throw new Error(`${v.name}: ${res.status} ${text.slice(0, 300)}`);
      log(`${v.name}: ${text.length} bytes, ${res.headers.get("x-sql-statements") ?? "?"} statements per request`);
    }

    const results = new Map<string, { node: number; postgres: number; rps: number }[]>();
    for (let round = 1; round <= ROUNDS; round++) {
      const order = variants.map((_, i) => variants[(i + round) % variants.length]);
      for (const v of order) {
        const load = (duration: number) =>
          autocannon({ url: `http://127.0.0.1:${v.port}/graphql`, method: "POST", headers: headersOf(v), body: v.body, connections: CONNECTIONS, duration });
        await load(2); // warm-up
        const node0 = cpuMs(v.pid);
        const pg0 = postgresCpuMs(pg.dataDir);
        const r = await load(DURATION);
        if (r.non2xx || r.errors) throw new Error(`${v.name}: ${r.non2xx} non-2xx, ${r.errors} errors`);
        const sample = { node: (cpuMs(v.pid) - node0) / r.requests.total, postgres: (postgresCpuMs(pg.dataDir) - pg0) / r.requests.total, rps: r.requests.average };
        results.set(v.name, [...(results.get(v.name) ?? []), sample]);
        log(`round ${round} ${v.name}: ${sample.rps.toFixed(0)} req/s, ${sample.node.toFixed(2)} ms server CPU + ${sample.postgres.toFixed(2)} ms PostgreSQL CPU per request`);
      }
    }
    const median = (xs: number[]) => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)];
    process.stdout.write(`nested GraphQL, ${GUESTS} guests per group, ${CONNECTIONS} connections, median of ${ROUNDS} rounds of ${DURATION} s (CPU ms per request)\n`);
    for (const [name, samples] of results) {
      const node = median(samples.map((s) => s.node));
      const postgres = median(samples.map((s) => s.postgres));
      const total = median(samples.map((s) => s.node + s.postgres));
      process.stdout.write(`${name.padEnd(13)} server ${node.toFixed(2)}  postgres ${postgres.toFixed(2)}  total ${total.toFixed(2)}  (${median(samples.map((s) => s.rps)).toFixed(0)} req/s)\n`);
    }
  } finally {
    for (const child of children) child.kill("SIGTERM");
    await new Promise((r) => setTimeout(r, 1000)); // --cpu-prof writes its profile on exit
    pg.stop();
  }
}

async function waitForPost(v: Variant) {
  for (let i = 0; i < 600; i++) {
    try {
      const res = await fetch(`http://127.0.0.1:${v.port}/graphql`, { method: "POST", headers: { "content-type": "application/json" }, body: JSON.stringify({ query: "{ __typename }" }) });
      if (res.ok) return;
    } catch {
      // not listening yet
    }
    await new Promise((r) => setTimeout(r, 200));
  }
  throw new Error(`${v.name} never answered`);
}

main().catch((err) => {
  process.stderr.write(`${err.stack ?? err}\n`);
  process.exit(1);
});
