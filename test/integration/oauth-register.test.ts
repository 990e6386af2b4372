// POST /register (RFC 7591) without a browser: metadata the database cannot hold is a 400 naming it,
// redirect URIs with any fragment are refused, a fault of ours is a logged 500, the per-address
// limit is one count for every instance on the database, and clients that never obtained a token
// are swept after a day. Each test registers from its own address (X-Forwarded-For from loopback,
// trusted), so the limit of one does not spend another's.
import type { Express } from "express";
import request from "supertest";
import { createApp } from "../../src/app";
import * as store from "../../src/data/stores/oauth";
import { REGISTRATIONS_PER_HOUR } from "../../src/oauth/register";
import { capturingLogger, startAppOn, startTestApp, type TestApp } from "../helpers/app";

const env = { GCS_TRUST_PROXY: "loopback" };
const log = capturingLogger();
let t: TestApp;
let second: TestApp;

beforeAll(async () => {
  t = await startTestApp(env, log.logger);
  // Another instance: its own services, pools and app, on the same database.
  second = await startAppOn(t.databaseUrl, t.manifest, env, log.logger);
});

afterAll(async () => {
  await second?.close();
  await t?.close();
});

let addresses = 0;
/** A client address of its own (TEST-NET-3). */
const newAddress = () => `203.0.113.${++addresses}`;

/** The app of each instance, without the OpenAPI validator of TestApp.api (/register is not in that document). */
const apps = new Map<TestApp, Express>();
const appOf = (instance: TestApp) => apps.get(instance)!;

beforeAll(async () => {
  for (const instance of [t, second]) apps.set(instance, (await createApp(instance.services)).app);
});

const register = (body: unknown, from = newAddress(), instance: TestApp = t) =>
  request(appOf(instance)).post("/register").set("X-Forwarded-For", from).set("Content-Type", "application/json").send(JSON.stringify(body));

const valid = (extra: Record<string, unknown> = {}) => ({ client_name: "Scripted", redirect_uris: ["http://127.0.0.1:9/cb"], token_endpoint_auth_method: "none", ...extra });

