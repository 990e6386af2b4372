// What error answers may echo of a request (issue 26): a bad value is quoted clipped to 200
// characters, a message to 1,000, a /graphql answer to 100 errors, on /graphql, /v1 and /mcp alike;
// with introspection off no "Did you mean …?" names the schema; a client's persisted-query hash
// mismatch is its own mistake, answered 400 and not logged as a fault.
import request from "supertest";
import { createApp, type App } from "../../src/app";
import { createApiKey } from "../../src/auth/credentials";
import { loadConfig } from "../../src/config";
import { capturingLogger, startTestApp, type TestApp } from "../helpers/app";

let t: TestApp;
const { logger, lines } = capturingLogger();
const apps: App[] = [];
beforeAll(async () => {
  t = await startTestApp({}, logger);
});
afterAll(async () => {
  for (const app of apps) await app.stop();
  await t.close();
});

const A = () => t.manifest.groups.A;
const key = () => A().credentials.api_key;
const CLIPPED = `"${"x".repeat(200)}…"`;

const graphql = (query: string, variables?: Record<string, unknown>, api = t.api, token = key()) =>
  api.post("/graphql").set("Authorization", `Bearer ${token}`).send({ query, ...(variables ? { variables } : {}) });

async function appWith(env: Record<string, string>) {
  const app = await createApp({ ...t.services, config: loadConfig({ LOG_LEVEL: "silent", DATABASE_URL: t.databaseUrl, ...env }) });
  apps.push(app);
  return request(app.handler);
}

