// The OAuth store behind the MCP connector flow (src/oauth): registered clients, grants, codes,
// refresh tokens and the grant's `gcsm_` access tokens (rows of mcp_tokens). The protocol (PKCE,
// rotation, replay handling, expiry) stays in src/oauth; this module reads and writes the rows.
// Codes and tokens arrive here already hashed.
import type { PrismaClient } from "../../generated/prisma/client";

export function findClient(prisma: PrismaClient, id: string) {
  return prisma.oAuthClient.findUnique({ where: { id } });
}

type NewClient = { id: string; clientName: string | null; redirectUris: string[]; metadata: object; registeredFrom: string };

/**
 * Inserts a client unless its address already registered `limit` clients in the last `windowS`
 * seconds. Counted in the table, so every instance sees the same count; serialised per address by a
 * transaction-scoped advisory lock (safe behind a transaction pooler), so instances racing for the
 * same address cannot both take the last place. Times are the database's clock, one for all instances.
 * @returns the row, or how many seconds until the oldest registration in the window leaves it.
 */
export function insertClientWithinLimit(
  prisma: PrismaClient,
  data: NewClient,
  limit: number,
  windowS: number,
): Promise<{ row: Awaited<ReturnType<PrismaClient["oAuthClient"]["create"]>> } | { retryAfterS: number }> {
  return prisma.$transaction(async (tx) => {
    await tx.$executeRaw`SELECT pg_advisory_xact_lock(hashtextextended(${`oauth_register:${data.registeredFrom}`}, 0))`;
    const [window] = await tx.$queryRaw<{ n: number; retry_after_s: number | null }[]>`
      SELECT count(*)::int AS n, ceil(extract(epoch FROM min(created_at) + make_interval(secs => ${windowS}::int) - now()))::int AS retry_after_s
      FROM oauth_clients WHERE registered_from = ${data.registeredFrom} AND created_at > now() - make_interval(secs => ${windowS}::int)`;
    if (window.n >= limit) return { retryAfterS: Math.max(1, window.retry_after_s ?? windowS) };
    return { row: await tx.oAuthClient.create({ data }) };
  });
}

/**
 * Deletes (at most `batch`, oldest first) the clients registered more than `ageS` seconds ago that
 * never obtained a token: none of their grants ever issued one, and none was approved within `ageS`
 * (its code may still be exchanged). Their grants and codes go with them (foreign keys cascade).
 * @returns how many were deleted.
 */
export function deleteUnusedClients(prisma: PrismaClient, ageS: number, batch = 100): Promise<number> {
  return prisma.$executeRaw`
    DELETE FROM oauth_clients WHERE id IN (
      SELECT c.id FROM oauth_clients c
      WHERE c.created_at < now() - make_interval(secs => ${ageS}::int)
        AND NOT EXISTS (SELECT 1 FROM oauth_grants g WHERE g.client_id = c.id
                        AND (g.last_used_at IS NOT NULL OR g.created_at >= now() - make_interval(secs => ${ageS}::int)))
      ORDER BY c.created_at LIMIT ${batch})`;
}

export function findClientName(prisma: PrismaClient, id: string) {
  return prisma.oAuthClient.findUnique({ where: { id }, select: { clientName: true } });
}

/** The group's display name, or null when there is no such group. */
export async function groupName(prisma: PrismaClient, id: string): Promise<string | null> {
  const group = await prisma.propertyGroup.findUnique({ where: { id }, select: { name: true } });
  return group?.name ?? null;
}

export function findApiKey(prisma: PrismaClient, id: string) {
  return prisma.apiKey.findUnique({ where: { id } });
}

export function findApproverKey(prisma: PrismaClient, id: string) {
  return prisma.apiKey.findUnique({ where: { id }, select: { revokedAt: true } });
}

/**
 * The grant and its code in one transaction.
 * @returns false when a code with this id (the consent form's nonce) already exists.
 */
export async function insertGrantAndCode(
  prisma: PrismaClient,
  grant: { id: string; clientId: string; propertyGroupId: string; scopes: string[]; approvedByApiKeyId: string },
  code: { id: string; codeHash: string; redirectUri: string; codeChallenge: string; resource: string | null; expiresAt: Date },
): Promise<boolean> {
  try {
    await prisma.$transaction([
      prisma.oAuthGrant.create({ data: grant }),
      prisma.oAuthAuthorizationCode.create({ data: { ...code, grantId: grant.id, propertyGroupId: grant.propertyGroupId } }),
    ]);
    return true;
  } catch (err) {
    if ((err as { code?: string }).code === "P2002") return false; // unique violation on the nonce
    throw err;
  }
}

