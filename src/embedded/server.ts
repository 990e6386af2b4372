// The embedded default: PostgreSQL compiled to WebAssembly (PGlite), in-process, with its data on
// disk, served on a loopback port so that Prisma and pg use exactly the code paths they use against
// a real server.
//
// One process at a time opens a data directory (PGlite is not built for two writers): it holds
// `gcs.lock` (its pid) there. `gcs serve` also serves the database to local tools and says where in
// `gcs-server.json`; any other process (`gcs keys create`, `gcs deliver`, …) then connects to that
// address instead of opening the directory, so the running server sees its writes at once. With no
// server running, a tool takes the lock and opens the directory itself.
//
// PGlite's WebAssembly heap grows and never shrinks: whatever a process does in it stays resident for
// the life of that process. So `gcs serve` never creates its database: a child process does
// (initdb, migrations, the demo data), under the serving process's lock, and the serving process
// then opens the finished directory as a restart does. READY_FILE, written last, says it is finished.
import { execFile, spawn } from "node:child_process";
import { closeSync, existsSync, linkSync, mkdirSync, openSync, readdirSync, readFileSync, rmSync, unlinkSync, writeSync } from "node:fs";
import net from "node:net";
import path from "node:path";
import { pathToFileURL } from "node:url";
import { promisify } from "node:util";

/** Applies the service's migrations to the database at `url` (db/migrate.ts, passed in: the database layer sits above this server). */
export type Migrate = (url: string) => Promise<unknown>;

export interface EmbeddedPostgres {
  url: string;
  stop(): Promise<void>;
}

const LOCK_FILE = "gcs.lock";
const SERVER_FILE = "gcs-server.json";
/** Written last by a successful preparation for `gcs serve`: the database is created, migrated, loaded. */
const READY_FILE = "gcs-ready";
/**
 * Present while a database is being created in an empty directory: found at a start (a creation
 * that was killed), everything but the lock is removed and the creation starts over.
 */
const CREATING_FILE = "gcs-creating";
/** The files above, and those being written (writeOwnFile). */
const OWN_FILE = /^(gcs\.lock|gcs-server\.json|gcs-ready|gcs-creating)(\.\d+\.tmp)?$/;

/** What a process that holds a data directory writes in its lock file. */
interface LockHolder {
  pid: number;
  /** "server": `gcs serve`, which will write SERVER_FILE; "tool": any other command. */
  role: "server" | "tool";
  command: string;
}

/** What `gcs serve` writes in SERVER_FILE once its database accepts connections. */
interface ServerAddress {
  pid: number;
  url: string;
}

/** Connections a serving process accepts: its own pool (1) and local tools. */
const MAX_CONNECTIONS = 8;
/**
 * PostgreSQL settings for PGlite, on top of its own. PGlite's shared memory lives in its WebAssembly
 * heap, is zeroed (so resident) when it starts, and a WebAssembly heap never shrinks: the 128 MB of
 * shared_buffers that initdb writes into postgresql.conf would stay resident for the life of the
 * process. The demo's data is a few MB; a larger database is read through the OS page cache.
 * maintenance_work_mem bounds what VACUUM and CREATE INDEX take from the heap (and leave in it).
 */
const POSTGRES_SETTINGS = ["shared_buffers=16MB", "maintenance_work_mem=16MB"];
/** How long initdb of a new data directory may take (it takes seconds). */
const INITDB_TIMEOUT_MS = 120_000;
/** How long preparing a data directory for `gcs serve` may take (initdb and the demo data: seconds). */
const PREPARE_TIMEOUT_MS = 300_000;
/** How often the preparing child checks that its parent (which holds the lock) is still there. */
const PARENT_CHECK_MS = 500;
/** How long a tool waits for a server that holds the lock but has not written its address yet. */
const SERVER_START_WAIT_MS = 30_000;

let role: LockHolder["role"] = "tool";
/** The gcs command that prepares a data directory for serving (given the directory), in a child. */
let prepareCommand = "";
/** The directory `gcs serve` claimed early: locked and prepared (the release function) or failed. */
let claimed: { dir: string; release: Promise<() => void> } | undefined;

