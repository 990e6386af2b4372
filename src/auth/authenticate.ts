// Bearer token → Credential. All token kinds resolve to the same credential shape; the surface
// (REST, GraphQL, MCP) decides which kinds it accepts (spec section 5).
import type { PrismaClient } from "../generated/prisma/client";
import { forbidden, mcpOAuthRequired, tenantNotProvisioned, unauthorized } from "../graphql/errors";
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
  sessionKey: () => Promise<SessionKeyConfig>;
}

export function bearerToken(header: string | undefined): string {
  if (!header) throw unauthorized("send Authorization: Bearer <token>");
  const match = /^Bearer\s+(\S+)\s*$/i.exec(header);
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
  const credential = await resolveToken(token, surface, deps);
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
  const now = new Date();
  if (looksLikeJwt(token)) {
    if (surface === "mcp") throw mcpOAuthRequired();
    const claims = await verifySessionToken(await deps.sessionKey(), token);
    const group = await prisma.propertyGroup.findUnique({
      where: { organisationId: claims.organisationId },
      select: { id: true },
    });
    if (!group) throw tenantNotProvisioned();
    const scopes = ROLE_SCOPES[claims.role];
    if (!scopes) throw unauthorized(`session role ${claims.role} is not known`);
    return { kind: "session", id: claims.userId, propertyGroupId: group.id, pinnedPropertyId: null, scopes: new Set(scopes) };
  }

  const tokenHash = hashToken(token);
  if (token.startsWith(API_KEY_PREFIX)) {
    const key = await prisma.apiKey.findUnique({ where: { tokenHash } });
    if (!key || key.revokedAt) throw unknownToken();
    return { kind: "api_key", id: key.id, propertyGroupId: key.propertyGroupId, pinnedPropertyId: key.propertyId, scopes: new Set(key.scopes) };
  }
  if (token.startsWith(PARTNER_TOKEN_PREFIX)) {
    const access = await prisma.partnerAccessToken.findUnique({
      where: { tokenHash },
      include: { partnerCredential: true },
    });
    if (!access || access.revokedAt || access.partnerCredential.revokedAt) throw unknownToken();
    if (access.expiresAt <= now) throw unauthorized("partner access token has expired");
    const partner = access.partnerCredential;
    return { kind: "partner", id: access.id, propertyGroupId: partner.propertyGroupId, pinnedPropertyId: null, scopes: new Set(partner.scopes) };
  }
  if (token.startsWith(MCP_TOKEN_PREFIX)) {
    const mcp = await prisma.mcpToken.findUnique({ where: { tokenHash } });
    if (!mcp || mcp.revokedAt) throw unknownToken();
    if (mcp.expiresAt <= now) throw unauthorized("MCP connector token has expired");
    return { kind: "mcp", id: mcp.id, propertyGroupId: mcp.propertyGroupId, pinnedPropertyId: null, scopes: new Set(mcp.scopes) };
  }
  const staticToken = await prisma.staticToken.findUnique({ where: { tokenHash } });
  if (!staticToken || staticToken.revokedAt) throw unknownToken();
  return { kind: "static", id: staticToken.id, propertyGroupId: staticToken.propertyGroupId, pinnedPropertyId: null, scopes: new Set(staticToken.scopes) };
}

const unknownToken = () => unauthorized("the bearer token is unknown or revoked");
