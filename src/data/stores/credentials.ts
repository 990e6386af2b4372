// Credential storage: the per-request token lookup, the property check of scope resolution, and the
// rows behind issuing and revoking keys, partner credentials, static and MCP tokens. The rules (which
// kinds exist, expiry, secrets and hashing) stay in src/auth; this module only reads and writes rows.
import type { Pool } from "pg";
import type { PrismaClient } from "../../generated/prisma/client";
import { runStatement } from "../../db/sql-count";

export type OpaqueTokenKind = "api_key" | "partner" | "mcp" | "static";

export interface TokenRow {
  id: string;
  property_group_id: string;
  property_id: string | null;
  scopes: ReadonlySet<string>;
  /** The scopes as stored, space-separated (a remembered credential's check compares them: auth/remembered-credentials.ts). */
  scopeText: string;
  revoked: boolean;
  expired: boolean;
}

// One statement per request, in plain SQL: it runs before anything else on every call, and Prisma's
// per-query cost would be a fixed tax on all of them. Credentials are looked up by hash only, each
// kind by its SECURITY DEFINER function (migration 20261127190000_row_level_security, owned by
// gcs_system: the credential lookup's cross-group path, docs/security.md), called with no settings
// sent before it (db/tenant-pool.ts). Scopes come as one space-separated text (scope names hold no
// space), which scopeSet() below reads.
const TOKEN_LOOKUPS: Record<OpaqueTokenKind, string> = {
  api_key: "SELECT * FROM gcs_credential_api_key($1)",
  partner: "SELECT * FROM gcs_credential_partner($1)",
  mcp: "SELECT * FROM gcs_credential_mcp($1)",
  static: "SELECT * FROM gcs_credential_static($1)",
};

/** The token row with this hash, or undefined. */
export async function findTokenByHash(pool: Pool, kind: OpaqueTokenKind, tokenHash: string): Promise<TokenRow | undefined> {
  // Prepared (named) on each connection: PostgreSQL parses and plans it once, not on every request.
  const { rows } = await runStatement<Omit<TokenRow, "scopes" | "scopeText"> & { scopes: string }>(pool, TOKEN_LOOKUPS[kind], [tokenHash], `gcs_token_${kind}`);
  const row = rows[0];
  return row && { ...row, scopeText: row.scopes, scopes: scopeSet(row.scopes) };
}

/**
 * One statement that does nothing but carry the settings: the proof of a remembered credential no
 * statement of the request has proved (auth/authenticate.ts proveRememberedCredential).
 */
export async function proveCredentialStatement(pool: Pool): Promise<void> {
  await runStatement(pool, "SELECT 1", []);
}

/**
 * The token rows of many hashes in one statement, by hash (a hash with no row is absent): the same
 * lookup functions as a request's, for the check of the credentials behind open event streams
 * (streams/credential-watch.ts). Run on the credential lookup's cross-group path.
 */
export async function findTokensByHash(pool: Pool, tokens: readonly { kind: OpaqueTokenKind; hash: string }[]): Promise<Map<string, TokenRow>> {
  const { rows } = await runStatement<Omit<TokenRow, "scopes" | "scopeText"> & { scopes: string; hash: string }>(pool, TOKENS_BY_HASH, [tokens.map((t) => t.kind), tokens.map((t) => t.hash)]);
  return new Map(rows.map(({ hash, ...row }) => [hash, { ...row, scopeText: row.scopes, scopes: scopeSet(row.scopes) }]));
}
// Each hash goes to its kind's function only (the other branches' conditions are constant per hash).
const TOKENS_BY_HASH = `SELECT t.hash, c.* FROM unnest($1::text[], $2::text[]) AS t(kind, hash) CROSS JOIN LATERAL (
    SELECT * FROM gcs_credential_api_key(t.hash) WHERE t.kind = 'api_key'
    UNION ALL SELECT * FROM gcs_credential_partner(t.hash) WHERE t.kind = 'partner'
    UNION ALL SELECT * FROM gcs_credential_mcp(t.hash) WHERE t.kind = 'mcp'
    UNION ALL SELECT * FROM gcs_credential_static(t.hash) WHERE t.kind = 'static') c`;

// Distinct scope lists are few (a role's, or a key's choice), and one is read on every request: each
// is parsed once into a set that the requests share (credentials hold it read-only).
const MAX_SCOPE_SETS = 1000;
const scopeSets = new Map<string, ReadonlySet<string>>();
function scopeSet(text: string): ReadonlySet<string> {
  let set = scopeSets.get(text);
  if (!set) {
    set = new Set(text === "" ? [] : text.split(" "));
    if (scopeSets.size < MAX_SCOPE_SETS) scopeSets.set(text, set);
  }
  return set;
}

