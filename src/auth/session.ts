// Web-app session JWTs (HS256). Organisation and role come only from verified claims.
import { SignJWT, decodeJwt, jwtVerify, errors as joseErrors } from "jose";
import type { DataClient as PrismaClient } from "../data/client";
import { serviceSecret } from "../db/service-secrets";
import { unauthorized } from "../errors";
import { isUuid } from "../validate";

export interface SessionKeyConfig {
  secret: string;
  issuer: string;
  audience: string;
}

export interface SessionClaims {
  userId: string;
  organisationId: string;
  role: string;
}

/**
 * How far the web app's clock may be ahead of ours (or exp behind) in seconds: `iat` and `nbf` up to
 * this far in the future are accepted, and so is `exp` up to this far in the past.
 */
export const SESSION_CLOCK_SKEW_S = 60;

/** A user id of the web app: printable, no spaces, at most 255 characters. */
const USER_ID = /^[\x21-\x7e]{1,255}$/;

const key = (secret: string) => new TextEncoder().encode(secret);

export function looksLikeJwt(token: string): boolean {
  return token.startsWith("eyJ") && token.split(".").length === 3;
}

export async function issueSessionToken(
  cfg: SessionKeyConfig,
  claims: SessionClaims,
  ttlSeconds = 12 * 3600,
): Promise<string> {
  return new SignJWT({ org: claims.organisationId, role: claims.role })
    .setProtectedHeader({ alg: "HS256", typ: "JWT" })
    .setSubject(claims.userId)
    .setIssuer(cfg.issuer)
    .setAudience(cfg.audience)
    .setIssuedAt()
    .setExpirationTime(Math.floor(Date.now() / 1000) + ttlSeconds)
    .sign(key(cfg.secret));
}

export async function verifySessionToken(cfg: SessionKeyConfig, token: string): Promise<SessionClaims> {
  try {
    const { payload } = await jwtVerify(token, key(cfg.secret), {
      issuer: cfg.issuer,
      audience: cfg.audience,
      algorithms: ["HS256"],
      requiredClaims: ["sub", "exp"],
      clockTolerance: SESSION_CLOCK_SKEW_S,
    });
    // jose checks iat against the clock only with maxTokenAge; a token issued in the future was
    // minted by a wrong clock or to outlive its exp's intent, so it is refused like a bad one.
    if (typeof payload.iat === "number" && payload.iat > Date.now() / 1000 + SESSION_CLOCK_SKEW_S) {
      throw unauthorized("session token's iat claim is in the future");
    }
    // A valid signature vouches for the issuer, not for the shape of every claim: claims that could
    // never name a user, an organisation or a role make the token unusable, like a bad signature.
    if (typeof payload.org !== "string" || typeof payload.role !== "string") {
      throw unauthorized("session token lacks the org or role claim");
    }
    if (!isUuid(payload.org)) throw unauthorized("session token's org claim is not an organisation id (a uuid)");
    if (typeof payload.sub !== "string" || !USER_ID.test(payload.sub)) {
      throw unauthorized("session token's sub claim is not a user id");
    }
    return { userId: payload.sub, organisationId: payload.org.toLowerCase(), role: payload.role };
  } catch (err) {
    if (err instanceof joseErrors.JWTExpired) throw unauthorized("session token has expired");
    if (err instanceof joseErrors.JOSEError) throw unauthorized("session token is not valid");
    throw err;
  }
}

/**
 * When a request with this (verified) session token is first refused as expired, in ms: its exp plus
 * the clock tolerance verifySessionToken allows. An open event stream ends then (streams/credential-watch.ts).
 */
export function sessionRefusedAt(token: string): number {
  const { exp } = decodeJwt(token);
  return ((exp ?? 0) + SESSION_CLOCK_SKEW_S) * 1000;
}

/** The configured session key, or the one the service generated and keeps in the database. */
export async function resolveSessionKey(
  session: { secret?: string; issuer: string; audience: string },
  prisma: PrismaClient,
): Promise<SessionKeyConfig> {
  return {
    secret: session.secret ?? (await serviceSecret(prisma, "session_jwt_hs256")),
    issuer: session.issuer,
    audience: session.audience,
  };
}
