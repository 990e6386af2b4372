// A credential remembered from an earlier request (src/auth/remembered-credentials.ts) skips the lookup
// statement, and the request's first statement proves it again (db/tenant-pool.ts): revoked or given
// other scopes since, the request is refused 401 on every door, nothing of it runs, and the next
// request looks the token up afresh. An answer no statement would prove (a 400, a 403, an
// introspection) is proved by one before it goes; event streams and MCP's SDK path (tools/list) look
// their token up, a read tool's call on MCP's fast path remembers it like REST.
import { randomUUID } from "node:crypto";
import { API_KEY_PREFIX, displayPrefix, hashToken, newSecret } from "../../src/auth/secrets";
import { startTestApp, type TestApp } from "../helpers/app";

let t: TestApp;
beforeAll(async () => {
  t = await startTestApp({ GCS_WEBHOOKS_ALLOW_PRIVATE: "true", GCS_DELIVERY_WORKER: "false" });
});
afterAll(async () => {
  await t.close();
});

/** A fresh API key of group A with `scopes` (on `app`): its own cache entry, revocable without touching other tests. */
async function newKey(scopes: string[], app: TestApp = t): Promise<{ id: string; token: string }> {
  const token = newSecret(API_KEY_PREFIX);
  const id = randomUUID();
  await app.adminPool.query(
    "INSERT INTO api_keys (id, property_group_id, name, display_prefix, token_hash, scopes) VALUES ($1, $2, 'remembered', $3, $4, $5)",
    [id, app.manifest.groups.A.id, displayPrefix(token), hashToken(token), scopes],
  );
  return { id, token };
}

const guests = (token: string) => t.api.get("/v1/guests?limit=1").set("Authorization", `Bearer ${token}`);
const graphql = (token: string) =>
  t.api.post("/graphql").set("Authorization", `Bearer ${token}`).send({ query: "{ guests(limit: 1) { nodes { id } } }" });

