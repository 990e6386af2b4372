// Opens the service's database: PostgreSQL at DATABASE_URL, or the embedded PGlite default. Applies
// pending migrations, and returns Prisma clients for writes (primary) and reads (the replica if set
// and healthy: replica-health.ts decides, and `reader`/`readerPool` follow it).
import { PrismaPg } from "@prisma/adapter-pg";
import type { Pool } from "pg";
import { TenantPool } from "./tenant-pool";
import { countQueries } from "./sql-count";
import { PrismaClient } from "../generated/prisma/client";
import { startEmbeddedPostgres } from "../embedded/server";
import { migrate } from "./migrate";
import { ReplicaHealth } from "./replica-health";
import { redactUrl } from "../redact-url";
import type { Logger } from "../logger";

export type Prisma = PrismaClient;

export interface Database {
  /** Writes and anything that must read its own writes. */
  primary: PrismaClient;
  /** Reads: the replica while it is healthy (see `replica`), else the primary. Read it per request. */
  readonly reader: PrismaClient;
  /** The connection pool under `primary` (metrics read its counts). */
  primaryPool: Pool;
  /** The connection pool under `reader` (the same choice), for the hot read paths written in SQL (data/sql.ts). */
  readonly readerPool: Pool;
  /** The read replica and its health (state, lag), when DATABASE_REPLICA_URL is set. */
  replica?: ReplicaHealth;
  embedded: boolean;
  url: string;
  close(): Promise<void>;
}

export interface DatabaseOptions {
  databaseUrl?: string;
  /** Where migrations run: the tables' owner, when databaseUrl's login owns nothing. Default: databaseUrl. */
  migrationUrl?: string;
  /**
   * Where the cross-group paths' statements run (db/session.ts acrossGroups): a login that is a
   * member of gcs_system, so that databaseUrl's login need not be (docs/security.md). A pool of its
   * own, for the primary's and the replica's pools alike. Default: databaseUrl's pools themselves.
   */
  systemUrl?: string;
  /** A streaming standby of the primary for reads (config.ts DATABASE_REPLICA_URL, GCS_REPLICA_*). */
  replica?: { url: string; maxLagMs: number; checkMs: number };
  /** Where the replica's changes of state (out of reads, back) are logged. */
  logger?: Pick<Logger, "warn" | "info">;
  dataDir: string;
  poolSize: number;
  /** Apply pending migrations first; "if-owner": only when the migrating login may (db/migrate.ts ifOwner). */
  migrate?: boolean | "if-owner";
  /**
   * statement_timeout of every pooled connection, in ms (0 or unset: none). Sent as a startup
   * parameter, so it holds for every statement without a round trip. A pooler in transaction mode
   * cannot pass startup parameters on (PgBouncer 1.18 refuses them unless `ignore_startup_parameters`
   * lists them, and then drops them): there it is the role's or database's setting
   * (`ALTER ROLE … SET statement_timeout`). Migrations use their own connection without it. Ignored
   * by the embedded PGlite.
   */
  statementTimeoutMs?: number;
  /**
   * The second tenant wall (db/tenant-pool.ts, docs/security.md); default on. Off only for the
   * benchmark's A/B: statements then run as the login role.
   */
  rowSecurity?: boolean;
  /** Remember looked-up credentials, proved by each request's first statement (auth/remembered-credentials.ts); default off. */
  rememberCredentials?: boolean;
  /** A request's reads of one turn sent together on one connection (TenantPool.read); default on. */
  pipelineReads?: boolean;
  /** Told when the server closes an idle pooled connection (restart, failover, dropped database). */
  onIdleConnectionError?: (err: Error) => void;
  /**
   * When given, each pool's server is asked once whether it applied the startup settings, and this
   * is told which it did not (e.g. `["statement_timeout is 0 ms, not 5000 ms"]`): a pooler drops them
   * silently, and the statement timeout with them.
   */
  onSettingsNotApplied?: (url: string, notApplied: string[]) => void;
}

const CONNECT_TIMEOUT_MS = 10_000;

