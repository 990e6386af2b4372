// Per-credential rate limits: draft-8 headers on every response of /v1, /graphql and /mcp, 429
// rate_limited with Retry-After past the limit, and one limit per key across two instances that
// share the database (two createApp() on one test database).
import { randomBytes } from "node:crypto";
import { Client } from "pg";
import request from "supertest";
import { cloneTemplateDatabase, loadManifest, startTestApp, type TestApp } from "../helpers/app";
import { createApp, type App } from "../../src/app";
import { loadConfig } from "../../src/config";
import { openDatabase, type Database } from "../../src/db/database";
import { createLogger } from "../../src/logger";
import { createServices } from "../../src/services";
import { hashToken } from "../../src/auth/secrets";

// An hour-long window: a test never straddles two windows unless it runs across the hour.
const HOUR = "3600";

describe("one instance", () => {
  let t: TestApp;
  beforeAll(async () => {
    t = await startTestApp({ GCS_RATE_LIMIT: "3", GCS_RATE_LIMIT_WINDOW_S: HOUR });
  });
  afterAll(() => t.close());
  const keyA = () => t.manifest.groups.A.credentials.api_key;
  const keyB = () => t.manifest.groups.B.credentials.api_key;

  it("sends RateLimit-Policy and RateLimit, then 429 rate_limited with Retry-After, per credential", async () => {
    const remaining: string[] = [];
    for (let i = 0; i < 3; i++) {
      const res = await t.api.get("/v1/properties").set("Authorization", `Bearer ${keyA()}`);
      expect(res.status).toBe(200);
      expect(res.headers["ratelimit-policy"]).toMatch(/^"credential"; q=3; w=3600; pk=:[A-Za-z0-9+/=]+:$/);
      remaining.push(res.headers["ratelimit"]);
    }
    expect(remaining.map((h) => /r=(\d+); t=(\d+)$/.exec(h)![1])).toEqual(["2", "1", "0"]);
    const refused = await t.api.get("/v1/properties").set("Authorization", `Bearer ${keyA()}`);
    expect(refused.status).toBe(429);
    const retryAfter = Number(refused.headers["retry-after"]);
    expect(refused.body).toEqual({ error: "rate_limited", detail: `this credential made more than 3 requests in 3600 s; retry in ${retryAfter} s` });
    expect(retryAfter).toBeGreaterThan(0);
    expect(retryAfter).toBeLessThanOrEqual(3600);
    expect(refused.headers["ratelimit"]).toMatch(/^"credential"; r=0; t=\d+$/);
    // The same credential is refused at every door; another credential is not.
    const graphql = await t.api.post("/graphql").set("Authorization", `Bearer ${keyA()}`).send({ query: "{ __typename }" });
    expect(graphql.status).toBe(429);
    const mcp = await t.api.post("/mcp").set("Authorization", `Bearer ${keyA()}`).send({ jsonrpc: "2.0", id: 1, method: "tools/list" });
    expect(mcp.status).toBe(429);
    expect(mcp.body.error).toBe("rate_limited");
    const other = await t.api.get("/v1/properties").set("Authorization", `Bearer ${keyB()}`);
    expect(other.status).toBe(200);
    expect(other.headers["ratelimit"]).toMatch(/r=2;/);
  });

  it("counts requests without a bearer token per client address, and limits them too", async () => {
    const statuses: number[] = [];
    for (let i = 0; i < 4; i++) statuses.push((await t.api.get("/v1/guests")).status);
    expect(statuses).toEqual([401, 401, 401, 429]);
  });

  it("headers on errors too (404 under /v1), none on health checks", async () => {
    // Any bearer token is a key of its own, counted before authentication.
    const res = await t.api.get("/v1/nowhere").set("Authorization", "Bearer gcs_not_a_real_key_0123456789");
    expect(res.status).toBe(404);
    expect(res.headers["ratelimit"]).toMatch(/^"credential"; r=2; t=\d+$/);
    const health = await t.api.get("/healthz");
    expect(health.headers["ratelimit"]).toBeUndefined();
  });
});

