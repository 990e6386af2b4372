// First start on the embedded database loads demo data; every embedded start prints a fresh demo
// API key and a curl line that works. Only for the embedded default: never on a real server.
import { deliverySecretKey } from "../delivery/run";
import { createApiKey } from "../auth/credentials";
import { firstPropertyGroup, hasPropertyGroups, revokeApiKeysNamed } from "../data/credentials";
import { ALL_SCOPES } from "../auth/scopes";
import { resolveSessionKey } from "../auth/session";
import { loadFixtures } from "../fixtures";
import type { RunningServer } from "../server";

const DEMO_KEY_NAME = "embedded demo key";

export async function announceEmbeddedDemo(server: RunningServer) {
  const { db, config, logger } = server.services;
  const prisma = db.primary;
  if (!(await hasPropertyGroups(prisma))) {
    logger.info("first start on the embedded database: loading demo data");
    const sessionKey = await resolveSessionKey(config.session, prisma);
    await loadFixtures(prisma, { seed: 1, guests: 300, sessionKey, deliveryKey: await deliverySecretKey(config, prisma), progress: (line) => logger.info(line) });
  }
  const group = await firstPropertyGroup(prisma);
  // One demo key at a time: the previous start's key stops working.
  await revokeApiKeysNamed(prisma, DEMO_KEY_NAME);
  const key = await createApiKey(prisma, { propertyGroupId: group.id, name: DEMO_KEY_NAME, scopes: ALL_SCOPES });
  const base = `http://localhost:${server.port}`;
  process.stdout.write(
    [
      "",
      `Guest Context Service on the embedded database (${config.dataDir}), group "${group.name}" (id ${group.id}).`,
      `Demo API key (valid until the next start): ${key.token}`,
      "Try:",
      `  curl -s -H "Authorization: Bearer ${key.token}" "${base}/v1/guests?limit=2"`,
      "A key of your own (other gcs commands use this running server's database):",
      `  npx gcs keys create --group ${group.id} --name "my key" --scopes read:guests,read:reservations`,
      "",
    ].join("\n") + "\n",
  );
}
