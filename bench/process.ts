// Small helpers the A/B overhead scripts share: a fixture database, the base ref's build, a child's
// CPU time, waiting until a server answers, and the median of a variant's rounds.
import { execFileSync, type ChildProcess } from "node:child_process";
import { createHash } from "node:crypto";
import { cpSync, readdirSync, readFileSync, symlinkSync } from "node:fs";
import path from "node:path";
import { Client } from "pg";
import type { FixtureManifest } from "../src/fixtures";
import type { TestPostgres } from "../test/helpers/postgres";

const ROOT = path.resolve(__dirname, "..");
const NODE = path.join(ROOT, "node_modules/.bin/node");

/** A new database `name` on `pg`, loaded by `gcs fixtures --guests <guests> --seed 1`. */
export async function fixtureDatabase(pg: TestPostgres, name: string, guests: number, manifestPath: string): Promise<{ databaseUrl: string; manifest: FixtureManifest }> {
  const admin = new Client({ connectionString: pg.adminUrl() });
  await admin.connect();
  await admin.query(`CREATE DATABASE ${name}`);
  await admin.end();
  const databaseUrl = pg.adminUrl(name);
  execFileSync(NODE, [path.join(ROOT, "bin/gcs.js"), "fixtures", "--out", manifestPath, "--guests", String(guests), "--seed", "1"], {
    cwd: ROOT,
    env: { ...process.env, DATABASE_URL: databaseUrl, LOG_LEVEL: "warn" },
    stdio: ["ignore", "ignore", "inherit"],
  });
  return { databaseUrl, manifest: JSON.parse(readFileSync(manifestPath, "utf8")) as FixtureManifest };
}

/**
 * Records `dir`'s text of each migration the two trees both have, where the texts differ: the base
 * then starts on the database this tree migrated, and this tree accepts the earlier text of a
 * migration it amended (db/migrate.ts AMENDED; any other difference still stops it).
 */
export async function recordBaseMigrationTexts(databaseUrl: string, dir: string): Promise<void> {
  const client = new Client({ connectionString: databaseUrl });
  await client.connect();
  try {
    for (const name of readdirSync(path.join(dir, "prisma/migrations"))) {
      let sql: string;
      try {
        sql = readFileSync(path.join(dir, "prisma/migrations", name, "migration.sql"), "utf8");
      } catch {
        continue; // not a migration (migration_lock.toml)
      }
      const checksum = createHash("sha256").update(sql).digest("hex");
      await client.query("UPDATE gcs_schema_migrations SET checksum = $2 WHERE name = $1 AND checksum <> $2", [name, checksum]);
    }
  } finally {
    await client.end();
  }
}

/** `ref`'s sources in `dir`, beside this tree's node_modules and generated Prisma client; both built. */
export function buildBaseAndTree(ref: string, dir: string): void {
  execFileSync("sh", ["-c", `mkdir -p ${dir} && git -C ${ROOT} archive ${ref} | tar -x -C ${dir}`]);
  symlinkSync(path.join(ROOT, "node_modules"), path.join(dir, "node_modules"));
  cpSync(path.join(ROOT, "src/generated"), path.join(dir, "src/generated"), { recursive: true });
  for (const root of [dir, ROOT]) execFileSync("npm", ["run", "build", "--silent"], { cwd: root, stdio: "inherit" });
}

/** /proc/<pid>/stat as numbers, from the state field on (1 ppid, 11 utime, 12 stime, 13 cutime, 14 cstime; clock ticks of 10 ms). */
function statFields(pid: number | string): number[] {
  return readFileSync(`/proc/${pid}/stat`, "utf8").split(") ")[1].split(" ").map(Number);
}

/** User + system CPU time of a process so far, in ms (Linux /proc). */
export function cpuMs(pid: number): number {
  const fields = statFields(pid);
  return (fields[11] + fields[12]) * 10;
}

/**
 * CPU time so far, in ms, of the PostgreSQL server whose data directory is `dataDir`: the postmaster
 * (first line of postmaster.pid), the processes it started and has already reaped (its cutime and
 * cstime: backends of closed connections), and those still running (backends, WAL writer, ...).
 */
export function postgresCpuMs(dataDir: string): number {
  const postmaster = Number(readFileSync(path.join(dataDir, "postmaster.pid"), "utf8").split("\n")[0]);
  const own = statFields(postmaster);
  let ticks = own[11] + own[12] + own[13] + own[14];
  for (const entry of readdirSync("/proc")) {
    if (!/^\d+$/.test(entry)) continue;
    try {
      const fields = statFields(entry);
      if (fields[1] === postmaster) ticks += fields[11] + fields[12];
    } catch {
      // the process exited while we read
    }
  }
  return ticks * 10;
}

/** SIGTERM to every child, resolved once all have exited (servers write their CPU profiles on the way out). */
export async function stopChildren(children: ChildProcess[]): Promise<void> {
  for (const child of children) child.kill("SIGTERM");
  await Promise.all(children.map((child) => new Promise((resolve) => (child.exitCode !== null ? resolve(null) : child.once("exit", resolve)))));
}

/** Resolves once `url` answers 2xx with `headers`; gives up after two minutes. */
export async function waitFor(url: string, headers: Record<string, string>): Promise<void> {
  for (let i = 0; i < 600; i++) {
    try {
      if ((await fetch(url, { headers })).ok) return;
    } catch {
      // not listening yet
    }
    await new Promise((r) => setTimeout(r, 200));
  }
  throw new Error(`${url} never answered`);
}

/** One autocannon round of one variant. */
export interface Sample {
  rps: number;
  p50: number;
  p99: number;
  cpuUs: number;
  /** PostgreSQL's CPU time per request (postgresCpuMs), where measured. */
  postgresUs?: number;
  /** The load generator's (this process's) CPU time per request, where measured. */
  loadUs?: number;
}

/** Each figure's median over the rounds (robust to the one round a shared machine spoils). */
export function medianSample(samples: Sample[]): Sample {
  const median = (xs: number[]) => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)];
  return {
    rps: median(samples.map((r) => r.rps)),
    p50: median(samples.map((r) => r.p50)),
    p99: median(samples.map((r) => r.p99)),
    cpuUs: median(samples.map((r) => r.cpuUs)),
    ...(samples[0].postgresUs !== undefined ? { postgresUs: median(samples.map((r) => r.postgresUs!)) } : {}),
    ...(samples[0].loadUs !== undefined ? { loadUs: median(samples.map((r) => r.loadUs!)) } : {}),
  };
}
