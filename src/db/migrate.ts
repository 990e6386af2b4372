// Applies prisma/migrations/*/migration.sql in name order, each in its own transaction, so that
// several instances starting at once apply each migration exactly once.
//
// The lock that serialises migrators is transaction-scoped (pg_advisory_xact_lock), taken again in
// every transaction and released by its COMMIT or ROLLBACK. A session lock would not survive a pooler
// in transaction mode (PgBouncer): each statement may run on another server connection, so the
// unlock misses and the lock stays held by an idle pooled connection, blocking the next migrator.
// Transaction-scoped, it works the same through a pooler and directly, and a migrator that dies
// mid-migration releases it with its transaction.
import { readdirSync, readFileSync, existsSync } from "node:fs";
import { createHash } from "node:crypto";
import path from "node:path";
import { Client } from "pg";

export const MIGRATIONS_DIR = path.resolve(__dirname, "../../prisma/migrations");
/** The advisory lock that serialises migrators (arbitrary, fixed). */
export const MIGRATORS_LOCK = 4_711_2026;
/**
 * Migrations amended after they were applied somewhere, with the sha256 of each earlier text, which
 * a database may have recorded: the amendment changes nothing for a database that applied them.
 */
const AMENDED: Record<string, string[]> = {
  // Creates the roles and grants their membership only when missing, so that an owner that is not a
  // superuser migrates once a superuser made them (docs/security.md, the documented layout).
  "20261127190000_row_level_security": ["42b369166c96d8962fc44e7e5e15f907f81a2fb12a321acd4bf7a70fcd0d0f62"],
};

/** Why a login cannot migrate, and which can. */
export const MIGRATION_LOGIN_NEEDED = "migrations run as the tables' owner: set DATABASE_MIGRATION_URL to the owner's login (docs/security.md)";

export interface MigrationResult {
  applied: string[];
  alreadyApplied: number;
  /** With `ifOwner`: the login could not migrate, and nothing was tried. */
  skipped?: boolean;
}

/**
 * `ifOwner`: when the login cannot migrate (it owns nothing, as the service's runtime login), do
 * nothing and say so, instead of failing.
 */
export async function migrate(connectionString: string, opts: { ifOwner?: boolean } = {}): Promise<MigrationResult> {
  const client = new Client({ connectionString });
  await client.connect();
  try {
    // Usually everything is applied already: one transaction finds that out.
    const done = await locked(client, async () => {
      // A login that owns nothing (the service's runtime login) cannot: say which one can.
      const { rows: may } = await client.query<{ may: boolean }>("SELECT has_schema_privilege('public', 'CREATE') AS may");
      if (!may[0].may) {
        if (opts.ifOwner) return undefined;
        throw new Error(`${MIGRATION_LOGIN_NEEDED} (the login ${client.user ?? "given"} cannot create in schema public)`);
      }
      await client.query(`CREATE TABLE IF NOT EXISTS gcs_schema_migrations (
        name text PRIMARY KEY, checksum text NOT NULL, applied_at timestamptz NOT NULL DEFAULT now())`);
      const { rows } = await client.query<{ name: string; checksum: string }>("SELECT name, checksum FROM gcs_schema_migrations");
      return new Map(rows.map((r) => [r.name, r.checksum]));
    });
    if (!done) return { applied: [], alreadyApplied: 0, skipped: true };
    const applied: string[] = [];
    let alreadyApplied = done.size;
    for (const name of listMigrations()) {
      const sql = readFileSync(path.join(MIGRATIONS_DIR, name, "migration.sql"), "utf8");
      const checksum = createHash("sha256").update(sql).digest("hex");
      if (done.has(name)) {
        checkUnchanged(name, done.get(name)!, checksum);
        continue;
      }
      // Pending when we looked; another migrator may have applied it since (we waited for its lock).
      const appliedHere = await locked(client, async () => {
        const { rows } = await client.query<{ checksum: string }>("SELECT checksum FROM gcs_schema_migrations WHERE name = $1", [name]);
        if (rows.length > 0) {
          checkUnchanged(name, rows[0].checksum, checksum);
          return false;
        }
        try {
          // The owner sees group rows only inside a migration (the row level security policy `migrations`).
          await client.query("SELECT set_config('gcs.migrating', 'on', true)");
          await client.query(sql);
        } catch (err) {
          throw new Error(`migration ${name} failed: ${(err as Error).message}`);
        }
        await client.query("INSERT INTO gcs_schema_migrations (name, checksum) VALUES ($1, $2)", [name, checksum]);
        return true;
      });
      if (appliedHere) applied.push(name);
      else alreadyApplied++;
    }
    return { applied, alreadyApplied };
  } finally {
    await client.end();
  }
}

/** Runs `work` in a transaction that holds the migrators' lock; rolls back if it throws. */
async function locked<T>(client: Client, work: () => Promise<T>): Promise<T> {
  await client.query("BEGIN");
  try {
    // No statement timeout, whatever the role's (the setting behind a pooler): a migration may run
    // long, and so may the wait for another instance's migration.
    await client.query("SET LOCAL statement_timeout = 0");
    await client.query("SELECT pg_advisory_xact_lock($1)", [MIGRATORS_LOCK]);
    const result = await work();
    await client.query("COMMIT");
    return result;
  } catch (err) {
    await client.query("ROLLBACK").catch(() => undefined);
    throw err;
  }
}

function checkUnchanged(name: string, applied: string, current: string): void {
  if (applied !== current && !AMENDED[name]?.includes(applied)) throw new Error(`migration ${name} was changed after it was applied`);
}

function listMigrations(): string[] {
  return readdirSync(MIGRATIONS_DIR, { withFileTypes: true })
    .filter((d) => d.isDirectory() && existsSync(path.join(MIGRATIONS_DIR, d.name, "migration.sql")))
    .map((d) => d.name)
    .sort();
}
