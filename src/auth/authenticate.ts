// Bearer token → Credential. All token kinds resolve to the same credential shape; the surface
// (REST, GraphQL, MCP) decides which kinds it accepts (spec section 5).
import type { Pool } from "pg";
import type { PrismaClient } from "../generated/prisma/client";
import { runStatement } from "../db/sql-count";
import { timed } from "../observability/request";
import { forbidden, mcpOAuthRequired, tenantNotProvisioned, unauthorized } from "../errors";
import { ROLE_SCOPES } from "./scopes";
import { API_KEY_PREFIX, MCP_TOKEN_PREFIX, PARTNER_TOKEN_PREFIX, hashToken } from "./secrets";
import { looksLikeJwt, verifySessionToken, type SessionKeyConfig } from "./session";

export type CredentialKind = "api_key" | "partner" | "session" | "static" | "mcp";
export type Surface = "rest" | "graphql" | "mcp";

export interface Credential {
  kind: CredentialKind;
  /** Row id of the key or token; the user id for sessions. */
  id: string;
  propertyGroupId: string;
  /** Set for API keys pinned to one property: X-Property-Id is then ignored. */
  pinnedPropertyId: string | null;
  scopes: ReadonlySet<string>;
}

export interface AuthDeps {
  prisma: PrismaClient;
  /** The reader's pool: credential lookups run in SQL (one statement per request). */
  pool: Pool;
  sessionKey: () => Promise<SessionKeyConfig>;
}

/** `Authorization: Bearer <token>`; the token is group 1. */
export const BEARER = /^Bearer\s+(\S+)\s*$/i;

export function bearerToken(header: string | undefined): string {
  if (!header) throw unauthorized("send Authorization: Bearer <token>");
  const match = BEARER.exec(header);
  if (!match) throw unauthorized("the Authorization header must be 'Bearer <token>'");
  return match[1];
}

/**
 * @param requiredScope the route's first scope, echoed in the 403 a token kind gets on a surface it
 *   may not use (an MCP connector token on /v1).
 */
export async function authenticate(
  token: string,
  surface: Surface,
  deps: AuthDeps,
  requiredScope?: string,
): Promise<Credential> {
  const credential = await timed("authMs", () => resolveToken(token, surface, deps));
  if (credential.kind === "mcp" && surface !== "mcp") {
    throw forbidden("MCP connector tokens authenticate the MCP server only", requiredScope);
  }
  if (credential.kind === "partner" && surface !== "rest") {
    throw forbidden("partner access tokens are for the REST API only", requiredScope);
  }
  return credential;
}

async function resolveToken(token: string, surface: Surface, deps: AuthDeps): Promise<Credential> {
  const { prisma } = deps;
  if (looksLikeJwt(token)) {
    if (surface === "mcp") throw mcpOAuthRequired();
    const claims = await verifySessionToken(await deps.sessionKey(), token);
    // An own member only: a role named "__proto__" or "constructor" is as unknown as any other.
    const scopes = Object.hasOwn(ROLE_SCOPES, claims.role) ? ROLE_SCOPES[claims.role] : undefined;
    if (!scopes) throw unauthorized(`session role ${JSON.stringify(claims.role)} is not known`);
    const group = await prisma.propertyGroup.findUnique({
      where: { organisationId: claims.organisationId },
      select: { id: true },
    });
    if (!group) throw tenantNotProvisioned();
    return { kind: "session", id: claims.userId, propertyGroupId: group.id, pinnedPropertyId: null, scopes: new Set(scopes) };
  }

  const kind: OpaqueKind = token.startsWith(API_KEY_PREFIX)
    ? "api_key"
    : token.startsWith(PARTNER_TOKEN_PREFIX)
      ? "partner"
      : token.startsWith(MCP_TOKEN_PREFIX)
        ? "mcp"
        : "static";
  const { rows } = await runStatement<TokenRow>(deps.pool, TOKEN_LOOKUPS[kind], [hashToken(token)]);
  const row = rows[0];
  if (!row || row.revoked) throw unknownToken();
  if (row.expired) throw unauthorized(`${EXPIRING[kind]} has expired`);
  return { kind, id: row.id, propertyGroupId: row.property_group_id, pinnedPropertyId: row.property_id, scopes: new Set(row.scopes) };
}

type OpaqueKind = Exclude<CredentialKind, "session">;
interface TokenRow {
  id: string;
  property_group_id: string;
  property_id: string | null;
  scopes: string[];
  revoked: boolean;
  expired: boolean;
}

// One statement per request, in plain SQL: it runs before anything else on every call, and Prisma's
// per-query cost would be a fixed tax on all of them. Credentials are looked up by hash only.
const TOKEN_LOOKUPS: Record<OpaqueKind, string> = {
  api_key: `SELECT id, property_group_id, property_id, scopes, revoked_at IS NOT NULL AS revoked, false AS expired
    FROM api_keys WHERE token_hash = $1`,
  partner: `SELECT a.id, p.property_group_id, NULL AS property_id, p.scopes,
      (a.revoked_at IS NOT NULL OR p.revoked_at IS NOT NULL) AS revoked, a.expires_at <= now() AS expired
    FROM partner_access_tokens a JOIN partner_credentials p ON p.id = a.partner_credential_id WHERE a.token_hash = $1`,
  mcp: `SELECT id, property_group_id, NULL AS property_id, scopes, revoked_at IS NOT NULL AS revoked, expires_at <= now() AS expired
    FROM mcp_tokens WHERE token_hash = $1`,
  static: `SELECT id, property_group_id, NULL AS property_id, scopes, revoked_at IS NOT NULL AS revoked, false AS expired
    FROM static_tokens WHERE token_hash = $1`,
};
const EXPIRING: Record<OpaqueKind, string> = {
  api_key: "API key",
  partner: "partner access token",
  mcp: "MCP connector token",
  static: "static token",
};

const unknownToken = () => unauthorized("the bearer token is unknown or revoked");
