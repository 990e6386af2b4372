import { createApiKey, listApiKeys, revokeApiKey } from "../../auth/credentials";
import { cliConfig, printJson, withDatabase } from "../database";

export async function create(opts: { group: string; name: string; scopes: string[]; property?: string; json?: boolean }): Promise<void> {
  const key = await withDatabase(cliConfig(), true, (db) =>
    createApiKey(db.primary, { propertyGroupId: opts.group, propertyId: opts.property ?? null, name: opts.name, scopes: opts.scopes }),
  );
  if (opts.json) {
    return printJson({ id: key.id, key: key.token, property_group_id: key.propertyGroupId, property_id: key.propertyId, scopes: key.scopes });
  }
  console.log(`id:     ${key.id}\nscopes: ${key.scopes.join(" ")}\nkey:    ${key.token}\n(the key is shown once; only its hash is stored)`);
}

export async function list(opts: { group?: string; json?: boolean }): Promise<void> {
  const keys = await withDatabase(cliConfig(), true, (db) => listApiKeys(db.primary, opts.group));
  if (opts.json) {
    return printJson(
      keys.map((k) => ({
        id: k.id,
        prefix: k.displayPrefix,
        name: k.name,
        property_group_id: k.propertyGroupId,
        property_id: k.propertyId,
        scopes: k.scopes,
        created_at: k.createdAt.toISOString(),
        revoked_at: k.revokedAt?.toISOString() ?? null,
      })),
    );
  }
  // Tab-separated with a header line, for people and for `cut`/`column -t`; --json for scripts.
  console.log(["id", "prefix", "name", "group", "property", "scopes", "state"].join("\t"));
  for (const k of keys) {
    const state = k.revokedAt ? `revoked ${k.revokedAt.toISOString()}` : "active";
    console.log([k.id, `${k.displayPrefix}…`, k.name, k.propertyGroupId, k.propertyId ?? "-", k.scopes.join(","), state].join("\t"));
  }
}

export async function revoke(id: string, opts: { json?: boolean }): Promise<void> {
  const revoked = await withDatabase(cliConfig(), true, (db) => revokeApiKey(db.primary, id));
  if (!revoked) throw new Error(`no active key ${id} (never created, or already revoked: see gcs keys list)`);
  if (opts.json) return printJson({ id, revoked: true });
  console.log(`revoked ${id}`);
}