/** The id of the property group provisioned for a web-app organisation, or null. */
export async function groupIdOfOrganisation(prisma: PrismaClient, organisationId: string): Promise<string | null> {
  const group = await prisma.propertyGroup.findUnique({ where: { organisationId }, select: { id: true } });
  return group?.id ?? null;
}

export async function groupExists(prisma: PrismaClient, propertyGroupId: string): Promise<boolean> {
  const group = await prisma.propertyGroup.findUnique({ where: { id: propertyGroupId }, select: { id: true } });
  return group !== null;
}

/** The property's id when it belongs to the group, else null. */
export async function propertyInGroup(prisma: PrismaClient, propertyId: string, propertyGroupId: string): Promise<string | null> {
  const property = await prisma.property.findFirst({ where: { id: propertyId, propertyGroupId }, select: { id: true } });
  return property?.id ?? null;
}

export function insertApiKey(
  prisma: PrismaClient,
  data: { id: string; propertyGroupId: string; propertyId: string | null; name: string; displayPrefix: string; tokenHash: string; scopes: string[] },
) {
  return prisma.apiKey.create({ data });
}

/** Listing never includes secrets or their hashes. */
export function listApiKeys(prisma: PrismaClient, propertyGroupId?: string) {
  return prisma.apiKey.findMany({
    where: propertyGroupId ? { propertyGroupId } : {},
    orderBy: [{ createdAt: "asc" }, { id: "asc" }],
    select: {
      id: true,
      propertyGroupId: true,
      propertyId: true,
      name: true,
      displayPrefix: true,
      scopes: true,
      createdAt: true,
      revokedAt: true,
    },
  });
}

/** Revokes every unrevoked key with this name (an embedded demo key whose token is no longer known). */
export async function revokeApiKeysNamed(prisma: PrismaClient, name: string): Promise<void> {
  await prisma.apiKey.updateMany({ where: { name, revokedAt: null }, data: { revokedAt: new Date() } });
}

/** Whether an unrevoked key with this hash and name belongs to the group (the embedded demo's kept key). */
export async function isActiveApiKey(prisma: PrismaClient, where: { tokenHash: string; name: string; propertyGroupId: string }): Promise<boolean> {
  return (await prisma.apiKey.count({ where: { ...where, revokedAt: null } })) === 1;
}

export async function hasPropertyGroups(prisma: PrismaClient): Promise<boolean> {
  return (await prisma.propertyGroup.count()) > 0;
}

/** The oldest property group (the embedded demo's). */
export function firstPropertyGroup(prisma: PrismaClient) {
  return prisma.propertyGroup.findFirstOrThrow({ orderBy: [{ createdAt: "asc" }, { id: "asc" }] });
}

/** @returns false when no unrevoked key has that id. */
export async function revokeApiKey(prisma: PrismaClient, id: string): Promise<boolean> {
  const { count } = await prisma.apiKey.updateMany({ where: { id, revokedAt: null }, data: { revokedAt: new Date() } });
  return count === 1;
}

export function insertPartnerCredential(
  prisma: PrismaClient,
  data: { id: string; propertyGroupId: string; name: string; clientId: string; clientSecretHash: string; scopes: string[] },
) {
  return prisma.partnerCredential.create({ data });
}

export function findPartnerCredential(prisma: PrismaClient, clientId: string) {
  return prisma.partnerCredential.findUnique({ where: { clientId } });
}

export function insertPartnerAccessToken(
  prisma: PrismaClient,
  data: { id: string; partnerCredentialId: string; tokenHash: string; expiresAt: Date },
) {
  return prisma.partnerAccessToken.create({ data });
}

/** Inserts the static token, or re-registers (and un-revokes) the one with the same hash. */
export function upsertStaticToken(
  prisma: PrismaClient,
  input: { id: string; propertyGroupId: string; name: string; tokenHash: string; scopes: string[] },
) {
  const { id, propertyGroupId, name, tokenHash, scopes } = input;
  return prisma.staticToken.upsert({
    where: { tokenHash },
    create: { id, propertyGroupId, name, tokenHash, scopes },
    update: { propertyGroupId, name, scopes, revokedAt: null },
  });
}

export function insertMcpToken(
  prisma: PrismaClient,
  data: { id: string; propertyGroupId: string; clientName: string; tokenHash: string; scopes: string[]; expiresAt: Date },
) {
  return prisma.mcpToken.create({ data });
}
