// How fresh the dashboard rollups stay under a steady write load, and what keeping them fresh costs
// PostgreSQL (issue 44). A property system's sync writes straight to PostgreSQL at FRESHNESS_RATE
// statements a second, spread over both fixture groups and over reservations, transactions, guest
// profiles, consent observations and reviews. Among them, every second, one marker write per
// aggregate whose effect only it makes (a stay on a far-future day, a guest in country XF, a
// consent granted for a contact point that had none, a review on a far-future day); the dashboard
// is polled through `gcs serve` (POST /graphql, the group's key) until the marker shows. Commit →
// visible is that marker's freshness.
//
// Two runs of the same writes (one seed): the refresher applying what each write touched (the
// daily path), then with GCS_ROLLUP_INCREMENTAL=false, rebuilding a pair whole after any change
// (the repair path, what every refresh did before issue 44).
//
// Processes: the refresher runs in its own `gcs serve` (GCS_ROLLUP_REFRESH_MS as this script is given it, else its default; no
// delivery worker, sent no request), whose connections carry application_name
// gcs_freshness_refresher; the polls go to a second `gcs serve` with the refresher off, as two
// instances of one deployment would share the work. So the refresher's PostgreSQL CPU is exactly
// that of the backends pg_stat_activity lists under that name: their /proc/<pid>/stat CPU, sampled
// every second (a backend first seen during a run counts from its start) ÷ the run's wall time.
// live_answers: the serving instance's gcs_aggregate_answers_total{source="live"} over the run
// (every poll asks a shape the rollups serve, so a live answer means a stale or unbuilt pair).
//
// The database is loaded once by `gcs fixtures` into a PostgreSQL this script starts on a data
// directory it keeps (FRESHNESS_PGDATA, default /work/pg-fresh/<guests>), so later runs start at
// once; every run first brings every pair up to date (a whole rebuild when its facts are not built).
//
// Usage: npx tsx bench/rollup-freshness.ts
// Environment: FRESHNESS_GUESTS (per group, default 1000000), FRESHNESS_RATE (writes/s, default 20),
// FRESHNESS_SECONDS (default 300), FRESHNESS_REBUILD_SECONDS (the whole-rebuild run, default
// FRESHNESS_SECONDS; 0 skips it), FRESHNESS_POLL_MS (default 200), FRESHNESS_SEED (default 44),
// FRESHNESS_PGDATA, FRESHNESS_DATABASE_URL + FRESHNESS_MANIFEST (a loaded database instead; its
// server must run on this machine, for /proc), FRESHNESS_PREPARE_ONLY=1 (load and bring up to date,
// then stop), FRESHNESS_LABEL (results file name: bench/results/<date>-freshness<label>.json; default
// empty at 1,000,000 guests, else -<guests>).
import { chmodSync, existsSync, mkdirSync, readFileSync, writeFileSync } from "node:fs";
import { execFileSync } from "node:child_process";
import path from "node:path";
import { Client, Pool } from "pg";
import { loadConfig } from "../src/config";
import { openDatabase } from "../src/db/database";
import { refreshRollups } from "../src/rollups/refresh";
import type { FixtureManifest } from "../src/fixtures";
import { freePort } from "../src/embedded/server";
import { findPostgres, runAsServerUser, serverUser } from "../test/helpers/binaries";
import { startServerOn, type TestPostgres } from "../test/helpers/postgres";
import { serve, stopProcess, type ServeProcess } from "../test/helpers/serve";
import { fixtureDatabase, postgresCpuMs } from "./process";

const env = process.env;
const GUESTS = Number(env.FRESHNESS_GUESTS ?? 1_000_000);
const RATE = Number(env.FRESHNESS_RATE ?? 20);
const SECONDS = Number(env.FRESHNESS_SECONDS ?? 300);
const REBUILD_SECONDS = Number(env.FRESHNESS_REBUILD_SECONDS ?? SECONDS);
const POLL_MS = Number(env.FRESHNESS_POLL_MS ?? 200);
const SEED = Number(env.FRESHNESS_SEED ?? 44);
const PGDATA_ROOT = env.FRESHNESS_PGDATA ?? `/work/pg-fresh/${GUESTS}`;
const LABEL = env.FRESHNESS_LABEL ?? (GUESTS === 1_000_000 ? "" : `-${GUESTS >= 1000 ? `${GUESTS / 1000}k` : GUESTS}`);
/** After a run's last write, how long its last markers may take to show before they count as not shown. */
const DRAIN_MS = 30_000;
const REFRESHER = "gcs_freshness_refresher";
const AGGREGATES = ["stays", "guests", "consent", "reviews"] as const;
type Aggregate = (typeof AGGREGATES)[number];
type GroupKey = "A" | "B";
const GROUPS: GroupKey[] = ["A", "B"];
/** The markers' far-future day (no fixture stay or review is on it) and the guests' unused country code. */
const MARKER_DAY = "2199-06-15";
const MARKER_COUNTRY = "XF";