/**
 * Called by `gcs serve` before it opens the database: this process must own the data directory
 * (another process holding it is an error, not something to connect to), and serves it to local tools.
 * A directory not ready to serve is first prepared by `gcs <command> <dir>` in a child process, which
 * calls prepareDataDir(). Given `dataDir`, takes it and starts preparing it at once, so that the
 * child works while this process loads the rest of the server; startEmbeddedPostgres() waits for it.
 */
export function serveEmbeddedToLocalTools(command: string, dataDir?: string): void {
  role = "server";
  prepareCommand = command;
  if (dataDir === undefined) return;
  const release = claim(path.resolve(dataDir));
  release.catch(() => undefined); // reported when startEmbeddedPostgres() awaits it
  claimed = { dir: path.resolve(dataDir), release };
}

export async function startEmbeddedPostgres(dataDir: string, migrate: Migrate): Promise<EmbeddedPostgres> {
  const dir = path.resolve(dataDir);
  if (role === "tool") {
    mkdirSync(dir, { recursive: true });
    const running = await runningServer(dir);
    if (running) return { url: running.url, stop: async () => undefined };
  }
  const early = claimed?.dir === dir ? claimed.release : undefined;
  claimed = undefined;
  const release = await (early ?? claim(dir));
  try {
    return await openAndServe(dir, release, migrate);
  } catch (err) {
    release();
    throw err;
  }
}

/** Takes `dir`'s lock and makes it ready to open (prepare()); returns the lock's release function. */
async function claim(dir: string): Promise<() => void> {
  mkdirSync(dir, { recursive: true });
  const release = acquireLock(dir);
  try {
    await prepare(dir);
    return release;
  } catch (err) {
    release();
    throw err;
  }
}

async function openAndServe(dir: string, release: () => void, migrate: Migrate): Promise<EmbeddedPostgres> {
  const sharing = role === "server";
  const { db, server, url } = await open(dir, sharing ? MAX_CONNECTIONS : 1);
  try {
    // Published once migrated: a tool's own migrate() must not race the server's (their advisory
    // lock is one lock in one shared session, so it would not keep them apart). On a prepared
    // directory there is nothing to apply unless the service was upgraded since.
    if (sharing) await migrate(url);
  } catch (err) {
    await server.stop();
    await db.close();
    throw err;
  }
  const serverFile = path.join(dir, SERVER_FILE);
  if (sharing) writeOwnFile(serverFile, { pid: process.pid, url } satisfies ServerAddress);
  let stopped = false;
  return {
    url,
    async stop() {
      if (stopped) return;
      stopped = true;
      if (sharing) removeOwnFile(serverFile);
      try {
        await server.stop();
        await db.close();
      } finally {
        release();
      }
    },
  };
}

/** PGlite on `dir`, served on a loopback port the OS picks. */
async function open(dir: string, maxConnections: number) {
  const { PGlite } = await import("@electric-sql/pglite");
  const { PGLiteSocketServer } = await import("@electric-sql/pglite-socket");
  const db = await PGlite.create(dir, { startParams: [...PGlite.defaultStartParams, ...POSTGRES_SETTINGS.flatMap((s) => ["-c", s])] });
  // Port 0: the OS picks a free one when the server listens (no race with another process).
  const server = new PGLiteSocketServer({ db: heldUntilIdle(db), port: 0, host: "127.0.0.1", maxConnections });
  try {
    await server.start();
  } catch (err) {
    await db.close();
    throw err;
  }
  return { db, server, url: `postgresql://postgres@${server.getServerConn()}/postgres?sslmode=disable` };
}

/**
 * Makes `dir` ready for this process to open. `gcs serve` needs it READY: created, migrated and
 * loaded by a child (prepareInChild). A tool needs a database only: it creates one in an empty
 * directory (initdb in a child) and migrates it itself, and a later `gcs serve` completes it.
 */
