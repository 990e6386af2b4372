// The set-up of the rollup tests: a test app whose refresher is off (each test runs its passes itself,
// so it knows which path each took), an admin connection for writes straight to PostgreSQL, and every
// rollup built once before the first test.
import { Client } from "pg";
import { refreshRollups } from "../../src/rollups/refresh";
import { startTestApp, type TestApp } from "./app";

export async function startRollupTestApp(): Promise<{ t: TestApp; admin: Client }> {
  const t = await startTestApp({ GCS_ROLLUP_REFRESH_MS: "0" });
  const admin = new Client({ connectionString: t.databaseUrl });
  await admin.connect();
  await refreshRollups(t.db);
  return { t, admin };
}

export async function closeRollupTestApp(t: TestApp | undefined, admin: Client | undefined): Promise<void> {
  await admin?.end();
  await t?.close();
}
