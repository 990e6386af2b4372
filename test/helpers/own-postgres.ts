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
  const db = await openDatabase({ databaseUrl: pg.adminUrl(), dataDir: "", poolSize: 4 }); // applies the migrations
  const config = loadConfig({});
  const manifest = await loadFixtures(db.primary, {
    seed: 7,
    guests: 12,
    sessionKey: await resolveSessionKey(config.session, db.primary),
    deliveryKey: await deliverySecretKey(config, db.primary),
    progress: () => undefined,
  });
  await db.close();
  return { pg, manifest };
}
