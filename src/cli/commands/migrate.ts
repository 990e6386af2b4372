import { migrate as applyMigrations } from "../../db/migrate";
import { cliConfig, printJson, withDatabase } from "../database";

export async function migrate(opts: { json?: boolean }): Promise<void> {
  const config = cliConfig();
  // As the tables' owner (DATABASE_MIGRATION_URL) when the service's login owns nothing.
  const result = await withDatabase(config, false, (db) => applyMigrations(db.embedded ? db.url : (config.migrationUrl ?? db.url)));
  if (opts.json) return printJson({ applied: result.applied, already_applied: result.alreadyApplied });
  console.log(result.applied.length ? `applied: ${result.applied.join(", ")}` : "database is up to date");
}
