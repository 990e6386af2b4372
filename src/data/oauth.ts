// The OAuth store behind the MCP connector flow (src/oauth): registered clients, grants, codes,
// refresh tokens and the grant's `gcsm_` access tokens (rows of mcp_tokens). The protocol (PKCE,
// rotation, replay handling, expiry) stays in src/oauth; this module reads and writes the rows.
// Codes and tokens arrive here already hashed.
import type { PrismaClient } from "../generated/prisma/client";

export function findClient(prisma: PrismaClient, id: string) {
  return prisma.oAuthClient.findUnique({ where: { id } });
}

export function insertClient(prisma: PrismaClient, data: { id: string; clientName: string | null; redirectUris: string[]; metadata: object }) {
  return prisma.oAuthClient.create({ data });
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
