// A credential remembered from an earlier request (src/auth/remembered-credentials.ts) skips the lookup
// statement, and the request's first statement proves it again (db/tenant-pool.ts): revoked or given
// other scopes since, the request is refused 401 on every door, nothing of it runs, and the next
// request looks the token up afresh.
import { randomUUID } from "node:crypto";
import { API_KEY_PREFIX, displayPrefix, hashToken, newSecret } from "../../src/auth/secrets";
import { startTestApp, type TestApp } from "../helpers/app";

let t: TestApp;
beforeAll(async () => {
  t = await startTestApp({ GCS_REMEMBER_CREDENTIALS: "true", GCS_WEBHOOKS_ALLOW_PRIVATE: "true", GCS_DELIVERY_WORKER: "false" });
});
afterAll(async () => {
  await t.close();
});

/** A fresh API key of group A with `scopes`: its own cache entry, revocable without touching other tests. */
async function newKey(scopes: string[]): Promise<{ id: string; token: string }> {
  const token = newSecret(API_KEY_PREFIX);
  const id = randomUUID();
  await t.adminPool.query(
    "INSERT INTO api_keys (id, property_group_id, name, display_prefix, token_hash, scopes) VALUES ($1, $2, 'remembered', $3, $4, $5)",
    [id, t.manifest.groups.A.id, displayPrefix(token), hashToken(token), scopes],
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
});
