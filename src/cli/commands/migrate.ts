import { migrate as applyMigrations } from "../../db/migrate";
import { cliConfig, printJson, withDatabase } from "../database";

export async function migrate(opts: { json?: boolean }): Promise<void> {
  const result = await withDatabase(cliConfig(), false, (db) => applyMigrations(db.url));
  if (opts.json) return printJson({ applied: result.applied, already_applied: result.alreadyApplied });
  console.log(result.applied.length ? `applied: ${result.applied.join(", ")}` : "database is up to date");
}