async function prepare(dir: string): Promise<void> {
  if (existsSync(path.join(dir, READY_FILE))) return;
  if (existsSync(path.join(dir, CREATING_FILE))) removeDatabase(dir); // a creation that was killed
  const creating = !existsSync(path.join(dir, "PG_VERSION"));
  if (!creating && role === "tool") return;
  if (creating) {
    // Only what a creation made may be removed when it fails: never files someone else put here.
    const foreign = readdirSync(dir).filter((name) => !OWN_FILE.test(name));
    if (foreign.length > 0) {
      throw new Error(`${dir} holds files but no embedded database (${foreign.slice(0, 3).join(", ")}): empty it, or set GCS_DATA_DIR to another directory`);
    }
    writeOwnFile(path.join(dir, CREATING_FILE), { pid: process.pid });
  }
  try {
    if (role === "server") await prepareInChild(dir);
    else await initdbInChild(dir);
  } catch (err) {
    if (creating) removeDatabase(dir);
    throw err;
  }
  if (role === "server") writeOwnFile(path.join(dir, READY_FILE), { pid: process.pid, preparedAt: new Date().toISOString() });
  removeFile(path.join(dir, CREATING_FILE));
}

/** Everything in `dir` but its lock: what an unfinished creation left. */
function removeDatabase(dir: string): void {
  for (const name of readdirSync(dir)) {
    if (name !== LOCK_FILE) rmSync(path.join(dir, name), { recursive: true, force: true });
  }
}

/**
 * Runs `gcs <prepareCommand> <dir>` in a child (the same build, dist or source, as this process),
 * which calls prepareDataDir(). Its log lines go to this process's stdout; its last stderr line
 * (the CLI's one-line failure) becomes this error's reason.
 */
async function prepareInChild(dir: string): Promise<void> {
  const gcs = path.resolve(__dirname, "../../bin/gcs.js");
  const env = { ...process.env, GCS_USE_SOURCE: __filename.endsWith(".ts") ? "1" : "0" };
  const child = spawn(process.execPath, ["--liftoff-only", gcs, prepareCommand, dir], { env, stdio: ["ignore", "inherit", "pipe"] });
  let stderr = "";
  child.stderr.setEncoding("utf8").on("data", (chunk: string) => (stderr += chunk));
  const timer = setTimeout(() => child.kill("SIGKILL"), PREPARE_TIMEOUT_MS);
  const [code, signal] = await new Promise<[number | null, NodeJS.Signals | null]>((resolve) => {
    child.once("error", (err) => {
      stderr += `${err.message}\n`;
      resolve([null, null]);
    });
    child.once("close", (c, s) => resolve([c, s]));
  }).finally(() => clearTimeout(timer));
  if (code === 0) return;
  const last = stderr.trim().split("\n").pop()?.replace(/^gcs: /, "");
  const reason = last || (signal ? `the preparing process was ended by ${signal}` : `the preparing process exited with code ${code}`);
  throw new Error(`could not prepare the embedded database in ${dir}: ${reason}`);
}

/**
 * In the child that prepareInChild() starts, under its parent's lock: creates the database if the
 * directory has none, applies the migrations, runs `load` (given its URL), and closes. Ends the
 * process when the parent goes away before it is done.
 */
export async function prepareDataDir(dataDir: string, migrate: Migrate, load: (url: string) => Promise<void>): Promise<void> {
  // The parent's lock goes when it ends: another process may then open the directory.
  const parent = process.ppid;
  const watch = setInterval(() => isAlive(parent) || process.exit(1), PARENT_CHECK_MS);
  try {
    const { db, server, url } = await open(path.resolve(dataDir), 1);
    try {
      await migrate(url);
      await load(url);
    } finally {
      await server.stop();
      await db.close();
    }
  } finally {
    clearInterval(watch);
  }
}

/**
 * Creates the database in a new data directory (PGlite's initdb) in a child process. PGlite runs
 * initdb in a second PostgreSQL instance beside a copy of its heap: hundreds of MB for a few
 * seconds, and tens of MB left in this process's malloc heap that it would keep for its life.
 * A child gives everything back when it exits. `--liftoff-only`: V8's optimising compiler would
 * take more memory and time compiling PostgreSQL than this one-off run needs.
 */
