// The MCP SDK's OAuthServerProvider, backed by PostgreSQL: the SDK's mcpAuthRouter speaks the
// protocol (metadata, registration, authorize, token, revoke, PKCE S256 verification); this file
// keeps the state. Clients are public (no secret: PKCE protects the code). A person's approval is a
// grant (one client, one property group, the approved scopes); access tokens are `gcsm_` rows of
// mcp_tokens carrying the grant's id, so /mcp authenticates them with its usual single lookup.
// Every code and token is stored as a SHA-256 hash.
import { randomUUID } from "node:crypto";
import type { Response } from "express";
import type { OAuthRegisteredClientsStore } from "@modelcontextprotocol/sdk/server/auth/clients.js";
import type { AuthorizationParams, OAuthServerProvider } from "@modelcontextprotocol/sdk/server/auth/provider.js";
import type { AuthInfo } from "@modelcontextprotocol/sdk/server/auth/types.js";
import type { OAuthClientInformationFull, OAuthTokenRevocationRequest, OAuthTokens } from "@modelcontextprotocol/sdk/shared/auth.js";
import {
  InvalidGrantError,
  InvalidRequestError,
  InvalidScopeError,
  InvalidTargetError,
  InvalidTokenError,
} from "@modelcontextprotocol/sdk/server/auth/errors.js";
import type { DataClient as PrismaClient } from "../data/client";
import * as store from "../data/stores/oauth";
import { ALL_SCOPES } from "../auth/scopes";
import { ACCESS_TOKEN_TTL_S, MCP_TOKEN_PREFIX, REFRESH_TOKEN_PREFIX, REFRESH_TOKEN_TTL_S, hashToken, newSecret } from "../auth/secrets";

export const CODE_TTL_S = 600;
/** What a connector may be granted: every scope of the service (pause/resume need write:tables). */
export const CONNECTOR_SCOPES: readonly string[] = ALL_SCOPES;

const UUID = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/i;

/** What the consent page needs to start: provider.authorize hands the request over to it. */
export interface ConsentRequest {
  client: OAuthClientInformationFull;
  redirectUri: string;
  codeChallenge: string;
  /** Known scopes the client asked for (all connector scopes when it named none we know). */
  scopes: string[];
  state?: string;
  resource?: string;
}

export class PgOAuthProvider implements OAuthServerProvider {
  constructor(
    private readonly prisma: PrismaClient,
    /** The /mcp URL: the only resource (RFC 8707) tokens are issued for. */
    private readonly resourceUrl: string,
    private readonly renderConsent: (request: ConsentRequest, res: Response) => Promise<void>,
  ) {}

  readonly clientsStore: OAuthRegisteredClientsStore = {
    getClient: async (clientId) => {
      if (!UUID.test(clientId)) return undefined; // not a uuid: unknown, without asking the database
      const row = await store.findClient(this.prisma, clientId);
      return row ? clientInformation(row) : undefined;
    },
    // No registerClient: POST /register is register.ts's, not the SDK's (router.ts names it in the metadata).
  };

  async authorize(client: OAuthClientInformationFull, params: AuthorizationParams, res: Response): Promise<void> {
    // params.redirectUri is one the client registered, exactly: router.ts checks before the SDK runs.
    // An S256 challenge is the base64url SHA-256 of the verifier (RFC 7636 §4.2): 43 characters.
    if (!/^[A-Za-z0-9_-]{43}$/.test(params.codeChallenge)) throw new InvalidRequestError("code_challenge must be a base64url SHA-256 (S256)");
    if (params.resource && params.resource.href !== this.resourceUrl) {
      throw new InvalidTargetError(`this server issues tokens for ${this.resourceUrl} only`);
    }
    const known = (params.scopes ?? []).filter((s) => CONNECTOR_SCOPES.includes(s));
    await this.renderConsent(
      {
        client,
        redirectUri: params.redirectUri,
        codeChallenge: params.codeChallenge,
        scopes: known.length > 0 ? [...new Set(known)] : [...CONNECTOR_SCOPES],
        state: params.state,
        resource: params.resource?.href,
      },
      res,
    );
  }

  async challengeForAuthorizationCode(client: OAuthClientInformationFull, code: string): Promise<string> {
    const row = await store.findCodeChallenge(this.prisma, hashToken(code));
    if (!row || row.grant.clientId !== client.client_id) throw new InvalidGrantError("the authorization code is unknown");
    return row.codeChallenge;
  }

  async exchangeAuthorizationCode(
    client: OAuthClientInformationFull,
    code: string,
    _codeVerifier?: string, // verified by the SDK against challengeForAuthorizationCode
    redirectUri?: string,
    resource?: URL,
  ): Promise<OAuthTokens> {
    const codeHash = hashToken(code);
    const row = await store.findCodeWithGrant(this.prisma, codeHash);
    if (!row || row.grant.clientId !== client.client_id) throw new InvalidGrantError("the authorization code is unknown");
    if (!(await store.claimCode(this.prisma, codeHash))) {
      // A code used twice was intercepted or replayed: revoke what it was exchanged for (RFC 6749 §4.1.2).
      await revokeGrant(this.prisma, row.grantId);
      throw new InvalidGrantError("the authorization code was already used; the tokens issued for it are revoked");
    }
    if (row.expiresAt <= new Date()) throw new InvalidGrantError("the authorization code has expired");
    if (redirectUri !== undefined && redirectUri !== row.redirectUri) {
      throw new InvalidGrantError("redirect_uri differs from the one in the authorization request");
    }
    if (resource && resource.href !== (row.resource ?? this.resourceUrl)) throw new InvalidTargetError("resource differs from the authorization request");
    return issueTokens(this.prisma, row.grant, row.grant.scopes, clientName(client));
  }

