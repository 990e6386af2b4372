// Spec sections 5 and 7: every token kind, X-Property-Id, and every auth error body.
import { issueSessionToken } from "../../../src/auth/session";
import { startTestApp, type TestApp } from "../../helpers/app";

let t: TestApp;
beforeAll(async () => {
  t = await startTestApp();
});
afterAll(() => t.close());

const bearer = (token: string) => ({ Authorization: `Bearer ${token}` });

describe("authentication", () => {
  it("401 unauthorized without a bearer, with a malformed header, an unknown token or a revoked key", async () => {
    for (const headers of [{}, { Authorization: "Basic abc" }, bearer("gcs_not-a-real-key"), bearer("whatever-static"), bearer(t.manifest.revoked_api_key)]) {
      const res = await t.api.get("/v1/properties").set(headers);
      expect(res.status).toBe(401);
      expect(res.body.error).toBe("unauthorized");
      expect(res.headers["www-authenticate"]).toMatch(/^Bearer/);
    }
  });

  it("accepts every token kind of the group, all resolving to the group's rows", async () => {
    const c = t.manifest.groups.A.credentials;
    for (const token of [c.api_key, c.api_key_pinned.token, c.partner_token, c.session_token, c.static_token]) {
      const res = await t.api.get("/v1/properties").set(bearer(token));
      expect(res.status).toBe(200);
      expect(res.body.data.length).toBeGreaterThan(0);
      for (const p of res.body.data) expect(t.manifest.groups.A.properties).toContain(p.id);
    }
  });

  it("API keys carry the gcs_ prefix", () => {
    expect(t.manifest.groups.A.credentials.api_key.startsWith(t.manifest.api_key_prefix)).toBe(true);
  });

  it("rejects expired and badly signed session tokens with 401", async () => {
    const key = await t.services.sessionKey();
    const orgId = "00000000-0000-4000-8000-000000000000";
    const expired = await issueSessionToken(key, { userId: "u1", organisationId: orgId, role: "admin" }, -60);
    const forged = await issueSessionToken({ ...key, secret: "x".repeat(40) }, { userId: "u1", organisationId: orgId, role: "admin" });
    for (const token of [expired, forged]) {
      const res = await t.api.get("/v1/properties").set(bearer(token));
      expect(res.status).toBe(401);
      expect(res.body.error).toBe("unauthorized");
    }
  });

  it("403 tenant_not_provisioned for an organisation without a property group", async () => {
    const res = await t.api.get("/v1/guests").set(bearer(t.manifest.unprovisioned_session_token));
    expect(res.status).toBe(403);
    expect(res.body).toEqual({ error: "tenant_not_provisioned", detail: expect.any(String) });
  });

  it("403 forbidden with the first required scope when a scope is missing", async () => {
    const res = await t.api.get("/v1/integrations").set(bearer(t.manifest.groups.A.credentials.api_key_limited));
    expect(res.status).toBe(403);
    expect(res.body).toMatchObject({ error: "forbidden", scope: "read:properties" });
    const ok = await t.api.get("/v1/guests").set(bearer(t.manifest.groups.A.credentials.api_key_limited));
    expect(ok.status).toBe(200);
  });

  it("rejects MCP connector tokens on /v1 with 403 forbidden and the route's scope", async () => {
    const res = await t.api.get("/v1/guests").set(bearer(t.manifest.groups.A.credentials.mcp_token));
    expect(res.status).toBe(403);
    expect(res.body).toMatchObject({ error: "forbidden", scope: "read:guests" });
  });

  it("403 session_required on a session-only surface for API keys and partner tokens", async () => {
    const integrations = await t.api.get("/v1/integrations").set(bearer(t.manifest.groups.A.credentials.api_key));
    const id = integrations.body.data.find((i: { status: string }) => i.status === "connected").id;
    for (const token of [t.manifest.groups.A.credentials.api_key, t.manifest.groups.A.credentials.partner_token]) {
      const res = await t.api.get(`/v1/integrations/${id}/connection`).set(bearer(token));
      expect(res.status).toBe(403);
      expect(res.body.error).toBe("session_required");
    }
    const res = await t.api.get(`/v1/integrations/${id}/connection`).set(bearer(t.manifest.groups.A.credentials.session_token));
    expect(res.status).toBe(200);
    expect(res.body.data.integration_id).toBe(id);
    expect(JSON.stringify(res.body)).not.toMatch(/secret|ciphertext/i);
  });

  it("403 mcp_oauth_required for a web-app session token on /mcp", async () => {
    const res = await t.api
      .post("/mcp")
      .set(bearer(t.manifest.groups.A.credentials.session_token))
      .set("Accept", "application/json, text/event-stream")
      .send({ jsonrpc: "2.0", id: 1, method: "tools/list" });
    expect(res.status).toBe(403);
    expect(res.body.error).toBe("mcp_oauth_required");
  });
});