describe("two instances on one database", () => {
  const LIMIT = 20;
  const SYNC_MS = 20;
  let clone: Awaited<ReturnType<typeof cloneTemplateDatabase>>;
  const instances: { app: App; db: Database; api: ReturnType<typeof request> }[] = [];

  beforeAll(async () => {
    clone = await cloneTemplateDatabase();
    // A window that ended long ago: the first sync of either instance deletes it.
    const sql = new Client({ connectionString: clone.url });
    await sql.connect();
    await sql.query("INSERT INTO rate_limit_counters (key, window_start, hits) VALUES ('stale', now() - interval '1 day', 7)");
    await sql.end();
    for (let i = 0; i < 2; i++) {
      const config = loadConfig({
        NODE_ENV: "test", LOG_LEVEL: "silent", DATABASE_URL: clone.url,
        GCS_RATE_LIMIT: String(LIMIT), GCS_RATE_LIMIT_WINDOW_S: HOUR, GCS_RATE_LIMIT_SYNC_MS: String(SYNC_MS),
      });
      const db = await openDatabase({ databaseUrl: clone.url, dataDir: "", poolSize: 3 });
      const app = await createApp(await createServices(config, db, createLogger("silent")));
      instances.push({ app, db, api: request(app.handler) });
    }
  });
  afterAll(async () => {
    for (const i of instances) {
      await i.app.stop();
      await i.db.close();
    }
    await clone.drop();
  });

  it("refuse together once the shared limit is reached, within the documented bound", async () => {
    const key = loadManifest().groups.A.credentials.api_key;
    const sql = new Client({ connectionString: clone.url });
    await sql.connect();
    try {
      const statuses: number[] = [];
      for (let i = 0; i < 2 * LIMIT; i++) {
        const res = await instances[i % 2].api.get("/v1/properties").set("Authorization", `Bearer ${key}`);
        statuses.push(res.status);
        // Both instances sync between pairs of requests, so each may admit at most the one request
        // the other took since its last sync: the bound (instances − 1) × requests per sync interval.
        if (i % 2 === 1) await new Promise((r) => setTimeout(r, 4 * SYNC_MS));
      }
      const admitted = statuses.filter((s) => s === 200).length;
      expect(admitted).toBeGreaterThanOrEqual(LIMIT); // never refused below the limit
      expect(admitted).toBeLessThanOrEqual(LIMIT + 1);
      expect(statuses.slice(-4)).toEqual([429, 429, 429, 429]); // both instances refuse
      expect(new Set(statuses.slice(0, LIMIT))).toEqual(new Set([200]));
      // The shared row holds both instances' hits under the token's hash; the old window is gone.
      const rows = (await sql.query("SELECT key, hits FROM rate_limit_counters")).rows;
      expect(rows).toEqual([{ key: hashToken(key), hits: 2 * LIMIT }]);
    } finally {
      await sql.end();
    }
  });
});

describe("the client address of requests without a token (GCS_TRUST_PROXY)", () => {
  const unauthenticated = async (t: TestApp, forwardedFor: string) => (await t.api.get("/v1/guests").set("X-Forwarded-For", forwardedFor)).status;

  it("ignores X-Forwarded-For unless a proxy is trusted, so a client cannot pick a fresh address", async () => {
    const t = await startTestApp({ GCS_RATE_LIMIT: "2", GCS_RATE_LIMIT_WINDOW_S: HOUR });
    try {
      const statuses = [];
      for (const address of ["203.0.113.1", "203.0.113.2", "203.0.113.3"]) statuses.push(await unauthenticated(t, address));
      expect(statuses).toEqual([401, 401, 429]);
    } finally {
      await t.close();
    }
  });

  it("counts each forwarded client on its own behind a trusted proxy (the test's loopback peer)", async () => {
    const t = await startTestApp({ GCS_RATE_LIMIT: "2", GCS_RATE_LIMIT_WINDOW_S: HOUR, GCS_TRUST_PROXY: "loopback" });
    try {
      const statuses = [];
      for (const address of ["203.0.113.1", "203.0.113.1", "203.0.113.1", "203.0.113.2"]) statuses.push(await unauthenticated(t, address));
      expect(statuses).toEqual([401, 401, 429, 401]);
    } finally {
      await t.close();
    }
  });

  it("accepts hop counts, addresses, CIDRs and Express's names, and refuses anything else by name", () => {
    expect(loadConfig({}).trustProxy).toBe(false);
    expect(loadConfig({ GCS_TRUST_PROXY: "1" }).trustProxy).toBe(1);
    expect(loadConfig({ GCS_TRUST_PROXY: "loopback, 10.0.0.0/8,fd00::/8, 192.0.2.7" }).trustProxy).toEqual(["loopback", "10.0.0.0/8", "fd00::/8", "192.0.2.7"]);
    for (const bad of ["yes", "10.0.0.0/33", "*", "10.0.0/8"]) expect(() => loadConfig({ GCS_TRUST_PROXY: bad })).toThrow(/GCS_TRUST_PROXY/);
  });
});