export async function openDatabase(opts: DatabaseOptions): Promise<Database> {
  const embedded = opts.databaseUrl ? undefined : await startEmbeddedPostgres(opts.dataDir, migrate);
  const url = opts.databaseUrl ?? embedded!.url;
  try {
    if (opts.migrate !== false) await migrate(embedded ? url : (opts.migrationUrl ?? url), { ifOwner: opts.migrate === "if-owner" });
  } catch (err) {
    await embedded?.stop();
    throw err;
  }
  const poolSize = embedded ? 1 : opts.poolSize;
  // Settings for PostgreSQL servers, sent when connecting (`options`); PGlite has no JIT and no use for them.
  const settings: Record<string, string> = embedded ? {} : connectionSettings(opts.statementTimeoutMs, opts.rowSecurity === false);
  const options = Object.entries(settings).map(([name, value]) => `-c ${name}=${value}`).join(" ") || undefined;
  const pool = (connectionString: string, crossGroupPool?: Pool) =>
    // The pool drops a connection the server closed and opens a new one on next use; without a
    // listener its "error" event would end the process. A request waits at most
    // CONNECT_TIMEOUT_MS for a connection (an unreachable host, an exhausted pool), then gets a 503.
    new TenantPool({ connectionString, max: poolSize, connectionTimeoutMillis: CONNECT_TIMEOUT_MS, options, rowSecurity: opts.rowSecurity, rememberCredentials: opts.rememberCredentials, pipelineReads: opts.pipelineReads, crossGroupPool }).on(
      "error",
      (err) => opts.onIdleConnectionError?.(err),
    );
  // Cross-group work always on the primary: it writes, and reads what it wrote.
  const systemPool = !embedded && opts.systemUrl ? pool(opts.systemUrl) : undefined;
  const primaryPool = pool(url, systemPool);
  const primary = createPrismaClient(primaryPool);
  const replicaPool = opts.replica && pool(opts.replica.url, systemPool);
  const replicaClient = replicaPool && createPrismaClient(replicaPool);
  const replica =
    replicaPool && new ReplicaHealth(primaryPool, replicaPool, {
      ...opts.replica!,
      logger: opts.logger,
      label: redactUrl(opts.replica!.url),
      address: new URL(opts.replica!.url).host,
    });
  // A standby that closed a pooled connection may be going down: no reads there until checked again.
  replicaPool?.on("error", () => replica!.suspect());
  await replica?.start();
  if (opts.onSettingsNotApplied) {
    const report = opts.onSettingsNotApplied;
    const check = async (p: Pool, u: string) => {
      const notApplied = await settingsNotApplied(p, settings);
      if (notApplied.length > 0) report(u, notApplied);
    };
    // A standby that is down at start is the health check's to report; it must not stop the start.
    await Promise.all([check(primaryPool, url), replicaPool && replica!.usable && check(replicaPool, opts.replica!.url).catch(() => undefined)]);
  }
  return {
    primary,
    get reader() {
      return replica?.usable ? replicaClient! : primary;
    },
    primaryPool,
    get readerPool() {
      return replica?.usable ? replicaPool! : primaryPool;
    },
    replica,
    embedded: Boolean(embedded),
    url,
    async close() {
      await replica?.stop();
      await primary.$disconnect();
      await replicaClient?.$disconnect();
      await primaryPool.end();
      await replicaPool?.end();
      await systemPool?.end();
      await embedded?.stop();
    },
  };
}

/**
 * What every pooled connection to a PostgreSQL server sets, by name, valued as pg_settings shows it.
 * No JIT: every statement here is short, and PostgreSQL decides to compile by estimated cost. A
 * table filter with ten consent conditions is estimated high (a subquery per condition and member):
 * it spent 7 s of 8.7 s compiling, 0.25 s running (EXPLAIN ANALYZE at 200,000 guests).
 * With the tenant wall off (the benchmark's A/B only) no settings statement carries plan_cache_mode
 * before a named statement (db/tenant-pool.ts): the connection keeps generic plans instead, for the
 * A/B's scenarios, which run named statements only.
 */
function connectionSettings(statementTimeoutMs?: number, wallOff = false): Record<string, string> {
  return {
    jit: "off",
    ...(statementTimeoutMs ? { statement_timeout: String(statementTimeoutMs) } : {}),
    ...(wallOff ? { plan_cache_mode: "force_generic_plan" } : {}),
  };
}

/**
 * The settings the server at `pool` does not have (a pooler dropped them), as "name is actual, not
 * wanted". An unreachable server is no finding here: using the pool reports that.
 */
async function settingsNotApplied(pool: Pool, wanted: Record<string, string>): Promise<string[]> {
  const names = Object.keys(wanted);
  if (names.length === 0) return [];
  try {
    const { rows } = await pool.query<{ name: string; setting: string; unit: string | null }>(
      "SELECT name, setting, unit FROM pg_settings WHERE name = ANY($1)",
      [names],
    );
    const unit = (u: string | null) => (u ? ` ${u}` : "");
    return rows.filter((r) => r.setting !== wanted[r.name]).map((r) => `${r.name} is ${r.setting}${unit(r.unit)}, not ${wanted[r.name]}${unit(r.unit)}`);
  } catch {
    return [];
  }
}

/**
 * Prisma on a pool the caller owns (and ends), so the SQL read paths share its connections; or on
 * its own plain pool of `max` connections to `connectionString`. That one runs as the login role,
 * outside the tenant wall (db/tenant-pool.ts): for seeding the embedded demo and for tests' checks.
 */
export function createPrismaClient(pool: Pool): PrismaClient;
export function createPrismaClient(connectionString: string, max: number): PrismaClient;
export function createPrismaClient(poolOrUrl: Pool | string, max?: number): PrismaClient {
  const adapter = typeof poolOrUrl === "string" ? new PrismaPg({ connectionString: poolOrUrl, max }) : new PrismaPg(poolOrUrl);
  const client = countQueries(new PrismaClient({ adapter }));
  if (typeof poolOrUrl !== "string") pools.set(client, poolOrUrl);
  return client;
}

const pools = new WeakMap<PrismaClient, Pool>();
/** The pool a client made by createPrismaClient(pool) runs on: for statements hot enough to skip Prisma's per-row cost. */
export const poolOf = (prisma: PrismaClient): Pool | undefined => pools.get(prisma);
