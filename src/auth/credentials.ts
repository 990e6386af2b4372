// Issuing and revoking credentials: the one code path used by the CLI (`gcs keys …`), by configured
// static tokens at start-up, and by `gcs fixtures`. Secrets are returned once, here, and stored only
// as hashes.
import { randomUUID, timingSafeEqual } from "node:crypto";
import * as store from "../data/stores/credentials";
import type { DataClient as PrismaClient } from "../data/client";
import { validateScopes } from "./scopes";
import {
  API_KEY_PREFIX,
  MCP_TOKEN_PREFIX,
  PARTNER_SECRET_PREFIX,
  PARTNER_TOKEN_PREFIX,
  STATIC_TOKEN_PREFIX,
  displayPrefix,
  hashToken,
  newSecret,
} from "./secrets";

export interface NewApiKey {
  propertyGroupId: string;
  propertyId?: string | null;
  name: string;
  scopes: readonly string[];
  id?: string;
}

export async function createApiKey(prisma: PrismaClient, input: NewApiKey) {
  const scopes = validateScopes(input.scopes);
  await assertGroupAndProperty(prisma, input.propertyGroupId, input.propertyId ?? null);
  const token = newSecret(API_KEY_PREFIX);
  const row = await store.insertApiKey(prisma, {
    id: input.id ?? randomUUID(),
    propertyGroupId: input.propertyGroupId,
    propertyId: input.propertyId ?? null,
    name: input.name,
    displayPrefix: displayPrefix(token),
    tokenHash: hashToken(token),
    scopes,
  });
  return { id: row.id, token, propertyGroupId: row.propertyGroupId, propertyId: row.propertyId, scopes };
}

export { listApiKeys, revokeApiKey } from "../data/stores/credentials";

export async function createPartnerCredential(
  prisma: PrismaClient,
  input: { propertyGroupId: string; name: string; scopes: readonly string[]; id?: string },
) {
  const scopes = validateScopes(input.scopes);
  await assertGroupAndProperty(prisma, input.propertyGroupId, null);
  const clientSecret = newSecret(PARTNER_SECRET_PREFIX);
  const row = await store.insertPartnerCredential(prisma, {
    id: input.id ?? randomUUID(),
    propertyGroupId: input.propertyGroupId,
    name: input.name,
    clientId: `partner_${randomUUID().replace(/-/g, "")}`,
    clientSecretHash: hashToken(clientSecret),
    scopes,
  });
  return { id: row.id, clientId: row.clientId, clientSecret };
}

/** Client-credentials exchange: a partner's id and secret for a short-lived access token. */
export async function issuePartnerAccessToken(
  prisma: PrismaClient,
  input: { clientId: string; clientSecret: string; ttlSeconds?: number },
) {
  const partner = await store.findPartnerCredential(prisma, input.clientId);
  const given = Buffer.from(hashToken(input.clientSecret));
  if (!partner || partner.revokedAt || !timingSafeEqual(given, Buffer.from(partner.clientSecretHash))) {
    throw new Error("unknown partner client or wrong secret");
  }
  const token = newSecret(PARTNER_TOKEN_PREFIX);
  const expiresAt = new Date(Date.now() + (input.ttlSeconds ?? 3600) * 1000);
  await store.insertPartnerAccessToken(prisma, { id: randomUUID(), partnerCredentialId: partner.id, tokenHash: hashToken(token), expiresAt });
  return { token, expiresAt };
}

/** Registers a static token (from configuration, or a newly generated one when `token` is omitted). */
export async function registerStaticToken(
  prisma: PrismaClient,
  input: { propertyGroupId: string; name: string; scopes: readonly string[]; token?: string; id?: string },
) {
  const scopes = validateScopes(input.scopes);
  await assertGroupAndProperty(prisma, input.propertyGroupId, null);
  const token = input.token ?? newSecret(STATIC_TOKEN_PREFIX);
  const tokenHash = hashToken(token);
  const row = await store.upsertStaticToken(prisma, {
    id: input.id ?? randomUUID(),
    propertyGroupId: input.propertyGroupId,
    name: input.name,
    tokenHash,
    scopes,
  });
  return { id: row.id, token };
}

export async function issueMcpToken(
  prisma: PrismaClient,
  input: { propertyGroupId: string; clientName: string; scopes: readonly string[]; ttlSeconds?: number; id?: string },
) {
  const scopes = validateScopes(input.scopes);
  const token = newSecret(MCP_TOKEN_PREFIX);
  const expiresAt = new Date(Date.now() + (input.ttlSeconds ?? 30 * 24 * 3600) * 1000);
  await store.insertMcpToken(prisma, {
    id: input.id ?? randomUUID(),
    propertyGroupId: input.propertyGroupId,
    clientName: input.clientName,
    tokenHash: hashToken(token),
    scopes,
    expiresAt,
  });
  return { token, expiresAt };
}

async function assertGroupAndProperty(prisma: PrismaClient, propertyGroupId: string, propertyId: string | null) {
  if (!(await store.groupExists(prisma, propertyGroupId))) throw new Error(`property group ${propertyGroupId} does not exist`);
  if (propertyId) {
    if (!(await store.propertyInGroup(prisma, propertyId, propertyGroupId))) throw new Error(`property ${propertyId} is not in property group ${propertyGroupId}`);
  }
}
