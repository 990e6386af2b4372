// Data on the wire: personal data is never cached or sniffed, cross-origin access only for listed
// origins, and the access log names who made each request (never their secret).
import { createServer, type Server } from "node:http";
import type { AddressInfo, Socket } from "node:net";
import { createApp } from "../../../src/app";
import { loadConfig } from "../../../src/config";
import { capturingLogger, startTestApp, type TestApp } from "../../helpers/app";

const bearer = (token: string) => ({ Authorization: `Bearer ${token}` });

describe("response headers", () => {
  let t: TestApp;
  const { logger, lines: text } = capturingLogger();
  const lines = () => text.map((line) => JSON.parse(line) as Record<string, unknown>);
  beforeAll(async () => {
    t = await startTestApp({}, logger);
  });
  afterAll(() => t.close());

  it("every API door answers no-store and nosniff, errors included", async () => {
    const key = t.manifest.groups.A.credentials.api_key;
    const responses = [
      await t.api.get("/v1/guests?limit=1").set(bearer(key)),
      await t.api.get("/v1/guests?limit=1"), // 401
      await t.api.get(`/v1/guests/${t.manifest.groups.B.guest_with_events}`).set(bearer(key)), // 404
      await t.api.post("/graphql").set(bearer(key)).send({ query: "{ guests(limit: 1) { nodes { id } } }" }),
      await t.api.post("/mcp").set(bearer(key)).set("Accept", "application/json, text/event-stream").send({ jsonrpc: "2.0", id: 1, method: "tools/list" }),
    ];
    for (const res of responses) {
      expect(res.headers["cache-control"]).toBe("no-store");
      expect(res.headers["x-content-type-options"]).toBe("nosniff");
    }
    expect(responses[0].status).toBe(200);
    expect(responses[1].status).toBe(401);
  });

  it("sends a page's headers and JSON body in one socket write (no copy of the body into a second chunk)", async () => {
    const app = await createApp(t.services);
    const server: Server = createServer(app.handler);
    const writes: number[] = [];
    server.on("connection", (socket: Socket & { _write: Function; _writev: Function }) => {
      const write = socket._write.bind(socket);
      const writev = socket._writev.bind(socket);
      socket._write = (chunk: unknown, encoding: unknown, cb: unknown) => (writes.push(1), write(chunk, encoding, cb));
      socket._writev = (chunks: unknown[], cb: unknown) => (writes.push(chunks.length), writev(chunks, cb));
    });
    await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
    try {
      const res = await fetch(`http://127.0.0.1:${(server.address() as AddressInfo).port}/v1/guests?limit=100`, { headers: bearer(t.manifest.groups.A.credentials.api_key) });
      const body = await res.text();
      expect(res.status).toBe(200);
      expect(body.length).toBeGreaterThan(1000); // Express's res.json copies bodies past 1,000 characters into a Buffer
      expect(res.headers.get("content-type")).toBe("application/json; charset=utf-8");
      expect(res.headers.get("content-length")).toBe(String(Buffer.byteLength(body)));
      expect(JSON.parse(body).data.length).toBeGreaterThan(1);
      expect(writes).toEqual([1]);
    } finally {
      await new Promise((resolve) => server.close(resolve));
      await app.stop();
    }
  });

  it("service routes are nosniff too", async () => {
    const res = await t.api.get("/healthz");
    expect(res.headers["x-content-type-options"]).toBe("nosniff");
  });

  it("sends no CORS headers unless origins are configured", async () => {
    const key = t.manifest.groups.A.credentials.api_key;
    const res = await t.api.get("/v1/properties").set(bearer(key)).set("Origin", "https://evil.example");
    expect(res.status).toBe(200);
    expect(res.headers["access-control-allow-origin"]).toBeUndefined();
  });

  it("logs the credential's id, kind and group on each request, never the token", async () => {
    const c = t.manifest.groups.A.credentials;
    await t.api.get("/v1/properties").set(bearer(c.api_key)).set("X-Request-Id", "audit-probe-1");
    await t.api.post("/graphql").set(bearer(c.static_token)).set("X-Request-Id", "audit-probe-2").send({ query: "{ viewer { kind } }" });
    const line = (id: string) => lines().find((l) => l.requestId === id && l.msg === "request") as Record<string, unknown>;
    const rest = line("audit-probe-1");
    expect(rest.credential).toEqual({ kind: "api_key", id: expect.stringMatching(/^[0-9a-f-]{36}$/) });
    expect(rest.propertyGroupId).toBe(t.manifest.groups.A.id);
    expect((line("audit-probe-2").credential as { kind: string }).kind).toBe("static");
    // The path as the client sent it, also where a mounted handler (Apollo on /graphql) answers.
    expect([rest.path, line("audit-probe-2").path]).toEqual(["/v1/properties", "/graphql"]);
    const all = text.join("\n");
    for (const token of [c.api_key, c.static_token]) expect(all).not.toContain(token);
  });
});

describe("CORS allowlist", () => {
  let t: TestApp;
  beforeAll(async () => {
    t = await startTestApp({ GCS_CORS_ORIGINS: "https://dash.example.com, http://localhost:5173" });
  });
  afterAll(() => t.close());

  it("lets a listed origin read responses and the rate-limit and request-id headers", async () => {
    const res = await t.api
      .get("/v1/properties")
      .set(bearer(t.manifest.groups.A.credentials.api_key))
      .set("Origin", "https://dash.example.com");
    expect(res.status).toBe(200);
    expect(res.headers["access-control-allow-origin"]).toBe("https://dash.example.com");
    expect(res.headers.vary).toMatch(/Origin/);
    expect(res.headers["access-control-expose-headers"]).toMatch(/X-Request-Id/);
    expect(res.headers["access-control-expose-headers"]).toMatch(/RateLimit/);
    // A dashboard still on mode=rollup can see that it is deprecated.
    expect(res.headers["access-control-expose-headers"]).toMatch(/Deprecation,Sunset/);
  });

  it("answers a listed origin's preflight, with the credential headers allowed", async () => {
    const res = await t.api
      .options("/v1/guests")
      .set("Origin", "http://localhost:5173")
      .set("Access-Control-Request-Method", "GET")
      .set("Access-Control-Request-Headers", "authorization, x-property-id");
    expect(res.status).toBe(204);
    expect(res.headers["access-control-allow-origin"]).toBe("http://localhost:5173");
    expect(res.headers["access-control-allow-headers"]).toMatch(/Authorization/);
    expect(res.headers["access-control-allow-headers"]).toMatch(/X-Property-Id/);
  });

  it("gives an origin not on the list no CORS headers", async () => {
    const res = await t.api
      .get("/v1/properties")
      .set(bearer(t.manifest.groups.A.credentials.api_key))
      .set("Origin", "https://dash.example.com.evil.example");
    expect(res.headers["access-control-allow-origin"]).toBeUndefined();
  });

  it("refuses a configuration that lists something other than an origin", () => {
    for (const bad of ["*", "dash.example.com", "https://dash.example.com/path", "null"]) {
      expect(() => loadConfig({ GCS_CORS_ORIGINS: bad })).toThrow(/GCS_CORS_ORIGINS/);
    }
    expect(loadConfig({ GCS_CORS_ORIGINS: "https://a.example, https://b.example:8443" }).corsOrigins).toEqual([
      "https://a.example",
      "https://b.example:8443",
    ]);
  });
});