describe("error messages echo a bounded part of the input", () => {
  it("/graphql: a 900 KB invalid variable is quoted clipped, not three times whole", async () => {
    const res = await graphql("query($id: UUID!) { guest(id: $id) { id } }", { id: "x".repeat(900_000) });
    expect(res.status).toBe(400);
    expect(res.text.length).toBeLessThan(3000);
    expect(res.body.errors).toHaveLength(1);
    expect(res.body.errors[0].message).toContain(`got invalid value ${CLIPPED}`);
    expect(res.body.errors[0].message.length).toBeLessThanOrEqual(1001);
  });

  it("/graphql: an object variable with 50,000 unknown members gives at most 51 errors of at most 1,000 characters", async () => {
    const f = Object.fromEntries(Array.from({ length: 50_000 }, (_, i) => [`k${i}`, "v"]));
    const res = await graphql("query($f: GuestFilter) { guests(filter: $f) { nodes { id } } }", { f });
    expect(res.status).toBe(400);
    expect(res.text.length).toBeLessThan(80_000); // 51 × 1,000 characters and their locations
    expect(res.body.errors.length).toBeLessThanOrEqual(51);
    expect(res.body.errors[0].message).toMatch(/^Variable "\$f" got invalid value \{ k0: "v", .*…$/);
    for (const e of res.body.errors) expect(e.message.length).toBeLessThanOrEqual(1001);
    // The last says the rest were not looked at; none is a fault of ours.
    expect(res.body.errors.at(-1)).toMatchObject({ message: expect.stringMatching(/^Too many errors/), extensions: { code: "invalid_request" } });
    expect(res.body.errors.map((e: { extensions: { code: string } }) => e.extensions.code)).not.toContain("internal_error");
  });

  it("/graphql: at most 100 errors in one answer", async () => {
    // A key that may read reservations but not guests: Reservation.guest fails on every row.
    const { token } = await createApiKey(t.admin, { propertyGroupId: A().id, name: "reservations only", scopes: ["read:reservations"] });
    const rows = await t.admin.reservation.count({ where: { propertyGroupId: A().id, guestProfileId: { not: null } } });
    expect(rows).toBeGreaterThan(50); // twice over: more than 100 failing fields
    const res = await graphql("{ a: reservations(limit: 500) { nodes { id guest { id } } } b: reservations(limit: 500) { nodes { id guest { id } } } }", undefined, t.api, token);
    expect(res.status).toBe(200);
    expect(res.body.data.a.nodes.length + res.body.data.b.nodes.length).toBeGreaterThan(100);
    expect(res.body.errors).toHaveLength(100);
    expect(res.body.errors[0].extensions).toMatchObject({ code: "forbidden", scope: "read:guests" });
  });

  it("/v1: a parameter or body member that is not what it must be is quoted clipped in the detail", async () => {
    const auth = { Authorization: `Bearer ${key()}` };
    const preview = await t.api.post("/v1/tables/preview").set(auth).send({ member_type: "x".repeat(200_000), filter_doc: {} });
    expect(preview.status).toBe(400);
    expect(preview.body).toEqual({ error: "invalid_request", detail: `member_type must be one of guest_profile, master_profile; got ${CLIPPED}` });
    const field = await t.api.post("/v1/tables/preview").set(auth).send({ member_type: "guest_profile", filter_doc: { field: "x".repeat(200_000), op: "eq", value: 1 } });
    expect(field.status).toBe(400);
    expect(field.body.detail).toMatch(new RegExp(`^filter_doc\\.field: unknown field x{200}… for guest_profile; fields: `));
    const limit = await t.api.get(`/v1/guests?limit=${"9".repeat(8000)}`).set(auth);
    expect(limit.status).toBe(400);
    expect(limit.body.detail).toBe(`limit must be an integer, e.g. limit=50; got "${"9".repeat(200)}…"`);
  });

  it("/mcp: a tool argument that is not what it must be is quoted clipped in the tool error", async () => {
    const res = await t.api.post("/mcp").set("Authorization", `Bearer ${key()}`).set("Accept", "application/json, text/event-stream")
      .send({ jsonrpc: "2.0", id: 1, method: "tools/call", params: { name: "get_guest", arguments: { id: "x".repeat(200_000) } } });
    expect(res.status).toBe(200);
    expect(res.text.length).toBeLessThan(2000);
    expect(res.body.result.isError).toBe(true);
    expect(JSON.parse(res.body.result.content[0].text)).toEqual({
      error: "invalid_request",
      detail: `id must be a uuid, e.g. id=3f1c2a9e-7d4b-4c1a-9e2f-5b6a7c8d9e0f; got ${CLIPPED}`,
    });
  });
});

describe("suggestions of schema names", () => {
  const badField = "{ guests(limit: 1) { nodes { idd } } }";
  const badVariable = ["query($f: GuestFilter) { guests(filter: $f) { nodes { id } } }", { f: { emial: "a@b.c" } }] as const;

  it("with introspection off, validation and variable errors do not say Did you mean", async () => {
    const production = await appWith({ NODE_ENV: "production", GCS_GRAPHQL_INTROSPECTION: "false", GCS_DELIVERY_SECRET_KEY: "a-passphrase-of-16-chars" });
    const field = await graphql(badField, undefined, production);
    expect(field.status).toBe(400);
    expect(field.body.errors[0]).toMatchObject({ message: 'Cannot query field "idd" on type "Guest".', extensions: { code: "GRAPHQL_VALIDATION_FAILED" } });
    const variable = await graphql(...badVariable, production);
    expect(variable.status).toBe(400);
    expect(variable.body.errors[0].message).toBe('Variable "$f" got invalid value { emial: "a@b.c" }; Field "emial" is not defined by type "GuestFilter".');
    expect(JSON.stringify([field.body, variable.body])).not.toMatch(/Did you mean/);
  });

  it("with introspection on they still help", async () => {
    expect((await graphql(badField)).body.errors[0].message).toBe('Cannot query field "idd" on type "Guest". Did you mean "id"?');
    expect((await graphql(...badVariable)).body.errors[0].message).toMatch(/Did you mean "email"\?$/);
  });
});

describe("a persisted-query hash that does not match the query", () => {
  it("is a 400 BAD_REQUEST, the client's mistake: no error line, no stack", async () => {
    lines.length = 0;
    const res = await t.api.post("/graphql").set("Authorization", `Bearer ${key()}`).set("X-Request-Id", "apq-mismatch")
      .send({ query: "{ viewer { kind } }", extensions: { persistedQuery: { version: 1, sha256Hash: "0".repeat(64) } } });
    expect(res.status).toBe(400);
    expect(res.body.errors).toEqual([{ message: "provided sha does not match query", extensions: { code: "BAD_REQUEST" } }]);
    const logged = lines.filter((l) => !l.includes('"msg":"request"'));
    expect(logged.join("\n")).not.toMatch(/provided sha|"level":50|stack/);
    expect(lines.find((l) => l.includes("apq-mismatch") && l.includes('"msg":"request"'))).toMatch(/"status":400/);
  });
});
