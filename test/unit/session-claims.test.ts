// Session JWTs whose signature is valid but whose claims could never name a user, an organisation
// or a role: 401 unauthorized, like a bad signature (a 500 before: Prisma got "" for a uuid column).
import { GraphQLError } from "graphql";
import { SignJWT } from "jose";
import { SESSION_CLOCK_SKEW_S, issueSessionToken, verifySessionToken } from "../../src/auth/session";

const cfg = { secret: "s".repeat(40), issuer: "gcs-test", audience: "gcs" };
const ORG = "3f1c2a9e-7d4b-4c1a-9e2f-5b6a7c8d9e0f";

async function rejection(claims: { userId: string; organisationId: string; role: string }): Promise<string> {
  try {
    await verifySessionToken(cfg, await issueSessionToken(cfg, claims));
  } catch (err) {
    expect((err as GraphQLError).extensions.code).toBe("unauthorized");
    return String((err as GraphQLError).extensions.detail);
  }
  throw new Error("expected a 401");
}

describe("session claims", () => {
  it("org must be a uuid", async () => {
    for (const org of ["", "not-a-uuid", `${ORG}x`]) {
      expect(await rejection({ userId: "u1", organisationId: org, role: "admin" })).toMatch(/org claim is not an organisation id/);
    }
  });

  it("sub must be a printable user id", async () => {
    for (const sub of ["", "a b", "a\u0000", "x".repeat(256)]) {
      expect(await rejection({ userId: sub, organisationId: ORG, role: "admin" })).toMatch(/sub claim is not a user id/);
    }
  });

  it("well-formed claims pass, the org in lower case", async () => {
    const token = await issueSessionToken(cfg, { userId: "user-1", organisationId: ORG.toUpperCase(), role: "__proto__" });
    // The role is looked up against ROLE_SCOPES in authenticate.ts (own members only): tested end to end.
    expect(await verifySessionToken(cfg, token)).toEqual({ userId: "user-1", organisationId: ORG, role: "__proto__" });
  });

  describe("clock skew", () => {
    const now = () => Math.floor(Date.now() / 1000);
    /** A well-formed token with these time claims (seconds from now). */
    const signed = (times: { iat?: number; nbf?: number; exp?: number }) => {
      const jwt = new SignJWT({ org: ORG, role: "admin" }).setProtectedHeader({ alg: "HS256" }).setSubject("u1").setIssuer(cfg.issuer).setAudience(cfg.audience);
      if (times.iat !== undefined) jwt.setIssuedAt(now() + times.iat);
      if (times.nbf !== undefined) jwt.setNotBefore(now() + times.nbf);
      return jwt.setExpirationTime(now() + (times.exp ?? 3600)).sign(new TextEncoder().encode(cfg.secret));
    };
    const detail = async (token: Promise<string>) => {
      try {
        await verifySessionToken(cfg, await token);
      } catch (err) {
        expect((err as GraphQLError).extensions.code).toBe("unauthorized");
        return String((err as GraphQLError).extensions.detail);
      }
      return "accepted";
    };
    const YEAR = 365 * 24 * 3600;

    it("refuses a token issued or valid only in the future, beyond the allowed skew", async () => {
      expect(SESSION_CLOCK_SKEW_S).toBe(60);
      expect(await detail(signed({ iat: YEAR, exp: YEAR + 3600 }))).toMatch(/iat claim is in the future/);
      expect(await detail(signed({ iat: 65 }))).toMatch(/iat claim is in the future/);
      expect(await detail(signed({ nbf: YEAR, exp: YEAR + 3600 }))).toMatch(/not valid/);
    });

    it("accepts iat and nbf within the skew, and exp just past it within the skew", async () => {
      expect(await detail(signed({ iat: 50 }))).toBe("accepted");
      expect(await detail(signed({ nbf: 50 }))).toBe("accepted");
      expect(await detail(signed({ iat: -10, exp: -(50) }))).toBe("accepted");
      expect(await detail(signed({ iat: -3600, exp: -(65) }))).toMatch(/expired/);
    });
  });
});
