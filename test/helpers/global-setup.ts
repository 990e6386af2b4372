// Once per test run: start PostgreSQL 15, build a template database (migrations + fixtures), and
// hand workers its address and the fixture manifest. Each test file then clones the template.
import { writeFileSync } from "node:fs";
import os from "node:os";
import path from "node:path";
import { Client } from "pg";
import { TEMPLATE_DB, withDatabase } from "./database-url";
import { loadTestFixtures } from "./own-postgres";
import { startTestPostgres } from "./postgres";

export default async function globalSetup() {
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
  process.env.GCS_TEST_ADMIN_URL = adminUrl;
  process.env.GCS_TEST_MANIFEST = manifestPath;
  (globalThis as { __gcsTestPostgres?: unknown }).__gcsTestPostgres = pg;
}
