// Once per test run: start PostgreSQL 15, build a template database (migrations + fixtures), and
// hand workers its address and the fixture manifest. Each test file then clones the template.
import { writeFileSync } from "node:fs";
import os from "node:os";
import path from "node:path";
import { Client } from "pg";
import { TEMPLATE_DB, withDatabase } from "./database-url";
import { loadTestFixtures } from "./own-postgres";
import { describeBinaries, findPostgres } from "./binaries";
import { startPgBouncer } from "./pgbouncer";
import { startTestPostgres } from "./postgres";

export default async function globalSetup() {
  if (!process.env.TEST_DATABASE_URL) console.log(`\ntest run: ${describeBinaries(findPostgres())}`);
  const pg = process.env.TEST_DATABASE_URL ? undefined : await startTestPostgres();
  const adminUrl = process.env.TEST_DATABASE_URL ?? pg!.adminUrl();
  const admin = new Client({ connectionString: adminUrl });
  await admin.connect();
  await admin.query(`DROP DATABASE IF EXISTS ${TEMPLATE_DB}`);
  await admin.query(`CREATE DATABASE ${TEMPLATE_DB}`);
  await admin.end();

  const manifest = await loadTestFixtures(withDatabase(adminUrl, TEMPLATE_DB), 40);

  const manifestPath = path.join(os.tmpdir(), `gcs-test-manifest-${process.pid}.json`);
  writeFileSync(manifestPath, JSON.stringify(manifest));
  // GCS_TEST_PGBOUNCER=1 (npm run test:pgbouncer): every test's databases, cloned and used, are
  // reached through PgBouncer in transaction mode. The template was loaded directly above: no pooled
  // connection may stay open on it, or cloning it fails. The role carries jit=off, as in production
  // behind PgBouncer (the pools' startup settings are dropped there).
  const bouncer = process.env.GCS_TEST_PGBOUNCER === "1" ? await startPgBouncer(adminUrl) : undefined;
  if (bouncer) await runOn(adminUrl, "ALTER ROLE CURRENT_USER SET jit = off");
  process.env.GCS_TEST_ADMIN_URL = bouncer ? bouncer.url() : adminUrl;
  /** The server itself, for tests that start their own PgBouncer in front of it. */
  process.env.GCS_TEST_SERVER_URL = adminUrl;
  process.env.GCS_TEST_MANIFEST = manifestPath;
  (globalThis as { __gcsTestPostgres?: unknown }).__gcsTestPostgres = pg;
  (globalThis as { __gcsTestPgBouncer?: unknown }).__gcsTestPgBouncer = bouncer;
}

async function runOn(url: string, sql: string) {
  const c = new Client({ connectionString: url });
  await c.connect();
  await c.query(sql);
  await c.end();
}
