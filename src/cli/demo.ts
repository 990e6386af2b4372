// First start on the embedded database loads demo data; every embedded start prints the demo API
// key and a curl line that works. Only for the embedded default: never on a real server.
import { readFileSync, writeFileSync } from "node:fs";
import path from "node:path";
import { deliverySecretKey } from "../delivery/run";
import { createApiKey } from "../auth/credentials";
import { firstPropertyGroup, hasPropertyGroups, isActiveApiKey, revokeApiKeysNamed } from "../data/stores/credentials";
import { hashToken } from "../auth/secrets";
import { ALL_SCOPES } from "../auth/scopes";
import { resolveSessionKey } from "../auth/session";
import { loadFixtures } from "../fixtures";
import type { RunningServer } from "../server";
import { loadConfig, type Config } from "../config";
import { createPrismaClient, type Prisma } from "../db/database";
import { migrate } from "../db/migrate";
import { prepareDataDir } from "../embedded/server";
import { chooseLogFormat, createLogger, type Logger } from "../logger";
import { acrossGroups } from "../db/session";

const DEMO_KEY_NAME = "embedded demo key";
/**
 * The demo key's token, beside the database it opens (mode 600): a restart prints the same key, so
 * the `export KEY=…` a reader ran and the webhook endpoints made with it keep working. Only a hash is
 * in the database, so the token itself is kept here, as the embedded database's own secret.
 */
const DEMO_KEY_FILE = "gcs-demo-key";

/**
 * `gcs serve`'s preparation of a new embedded data directory, in a child process (embedded/server.ts):
 * the database, its migrations and the demo data, whose load would otherwise stay in the serving
 * process's WebAssembly heap.
 */
export async function prepareEmbeddedDemo(dataDir: string): Promise<void> {
  const config = loadConfig();
  const logger = createLogger(config.logLevel, chooseLogFormat(config.logFormat, process.stdout.isTTY));
  await prepareDataDir(dataDir, migrate, async (url) => {
    const prisma = createPrismaClient(url, 1);
    try {
      await loadDemoData(prisma, config, logger);
    } finally {
      await prisma.$disconnect();
    }
  });
}

/** The demo hotel group, unless the database has a property group already (loaded by `gcs fixtures`). */
async function loadDemoData(prisma: Prisma, config: Config, logger: Pick<Logger, "info">): Promise<void> {
  if (await hasPropertyGroups(prisma)) return;
  logger.info("first start on the embedded database: loading demo data");
  const sessionKey = await resolveSessionKey(config.session, prisma);
  await loadFixtures(prisma, { seed: 1, guests: 300, sessionKey, deliveryKey: await deliverySecretKey(config, prisma), progress: (line) => logger.info(line) });
}

/** Loads the demo if needed and prints its key: the CLI's cross-group path (db/session.ts). */
export function announceEmbeddedDemo(server: RunningServer): Promise<void> {
  return acrossGroups("CLI", () => announce(server));
}

async function announce(server: RunningServer): Promise<void> {
  const { db, config, logger } = server.services;
  const prisma = db.primary;
  // Prepared before the server opened the directory; only a database emptied since has none.
  await loadDemoData(prisma, config, logger);
  const group = await firstPropertyGroup(prisma);
  const token = await demoKey(prisma, config.dataDir, group.id);
  const base = `http://localhost:${server.port}`;
  process.stdout.write(
    [
      "",
      `Guest Context Service on the embedded database (${config.dataDir}), group "${group.name}" (id ${group.id}).`,
      `Demo API key (the same at every start, until revoked): ${token}`,
      "The guides call it $KEY:",
      `  export KEY=${token}`,
      "Try:",
      `  curl -s -H "Authorization: Bearer ${token}" "${base}/v1/guests?limit=2"`,
      "A key of your own (other gcs commands use this running server's database):",
      `  npx gcs keys create --group ${group.id} --name "my key" --scopes read:guests,read:reservations`,
      "",
    ].join("\n") + "\n",
  );
}

/**
 * The demo key kept in the data directory while it still works; else (first start, revoked, its group
 * replaced) a new one, which replaces any other demo key. Other keys are never touched.
 */
async function demoKey(prisma: Prisma, dataDir: string, groupId: string): Promise<string> {
  const file = path.join(dataDir, DEMO_KEY_FILE);
  let kept: string | undefined;
  try {
    kept = readFileSync(file, "utf8").trim();
  } catch {
    kept = undefined; // first start
  }
  if (kept && (await isActiveApiKey(prisma, { tokenHash: hashToken(kept), name: DEMO_KEY_NAME, propertyGroupId: groupId }))) return kept;
  await revokeApiKeysNamed(prisma, DEMO_KEY_NAME);
  const key = await createApiKey(prisma, { propertyGroupId: groupId, name: DEMO_KEY_NAME, scopes: ALL_SCOPES });
  writeFileSync(file, `${key.token}\n`, { mode: 0o600 });
  return key.token;
}
