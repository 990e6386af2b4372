// Applies prisma/migrations/*/migration.sql in name order, each in its own transaction, under an
// advisory lock so that several instances starting at once apply each migration exactly once.
import { readdirSync, readFileSync, existsSync } from "node:fs";
import { createHash } from "node:crypto";
import path from "node:path";
import { Client } from "pg";

export const MIGRATIONS_DIR = path.resolve(__dirname, "../../prisma/migrations");
const LOCK_KEY = 4_711_2026; // arbitrary, fixed: the advisory lock that serialises migrators

export interface MigrationResult {
  applied: string[];
  alreadyApplied: number;
}

export async function migrate(connectionString: string): Promise<MigrationResult> {
  const client = new Client({ connectionString });
  await client.connect();
  try {
    await client.query("SELECT pg_advisory_lock($1)", [LOCK_KEY]);
    await client.query(`CREATE TABLE IF NOT EXISTS gcs_schema_migrations (
      name text PRIMARY KEY, checksum text NOT NULL, applied_at timestamptz NOT NULL DEFAULT now())`);
    const done = new Map<string, string>(
      (await client.query("SELECT name, checksum FROM gcs_schema_migrations")).rows.map((r) => [r.name, r.checksum]),
    );
    const applied: string[] = [];
    for (const name of listMigrations()) {
      const sql = readFileSync(path.join(MIGRATIONS_DIR, name, "migration.sql"), "utf8");
      const checksum = createHash("sha256").update(sql).digest("hex");
      const known = done.get(name);
      if (known !== undefined) {
        if (known !== checksum) throw new Error(`migration ${name} was changed after it was applied`);
        continue;
      }
      await client.query("BEGIN");
      try {
        await client.query(sql);
        await client.query("INSERT INTO gcs_schema_migrations (name, checksum) VALUES ($1, $2)", [name, checksum]);
        await client.query("COMMIT");
      } catch (err) {
        await client.query("ROLLBACK");
        throw new Error(`migration ${name} failed: ${(err as Error).message}`);
      }
      applied.push(name);
    }
    return { applied, alreadyApplied: done.size };
  } finally {
    await client.query("SELECT pg_advisory_unlock($1)", [LOCK_KEY]).catch(() => undefined);
    await client.end();
  }
}

function listMigrations(): string[] {
  return readdirSync(MIGRATIONS_DIR, { withFileTypes: true })
    .filter((d) => d.isDirectory() && existsSync(path.join(MIGRATIONS_DIR, d.name, "migration.sql")))
    .map((d) => d.name)
    .sort();
}
