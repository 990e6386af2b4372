// What the one-shot commands share: configuration (read when a command runs, not before), the
// database for the length of the command, and output for people or for scripts (--json).
import { loadConfig, type Config } from "../config";
import { openDatabase, type Database } from "../db/database";
import { acrossGroups } from "../db/session";

export function cliConfig(): Config {
  return loadConfig();
}

/**
 * Opens the database (DATABASE_URL, else the embedded one: through the running `gcs serve` when there
 * is one, else the data directory itself, locked), runs `work`, closes. An operator's command acts
 * on the group it names, or on all: the CLI's cross-group path (db/session.ts).
 */
export async function withDatabase<T>(config: Config, migrateFirst: boolean, work: (db: Database) => Promise<T>): Promise<T> {
  const db = await openDatabase({ databaseUrl: config.databaseUrl, migrationUrl: config.migrationUrl, dataDir: config.dataDir, poolSize: 4, migrate: migrateFirst });
  try {
    return await acrossGroups("CLI", () => work(db));
  } finally {
    await db.close();
  }
}

/** One line of JSON on stdout: what `--json` prints. */
export function printJson(value: unknown): void {
  console.log(JSON.stringify(value, (_k, v) => (typeof v === "bigint" ? v.toString() : v)));
}