describe("remembered credentials", () => {
  it("skip the lookup statement on the next request, with the same answer", async () => {
    const { token } = await newKey(["read:guests"]);
    const first = await guests(token);
    const second = await guests(token);
    expect(first.status).toBe(200);
    expect(second.status).toBe(200);
    expect(second.body).toEqual(first.body);
    expect(Number(second.headers["x-sql-statements"])).toBe(Number(first.headers["x-sql-statements"]) - 1);
  });

  it("a key revoked after it was remembered is refused 401 by the next request, and by the one after (looked up again)", async () => {
    const { id, token } = await newKey(["read:guests"]);
    expect((await guests(token)).status).toBe(200);
    await t.adminPool.query("UPDATE api_keys SET revoked_at = now() WHERE id = $1", [id]);
    const refused = await guests(token);
    expect(refused.status).toBe(401);
    expect(refused.body).toEqual({ error: "unauthorized", detail: "the bearer token is unknown or revoked" });
    expect(refused.headers["www-authenticate"]).toMatch(/^Bearer /);
    const again = await guests(token);
    expect(again.status).toBe(401);
    expect(again.headers["x-sql-statements"]).toBe("1"); // the lookup: forgotten, not proved again
  });

  it("on /graphql too: 401 with the unauthorized code and no data", async () => {
    const { id, token } = await newKey(["read:guests"]);
    const ok = await graphql(token);
    expect(ok.status).toBe(200);
    expect(ok.body.data.guests.nodes).toHaveLength(1);
    await t.adminPool.query("UPDATE api_keys SET revoked_at = now() WHERE id = $1", [id]);
    const refused = await graphql(token);
    expect(refused.status).toBe(401);
    expect(refused.body.data ?? null).toBeNull();
    expect(refused.body.errors[0].extensions.code).toBe("unauthorized");
  });

  it("a key whose scopes changed is looked up again: the old scopes are never used", async () => {
    const { id, token } = await newKey(["read:guests", "read:events"]);
    expect((await guests(token)).status).toBe(200);
    await t.adminPool.query("UPDATE api_keys SET scopes = $2 WHERE id = $1", [id, ["read:events"]]);
    expect((await guests(token)).status).toBe(401); // proved against the row: the scopes differ
    const fresh = await guests(token); // looked up: the new scopes, without read:guests
    expect(fresh.status).toBe(403);
    expect(fresh.body).toMatchObject({ error: "forbidden", scope: "read:guests" });
  });

  it("a revoked remembered key writes nothing: the first statement of a write refuses it", async () => {
    const { id, token } = await newKey(["read:webhooks", "write:webhooks"]);
    // Loopback only, never dialled here (the delivery worker is off).
    const create = (path: string) => t.api.post("/v1/webhook-endpoints").set("Authorization", `Bearer ${token}`).send({ url: `http://127.0.0.1:9/${path}`, topics: ["*"] });
    expect((await create(`made-${id}`)).status).toBe(201);
    await t.adminPool.query("UPDATE api_keys SET revoked_at = now() WHERE id = $1", [id]);
    const refused = await create(`refused-${id}`);
    expect(refused.status).toBe(401);
    const { rows } = await t.adminPool.query("SELECT url FROM webhook_endpoints WHERE url LIKE $1", [`%-${id}`]);
    expect(rows.map((r) => r.url)).toEqual([`http://127.0.0.1:9/made-${id}`]);
  });

  it("an answer that runs no statement is proved before it goes: a 400, a 403 and an introspection of a revoked key get 401", async () => {
    const { id, token } = await newKey(["read:guests"]);
    const auth = { Authorization: `Bearer ${token}` };
    const badLimit = () => t.api.get("/v1/guests?limit=abc").set(auth);
    const noScope = () => t.api.get("/v1/reservations?limit=1").set(auth);
    const typename = () => t.api.post("/graphql").set(auth).send({ query: "{ __typename }" });
    expect((await guests(token)).status).toBe(200); // remembered
    // Live, each is answered as before, with one statement: the proof.
    const [bad, forbidden, intro] = [await badLimit(), await noScope(), await typename()];
    expect([bad.status, forbidden.status, intro.status]).toEqual([400, 403, 200]);
    expect([bad.headers["x-sql-statements"], forbidden.headers["x-sql-statements"]]).toEqual(["1", "1"]);
    for (const ask of [badLimit, noScope, typename]) {
      expect((await guests(token)).status).toBe(200); // remembered again
      await t.adminPool.query("UPDATE api_keys SET revoked_at = now() WHERE id = $1", [id]);
      const refused = await ask();
      expect(refused.status).toBe(401);
      if (refused.body.errors) expect(refused.body.errors[0].extensions.code).toBe("unauthorized");
      else expect(refused.body.error).toBe("unauthorized");
      await t.adminPool.query("UPDATE api_keys SET revoked_at = NULL WHERE id = $1", [id]);
    }
  });

  it("an event stream and MCP look the token up: a remembered key revoked since is refused before their 200", async () => {
    const { id, token } = await newKey(["read:guests", "read:events"]);
    expect((await guests(token)).status).toBe(200); // remembered by REST
    await t.adminPool.query("UPDATE api_keys SET revoked_at = now() WHERE id = $1", [id]);
    const stream = await t.api.get("/v1/events/stream").set("Authorization", `Bearer ${token}`);
    expect(stream.status).toBe(401);
    const mcp = await t.api
      .post("/mcp")
      .set({ Authorization: `Bearer ${token}`, Accept: "application/json, text/event-stream" })
      .send({ jsonrpc: "2.0", id: 1, method: "tools/list" });
    expect(mcp.status).toBe(401);
  });

  it("a read tool's call on /mcp skips the lookup too, and proves the key: 401 (not a tool error) once revoked", async () => {
    const { id, token } = await newKey(["read:guests"]);
    const call = (args: Record<string, unknown>) =>
      t.api
        .post("/mcp")
        .set({ Authorization: `Bearer ${token}`, Accept: "application/json, text/event-stream", "Content-Type": "application/json" })
        .send({ jsonrpc: "2.0", id: 1, method: "tools/call", params: { name: "list_guests", arguments: args } });
    const first = await call({ limit: 1 });
    const second = await call({ limit: 1 });
    expect([first.status, second.status]).toEqual([200, 200]);
    expect(second.body).toEqual(first.body);
    expect(second.body.result.isError).toBeUndefined();
    expect(Number(second.headers["x-sql-statements"])).toBe(Number(first.headers["x-sql-statements"]) - 1);
    await t.adminPool.query("UPDATE api_keys SET revoked_at = now() WHERE id = $1", [id]);
    const refused = await call({ limit: 1 });
    expect(refused.status).toBe(401);
    expect(refused.body).toEqual({ error: "unauthorized", detail: "the bearer token is unknown or revoked" });
    expect(refused.headers["www-authenticate"]).toMatch(/^Bearer resource_metadata=/);
    // A call no statement answers (arguments the tool refuses) is proved by one before it goes.
    await t.adminPool.query("UPDATE api_keys SET revoked_at = NULL WHERE id = $1", [id]);
    expect((await call({ limit: 1 })).status).toBe(200); // remembered again
    await t.adminPool.query("UPDATE api_keys SET revoked_at = now() WHERE id = $1", [id]);
    const badArguments = await call({ limit: "many" });
    expect(badArguments.status).toBe(401);
  });

  it("the /graphql fast path (a document Apollo has run) proves it too: 401 once revoked", async () => {
    const { id, token } = await newKey(["read:guests"]);
    const first = await graphql(token);
    const known = await graphql(token); // answered by the fast path from now on
    expect([first.status, known.status]).toEqual([200, 200]);
    expect(known.body).toEqual(first.body);
    await t.adminPool.query("UPDATE api_keys SET revoked_at = now() WHERE id = $1", [id]);
    const refused = await graphql(token);
    expect(refused.status).toBe(401);
    expect(refused.body.errors[0].extensions.code).toBe("unauthorized");
  });

  it("a key re-pinned to a property since it was remembered is looked up again", async () => {
    const { id, token } = await newKey(["read:guests"]);
    const whole = await t.api.get("/v1/guests?limit=500").set("Authorization", `Bearer ${token}`);
    expect(whole.status).toBe(200);
    const property = t.manifest.groups.A.properties[0];
    await t.adminPool.query("UPDATE api_keys SET property_id = $2 WHERE id = $1", [id, property]);
    expect((await guests(token)).status).toBe(401); // the check compares the pinned property
    const pinned = await t.api.get("/v1/guests?limit=500").set("Authorization", `Bearer ${token}`);
    expect(pinned.status).toBe(200);
    expect(pinned.body.data.length).toBeGreaterThan(0);
    expect(pinned.body.data.every((g: { property_id: string }) => g.property_id === property)).toBe(true);
  });

  it("every kind of token REST remembers is proved by its own condition: a partner token expired since, a static token revoked since", async () => {
    const { partner_token: partner, static_token: staticToken } = t.manifest.groups.A.credentials;
    for (const token of [partner, staticToken]) {
      expect((await guests(token)).status).toBe(200);
      expect((await guests(token)).headers["x-sql-statements"]).toBe("1"); // remembered: the page only
    }
    await t.adminPool.query("UPDATE partner_access_tokens SET expires_at = now() - interval '1 second' WHERE token_hash = $1", [hashToken(partner)]);
    await t.adminPool.query("UPDATE static_tokens SET revoked_at = now() WHERE token_hash = $1", [hashToken(staticToken)]);
    for (const token of [partner, staticToken]) {
      const refused = await guests(token);
      expect(refused.status).toBe(401);
      expect(refused.body.error).toBe("unauthorized");
    }
  });
});

