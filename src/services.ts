// The long-lived things a process holds: the database handles, configuration, the logger and the
// resolved secrets. Nothing here is per-tenant or per-request state, so any number of instances can
// serve the same database.
import type { Config } from "./config";
import type { Database } from "./db/database";
import { serviceSecret } from "./db/service-secrets";
import { resolveSessionKey, type SessionKeyConfig } from "./auth/session";
import { registerStaticToken } from "./auth/credentials";
import type { Logger } from "./logger";

export interface Services {
  config: Config;
  db: Database;
  logger: Logger;
  cursorSecret: string;
  sessionKey: () => Promise<SessionKeyConfig>;
}

export async function createServices(config: Config, db: Database, logger: Logger): Promise<Services> {
  const cursorSecret = config.cursorSecret ?? (await serviceSecret(db.primary, "cursor_hmac"));
  const sessionKey = await resolveSessionKey(config.session, db.primary);
  for (const t of config.staticTokens) {
    await registerStaticToken(db.primary, { propertyGroupId: t.property_group_id, name: t.name, scopes: t.scopes, token: t.token });
  }
  return { config, db, logger, cursorSecret, sessionKey: async () => sessionKey };
}
