// `gcs connectors list|revoke`: the AI clients people approved on the consent page, as plain data
// (no Prisma types, dates as ISO strings), so any CLI front end only prints what these return.
// Never a secret or a hash: a connector is identified by its grant id.
import type { DataClient as PrismaClient } from "../data/client";
import { listGrants } from "../data/stores/oauth";
import { revokeGrant } from "./provider";

const UUID = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/i;

export interface Connector {
  /** The grant id: what `gcs connectors revoke` takes. */
  id: string;
  clientId: string;
  clientName: string | null;
  redirectUris: string[];
  propertyGroupId: string;
  scopes: string[];
  /** The API key whose holder approved the client on the consent page. */
  approvedByApiKeyId: string;
  createdAt: string;
  /** When tokens were last issued (code exchange or refresh). */
  lastUsedAt: string | null;
  revokedAt: string | null;
}

/** Every connector, oldest first; only one group's with `propertyGroupId`. */
export async function listConnectors(prisma: PrismaClient, propertyGroupId?: string): Promise<Connector[]> {
  if (propertyGroupId !== undefined && !UUID.test(propertyGroupId)) throw new Error(`the property group id ${JSON.stringify(propertyGroupId.slice(0, 64))} is not a uuid`);
  const grants = await listGrants(prisma, propertyGroupId);
  return grants.map((g) => ({
    id: g.id,
    clientId: g.clientId,
    clientName: g.client.clientName,
    redirectUris: g.client.redirectUris,
    propertyGroupId: g.propertyGroupId,
    scopes: g.scopes,
    approvedByApiKeyId: g.approvedByApiKeyId,
    createdAt: g.createdAt.toISOString(),
    lastUsedAt: g.lastUsedAt?.toISOString() ?? null,
    revokedAt: g.revokedAt?.toISOString() ?? null,
  }));
}

/** One tab-separated line per connector for the text output of `connectors list`. */
export function connectorLine(c: Connector): string {
  const state = c.revokedAt ? `revoked ${c.revokedAt}` : "active";
  const used = c.lastUsedAt ? `tokens ${c.lastUsedAt}` : "no tokens yet";
  return [c.id, c.clientName ?? "-", c.clientId, c.propertyGroupId, c.scopes.join(","), `approved by key ${c.approvedByApiKeyId}`, used, state].join("\t");
}

/**
 * Revokes a connector: its grant, access tokens and refresh tokens, at once.
 * @returns revoked: false when no active connector has that id (unknown or already revoked).
 */
export async function revokeConnector(prisma: PrismaClient, id: string): Promise<{ id: string; revoked: boolean }> {
  return { id, revoked: await revokeGrant(prisma, id) };
}