// A statement waiting for a connection is started by whichever request releases one: it must still
// prove its own request's credential, never the releaser's (db/tenant-pool.ts TenantPool.connect).
describe("remembered credentials on a busy pool (one connection)", () => {
  let busy: TestApp;
  beforeAll(async () => {
    busy = await startTestApp({ DATABASE_POOL_SIZE: "1", GCS_DELIVERY_WORKER: "false" });
  });
  afterAll(async () => {
    await busy.close();
  });

  it("requests queued behind each other each prove their own key: the revoked one's get 401, the valid one's 200", async () => {
    const valid = await newKey(["read:guests"], busy);
    const revoked = await newKey(["read:guests"], busy);
    const page = (token: string) => busy.api.get("/v1/guests?limit=20").set("Authorization", `Bearer ${token}`);
    for (let round = 0; round < 3; round++) {
      await busy.adminPool.query("UPDATE api_keys SET revoked_at = NULL WHERE id = $1", [revoked.id]);
      expect([(await page(valid.token)).status, (await page(revoked.token)).status]).toEqual([200, 200]); // both remembered
      await busy.adminPool.query("UPDATE api_keys SET revoked_at = now() WHERE id = $1", [revoked.id]);
      const sent = Array.from({ length: 16 }, (_, i) => (i % 2 ? revoked : valid));
      const statuses = (await Promise.all(sent.map((k) => page(k.token)))).map((r) => r.status);
      expect(statuses).toEqual(sent.map((k) => (k === valid ? 200 : 401)));
    }
  });
});
