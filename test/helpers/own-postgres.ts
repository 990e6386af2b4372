// A PostgreSQL server of a test file's own, migrated and loaded with a small fixture set. For tests
// that stop the server, or hold transactions open for long: the shared server's other databases
// would feel both (the event timeline waits for every older transaction of the cluster).
import { resolveSessionKey } from "../../src/auth/session";
import { loadConfig } from "../../src/config";
import { openDatabase } from "../../src/db/database";
import { deliverySecretKey } from "../../src/delivery/run";
import { loadFixtures, type FixtureManifest } from "../../src/fixtures";
import { startTestPostgres, type TestPostgres } from "./postgres";

export async function startOwnPostgres(): Promise<{ pg: TestPostgres; manifest: FixtureManifest }> {
  const pg = await startTestPostgres();
  return { pg, manifest: await loadTestFixtures(pg.adminUrl(), 12) };
}

/** The day the tests' fixture dates are anchored to: the same rows whatever the date of the run. */
export const TEST_FIXTURE_DATE = "2026-01-01";

/** Migrates the database at `databaseUrl` and loads the fixture tenants (seed 7, TEST_FIXTURE_DATE) into it. */
export async function loadTestFixtures(databaseUrl: string, guests: number): Promise<FixtureManifest> {
  const db = await openDatabase({ databaseUrl, dataDir: "", poolSize: 4 }); // applies the migrations
  try {
    const config = loadConfig({});
    return await loadFixtures(db.primary, {
      seed: 7,
      guests,
      anchorDate: TEST_FIXTURE_DATE,
      sessionKey: await resolveSessionKey(config.session, db.primary),
      deliveryKey: await deliverySecretKey(config, db.primary),
      progress: () => undefined,
    });
  } finally {
    await db.close();
  }
}