describe("static tokens from configuration", () => {
  it("registers GCS_STATIC_TOKENS at start: the token works, with its group and scopes", async () => {
    const token = "ops-dashboard-token-0123456789abcdef";
    const B = t.manifest.groups.B;
    const configured = await startTestApp({
      GCS_STATIC_TOKENS: JSON.stringify([{ name: "ops dashboard", token, property_group_id: B.id, scopes: ["read:properties"] }]),
    });
    try {
      const res = await configured.api.get("/v1/properties").set(bearer(token));
      expect(res.status).toBe(200);
      expect(res.body.data.map((p: { id: string }) => p.id).sort()).toEqual([...B.properties].sort());
      const denied = await configured.api.get("/v1/guests").set(bearer(token));
      expect(denied.body).toMatchObject({ error: "forbidden", scope: "read:guests" });
      const stored = await configured.db.primary.staticToken.findMany({ where: { name: "ops dashboard" } });
      expect(JSON.stringify(stored)).not.toContain(token);
    } finally {
      await configured.close();
    }
  });
});

describe("X-Property-Id", () => {
  const A = () => t.manifest.groups.A;

  it("narrows personal API keys, partner tokens and static tokens to one property", async () => {
    const property = A().properties[1];
    for (const token of [A().credentials.api_key, A().credentials.partner_token, A().credentials.static_token]) {
      const res = await t.api.get("/v1/guests?limit=500").set(bearer(token)).set("X-Property-Id", property);
      expect(res.status).toBe(200);
      expect(res.body.data.length).toBeGreaterThan(0);
      for (const g of res.body.data) expect(g.property_id).toBe(property);
    }
  });

  it("is ignored by a property-pinned key", async () => {
    const pinned = A().credentials.api_key_pinned;
    const other = A().properties.find((p) => p !== pinned.property_id)!;
    const res = await t.api.get("/v1/guests?limit=500").set(bearer(pinned.token)).set("X-Property-Id", other);
    expect(res.status).toBe(200);
    expect(res.body.data.length).toBeGreaterThan(0);
    for (const g of res.body.data) expect(g.property_id).toBe(pinned.property_id);
  });

  it("is rejected with session tokens", async () => {
    const res = await t.api.get("/v1/guests").set(bearer(A().credentials.session_token)).set("X-Property-Id", A().properties[0]);
    expect(res.status).toBe(403);
    expect(res.body.error).toBe("forbidden");
  });

  it("403 forbidden for a property of another group, 400 for a non-uuid", async () => {
    const outside = await t.api.get("/v1/guests").set(bearer(A().credentials.api_key)).set("X-Property-Id", t.manifest.groups.B.properties[0]);
    expect(outside.status).toBe(403);
    expect(outside.body.error).toBe("forbidden");
    const bad = await t.api.get("/v1/guests").set(bearer(A().credentials.api_key)).set("X-Property-Id", "hotel-1");
    expect(bad.status).toBe(400);
    expect(bad.body.error).toBe("invalid_request");
  });

  it("an empty X-Property-Id is a 400 naming the header on /v1, /graphql and /mcp, not the whole group", async () => {
    const detail = expect.stringMatching(/^X-Property-Id is empty/);
    const rest = await t.api.get("/v1/guests").set(bearer(A().credentials.api_key)).set("X-Property-Id", "");
    expect(rest.status).toBe(400);
    expect(rest.body).toEqual({ error: "invalid_request", detail });
    const graphql = await t.api.post("/graphql").set(bearer(A().credentials.api_key)).set("X-Property-Id", "").send({ query: "{ guests(limit: 1) { nodes { id } } }" });
    expect(graphql.status).toBe(400);
    expect(graphql.body.errors[0].extensions).toMatchObject({ code: "invalid_request", detail });
    expect(graphql.body.data ?? null).toBeNull();
    const mcp = await t.api.post("/mcp").set(bearer(A().credentials.api_key)).set("X-Property-Id", "")
      .set("Accept", "application/json, text/event-stream").send({ jsonrpc: "2.0", id: 1, method: "tools/list" });
    expect(mcp.status).toBe(400);
    expect(mcp.body).toEqual({ error: "invalid_request", detail });
    // A pinned key ignores the header, whatever it holds (docs/using-the-api.md, "Credentials and scope").
    expect((await t.api.get("/v1/guests").set(bearer(A().credentials.api_key_pinned.token)).set("X-Property-Id", "")).status).toBe(200);
  });
});