async function initdbInChild(dir: string): Promise<void> {
  const pglite = pathToFileURL(require.resolve("@electric-sql/pglite")).href;
  const script =
    `import(${JSON.stringify(pglite)}).then(async ({ PGlite }) => {` +
    ` const settings = JSON.parse(process.argv[2]).flatMap((s) => ["-c", s]);` +
    ` await (await PGlite.create(process.argv[1], { startParams: [...PGlite.defaultStartParams, ...settings] })).close(); })`;
  try {
    await promisify(execFile)(process.execPath, ["--liftoff-only", "-e", script, dir, JSON.stringify(POSTGRES_SETTINGS)], { timeout: INITDB_TIMEOUT_MS });
  } catch (err) {
    const { stderr, message } = err as { stderr?: string; message: string };
    const reason = (stderr ?? "").trim().split("\n").pop() || message.split("\n")[0];
    throw new Error(`could not create the embedded database in ${dir}: ${reason}`);
  }
}

/**
 * PGlite is one PostgreSQL session, shared by every connection of the socket server. pglite-socket
 * queues the wire messages of all connections and, while `isInTransaction()` is true, runs only
 * those of the connection that ran the last one. PGlite's own isInTransaction() knows BEGIN blocks
 * only, but a connection also holds the session from its first extended-protocol message (Parse,
 * Bind, Execute…) to the Sync that ends them: the unnamed statement and portal, the implicit
 * transaction and the skip-until-Sync after an error are all session state. So this view of the
 * database reports the session as held until PGlite answers ReadyForQuery "idle", and the queue keeps
 * each connection's exchange whole. Its exec() is what pglite-socket calls to release the session of
 * a connection that closed while holding it.
 */
export function heldUntilIdle<T extends Session>(db: T): T {
  let held = false;
  const execProtocolRawStream: Session["execProtocolRawStream"] = async (message, options) => {
    let tail: Uint8Array = new Uint8Array(0);
    await db.execProtocolRawStream(message, {
      ...options,
      onRawData: (data) => {
        tail = lastBytes(tail, data, READY_FOR_QUERY_LENGTH);
        options.onRawData(data);
      },
    });
    // Terminate ('X') answers nothing: the session stays held until the socket closes and exec() runs.
    held = !isIdleReadyForQuery(tail);
  };
  const exec: Session["exec"] = async (query, options) => {
    // A Sync ends an unfinished exchange (committing a lone auto-commit statement, as its client
    // meant), then an open BEGIN block is rolled back, as PostgreSQL does when a client goes away.
    if (held) await db.execProtocolRaw(SYNC);
    held = false;
    return db.isInTransaction() ? db.exec(query, options) : [];
  };
  const overrides: Partial<Session> = { execProtocolRawStream, exec, isInTransaction: () => held || db.isInTransaction() };
  return new Proxy(db, {
    get(target, prop) {
      if (prop in overrides) return overrides[prop as keyof Session];
      const value = Reflect.get(target, prop, target);
      // PGlite's methods use private fields: they must run with the real instance as `this`.
      return typeof value === "function" ? value.bind(target) : value;
    },
  });
}

/** The part of PGlite that pglite-socket uses and heldUntilIdle() changes. */
type Session = Pick<
  InstanceType<Awaited<typeof import("@electric-sql/pglite", { with: { "resolution-mode": "import" } })>["PGlite"]>,
  "execProtocolRawStream" | "execProtocolRaw" | "exec" | "isInTransaction"
>;

const SYNC = new Uint8Array([0x53, 0, 0, 0, 4]); // 'S', length 4
const READY_FOR_QUERY_LENGTH = 6; // 'Z', length 5, status

function isIdleReadyForQuery(b: Uint8Array): boolean {
  // 'Z' 0 0 0 5 'I': the last message of an answer, the session idle (not 'T' or 'E': in a transaction).
  return b.length === 6 && b[0] === 0x5a && b[1] === 0 && b[2] === 0 && b[3] === 0 && b[4] === 5 && b[5] === 0x49;
}

function lastBytes(previous: Uint8Array, next: Uint8Array, n: number): Uint8Array {
  if (next.length >= n) return next.slice(next.length - n);
  const joined = new Uint8Array(previous.length + next.length);
  joined.set(previous);
  joined.set(next, previous.length);
  return joined.slice(Math.max(0, joined.length - n));
}

