import { connectorLine, listConnectors, revokeConnector } from "../../oauth/connectors";
import { cliConfig, printJson, withDatabase } from "../database";

export async function list(opts: { group?: string; json?: boolean }): Promise<void> {
  const connectors = await withDatabase(cliConfig(), true, (db) => listConnectors(db.primary, opts.group));
  if (opts.json) {
    return printJson(
      connectors.map((c) => ({
        id: c.id,
        client_id: c.clientId,
        client_name: c.clientName,
        redirect_uris: c.redirectUris,
        property_group_id: c.propertyGroupId,
        scopes: c.scopes,
        approved_by_api_key_id: c.approvedByApiKeyId,
        created_at: c.createdAt,
        last_used_at: c.lastUsedAt,
        revoked_at: c.revokedAt,
      })),
    );
  }
  if (connectors.length === 0) {
    const where = opts.group ? ` in group ${opts.group}` : "";
    return console.log(`no MCP connectors${where}: one appears here when someone approves an AI client on the consent page (docs/mcp.md)`);
  }
  for (const c of connectors) console.log(connectorLine(c));
}

export async function revoke(id: string, opts: { json?: boolean }): Promise<void> {
  const result = await withDatabase(cliConfig(), true, (db) => revokeConnector(db.primary, id));
  if (!result.revoked) throw new Error(`no active connector ${id} (unknown, or already revoked: see gcs connectors list)`);
  if (opts.json) return printJson({ id, revoked: true });
  console.log(`revoked ${id}: its access and refresh tokens no longer work`);
}
