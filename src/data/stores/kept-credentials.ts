// What `gcs fixtures` keeps when it replaces the fixture groups (issue 41): the API keys and webhook
// endpoints made outside the fixtures (the embedded demo's key, a reader's own keys and the
// endpoints they made) come back, as they were, once their group has been loaded again. Rows are
// copied whole (jsonb of the table's row type), so a column added later is kept too. A kept endpoint
// restarts at the end of the reloaded log: the fixtures' events are not news to it.
import type { PrismaClient } from "../../generated/prisma/client";

export interface CredentialSnapshot {
  apiKeys: unknown[];
  webhookEndpoints: unknown[];
  /** Active partner clients and MCP connectors: they cannot be kept (their tokens hang off them), only counted. */
  partnerIds: string[];
  connectorIds: string[];
}

export interface KeptCredentials {
  apiKeys: number;
  webhookEndpoints: number;
  /** Removed with their group and not restored: keys and endpoints whose group or pinned property is gone, */
  apiKeysRemoved: number;
  webhookEndpointsRemoved: number;
  /** and every partner client and MCP connector of the replaced groups. */
  partnersRemoved: number;
  connectorsRemoved: number;
}

export async function snapshotCredentials(db: PrismaClient): Promise<CredentialSnapshot> {
  const [row] = await db.$queryRawUnsafe<{ keys: unknown[]; endpoints: unknown[]; partners: string[]; connectors: string[] }[]>(
    `SELECT (SELECT COALESCE(jsonb_agg(k), '[]') FROM api_keys k WHERE k.revoked_at IS NULL) AS keys,
            (SELECT COALESCE(jsonb_agg(w), '[]') FROM webhook_endpoints w) AS endpoints,
            ARRAY(SELECT id::text FROM partner_credentials WHERE revoked_at IS NULL) AS partners,
            ARRAY(SELECT id::text FROM oauth_grants WHERE revoked_at IS NULL) AS connectors`,
  );
  return { apiKeys: row.keys, webhookEndpoints: row.endpoints, partnerIds: row.partners, connectorIds: row.connectors };
}

/**
 * Puts back the snapshot's keys and endpoints that are gone and whose group (and pinned property) is
 * there again; the fixtures' own rows, loaded again under the same ids, win. One transaction.
 */
export async function restoreCredentials(db: PrismaClient, snapshot: CredentialSnapshot): Promise<KeptCredentials> {
  const [keys, endpoints] = await db.$transaction(async (tx) => {
    const k = await tx.$queryRawUnsafe<{ id: string }[]>(
      `INSERT INTO api_keys SELECT k.* FROM jsonb_populate_recordset(NULL::api_keys, $1::jsonb) k
       WHERE NOT EXISTS (SELECT 1 FROM api_keys x WHERE x.id = k.id OR x.token_hash = k.token_hash)
         AND EXISTS (SELECT 1 FROM property_groups g WHERE g.id = k.property_group_id)
         AND (k.property_id IS NULL OR EXISTS (SELECT 1 FROM properties p WHERE p.id = k.property_id AND p.property_group_id = k.property_group_id))
       RETURNING id::text AS id`,
      JSON.stringify(snapshot.apiKeys),
    );
    const w = await tx.$queryRawUnsafe<{ id: string }[]>(
      `INSERT INTO webhook_endpoints SELECT w.* FROM jsonb_populate_recordset(NULL::webhook_endpoints, $1::jsonb) w
       WHERE NOT EXISTS (SELECT 1 FROM webhook_endpoints x WHERE x.id = w.id)
         AND EXISTS (SELECT 1 FROM property_groups g WHERE g.id = w.property_group_id)
       RETURNING id::text AS id`,
      JSON.stringify(snapshot.webhookEndpoints),
    );
    // At the log's end as a new endpoint starts (data/webhooks.ts): the group's newest finished
    // transaction and its last seq. No lease, retry or failure of before.
    await tx.$executeRawUnsafe(
      `UPDATE webhook_endpoints w SET (cursor_txid, cursor_seq) = (SELECT COALESCE(max(ev.txid), 0), COALESCE(max(ev.seq), 0) FROM events ev
           WHERE ev.property_group_id = w.property_group_id AND ev.txid = (SELECT max(txid) FROM events
             WHERE property_group_id = w.property_group_id AND txid < pg_snapshot_xmin(pg_current_snapshot())::text::bigint)),
         lease_token = NULL, lease_until = NULL, next_attempt_at = NULL, failure_count = 0, failing_since = NULL, last_error = NULL
       WHERE w.id = ANY($1::uuid[])`,
      w.map((r) => r.id),
    );
    return [k.length, w.length];
  });
  // Gone: neither put back nor there again as the fixtures' own row (the same test as the inserts').
  const [removed] = await db.$queryRawUnsafe<{ keys: number; endpoints: number; partners: number; connectors: number }[]>(
    `SELECT (SELECT count(*) FROM jsonb_populate_recordset(NULL::api_keys, $1::jsonb) k
               WHERE NOT EXISTS (SELECT 1 FROM api_keys x WHERE x.id = k.id OR x.token_hash = k.token_hash))::int AS keys,
            (SELECT count(*) FROM jsonb_populate_recordset(NULL::webhook_endpoints, $2::jsonb) w
               WHERE NOT EXISTS (SELECT 1 FROM webhook_endpoints x WHERE x.id = w.id))::int AS endpoints,
            (SELECT count(*) FROM unnest($3::uuid[]) AS s(id) WHERE NOT EXISTS (SELECT 1 FROM partner_credentials p WHERE p.id = s.id))::int AS partners,
            (SELECT count(*) FROM unnest($4::uuid[]) AS s(id) WHERE NOT EXISTS (SELECT 1 FROM oauth_grants g WHERE g.id = s.id))::int AS connectors`,
    JSON.stringify(snapshot.apiKeys),
    JSON.stringify(snapshot.webhookEndpoints),
    snapshot.partnerIds,
    snapshot.connectorIds,
  );
  return {
    apiKeys: keys,
    webhookEndpoints: endpoints,
    apiKeysRemoved: removed.keys,
    webhookEndpointsRemoved: removed.endpoints,
    partnersRemoved: removed.partners,
    connectorsRemoved: removed.connectors,
  };
}
