// Session JWTs whose signature is valid but whose claims could never name a user, an organisation
// or a role: 401 unauthorized, like a bad signature (a 500 before: Prisma got "" for a uuid column).
import { GraphQLError } from "graphql";
import { issueSessionToken, verifySessionToken } from "../../src/auth/session";

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
});
