// What the one-shot commands share: configuration (read when a command runs, not before), the
// database for the length of the command, and output for people or for scripts (--json).
import { loadConfig, type Config } from "../config";
import { openDatabase, type Database, type DatabaseOptions } from "../db/database";
import { isCrossGroupRoleRefusal } from "../db/errors";
import { acrossGroups } from "../db/session";

export function cliConfig(): Config {
  return loadConfig();
}

/**
 * Which login does what (docs/security.md, "Which URL each command needs"). Every command after
 * `serve` and `migrate` acts across groups, as role gcs_system: on DATABASE_SYSTEM_URL's login when
 * it is set, else on the owner's (DATABASE_MIGRATION_URL: a member of gcs_system, which the
 * migration gives its functions), else on DATABASE_URL's. Before acting, a command applies pending
 * migrations as the owner when DATABASE_MIGRATION_URL is set; without it, as DATABASE_URL's login
 * only when that login may (it owns the schema): a runtime login that owns nothing leaves them to
 * `gcs migrate` or `gcs serve`, which are given the owner.
 */
export function cliDatabaseOptions(config: Config, migrateFirst: boolean): DatabaseOptions {
  return {
    databaseUrl: config.databaseUrl,
    migrationUrl: config.migrationUrl,
    systemUrl: config.systemUrl ?? config.migrationUrl,
    dataDir: config.dataDir,
    poolSize: 4,
    migrate: !migrateFirst ? false : config.migrationUrl ? true : "if-owner",
  };
}

/**
 * Opens the database (DATABASE_URL, else the embedded one: through the running `gcs serve` when there
 * is one, else the data directory itself, locked), runs `work`, closes. An operator's command acts
 * on the group it names, or on all: the CLI's cross-group path (db/session.ts).
 */
export async function withDatabase<T>(config: Config, migrateFirst: boolean, work: (db: Database) => Promise<T>): Promise<T> {
  const db = await openDatabase(cliDatabaseOptions(config, migrateFirst));
  try {
    return await acrossGroups("CLI", () => work(db));
  } catch (err) {
    if (isCrossGroupRoleRefusal(err)) {
      throw new Error("this command acts across groups as role gcs_system, and its login is not a member: set DATABASE_SYSTEM_URL or DATABASE_MIGRATION_URL (docs/security.md)");
    }
    throw err;
  } finally {
    await db.close();
  }
}

/** One line of JSON on stdout: what `--json` prints. */
export function printJson(value: unknown): void {
  console.log(JSON.stringify(value, (_k, v) => (typeof v === "bigint" ? v.toString() : v)));
}
