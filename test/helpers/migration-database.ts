// A scratch database whose schema is as it was just before one migration: every earlier migration
// applied and recorded as the runner records it (name and sha256 of its SQL), the rest left for
// migrate() to apply. For tests of a migration on a database that already holds data.
import { createHash, randomBytes } from "node:crypto";
import { readdirSync, readFileSync } from "node:fs";
import path from "node:path";
import { Client } from "pg";
import { MIGRATIONS_DIR } from "../../src/db/migrate";
import { withDatabase } from "./database-url";

export interface ScratchDatabase {
  url: string;
  /** Connected to it. */
  db: Client;
  /** Disconnects and drops it. */
  drop(): Promise<void>;
}

export async function databaseBefore(migration: string): Promise<ScratchDatabase> {
  const adminUrl = process.env.GCS_TEST_ADMIN_URL!;
  const admin = new Client({ connectionString: adminUrl });
  await admin.connect();
  const name = `gcs_before_${randomBytes(6).toString("hex")}`;
  await admin.query(`CREATE DATABASE ${name}`);
  const url = withDatabase(adminUrl, name);
  const db = new Client({ connectionString: url });
  await db.connect();
  const drop = async () => {
    await db.end();
    await admin.query(`DROP DATABASE ${name} WITH (FORCE)`);
    await admin.end();
  };
  try {
    await db.query(`CREATE TABLE gcs_schema_migrations (name text PRIMARY KEY, checksum text NOT NULL, applied_at timestamptz NOT NULL DEFAULT now())`);
    for (const m of readdirSync(MIGRATIONS_DIR).filter((m) => /^\d+_/.test(m) && m < migration).sort()) {
      const sql = readFileSync(path.join(MIGRATIONS_DIR, m, "migration.sql"), "utf8");
      await db.query(sql);
      await db.query("INSERT INTO gcs_schema_migrations (name, checksum) VALUES ($1, $2)", [m, createHash("sha256").update(sql).digest("hex")]);
    }
  } catch (err) {
    await drop();
    throw err;
  }
  return { url, db, drop };
}