describe("the shared table's writes", () => {
  const SYNC_MS = 20;
  let t: TestApp;
  let sql: Client;
  beforeAll(async () => {
    t = await startTestApp({ GCS_RATE_LIMIT: "100000", GCS_RATE_LIMIT_WINDOW_S: HOUR, GCS_RATE_LIMIT_SYNC_MS: String(SYNC_MS) });
    sql = new Client({ connectionString: t.databaseUrl });
    await sql.connect();
    // Counts every row the syncs insert or update (the test's own database).
    await sql.query(`
      CREATE TABLE counter_row_writes (n int NOT NULL); INSERT INTO counter_row_writes VALUES (0);
      CREATE FUNCTION count_counter_row_write() RETURNS trigger LANGUAGE plpgsql AS $$ BEGIN UPDATE counter_row_writes SET n = n + 1; RETURN NULL; END $$;
      CREATE TRIGGER counter_row_write AFTER INSERT OR UPDATE ON rate_limit_counters FOR EACH ROW EXECUTE FUNCTION count_counter_row_write();`);
  });
  afterAll(async () => {
    await sql.end();
    await t.close();
  });
  const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

  it("writes only the keys whose count changed since the last sync", async () => {
    // Ten keys seen once, then one key busy for about a second (some 50 syncs).
    const tokens = Array.from({ length: 10 }, (_, i) => `gcs_not_a_real_key_${String(i).padStart(20, "0")}`);
    for (const token of tokens) expect((await t.api.get("/v1/nowhere").set("Authorization", `Bearer ${token}`)).status).toBe(404);
    await sleep(5 * SYNC_MS);
    const busy = 40;
    for (let i = 0; i < busy; i++) {
      await t.api.get("/v1/nowhere").set("Authorization", `Bearer ${tokens[0]}`);
      await sleep(SYNC_MS);
    }
    await sleep(5 * SYNC_MS);
    const writes = (await sql.query("SELECT n FROM counter_row_writes")).rows[0].n;
    // At most one write per key for the first hits, and one per busy request; rewriting every key
    // on every sync wrote about 10 × 50.
    expect(writes).toBeGreaterThanOrEqual(10);
    expect(writes).toBeLessThanOrEqual(10 + busy);
    const rows = (await sql.query("SELECT key, hits FROM rate_limit_counters ORDER BY hits DESC")).rows;
    expect(rows).toHaveLength(10);
    expect(rows[0]).toEqual({ key: hashToken(tokens[0]), hits: 1 + busy });
  });
});

describe("failed authentications per client address (GCS_AUTH_FAILURES_PER_ADDRESS)", () => {
  let t: TestApp;
  beforeAll(async () => {
    // No per-credential limit: every random token would be a fresh credential to it anyway.
    t = await startTestApp({ GCS_RATE_LIMIT: "0", GCS_AUTH_FAILURES_PER_ADDRESS: "3", GCS_TRUST_PROXY: "loopback" });
  });
  afterAll(() => t.close());
  const random = () => `gcs_${randomBytes(24).toString("hex")}`;
  const from = (address: string, token: string) => t.api.get("/v1/guests?limit=1").set("X-Forwarded-For", address).set("Authorization", `Bearer ${token}`);
  const mcp = (address: string, token: string) =>
    t.api.post("/mcp").set("X-Forwarded-For", address).set("Authorization", `Bearer ${token}`).set("Accept", "application/json, text/event-stream").send({ jsonrpc: "2.0", id: 1, method: "tools/list" });

  it("defaults to 100 a minute; 0 turns it off", () => {
    expect(loadConfig({}).authFailures).toEqual({ limit: 100, windowS: 60 });
    expect(loadConfig({ GCS_AUTH_FAILURES_PER_ADDRESS: "0" }).authFailures.limit).toBe(0);
  });

  it("refuses an address's fresh tokens with 429 before any lookup once it failed too often, at every door; known tokens and other addresses go on", async () => {
    const known = t.manifest.groups.A.credentials.api_key;
    const knownMcp = t.manifest.groups.A.credentials.mcp_token;
    expect((await from("203.0.113.9", known)).status).toBe(200);
    expect((await mcp("203.0.113.9", knownMcp)).status).toBe(200);
    const statuses = [];
    for (let i = 0; i < 3; i++) statuses.push((await from("203.0.113.9", random())).status);
    expect(statuses).toEqual([401, 401, 401]);
    const refused = await from("203.0.113.9", random());
    expect(refused.status).toBe(429);
    expect(refused.body).toEqual({ error: "rate_limited", detail: expect.stringContaining("failed to authenticate more than 3 times in 60 s") });
    expect(Number(refused.headers["retry-after"])).toBeGreaterThanOrEqual(1);
    expect(Number(refused.headers["retry-after"])).toBeLessThanOrEqual(60);
    expect(refused.headers["x-sql-statements"]).toBe("0"); // no credential lookup
    const graphql = await t.api.post("/graphql").set("X-Forwarded-For", "203.0.113.9").set("Authorization", `Bearer ${random()}`).send({ query: "{ __typename }" });
    expect(graphql.status).toBe(429);
    expect((await mcp("203.0.113.9", random())).status).toBe(429);
    expect((await t.api.get("/v1/guests").set("X-Forwarded-For", "203.0.113.9")).status).toBe(429); // no token at all
    // Tokens that authenticated from anywhere before go on; a valid key not seen yet waits too.
    expect((await from("203.0.113.9", known)).status).toBe(200);
    expect((await mcp("203.0.113.9", knownMcp)).status).toBe(200);
    expect((await from("203.0.113.9", t.manifest.groups.B.credentials.api_key)).status).toBe(429);
    // Another address is not affected.
    expect((await from("203.0.113.10", random())).status).toBe(401);
  });
});
