// The listening server (src/server.ts) on its own database: statement_timeout answered 504 on every
// door, malformed and oversized requests answered with the API's JSON errors, connection settings.
import net from "node:net";
import { Client } from "pg";
import { loadConfig } from "../../src/config";
import { startServer, type RunningServer } from "../../src/server";
import { cloneTemplateDatabase, loadManifest } from "../helpers/app";
import type { FixtureManifest } from "../../src/fixtures";
import { contract } from "../helpers/openapi-validate";

let server: RunningServer;
let clone: Awaited<ReturnType<typeof cloneTemplateDatabase>>;
let manifest: FixtureManifest;
let base: string;

beforeAll(async () => {
  clone = await cloneTemplateDatabase();
  manifest = loadManifest();
  const config = loadConfig({
    NODE_ENV: "test",
    LOG_LEVEL: "silent",
    DATABASE_URL: clone.url,
    HOST: "127.0.0.1",
    PORT: "0",
    GCS_DELIVERY_WORKER: "false",
    GCS_STATEMENT_TIMEOUT_MS: "300",
  });
  server = await startServer(config);
  base = `http://127.0.0.1:${server.port}`;
});
afterAll(async () => {
  await server?.stop();
  await clone?.drop();
});

/** Sends raw bytes and returns what the server wrote back before closing the connection. */
function raw(request: string | Buffer): Promise<string> {
  return new Promise((resolve, reject) => {
    const socket = net.connect(server.port, "127.0.0.1");
    let answer = "";
    socket.on("data", (d) => (answer += d));
    socket.on("error", (err) => (answer ? resolve(answer) : reject(err)));
    socket.on("close", () => resolve(answer));
    socket.write(request);
  });
}

function parseRaw(answer: string) {
  const [head, body] = answer.split("\r\n\r\n");
  return { statusLine: head.split("\r\n")[0], head: head.toLowerCase(), body: JSON.parse(body) };
}

describe("statement_timeout", () => {
  it("answers 504 query_timeout on /v1, /graphql and /mcp when the SQL is blocked, and 200 again once it is not", async () => {
    const token = manifest.groups.A.credentials.api_key;
    const auth = { Authorization: `Bearer ${token}` };
    const locker = new Client({ connectionString: clone.url });
    await locker.connect();
    try {
      // Another session holds the table: the request's statements wait for the lock until the
      // statement timeout (300 ms here) cancels them.
      await locker.query("BEGIN; LOCK TABLE guest_profiles IN ACCESS EXCLUSIVE MODE");

      const rest = await fetch(`${base}/v1/guests?limit=5`, { headers: auth });
      expect(rest.status).toBe(504);
      await contract().assertFetch("GET", rest.url, rest);
      expect(await rest.json()).toEqual({ error: "query_timeout", detail: expect.stringContaining("0.3 s") });

      const graphql = await fetch(`${base}/graphql`, {
        method: "POST",
        headers: { ...auth, "Content-Type": "application/json" },
        body: JSON.stringify({ query: "{ guests(limit: 5) { nodes { id } } }" }),
      });
      const gqlBody = (await graphql.json()) as { data: unknown; errors: { extensions: { code: string } }[] };
      expect(graphql.status).toBe(504);
      expect(gqlBody.data).toBeNull();
      expect(gqlBody.errors[0].extensions.code).toBe("query_timeout");

      const mcp = await fetch(`${base}/mcp`, {
        method: "POST",
        headers: { ...auth, "Content-Type": "application/json", Accept: "application/json, text/event-stream" },
        body: JSON.stringify({ jsonrpc: "2.0", id: 1, method: "tools/call", params: { name: "list_guests", arguments: { limit: "5" } } }),
      });
      const mcpBody = (await mcp.json()) as { result: { isError: boolean; content: { text: string }[] } };
      expect(mcpBody.result.isError).toBe(true);
      expect(JSON.parse(mcpBody.result.content[0].text).error).toBe("query_timeout");
    } finally {
      await locker.query("ROLLBACK");
      await locker.end();
    }
    const after = await fetch(`${base}/v1/guests?limit=5`, { headers: auth });
    expect(after.status).toBe(200);
  });
});

describe("malformed and oversized requests", () => {
  it("answers 431 headers_too_large as JSON for 20 KB of headers", async () => {
    const answer = parseRaw(await raw(`GET /v1/guests HTTP/1.1\r\nHost: x\r\nX-Big: ${"a".repeat(20 * 1024)}\r\n\r\n`));
    expect(answer.statusLine).toBe("HTTP/1.1 431 Request Header Fields Too Large");
    expect(answer.head).toContain("content-type: application/json");
    expect(answer.body).toEqual({ error: "headers_too_large", detail: expect.any(String) });
  });

  it("answers 431 on a kept-alive connection after an earlier response", async () => {
    const socket = net.connect(server.port, "127.0.0.1");
    let answer = "";
    socket.on("data", (d) => (answer += d));
    const closed = new Promise((resolve) => socket.on("close", resolve));
    socket.write("GET /healthz HTTP/1.1\r\nHost: x\r\n\r\n");
    while (!answer.includes('{"status":"ok"}')) await new Promise((r) => setTimeout(r, 10));
    socket.write(`GET /healthz HTTP/1.1\r\nHost: x\r\nX-Big: ${"a".repeat(20 * 1024)}\r\n\r\n`);
    await closed;
    expect(answer).toMatch(/^HTTP\/1.1 200 OK/);
    expect(answer).toContain("HTTP/1.1 431 Request Header Fields Too Large");
    expect(answer).toContain('"error":"headers_too_large"');
  });

  it("answers 400 invalid_request as JSON for a request that is not HTTP", async () => {
    const answer = parseRaw(await raw("HELLO THERE\r\n\r\n"));
    expect(answer.statusLine).toBe("HTTP/1.1 400 Bad Request");
    expect(answer.body).toEqual({ error: "invalid_request", detail: expect.any(String) });
  });

  it("keeps idle connections longer than a load balancer does, with header and request timeouts and a connection cap", () => {
    expect(server.http.keepAliveTimeout).toBe(65_000);
    expect(server.http.headersTimeout).toBe(15_000);
    expect(server.http.requestTimeout).toBe(60_000);
    expect(server.http.maxConnections).toBe(10_000);
  });
});
