// The long-lived things a process holds: the database handles, configuration, the logger and the
// resolved secrets. Nothing here is per-tenant or per-request state, so any number of instances can
// serve the same database.
import type { Resolver } from "./webhooks/ssrf";
import type { Config } from "./config";
import type { Database } from "./db/database";
import { serviceSecret } from "./db/service-secrets";
import { resolveSessionKey, type SessionKeyConfig } from "./auth/session";
import { registerStaticToken } from "./auth/credentials";
import type { Logger } from "./logger";
import { CredentialGate } from "./http/credential-gate";
import { AuthFailures } from "./http/auth-failures";
import { acrossGroups } from "./db/session";
import { isCrossGroupRoleRefusal } from "./db/errors";

export interface Services {
  config: Config;
  db: Database;
  logger: Logger;
  cursorSecret: string;
  sessionKey: () => Promise<SessionKeyConfig>;
  /** Per-credential cap on concurrent database work in this process; absent when off. */
  credentialGate?: CredentialGate;
  /** Failed authentications per client address in this process; absent when off. */
  authFailures?: AuthFailures;
  /** The webhook URL resolver (src/webhooks/ssrf.ts); tests inject one so no lookup leaves the machine. */
  webhookResolver?: Resolver;
}

/** The service's own secrets and static tokens: the service start's cross-group path (db/session.ts). */
export function createServices(config: Config, db: Database, logger: Logger): Promise<Services> {
  return acrossGroups("service start", () => resolveServices(config, db, logger)).catch((err: unknown) => {
    // The first cross-group statement of a process: where a missing system login shows.
    if (isCrossGroupRoleRefusal(err)) throw new Error("the cross-group paths run as role gcs_system, and DATABASE_URL's login is not a member: set DATABASE_SYSTEM_URL (docs/security.md)");
    throw err;
  });
}

async function resolveServices(config: Config, db: Database, logger: Logger): Promise<Services> {
  const cursorSecret = config.cursorSecret ?? (await serviceSecret(db.primary, "cursor_hmac"));
  const sessionKey = await resolveSessionKey(config.session, db.primary);
  for (const t of config.staticTokens) {
    await registerStaticToken(db.primary, { propertyGroupId: t.property_group_id, name: t.name, scopes: t.scopes, token: t.token });
  }
  // Default: half the pool, so one credential always leaves connections for the others.
  const { max = Math.max(1, Math.floor(db.readerPool.options.max / 2)), queueMs } = config.credentialConcurrency;
  const credentialGate = max > 0 ? new CredentialGate(max, queueMs) : undefined;
  const { limit, windowS } = config.authFailures;
  const authFailures = limit > 0 ? new AuthFailures(limit, windowS * 1000) : undefined;
  return { config, db, logger, cursorSecret, sessionKey: async () => sessionKey, credentialGate, authFailures };
}