  async exchangeRefreshToken(client: OAuthClientInformationFull, refreshToken: string, scopes?: string[], resource?: URL): Promise<OAuthTokens> {
    const tokenHash = hashToken(refreshToken);
    const row = await store.findRefreshTokenWithGrant(this.prisma, tokenHash);
    if (!row || row.grant.clientId !== client.client_id) throw new InvalidGrantError("the refresh token is unknown");
    // Checked before the token is spent, so a client's mistake here does not cost it the chain.
    if (resource && resource.href !== this.resourceUrl) throw new InvalidTargetError(`this server issues tokens for ${this.resourceUrl} only`);
    const wanted = scopes ?? row.grant.scopes;
    const beyond = wanted.filter((s) => !row.grant.scopes.includes(s));
    if (beyond.length > 0) throw new InvalidScopeError(`not granted: ${beyond.join(" ")}`);
    if (!(await store.claimRefreshToken(this.prisma, tokenHash, new Date()))) {
      if (row.usedAt) {
        // Rotation: each refresh token works once. A second use means two parties hold the chain,
        // so the whole grant goes (OAuth 2.1 §4.3.1); the person approves the client again.
        await revokeGrant(this.prisma, row.grantId);
        throw new InvalidGrantError("the refresh token was already used; this connector is revoked, authorize again");
      }
      throw new InvalidGrantError("the refresh token has expired or was revoked");
    }
    return issueTokens(this.prisma, row.grant, [...new Set(wanted)], clientName(client));
  }

  async verifyAccessToken(token: string): Promise<AuthInfo> {
    const row = await store.findAccessTokenWithGrant(this.prisma, hashToken(token));
    if (!row || row.revokedAt || row.expiresAt <= new Date()) throw new InvalidTokenError("the access token is unknown, expired or revoked");
    return {
      token,
      clientId: row.grant?.clientId ?? "",
      scopes: row.scopes,
      expiresAt: Math.floor(row.expiresAt.getTime() / 1000),
      resource: new URL(this.resourceUrl),
      extra: { propertyGroupId: row.propertyGroupId },
    };
  }

  /** RFC 7009: unknown tokens and other clients' tokens are ignored (still 200). */
  async revokeToken(client: OAuthClientInformationFull, request: OAuthTokenRevocationRequest): Promise<void> {
    const tokenHash = hashToken(request.token);
    if (request.token.startsWith(REFRESH_TOKEN_PREFIX)) {
      const row = await store.findRefreshTokenWithGrant(this.prisma, tokenHash);
      // Revoking the refresh token ends the connector: its access tokens go with it.
      if (row && row.grant.clientId === client.client_id) await revokeGrant(this.prisma, row.grantId);
      return;
    }
    const row = await store.findAccessTokenWithGrant(this.prisma, tokenHash);
    if (row?.grant && row.grant.clientId === client.client_id) await store.revokeAccessToken(this.prisma, row.id);
  }
}

/**
 * A new access token and refresh token for a live grant, or invalid_grant once it is revoked. A
 * grant lives only as long as the API key whose holder approved it: once that key is revoked (a
 * person leaves), the connector ends at its next refresh, within an access token's lifetime.
 */
async function issueTokens(
  prisma: PrismaClient,
  grant: { id: string; propertyGroupId: string; approvedByApiKeyId: string },
  scopes: string[],
  name: string,
): Promise<OAuthTokens> {
  const approver = await store.findApproverKey(prisma, grant.approvedByApiKeyId);
  if (!approver || approver.revokedAt) {
    await revokeGrant(prisma, grant.id);
    throw new InvalidGrantError("the API key that approved this connector was revoked; authorize again");
  }
  const accessToken = newSecret(MCP_TOKEN_PREFIX);
  const refreshToken = newSecret(REFRESH_TOKEN_PREFIX);
  const now = Date.now();
  const stored = await store.storeTokens(
    prisma,
    grant,
    new Date(now),
    { id: randomUUID(), clientName: name, tokenHash: hashToken(accessToken), scopes, expiresAt: new Date(now + ACCESS_TOKEN_TTL_S * 1000) },
    { id: randomUUID(), tokenHash: hashToken(refreshToken), expiresAt: new Date(now + REFRESH_TOKEN_TTL_S * 1000) },
  );
  if (!stored) throw new InvalidGrantError("this connector was revoked; authorize again");
  return { access_token: accessToken, token_type: "Bearer", expires_in: ACCESS_TOKEN_TTL_S, refresh_token: refreshToken, scope: scopes.join(" ") };
}

/**
 * Revokes a connector: the grant, its access tokens and its refresh tokens, in one transaction.
 * @returns false when no unrevoked grant has that id.
 */
export async function revokeGrant(prisma: PrismaClient, grantId: string): Promise<boolean> {
  if (!UUID.test(grantId)) return false;
  return store.revokeGrant(prisma, grantId);
}

export function clientInformation(row: { id: string; metadata: unknown; redirectUris: string[]; createdAt: Date }): OAuthClientInformationFull {
  return {
    ...(row.metadata as Omit<OAuthClientInformationFull, "client_id">),
    client_id: row.id,
    client_id_issued_at: Math.floor(row.createdAt.getTime() / 1000),
    redirect_uris: row.redirectUris,
    token_endpoint_auth_method: "none",
  };
}

export function clientName(client: OAuthClientInformationFull): string {
  return (typeof client.client_name === "string" && client.client_name.trim()) || "unnamed MCP client";
}