export function findCodeChallenge(prisma: PrismaClient, codeHash: string) {
  return prisma.oAuthAuthorizationCode.findUnique({
    where: { codeHash },
    select: { codeChallenge: true, grant: { select: { clientId: true } } },
  });
}

export function findCodeWithGrant(prisma: PrismaClient, codeHash: string) {
  return prisma.oAuthAuthorizationCode.findUnique({ where: { codeHash }, include: { grant: true } });
}

/** Marks the code used. @returns false when it already was. */
export async function claimCode(prisma: PrismaClient, codeHash: string): Promise<boolean> {
  const claimed = await prisma.oAuthAuthorizationCode.updateMany({ where: { codeHash, usedAt: null }, data: { usedAt: new Date() } });
  return claimed.count > 0;
}

export function findRefreshTokenWithGrant(prisma: PrismaClient, tokenHash: string) {
  return prisma.oAuthRefreshToken.findUnique({ where: { tokenHash }, include: { grant: true } });
}

/** Marks a live refresh token used. @returns false when it was used, revoked or expired. */
export async function claimRefreshToken(prisma: PrismaClient, tokenHash: string, now: Date): Promise<boolean> {
  const claimed = await prisma.oAuthRefreshToken.updateMany({
    where: { tokenHash, usedAt: null, revokedAt: null, expiresAt: { gt: now } },
    data: { usedAt: now },
  });
  return claimed.count > 0;
}

export function findAccessTokenWithGrant(prisma: PrismaClient, tokenHash: string) {
  return prisma.mcpToken.findUnique({ where: { tokenHash }, include: { grant: true } });
}

export async function revokeAccessToken(prisma: PrismaClient, id: string): Promise<void> {
  await prisma.mcpToken.updateMany({ where: { id, revokedAt: null }, data: { revokedAt: new Date() } });
}

class GrantRevoked extends Error {}

/**
 * Stores a new access and refresh token for a grant, in one transaction that first marks the grant
 * used: that update locks the grant row until commit, so a concurrent revocation waits and then
 * also revokes the tokens written here.
 * @returns false (and writes nothing) when the grant is revoked.
 */
export async function storeTokens(
  prisma: PrismaClient,
  grant: { id: string; propertyGroupId: string },
  usedAt: Date,
  access: { id: string; clientName: string; tokenHash: string; scopes: string[]; expiresAt: Date },
  refresh: { id: string; tokenHash: string; expiresAt: Date },
): Promise<boolean> {
  try {
    await prisma.$transaction(async (tx) => {
      const live = await tx.oAuthGrant.updateMany({ where: { id: grant.id, revokedAt: null }, data: { lastUsedAt: usedAt } });
      if (live.count === 0) throw new GrantRevoked();
      await tx.mcpToken.create({ data: { ...access, propertyGroupId: grant.propertyGroupId, grantId: grant.id } });
      await tx.oAuthRefreshToken.create({ data: { ...refresh, grantId: grant.id, propertyGroupId: grant.propertyGroupId } });
    });
    return true;
  } catch (err) {
    if (err instanceof GrantRevoked) return false;
    throw err;
  }
}

/**
 * Revokes the grant, its access tokens and its refresh tokens, in one transaction.
 * @returns false when no unrevoked grant has that id.
 */
export function revokeGrant(prisma: PrismaClient, grantId: string): Promise<boolean> {
  return prisma.$transaction(async (tx) => {
    const now = new Date();
    const { count } = await tx.oAuthGrant.updateMany({ where: { id: grantId, revokedAt: null }, data: { revokedAt: now } });
    // Also when the grant was already revoked: a token written by a racing refresh is caught here.
    await tx.mcpToken.updateMany({ where: { grantId, revokedAt: null }, data: { revokedAt: now } });
    await tx.oAuthRefreshToken.updateMany({ where: { grantId, revokedAt: null }, data: { revokedAt: now } });
    return count === 1;
  });
}

/** Every grant with its client's name and redirect URIs, oldest first; one group's with `propertyGroupId`. */
export function listGrants(prisma: PrismaClient, propertyGroupId?: string) {
  return prisma.oAuthGrant.findMany({
    where: propertyGroupId ? { propertyGroupId } : {},
    orderBy: [{ createdAt: "asc" }, { id: "asc" }],
    include: { client: { select: { clientName: true, redirectUris: true } } },
  });
}
