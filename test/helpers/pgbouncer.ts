// PgBouncer (Debian's `pgbouncer`, found by pgbouncer-binary.js) in transaction pooling mode in front of a test PostgreSQL, on a
// free loopback port: every database name is passed through to the server of the same name, and
// clients are trusted by user name (userlist). Started as the `postgres` user when the tests run as
// root (PgBouncer refuses root).
//
// server_round_robin: each transaction takes the next idle server connection instead of the one
// its client used last, so anything that relies on session state across transactions (session
// advisory locks, SET, prepared statements by name, temp tables) fails at once in the tests instead
// of only under production load.
import { spawn, execFileSync, type ChildProcess } from "node:child_process";
import { chmodSync, existsSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import net from "node:net";
import os from "node:os";
import path from "node:path";
import { Client } from "pg";
import { freePort } from "../../src/embedded/server";
import { serverUser } from "./binaries";

// eslint-disable-next-line @typescript-eslint/no-require-imports
const { findPgBouncer } = require("./pgbouncer-binary") as { findPgBouncer(): string | undefined };

export interface TestPgBouncer {
  port: number;
  /** A connection string to `database` through PgBouncer, as the server's user. */
  url(database?: string): string;
  /** Runs a command on PgBouncer's admin console (SHOW POOLS, SHOW STATS…). */
  admin(command: string): Promise<Record<string, unknown>[]>;
  logFile: string;
  stop(): void;
}

/** PgBouncer in transaction mode in front of the server at `serverUrl` (its host, port and user). */
export async function startPgBouncer(serverUrl: string): Promise<TestPgBouncer> {
  const PGBOUNCER = findPgBouncer();
  if (!PGBOUNCER) throw new Error("PgBouncer not found (not on npm: apt-get install -y pgbouncer, or GCS_PGBOUNCER=<path>)");
  const server = new URL(serverUrl);
  const user = decodeURIComponent(server.username) || "postgres";
  const root = mkdtempSync(path.join(os.tmpdir(), "gcs-test-pgbouncer-"));
  chmodSync(root, 0o777); // PgBouncer, as `postgres`, writes its log and pid file here
  const port = await freePort();
  const logFile = path.join(root, "pgbouncer.log");
  writeFileSync(path.join(root, "userlist.txt"), `"${user}" ""\n`);
  const config = path.join(root, "pgbouncer.ini");
  writeFileSync(
    config,
    [
      "[databases]",
      `* = host=${server.hostname} port=${server.port || 5432}`,
      "[pgbouncer]",
      "pool_mode = transaction",
      "listen_addr = 127.0.0.1",
      `listen_port = ${port}`,
      "unix_socket_dir =",
      "auth_type = trust",
      `auth_file = ${path.join(root, "userlist.txt")}`,
      `admin_users = ${user}`,
      // The service's pools send their settings as `options` (jit, statement_timeout): PgBouncer
      // refuses unknown startup parameters, and can only drop this one (the role carries them).
      "ignore_startup_parameters = options",
      "server_round_robin = 1",
      "max_client_conn = 2000",
      "default_pool_size = 20",
      "log_connections = 0",
      "log_disconnections = 0",
      `logfile = ${logFile}`,
      `pidfile = ${path.join(root, "pgbouncer.pid")}`,
      "",
    ].join("\n"),
  );
  const runAs = serverUser();
  if (runAs) execFileSync("chown", ["-R", runAs, root]);
  const child: ChildProcess = spawn(PGBOUNCER, [...(runAs ? ["-u", runAs] : []), config], { stdio: "ignore" });
  child.unref(); // the test run's teardown stops it; it must not keep Jest's process alive
  const log = () => (existsSync(logFile) ? readFileSync(logFile, "utf8") : "");
  try {
    await listening(port, child);
  } catch (err) {
    child.kill("SIGKILL");
    rmSync(root, { recursive: true, force: true });
    throw new Error(`pgbouncer did not start: ${(err as Error).message}\n${log()}`);
  }
  const url = (database = "postgres") => `postgresql://${encodeURIComponent(user)}@127.0.0.1:${port}/${database}`;
  return {
    port,
    url,
    logFile,
    async admin(command) {
      const client = new Client({ connectionString: url("pgbouncer") });
      await client.connect();
      try {
        return (await client.query(command)).rows;
      } finally {
        await client.end();
      }
    },
    stop() {
      child.kill("SIGTERM"); // immediate shutdown
      rmSync(root, { recursive: true, force: true });
    },
  };
}

/** Resolves once `port` accepts connections; rejects if the process exits or 10 s pass. */
async function listening(port: number, child: ChildProcess): Promise<void> {
  const deadline = Date.now() + 10_000;
  let exited: number | null | undefined;
  child.once("exit", (code) => (exited = code));
  while (Date.now() < deadline) {
    if (exited !== undefined) throw new Error(`exited with ${exited}`);
    const open = await new Promise<boolean>((resolve) => {
      const socket = net.connect(port, "127.0.0.1", () => {
        socket.destroy();
        resolve(true);
      });
      socket.on("error", () => resolve(false));
    });
    if (open) return;
    await new Promise((resolve) => setTimeout(resolve, 50));
  }
  throw new Error("not listening after 10 s");
}