describe("POST /register", () => {
  it("refuses lone surrogates in client_name and redirect_uris with the RFC 7591 error naming the member", async () => {
    const name = await register(valid({ client_name: "bad \ud800 name" }));
    expect(name.status).toBe(400);
    expect(name.body).toEqual({ error: "invalid_client_metadata", error_description: expect.stringMatching(/^client_name must be text without NUL .* lone UTF-16 surrogates/) });

    const uri = await register(valid({ redirect_uris: ["https://ok.example/cb\udc00"] }));
    expect(uri.status).toBe(400);
    expect(uri.body).toEqual({ error: "invalid_redirect_uri", error_description: expect.stringMatching(/^redirect_uris\[0\] must be text without NUL/) });

    const nul = await register(valid({ contacts: ["a\u0000b"] }));
    expect(nul.status).toBe(400);
    expect(nul.body.error).toBe("invalid_client_metadata");
  });

  it("refuses metadata nested deeper than 16 levels (a jwks 128 deep)", async () => {
    let jwks: unknown = "k";
    for (let i = 0; i < 128; i++) jwks = { keys: [jwks] };
    const res = await register(valid({ jwks }));
    expect(res.status).toBe(400);
    expect(res.body).toEqual({ error: "invalid_client_metadata", error_description: expect.stringMatching(/nests \d+ levels deep; at most 16/) });
    // A real JWK set (jwks.keys[0].x5c[0]) is well within it.
    const ok = await register(valid({ jwks: { keys: [{ kty: "EC", crv: "P-256", x: "x", y: "y", x5c: ["MIIB"] }] } }));
    expect(ok.status).toBe(201);
  });

  it("refuses any fragment in a redirect URI, an empty one included (RFC 6749 §3.1.2)", async () => {
    for (const uri of ["https://ok.example/cb#", "https://ok.example/cb#frag", "http://127.0.0.1:9/cb?x=1#"]) {
      const res = await register(valid({ redirect_uris: [uri] }));
      expect(res.status).toBe(400);
      expect(res.body).toEqual({ error: "invalid_redirect_uri", error_description: expect.stringContaining("must not have a fragment") });
    }
    for (const uri of ["http://evil.example/cb", "javascript:alert(1)", "not a url"]) {
      expect((await register(valid({ redirect_uris: [uri] }))).body.error).toBe("invalid_redirect_uri");
    }
    expect((await register(valid({ redirect_uris: ["https://ok.example/cb?x=1"] }))).status).toBe(201);
  });

  it("answers malformed bodies with invalid_client_metadata, and other methods with 405", async () => {
    const notJson = await request(appOf(t)).post("/register").set("X-Forwarded-For", newAddress()).set("Content-Type", "application/json").send("{");
    expect(notJson.status).toBe(400);
    expect(notJson.body.error).toBe("invalid_client_metadata");
    for (const body of [[], null, 7, "x", { redirect_uris: "https://ok.example/cb" }]) {
      const res = await register(body);
      expect(res.status).toBe(400);
      expect(res.body.error).toMatch(/^invalid_(client_metadata|redirect_uri)$/);
    }
    const get = await request(appOf(t)).get("/register");
    expect(get.status).toBe(405);
    expect(get.headers.allow).toBe("POST");
  });

  it("logs a fault of ours with its cause and stack, and answers 500 server_error without them", async () => {
    const spy = jest.spyOn(store, "insertClientWithinLimit").mockRejectedValueOnce(new Error("register-fault-7f3a"));
    try {
      const res = await register(valid());
      expect(res.status).toBe(500);
      expect(res.body).toEqual({ error: "server_error", error_description: "unexpected server fault; retry later" });
      expect(JSON.stringify(res.body)).not.toContain("register-fault-7f3a");
      const line = log.lines.map((l) => JSON.parse(l)).find((l) => l.err?.message === "register-fault-7f3a");
      expect(line).toMatchObject({ level: 50, requestId: res.headers["x-request-id"], err: { stack: expect.stringContaining("oauth-register.test.ts") } });
    } finally {
      spy.mockRestore();
    }
  });

  it(`allows ${REGISTRATIONS_PER_HOUR} registrations per address per hour across instances, then 429 with Retry-After`, async () => {
    const from = newAddress();
    const statuses: number[] = [];
    // Alternating between the two instances: each alone would allow all of these.
    for (let i = 0; i < REGISTRATIONS_PER_HOUR; i++) statuses.push((await register(valid(), from, i % 2 ? second : t)).status);
    expect(statuses).toEqual(Array(REGISTRATIONS_PER_HOUR).fill(201));
    for (const instance of [t, second]) {
      const refused = await register(valid(), from, instance);
      expect(refused.status).toBe(429);
      expect(refused.body).toEqual({ error: "too_many_requests", error_description: expect.stringMatching(/at most 20 client registrations per hour/) });
      expect(Number(refused.headers["retry-after"])).toBeGreaterThan(3500);
    }
    // Another address is not held up, and the count is in the table, by address.
    expect((await register(valid(), newAddress(), second)).status).toBe(201);
    const [{ n }] = await t.admin.$queryRaw<{ n: number }[]>`SELECT count(*)::int AS n FROM oauth_clients WHERE registered_from = ${from}`;
    expect(n).toBe(REGISTRATIONS_PER_HOUR);
  });

  it("counts concurrent registrations on both instances exactly", async () => {
    const from = newAddress();
    const results = await Promise.all(Array.from({ length: REGISTRATIONS_PER_HOUR + 6 }, (_, i) => register(valid(), from, i % 2 ? second : t)));
    const statuses = results.map((r) => r.status);
    expect(statuses.filter((s) => s === 201)).toHaveLength(REGISTRATIONS_PER_HOUR);
    expect(statuses.filter((s) => s === 429)).toHaveLength(6);
  });

  it("deletes clients that never obtained a token a day after registering, keeps the rest", async () => {
    const db = t.admin;
    const ids = {
      unused: "00000000-0000-4000-8000-00000000c001",
      usedToken: "00000000-0000-4000-8000-00000000c002",
      freshApproval: "00000000-0000-4000-8000-00000000c003",
      young: "00000000-0000-4000-8000-00000000c004",
      approvedNeverExchanged: "00000000-0000-4000-8000-00000000c005",
    };
    const A = t.manifest.groups.A;
    const keyId = (await db.apiKey.findFirstOrThrow({ where: { propertyGroupId: A.id }, select: { id: true } })).id;
    const dayAgo = (h: number) => new Date(Date.now() - h * 3600_000);
    for (const [name, id] of Object.entries(ids)) {
      await db.oAuthClient.create({ data: { id, clientName: name, redirectUris: ["https://ok.example/cb"], metadata: {}, createdAt: name === "young" ? dayAgo(23) : dayAgo(25) } });
    }
    const grant = (clientId: string, createdAt: Date, lastUsedAt: Date | null) =>
      db.oAuthGrant.create({ data: { id: clientId.replace("c0", "d0"), clientId, propertyGroupId: A.id, scopes: ["read:guests"], approvedByApiKeyId: keyId, createdAt, lastUsedAt } });
    await grant(ids.usedToken, dayAgo(25), dayAgo(24.5));
    await grant(ids.freshApproval, new Date(), null);
    await grant(ids.approvedNeverExchanged, dayAgo(24.9), null);

    expect((await register(valid())).status).toBe(201);
    const left = (await db.oAuthClient.findMany({ where: { id: { in: Object.values(ids) } }, select: { clientName: true } })).map((c) => c.clientName).sort();
    expect(left).toEqual(["freshApproval", "usedToken", "young"]);
    expect(await db.oAuthGrant.count({ where: { clientId: ids.approvedNeverExchanged } })).toBe(0);
  });
});
