// Bearer token → Credential. All token kinds resolve to the same credential shape; the surface
// (REST, GraphQL, MCP) decides which kinds it accepts (spec section 5).
import type { Pool } from "pg";
import type { DataClient as PrismaClient } from "../data/client";
import { findTokenByHash, groupIdOfOrganisation, proveCredentialStatement, type OpaqueTokenKind, type TokenRow } from "../data/stores/credentials";
import { currentRecord, timed } from "../observability/request";
import { rememberedCredentialsOf } from "./remembered-credentials";
import { databaseFault, isCredentialRefusal } from "../db/errors";
import { echo, forbidden, mcpOAuthRequired, tenantNotProvisioned, unauthorized, unknownToken } from "../errors";
import { ROLE_SCOPES } from "./scopes";
import { API_KEY_PREFIX, MCP_TOKEN_PREFIX, PARTNER_TOKEN_PREFIX, hashToken } from "./secrets";
import { looksLikeJwt, verifySessionToken, type SessionKeyConfig } from "./session";
import { acrossGroups } from "../db/session";

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
  /**
   * The door proves a remembered credential before it answers (proveRememberedCredential): only then
   * may the lookup be skipped (auth/remembered-credentials.ts). REST, /graphql and MCP's fast path do; streams and the MCP SDK's path do not.
   */
  remember?: boolean;
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
  const credential = await timed("authMs", () => acrossGroups("credential lookup", () => resolveToken(token, surface, deps)));
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
    if (!scopes) throw unauthorized(`session role ${echo(claims.role)} is not known`);
    const groupId = await groupIdOfOrganisation(prisma, claims.organisationId);
    if (!groupId) throw tenantNotProvisioned();
    return { kind: "session", id: claims.userId, propertyGroupId: groupId, pinnedPropertyId: null, scopes: new Set(scopes) };
  }

  const kind = opaqueKindOf(token);
  const hash = hashToken(token);
  // Remembered from an earlier request: proved by this request's first statement instead of looked up.
  const memory = deps.remember ? rememberedCredentialsOf(deps.pool) : undefined;
  const record = currentRecord();
  const remembered = record && memory?.get(hash);
  if (remembered) {
    const { row, settingsBytes } = remembered;
    record.credentialToProve = {
      kind, hash, id: row.id, propertyId: row.property_id, scopeText: row.scopeText, refused: () => memory!.forget(hash), settingsBytes,
    };
    return credentialOfRow(kind, row);
  }
  const row = await findTokenByHash(deps.pool, kind, hash);
  if (row && record) memory?.remember(hash, row);
  return credentialOfRow(kind, row);
}

/**
 * Before a door answers: a remembered credential that no statement of the request has proved yet (it
 * ran none, or failed before one) is proved by one statement now; refused, the request gets the 401
 * a lookup would have given.
 */
export async function proveRememberedCredential(pool: Pool): Promise<void> {
  if (!currentRecord()?.credentialToProve) return;
  try {
    await proveCredentialStatement(pool);
  } catch (err) {
    if (isCredentialRefusal(err)) throw unknownToken();
    throw err;
  }
}

/**
 * The error a door answers with once the credential is proved: `err`, or the proof's refusal. The
 * refusal itself and a database fault (503/504, the database could not prove anything) go as they are.
 */
export async function provedError(err: unknown, pool: Pool): Promise<unknown> {
  if (isCredentialRefusal(err) || databaseFault(err)) return err;
  try {
    await proveRememberedCredential(pool);
    return err;
  } catch (refused) {
    return refused;
  }
}

/** The kind of an opaque (not JWT) token, by its prefix. */
export function opaqueKindOf(token: string): OpaqueTokenKind {
  if (token.startsWith(API_KEY_PREFIX)) return "api_key";
  if (token.startsWith(PARTNER_TOKEN_PREFIX)) return "partner";
  if (token.startsWith(MCP_TOKEN_PREFIX)) return "mcp";
  return "static";
}

/**
 * A token's row as the credential it grants, or the error a request with it gets: a request's lookup
 * and the check of open streams' credentials (streams/credential-watch.ts) decide alike.
 */
export function credentialOfRow(kind: OpaqueTokenKind, row: TokenRow | undefined): Credential {
  if (!row || row.revoked) throw unknownToken();
  if (row.expired) throw unauthorized(`${EXPIRING[kind]} has expired`);
  return { kind, id: row.id, propertyGroupId: row.property_group_id, pinnedPropertyId: row.property_id, scopes: row.scopes };
}

type OpaqueKind = OpaqueTokenKind;
const EXPIRING: Record<OpaqueKind, string> = {
  api_key: "API key",
  partner: "partner access token",
  mcp: "MCP connector token",
  static: "static token",
};