const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));
const log = (...args: unknown[]) => console.error(`[${new Date().toISOString().slice(11, 19)}]`, ...args);

/** A seeded PRNG (mulberry32): both runs make the same writes. */
function random(seed: number): () => number {
  let a = seed >>> 0;
  return () => {
    a = (a + 0x6d2b79f5) >>> 0;
    let t = Math.imul(a ^ (a >>> 15), 1 | a);
    t = (t + Math.imul(t ^ (t >>> 7), 61 | t)) ^ t;
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
}

// ---- the database ------------------------------------------------------------------------------

interface Prepared {
  url: string;
  manifest: FixtureManifest;
  dataDir?: string;
  stop(): Promise<void>;
}

async function database(): Promise<Prepared> {
  if (env.FRESHNESS_DATABASE_URL) {
    if (!env.FRESHNESS_MANIFEST) throw new Error("FRESHNESS_MANIFEST names the fixture manifest of FRESHNESS_DATABASE_URL");
    return { url: env.FRESHNESS_DATABASE_URL, manifest: JSON.parse(readFileSync(env.FRESHNESS_MANIFEST, "utf8")), stop: async () => undefined };
  }
  const root = PGDATA_ROOT;
  const dataDir = path.join(root, "data");
  if (!existsSync(path.join(dataDir, "PG_VERSION"))) {
    mkdirSync(root, { recursive: true });
    chmodSync(root, 0o777);
    const user = serverUser();
    if (user) execFileSync("chown", [user, root]);
    runAsServerUser(path.join(findPostgres().dir, "initdb"), ["-D", dataDir, "-U", "postgres", "--auth=trust", "-E", "UTF8", "--no-sync"]);
  }
  const pg: TestPostgres = await startServerOn(root, dataDir);
  const manifestPath = path.join(root, "manifest.json");
  try {
    if (!existsSync(manifestPath)) {
      log(`loading ${GUESTS.toLocaleString("en")} guests per group with gcs fixtures into ${dataDir} (kept for later runs)`);
      const admin = new Client({ connectionString: pg.adminUrl() });
      await admin.connect();
      await admin.query("DROP DATABASE IF EXISTS freshness WITH (FORCE)");
      await admin.end();
      const started = Date.now();
      await fixtureDatabase(pg, "freshness", GUESTS, manifestPath + ".loading");
      execFileSync("mv", [manifestPath + ".loading", manifestPath]);
      log(`loaded in ${((Date.now() - started) / 60_000).toFixed(1)} min`);
    }
  } catch (err) {
    await pg.halt();
    throw err;
  }
  return { url: pg.adminUrl("freshness"), manifest: JSON.parse(readFileSync(manifestPath, "utf8")), dataDir, stop: () => pg.halt() };
}

/** Migrates, then refreshes until no pair is due: a pair whose facts are not built is rebuilt whole. */
async function bringUpToDate(url: string): Promise<number> {
  const started = Date.now();
  const db = await openDatabase({ databaseUrl: url, dataDir: "", poolSize: 2, migrate: true });
  try {
    for (;;) {
      const reports = await refreshRollups(db);
      for (const r of reports) log(`  ${r.metric} of ${r.groupId.slice(0, 8)}…: ${JSON.stringify({ path: (r as { path?: string }).path, rows: r.rows, ms: r.durationMs })}`);
      if (!reports.length) break;
    }
  } finally {
    await db.close();
  }
  return Date.now() - started;
}

// ---- what the writes pick among ------------------------------------------------------------------

interface Pools {
  groupId: string;
  key: string;
  /** The property the review markers are written at, and its time zone. */
  markerProperty: string;
  markerTimezone: string;
  stays: string[];
  transactions: string[];
  guests: string[];
  observations: string[];
  phones: string[];
  reviews: string[];
  /** Guests' e-mails with no email_marketing observation: each consent marker decides one (half per run). */
  undecidedEmails: string[];
}

async function pools(pg: Pool, manifest: FixtureManifest, group: GroupKey, markers: number): Promise<Pools> {
  const g = manifest.groups[group];
  // The first rows by (random) uuid: a sample spread over the whole table, read by its primary key.
  const ids = async (table: string, where = "true", n = 2000) =>
    (await pg.query<{ id: string }>(`SELECT id::text FROM ${table} WHERE property_group_id = $1 AND ${where} ORDER BY id LIMIT ${n}`, [g.id])).rows.map((r) => r.id);
  const { rows: [marker] } = await pg.query<{ id: string; timezone: string }>("SELECT id::text, timezone FROM properties WHERE property_group_id = $1 ORDER BY id LIMIT 1", [g.id]);
  const phones = (await pg.query<{ v: string }>("SELECT phone AS v FROM guest_profiles WHERE property_group_id = $1 AND phone IS NOT NULL ORDER BY id LIMIT 2000", [g.id])).rows.map((r) => r.v);
  const undecidedEmails = (await pg.query<{ v: string }>(
    `SELECT DISTINCT ON (v) v FROM (
       SELECT lower(btrim(gp.email)) AS v, gp.id FROM guest_profiles gp
       WHERE gp.property_group_id = $1 AND gp.email IS NOT NULL AND btrim(gp.email) <> ''
         AND NOT EXISTS (SELECT 1 FROM consent_observations c WHERE c.property_group_id = $1 AND c.contact_value = lower(btrim(gp.email)) AND c.purpose = 'email_marketing')
       ORDER BY gp.id LIMIT $2) x`,
    [g.id, markers * 2 + 50],
  )).rows.map((r) => r.v).sort();
  if (undecidedEmails.length < markers * 2) throw new Error(`group ${group} has only ${undecidedEmails.length} undecided e-mails, ${markers * 2} needed`);
  return {
    groupId: g.id,
    key: g.credentials.api_key,
    markerProperty: marker.id,
    markerTimezone: marker.timezone,
    // Never an earlier run's marker: a background write to one would move a figure a marker reads.
    stays: await ids("reservations", `kind = 'stay' AND status NOT IN ('cancelled', 'no_show') AND arrival_date <> '${MARKER_DAY}'`),
    transactions: await ids("transactions"),
    guests: await ids("guest_profiles", `country_code IS DISTINCT FROM '${MARKER_COUNTRY}'`),
    observations: await ids("consent_observations"),
    phones,
    reviews: await ids("reviews", `published_at < '${MARKER_DAY}'::date - 1`),
    undecidedEmails,
  };
}

// ---- writes, as a property system's sync makes them: one statement each --------------------------

const columnsOf = new Map<string, { name: string; type: string }[]>();

/** INSERT … SELECT of a copy of row $1 with a new id (and source id) and some columns set: one statement. */
async function copyStatement(pg: Pool, table: string, set: string[]): Promise<string> {
  if (!columnsOf.has(table)) {
    const { rows } = await pg.query<{ name: string; type: string }>(
      `SELECT attname AS name, format_type(atttypid, atttypmod) AS type FROM pg_attribute
       WHERE attrelid = $1::regclass AND attnum > 0 AND NOT attisdropped AND attgenerated = '' ORDER BY attnum`, [table]);
    columnsOf.set(table, rows);
  }
  const cols = columnsOf.get(table)!;
  const expr = (c: { name: string; type: string }) => {
    if (c.name === "id") return "gen_random_uuid()";
    const i = set.indexOf(c.name);
    if (i >= 0) return `$${i + 2}::${c.type}`;
    if (c.name === "source_id") return `'freshness-' || gen_random_uuid()`;
    if (c.name === "created_at" || c.name === "updated_at") return "now()";
    return `"${c.name}"`;
  };
  return `INSERT INTO ${table} (${cols.map((c) => `"${c.name}"`).join(", ")}) SELECT ${cols.map(expr).join(", ")} FROM ${table} WHERE id = $1`;
}

type Write = { sql: string; params: unknown[] };

class Writes {
  private statements = new Map<string, string>();
  constructor(private pg: Pool) {}

  private async copy(table: string, id: string, set: Record<string, unknown>): Promise<Write> {
    const names = Object.keys(set);
    const k = `${table}:${names.join(",")}`;
    if (!this.statements.has(k)) this.statements.set(k, await copyStatement(this.pg, table, names));
    return { sql: this.statements.get(k)!, params: [id, ...names.map((n) => set[n])] };
  }

  /** One background write: its table and row picked by the seeded PRNG, dates around today. */
  async background(p: Pools, r: () => number): Promise<Write> {
    const pickOf = <T>(xs: T[]) => xs[Math.floor(r() * xs.length)];
    const day = new Date(Date.now() + Math.floor((r() - 0.3) * 90) * 86_400_000).toISOString().slice(0, 10);
    const plus = (d: string, n: number) => new Date(Date.parse(`${d}T00:00:00Z`) + n * 86_400_000).toISOString().slice(0, 10);
    const kind = r();
    if (kind < 0.2) return this.copy("reservations", pickOf(p.stays), { arrival_date: day, departure_date: plus(day, 1 + Math.floor(r() * 4)), status: "confirmed", booked_at: new Date().toISOString() });
    if (kind < 0.3) return { sql: "UPDATE reservations SET status = $2::\"ReservationStatus\", updated_at = now() WHERE id = $1", params: [pickOf(p.stays), pickOf(["checked_out", "checked_in", "cancelled", "confirmed"])] };
    if (kind < 0.45) return this.copy("transactions", pickOf(p.transactions), { amount_minor: String(1000 + Math.floor(r() * 50_000)), occurred_at: new Date().toISOString() });
    if (kind < 0.55) return this.copy("guest_profiles", pickOf(p.guests), { email: `freshness-${Math.floor(r() * 1e12)}@example.com`, phone: null });
    if (kind < 0.65) return { sql: "UPDATE guest_profiles SET vip_code = $2, updated_at = now() WHERE id = $1", params: [pickOf(p.guests), r() < 0.5 ? "VIP1" : null] };
    if (kind < 0.85) {
      return this.copy("consent_observations", pickOf(p.observations), {
        contact_type: "phone", contact_value: pickOf(p.phones), purpose: "sms_marketing", status: pickOf(["granted", "withdrawn", "denied"]), observed_at: new Date().toISOString(),
      });
    }
    return this.copy("reviews", pickOf(p.reviews), { rating: 1 + Math.floor(r() * 5), published_at: new Date(Date.now() - Math.floor(r() * 30 * 86_400_000)).toISOString() });
  }

  /** The marker write of an aggregate: the only write that moves the figure its poll reads. */
  async marker(aggregate: Aggregate, p: Pools, n: number, email: string): Promise<Write> {
    switch (aggregate) {
      case "stays":
        return this.copy("reservations", p.stays[n % p.stays.length], { arrival_date: MARKER_DAY, departure_date: "2199-06-16", status: "confirmed", kind: "stay" });
      case "guests":
        return this.copy("guest_profiles", p.guests[n % p.guests.length], { country_code: MARKER_COUNTRY, email: `freshness-marker-${n}-${Date.now()}@example.com`, phone: null });
      case "consent":
        return this.copy("consent_observations", p.observations[n % p.observations.length], {
          contact_type: "email", contact_value: email, purpose: "email_marketing", status: "granted", observed_at: new Date().toISOString(),
        });
      case "reviews":
        return this.copy("reviews", p.reviews[n % p.reviews.length], { property_id: p.markerProperty, published_at: `${MARKER_DAY}T12:00:00Z` });
    }
  }
}

// ---- the dashboard polls ------------------------------------------------------------------------

/** The figure each marker moves, as a dashboard reads it through the service. */
async function figure(base: string, aggregate: Aggregate, p: Pools, dayBounds: { from: string; to: string }): Promise<number> {
  const query = {
    stays: `{ stayMetrics(filter: { arrivalFrom: "${MARKER_DAY}", arrivalTo: "${MARKER_DAY}" }) { stays } }`,
    guests: `{ guestMetrics(groupBy: [country]) { country guests } }`,
    consent: `{ consentMetrics(purpose: "email_marketing", contactType: email) { granted } }`,
    reviews: `{ reviewMetrics(filter: { propertyId: "${p.markerProperty}", publishedFrom: "${dayBounds.from}", publishedTo: "${dayBounds.to}" }) { count } }`,
  }[aggregate];
  const res = await fetch(`${base}/graphql`, {
    method: "POST",
    headers: { "Content-Type": "application/json", Authorization: `Bearer ${p.key}` },
    body: JSON.stringify({ query }),
  });
  const body = (await res.json()) as { data?: Record<string, Record<string, unknown>[]>; errors?: unknown };
  if (!body.data) throw new Error(`${aggregate} poll failed: ${JSON.stringify(body.errors)}`);
  switch (aggregate) {
    case "stays":
      return (body.data.stayMetrics[0]?.stays as number) ?? 0;
    case "guests":
      return (body.data.guestMetrics.find((b) => b.country === MARKER_COUNTRY)?.guests as number) ?? 0;
    case "consent":
      return (body.data.consentMetrics[0]?.granted as number) ?? 0;
    case "reviews":
      return (body.data.reviewMetrics[0]?.count as number) ?? 0;
  }
}

/** Live answers so far by aggregate, from the serving instance's /metrics. */
async function liveAnswers(metricsUrl: string): Promise<Record<Aggregate, number>> {
  const text = await (await fetch(metricsUrl)).text();
  const out = { stays: 0, guests: 0, consent: 0, reviews: 0 };
  for (const m of text.matchAll(/^gcs_aggregate_answers_total\{([^}]*)\} (\S+)$/gm)) {
    const labels = Object.fromEntries([...m[1].matchAll(/(\w+)="([^"]*)"/g)].map((x) => [x[1], x[2]]));
    if (labels.source === "live") out[labels.aggregate as Aggregate] += Number(m[2]);
  }
  return out;
}

// ---- the refresher's CPU ---------------------------------------------------------------------------

/** CPU ticks (utime + stime, 10 ms each) of a process, or undefined once it has exited. */
function ticks(pid: number): number | undefined {
  try {
    const fields = readFileSync(`/proc/${pid}/stat`, "utf8").split(") ")[1].split(" ").map(Number);
    return fields[11] + fields[12];
  } catch {
    return undefined;
  }
}

/** Samples the refresher's backends every second: CPU since start() of those it lists, in ms. */
class RefresherCpu {
  private seen = new Map<number, { first: number; last: number }>();
  private timer?: NodeJS.Timeout;
  constructor(private admin: Client) {}

  private async sample(initial: boolean) {
    const { rows } = await this.admin.query<{ pid: number }>("SELECT pid FROM pg_stat_activity WHERE application_name = $1", [REFRESHER]);
    for (const { pid } of rows) {
      const t = ticks(pid);
      if (t === undefined) continue;
      const known = this.seen.get(pid);
      // A backend that started during the run counts from its start.
      if (!known) this.seen.set(pid, { first: initial ? t : 0, last: t });
      else known.last = t;
    }
  }

  async start() {
    this.seen.clear();
    await this.sample(true);
    this.timer = setInterval(() => void this.sample(false).catch(() => undefined), 1000);
  }

  async stop(): Promise<{ ms: number; backends: number }> {
    clearInterval(this.timer);
    await this.sample(false);
    let total = 0;
    for (const { first, last } of this.seen.values()) total += last - first;
    return { ms: total * 10, backends: this.seen.size };
  }
}

// ---- one run -------------------------------------------------------------------------------------

interface RunResult {
  refresh: "incremental" | "whole-pair rebuild";
  seconds: number;
  writes: number;
  writeErrors: number;
  /** Per aggregate: each marker's freshness in ms; a marker not shown by the end counts as its wait so far (a lower bound). */
  freshness: Record<Aggregate, { ms: number; shown: boolean }[]>;
  refreshCpuMs: number;
  refresherBackends: number;
  postgresCpuMs?: number;
  liveAnswers: Record<Aggregate, number>;
  refreshMs: number;
  /** The refresher's reports by "aggregate path": pairs refreshed, their summed and longest duration. */
  passes: Record<string, { pairs: number; totalMs: number; maxMs: number }>;
}

async function run(opts: {
  refresh: RunResult["refresh"]; seconds: number; url: string; dataDir?: string; reader: ServeProcess; metricsUrl: string;
  groups: Record<GroupKey, Pools>; pg: Pool; admin: Client; emailOffset: number; refreshMs: number;
  /** The servers started, for stopping them on a signal. */
  children: ServeProcess[];
}): Promise<RunResult> {
  const { groups, pg } = opts;
  const refresherUrl = new URL(opts.url);
  refresherUrl.searchParams.set("application_name", REFRESHER);
  const refresher = await serve({
    DATABASE_URL: refresherUrl.toString(), GCS_ROLLUP_REFRESH_MS: String(opts.refreshMs),
    // Debug: each refreshed pair's report (path, duration) is logged, and summarised below.
    LOG_LEVEL: "debug",
    GCS_ROLLUP_INCREMENTAL: opts.refresh === "incremental" ? "true" : "false",
  });
  opts.children.push(refresher);
  const writes = new Writes(pg);
  const r = random(SEED);
  const dayBounds = Object.fromEntries(await Promise.all(GROUPS.map(async (g) => {
    const { rows: [b] } = await pg.query<{ from: Date; to: Date }>(
      `SELECT ($1::date::timestamp AT TIME ZONE $2) AS "from", (($1::date + 1)::timestamp AT TIME ZONE $2) AS "to"`, [MARKER_DAY, groups[g].markerTimezone]);
    return [g, { from: b.from.toISOString(), to: b.to.toISOString() }];
  }))) as Record<GroupKey, { from: string; to: string }>;

  // What each figure reads before the run; the k-th marker of a group shows once it reads base + k.
  const expected = {} as Record<Aggregate, Record<GroupKey, number>>;
  for (const a of AGGREGATES) {
    expected[a] = {} as Record<GroupKey, number>;
    for (const g of GROUPS) expected[a][g] = await figure(opts.reader.url, a, groups[g], dayBounds[g]);
  }
  const pending: { aggregate: Aggregate; group: GroupKey; target: number; committed: number }[] = [];
  const freshness = Object.fromEntries(AGGREGATES.map((a) => [a, [] as { ms: number; shown: boolean }[]])) as RunResult["freshness"];
  let running = true;

  // One poller per aggregate and group: while a marker waits, read the figure every POLL_MS.
  const pollers = AGGREGATES.flatMap((a) => GROUPS.map(async (g) => {
    while (running || pending.some((m) => m.aggregate === a && m.group === g)) {
      const waiting = pending.filter((m) => m.aggregate === a && m.group === g);
      if (!waiting.length) {
        await sleep(20);
        continue;
      }
      const started = performance.now();
      let value: number;
      try {
        value = await figure(opts.reader.url, a, groups[g], dayBounds[g]);
      } catch (err) {
        log(`poll failed: ${(err as Error).message}`);
        await sleep(POLL_MS);
        continue;
      }
      const seen = performance.now();
      for (const m of waiting) {
        if (value >= m.target) {
          freshness[a].push({ ms: seen - m.committed, shown: true });
          pending.splice(pending.indexOf(m), 1);
        }
      }
      await sleep(Math.max(0, POLL_MS - (seen - started)));
    }
  }));

  const cpu = new RefresherCpu(opts.admin);
  const liveBefore = await liveAnswers(opts.metricsUrl);
  const pgBefore = opts.dataDir ? postgresCpuMs(opts.dataDir) : undefined;
  await cpu.start();
  const started = performance.now();
  let done = 0;
  let errors = 0;
  const inFlight = new Set<Promise<void>>();
  const total = RATE * opts.seconds;
  const markerSlots = new Map(AGGREGATES.map((a, i) => [Math.floor((i * RATE) / AGGREGATES.length), a]));
  let markersWritten = 0;
  for (let i = 0; i < total; i++) {
    const due = started + (i * 1000) / RATE;
    const wait = due - performance.now();
    if (wait > 0) await sleep(wait);
    const second = Math.floor(i / RATE);
    const aggregate = markerSlots.get(i % RATE);
    // Markers alternate between the groups each second; background writes pick a group at random.
    const group: GroupKey = aggregate ? GROUPS[second % 2] : r() < 0.5 ? "A" : "B";
    const p = groups[group];
    const write = aggregate
      ? await writes.marker(aggregate, p, second, p.undecidedEmails[opts.emailOffset + Math.floor(second / 2)])
      : await writes.background(p, r);
    const task = pg.query(write.sql, write.params).then(
      () => {
        done++;
        if (aggregate) pending.push({ aggregate, group, target: ++expected[aggregate][group], committed: performance.now() });
      },
      (err: Error) => {
        errors++;
        if (errors <= 5) log(`write failed: ${err.message}`);
      },
    );
    // A marker's target follows the markers before it: markers of one aggregate and group commit in order.
    if (aggregate) {
      await task;
      markersWritten++;
    } else {
      const tracked = task.finally(() => inFlight.delete(tracked));
      inFlight.add(tracked);
    }
    if (i % (RATE * 30) === 0 && i > 0) log(`  ${opts.refresh}: ${Math.round(second)} s, ${done} writes, ${pending.length} markers waiting`);
  }
  await Promise.all(inFlight);
  const wallMs = performance.now() - started;
  const refresher_ = await cpu.stop();
  const pgAfter = opts.dataDir ? postgresCpuMs(opts.dataDir) : undefined;
  // The last markers may still show: wait a little, then count the rest as not shown.
  running = false;
  const drainUntil = performance.now() + DRAIN_MS;
  while (pending.length && performance.now() < drainUntil) await sleep(100);
  const now = performance.now();
  for (const m of pending.splice(0)) freshness[m.aggregate].push({ ms: now - m.committed, shown: false });
  await Promise.all(pollers);
  const liveAfter = await liveAnswers(opts.metricsUrl);
  await stopRefresher(refresher, opts.admin);
  const passes = refresherPasses(refresher);
  log(`  ${opts.refresh}: ${done} writes (${errors} failed), ${markersWritten} markers in ${(wallMs / 1000).toFixed(0)} s`);
  return {
    refresh: opts.refresh,
    seconds: wallMs / 1000,
    writes: done,
    writeErrors: errors,
    freshness,
    refreshCpuMs: refresher_.ms,
    refresherBackends: refresher_.backends,
    postgresCpuMs: pgBefore !== undefined ? pgAfter! - pgBefore : undefined,
    liveAnswers: Object.fromEntries(AGGREGATES.map((a) => [a, liveAfter[a] - liveBefore[a]])) as Record<Aggregate, number>,
    refreshMs: opts.refreshMs,
    passes,
  };
}

/**
 * Stops the refresher's `gcs serve`. A whole rebuild in flight would run on for minutes (its backend
 * does not notice the client leave, and the server waits for its pool): its statement is cancelled
 * (our own backends, by application_name), and the process killed if it has not exited by then.
 */
async function stopRefresher(refresher: ServeProcess, admin: Client): Promise<void> {
  const exited = new Promise((resolve) => (refresher.child.exitCode !== null ? resolve(null) : refresher.child.once("exit", resolve)));
  refresher.child.kill("SIGTERM");
  await Promise.race([exited, sleep(3000)]);
  await admin.query("SELECT pg_cancel_backend(pid) FROM pg_stat_activity WHERE application_name = $1", [REFRESHER]);
  if ((await Promise.race([exited.then(() => true), sleep(15_000).then(() => false)])) === false) refresher.child.kill("SIGKILL");
  await exited;
}

/** The refresher's reports, from its log: per aggregate and path, how many pairs and how long they took. */
function refresherPasses(refresher: ServeProcess): RunResult["passes"] {
  const out: RunResult["passes"] = {};
  for (const line of refresher.log) {
    if (line.msg === "rollup refresh failed; it is retried on the next pass" || line.msg.startsWith("rollup touches could not be applied")) log(`  refresher: ${line.msg} ${JSON.stringify(line.err ?? line.repaired ?? "")}`);
    if (line.msg !== "rollups refreshed" && !line.msg.startsWith("rollup touches could not be applied")) continue;
    const key = `${line.metric} ${line.path ?? "whole"}`;
    const x = (out[key] ??= { pairs: 0, totalMs: 0, maxMs: 0 });
    x.pairs++;
    x.totalMs += line.durationMs as number;
    x.maxMs = Math.max(x.maxMs, line.durationMs as number);
  }
  return out;
}

// ---- results ---------------------------------------------------------------------------------------

/** Nearest-rank percentile. */
function percentile(xs: number[], p: number): number {
  const sorted = [...xs].sort((a, b) => a - b);
  return Math.round(sorted[Math.min(sorted.length - 1, Math.max(0, Math.ceil((p / 100) * sorted.length) - 1))] ?? NaN);
}

function rows(result: RunResult, aggregates: readonly Aggregate[], name: string) {
  const samples = aggregates.flatMap((a) => result.freshness[a]);
  const notShown = samples.filter((s) => !s.shown).length;
  return {
    aggregate: name,
    refresh: result.refresh,
    freshness_p50_ms: percentile(samples.map((s) => s.ms), 50),
    freshness_p99_ms: percentile(samples.map((s) => s.ms), 99),
    refresh_cpu_core_fraction: Math.round((result.refreshCpuMs / (result.seconds * 1000)) * 10_000) / 10_000,
    live_answers: aggregates.reduce((n, a) => n + result.liveAnswers[a], 0),
    markers: samples.length,
    // Markers still not visible DRAIN_MS after the run's last write: their freshness counts as the wait so far (a lower bound).
    markers_not_shown: notShown,
  };
}

async function main() {
  if (RATE < AGGREGATES.length + 1) throw new Error(`FRESHNESS_RATE must be at least ${AGGREGATES.length + 1}: ${AGGREGATES.length} markers a second and background writes`);
  const db = await database();
  const children: ServeProcess[] = [];
  let admin: Client | undefined;
  let pg: Pool | undefined;
  // Ctrl-C or a kill: the servers and PostgreSQL this script started are stopped (the data is kept).
  for (const signal of ["SIGINT", "SIGTERM"] as const) {
    process.once(signal, () => {
      log(`${signal}: stopping`);
      void Promise.all(children.map((c) => stopProcess(c.child))).finally(() => db.stop().finally(() => process.exit(130)));
    });
  }
  try {
    log("bringing every rollup up to date (a pair whose facts are not built is rebuilt whole)");
    const prepareMs = await bringUpToDate(db.url);
    log(`up to date in ${(prepareMs / 1000).toFixed(1)} s`);
    if (env.FRESHNESS_PREPARE_ONLY === "1") return;

    admin = new Client({ connectionString: db.url });
    await admin.connect();
    pg = new Pool({ connectionString: db.url, max: 4, application_name: "gcs_freshness_writer" });
    const markers = Math.ceil(Math.max(SECONDS, REBUILD_SECONDS) / 2) + 2;
    const groups = { A: await pools(pg, db.manifest, "A", markers), B: await pools(pg, db.manifest, "B", markers) };
    const refreshMs = loadConfig({ DATABASE_URL: db.url, ...(env.GCS_ROLLUP_REFRESH_MS ? { GCS_ROLLUP_REFRESH_MS: env.GCS_ROLLUP_REFRESH_MS } : {}) }).rollups.refreshMs;
    const metricsPort = await freePort();
    const reader = await serve({ DATABASE_URL: db.url, GCS_ROLLUP_REFRESH_MS: "0", GCS_RATE_LIMIT: "0", GCS_METRICS_PORT: String(metricsPort), GCS_METRICS_HOST: "127.0.0.1" });
    children.push(reader);
    const metricsUrl = `http://127.0.0.1:${metricsPort}/metrics`;
    const common = { url: db.url, dataDir: db.dataDir, reader, metricsUrl, groups, pg, admin, refreshMs, children };

    log(`incremental: ${RATE} writes/s for ${SECONDS} s, refresh every ${refreshMs} ms`);
    const incremental = await run({ ...common, refresh: "incremental", seconds: SECONDS, emailOffset: 0 });
    const results = [incremental];
    if (REBUILD_SECONDS > 0) {
      log("catching up before the whole-pair rebuild run");
      await bringUpToDate(db.url);
      log(`whole-pair rebuild: the same writes for ${REBUILD_SECONDS} s`);
      results.push(await run({ ...common, refresh: "whole-pair rebuild", seconds: REBUILD_SECONDS, emailOffset: markers }));
      log("catching up after it");
      await bringUpToDate(db.url);
    }

    const table = [
      ...AGGREGATES.map((a) => rows(incremental, [a], a)),
      ...(results[1] ? [rows(results[1], AGGREGATES, "all (whole-pair rebuild)")] : []),
    ];
    const date = new Date().toISOString().slice(0, 10);
    const base = path.join(__dirname, "results", `${date}-freshness${LABEL}`);
    writeFileSync(`${base}.json`, JSON.stringify(table, null, 2) + "\n");
    writeFileSync(`${base}.md`, markdown(table, results, prepareMs, refreshMs));
    console.log(readFileSync(`${base}.md`, "utf8"));
    log(`written ${base}.json and .md`);
  } finally {
    await Promise.all(children.map((c) => stopProcess(c.child)));
    await pg?.end();
    await admin?.end();
    await db.stop();
  }
}

function markdown(table: ReturnType<typeof rows>[], results: RunResult[], prepareMs: number, refreshMs: number): string {
  const fmt = (ms: number) => `${(ms / 1000).toFixed(2)} s`;
  const lines = [
    `# Rollup freshness under a steady write load (${new Date().toISOString().slice(0, 10)})`,
    "",
    `\`bench/rollup-freshness.ts\`: ${GUESTS.toLocaleString("en")} guests per group (both fixture groups), ${RATE} writes/s (4 of them markers, one per aggregate, alternating groups) across reservations, transactions, guest profiles, consent observations and reviews, written straight to PostgreSQL; the refresher in its own \`gcs serve\` (refresh every ${refreshMs} ms), the dashboard polled every ${POLL_MS} ms through another. Before the runs every pair was brought up to date in ${(prepareMs / 1000).toFixed(0)} s.`,
    "",
    "| aggregate | refresh | freshness p50 | freshness p99 | refresher's PostgreSQL CPU (cores) | live answers | markers (not shown) |",
    "|---|---|---:|---:|---:|---:|---:|",
    ...table.map((t) => `| ${t.aggregate} | ${t.refresh} | ${fmt(t.freshness_p50_ms)} | ${t.markers_not_shown ? "≥ " : ""}${fmt(t.freshness_p99_ms)} | ${t.refresh_cpu_core_fraction} | ${t.live_answers} | ${t.markers} (${t.markers_not_shown}) |`),
    "",
    "The refresher's CPU is one figure for all four aggregates (one refresher refreshes them all).",
    "",
    "| run | seconds | writes (failed) | refresher's PostgreSQL CPU | its backends | all of PostgreSQL's CPU |",
    "|---|---:|---:|---:|---:|---:|",
    ...results.map((r) => `| ${r.refresh} | ${r.seconds.toFixed(0)} | ${r.writes} (${r.writeErrors}) | ${(r.refreshCpuMs / 1000).toFixed(1)} s | ${r.refresherBackends} | ${r.postgresCpuMs === undefined ? "n/a" : `${(r.postgresCpuMs / 1000).toFixed(1)} s`} |`),
    "",
    "What the refresher did (its reports: pairs refreshed, summed and longest duration):",
    "",
    "| run | aggregate, path | pairs | total | longest |",
    "|---|---|---:|---:|---:|",
    ...results.flatMap((r) => Object.entries(r.passes).sort().map(([k, x]) => `| ${r.refresh} | ${k} | ${x.pairs} | ${fmt(x.totalMs)} | ${fmt(x.maxMs)} |`)),
    "",
    "Per aggregate, the whole-pair rebuild run:",
    "",
    ...(results[1] ? ["| aggregate | freshness p50 | freshness p99 | markers (not shown) | live answers |", "|---|---:|---:|---:|---:|",
      ...AGGREGATES.map((a) => { const t = rows(results[1], [a], a); return `| ${a} | ${fmt(t.freshness_p50_ms)} | ${t.markers_not_shown ? "≥ " : ""}${fmt(t.freshness_p99_ms)} | ${t.markers} (${t.markers_not_shown}) | ${t.live_answers} |`; })] : ["(not run)"]),
    "",
    `A marker not shown ${DRAIN_MS / 1000} s after the run's last write counts as its wait so far: its freshness is a lower bound (≥).`,
    "",
  ];
  return lines.join("\n");
}

main().catch((e) => {
  console.error(e);
  process.exit(1);
});