/** The running `gcs serve` of this directory, if there is one (a live pid that holds the lock). */
async function runningServer(dir: string): Promise<ServerAddress | undefined> {
  const deadline = Date.now() + SERVER_START_WAIT_MS;
  for (;;) {
    const holder = readJson<LockHolder>(path.join(dir, LOCK_FILE));
    if (!holder || !isAlive(holder.pid) || holder.role !== "server") return undefined;
    const address = readJson<ServerAddress>(path.join(dir, SERVER_FILE));
    if (address?.pid === holder.pid) return address;
    // The server has the lock and is still opening the database.
    if (Date.now() > deadline) return undefined; // acquireLock then says who holds it
    await new Promise((r) => setTimeout(r, 200));
  }
}

/** Takes the directory's lock file or throws a one-line reason; returns the release function. */
function acquireLock(dir: string): () => void {
  const lockFile = path.join(dir, LOCK_FILE);
  // The command's name only: its options may hold a secret (partners token --client-secret).
  const words = process.argv.slice(2, 4);
  const firstOption = words.findIndex((w) => w.startsWith("-"));
  const mine: LockHolder = { pid: process.pid, role, command: ["gcs", ...(firstOption === -1 ? words : words.slice(0, firstOption))].join(" ") };
  for (let attempt = 0; attempt < 2; attempt++) {
    if (writeOwnFile(lockFile, mine, true)) {
      const release = () => {
        removeOwnFile(lockFile);
        process.off("exit", release);
      };
      // A process that exits without stop() (an uncaught error, process.exit) still leaves no lock.
      process.on("exit", release);
      return release;
    }
    const holder = readJson<LockHolder>(lockFile);
    if (holder && isAlive(holder.pid)) {
      const what = holder.role === "server" ? "a running gcs serve" : holder.command;
      throw new Error(
        `the embedded database ${dir} is in use by process ${holder.pid} (${what}); ` +
          (holder.role === "server" ? "stop it first, or set GCS_DATA_DIR to another directory" : `wait for it to finish, or delete ${lockFile} if no such process uses it`),
      );
    }
    // A lock left by a process that has ended: take it over.
    removeFile(lockFile);
  }
  throw new Error(`the embedded database ${dir} is being opened by another process; try again`);
}

/**
 * Writes JSON to `file` atomically (written aside, then linked into place, so a reader never sees
 * half of it). With `exclusive`, fails (returns false) when the file exists.
 */
function writeOwnFile(file: string, value: object, exclusive = false): boolean {
  const temp = `${file}.${process.pid}.tmp`;
  const fd = openSync(temp, "w", 0o600);
  try {
    writeSync(fd, JSON.stringify(value) + "\n");
  } finally {
    closeSync(fd);
  }
  try {
    if (!exclusive) removeFile(file);
    linkSync(temp, file);
    return true;
  } catch (err) {
    if ((err as NodeJS.ErrnoException).code === "EEXIST") return false;
    throw err;
  } finally {
    removeFile(temp);
  }
}

/** Removes a lock or address file only if this process wrote it. */
function removeOwnFile(file: string): void {
  if (readJson<{ pid: number }>(file)?.pid === process.pid) removeFile(file);
}

function removeFile(file: string): void {
  try {
    unlinkSync(file);
  } catch (err) {
    if ((err as NodeJS.ErrnoException).code !== "ENOENT") throw err;
  }
}

function readJson<T>(file: string): T | undefined {
  try {
    return JSON.parse(readFileSync(file, "utf8")) as T;
  } catch {
    return undefined; // absent, or not ours to read: treated as no holder
  }
}

function isAlive(pid: number): boolean {
  if (!Number.isSafeInteger(pid) || pid <= 0) return false;
  try {
    process.kill(pid, 0);
    return true;
  } catch (err) {
    return (err as NodeJS.ErrnoException).code === "EPERM"; // alive, another user's
  }
}

/** A port the OS has just handed out on loopback (free at that moment). */
export function freePort(): Promise<number> {
  return new Promise((resolve, reject) => {
    const probe = net.createServer();
    probe.once("error", reject);
    probe.listen(0, "127.0.0.1", () => {
      const { port } = probe.address() as net.AddressInfo;
      probe.close(() => resolve(port));
    });
  });
}
