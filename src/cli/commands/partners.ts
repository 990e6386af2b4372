import { createPartnerCredential, issuePartnerAccessToken } from "../../auth/credentials";
import { cliConfig, printJson, withDatabase } from "../database";

export async function create(opts: { group: string; name: string; scopes: string[]; json?: boolean }): Promise<void> {
  const p = await withDatabase(cliConfig(), true, (db) =>
    createPartnerCredential(db.primary, { propertyGroupId: opts.group, name: opts.name, scopes: opts.scopes }),
  );
  if (opts.json) return printJson({ id: p.id, client_id: p.clientId, client_secret: p.clientSecret });
  console.log(`client_id:     ${p.clientId}\nclient_secret: ${p.clientSecret}\n(the secret is shown once)`);
}

export async function token(opts: { clientId: string; clientSecret: string; ttl: number; json?: boolean }): Promise<void> {
  const t = await withDatabase(cliConfig(), true, (db) =>
    issuePartnerAccessToken(db.primary, { clientId: opts.clientId, clientSecret: opts.clientSecret, ttlSeconds: opts.ttl }),
  );
  if (opts.json) return printJson({ access_token: t.token, token_type: "Bearer", expires_at: t.expiresAt.toISOString() });
  console.log(`access_token: ${t.token}\nexpires_at:   ${t.expiresAt.toISOString()}`);
}
