// Token material: random secrets with a recognisable prefix, stored only as SHA-256 hashes. Tokens
// are 256-bit random values, so a plain hash (no salt, no slow KDF) is the right tool: lookups are
// one indexed equality and a stolen hash table reveals nothing usable.
import { hash, randomBytes } from "node:crypto";

/** The fixed service prefix of personal API keys (spec section 5). */
export const API_KEY_PREFIX = "gcs_";
export const PARTNER_TOKEN_PREFIX = "gcsp_";
export const PARTNER_SECRET_PREFIX = "gcsps_";
export const MCP_TOKEN_PREFIX = "gcsm_";
export const STATIC_TOKEN_PREFIX = "gcst_";
/** MCP connector refresh tokens: not accepted as a bearer anywhere (no lookup matches this prefix). */
export const REFRESH_TOKEN_PREFIX = "gcsmr_";
/** Lifetimes of the MCP connector flow's tokens (src/oauth), also stated in the docs for agents. */
export const ACCESS_TOKEN_TTL_S = 3600;
export const REFRESH_TOKEN_TTL_S = 30 * 24 * 3600;

export function newSecret(prefix: string): string {
  return prefix + randomBytes(32).toString("base64url");
}

export function hashToken(token: string): string {
  // One-shot: about 0.4 µs against 2.7 µs for createHash(), and it runs twice on every request
  // (the rate limit key, then the credential lookup).
  return hash("sha256", token, "hex");
}

/** Enough of a key to recognise it in a listing, never enough to use it. */
export function displayPrefix(token: string): string {
  return token.slice(0, token.indexOf("_") + 7);
}
