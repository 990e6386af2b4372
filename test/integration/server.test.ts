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

  it("sends X-Content-Type-Options: nosniff on its own 400 and 431 answers", async () => {
    const bad = parseRaw(await raw("HELLO THERE\r\n\r\n"));
    expect(bad.statusLine).toBe("HTTP/1.1 400 Bad Request");
    expect(bad.head).toContain("\r\nx-content-type-options: nosniff");
    const big = parseRaw(await raw(`GET /v1/guests HTTP/1.1\r\nHost: x\r\nX-Big: ${"a".repeat(20 * 1024)}\r\n\r\n`));
    expect(big.statusLine).toBe("HTTP/1.1 431 Request Header Fields Too Large");
    expect(big.head).toContain("\r\nx-content-type-options: nosniff");
  });
});

describe("slow and idle clients (short configured timeouts, a small per-address cap)", () => {
  const HEADERS_MS = 2000;
  const REQUEST_MS = 3000;
  let short: RunningServer;
  beforeAll(async () => {
    short = await startServer(
      loadConfig({
        NODE_ENV: "test", LOG_LEVEL: "silent", DATABASE_URL: clone.url, HOST: "127.0.0.1", PORT: "0", GCS_DELIVERY_WORKER: "false",
        GCS_HEADERS_TIMEOUT_MS: String(HEADERS_MS), GCS_REQUEST_TIMEOUT_MS: String(REQUEST_MS),
        GCS_MAX_CONNECTIONS: "10", GCS_MAX_CONNECTIONS_PER_ADDRESS: "4",
      }),
    );
  });
  afterAll(() => short?.stop());

  /** Writes `head` then one of `drip` every 200 ms until the server answers and closes; resolves with the answer and when it came. */
  function dribble(head: string, drip: string, giveUpMs = 8000): Promise<{ answer: string; ms: number }> {
    return new Promise((resolve) => {
      const started = Date.now();
      const socket = net.connect(short.port, "127.0.0.1");
      let answer = "";
      let answeredAt = 0;
      socket.on("data", (d) => ((answer += d), (answeredAt ||= Date.now())));
      const timer = setInterval(() => (Date.now() - started > giveUpMs ? socket.destroy() : socket.write(drip)), 200);
      const done = () => (clearInterval(timer), resolve({ answer, ms: (answeredAt || Date.now()) - started }));
      socket.on("close", done);
      socket.on("error", () => undefined);
      socket.write(head);
    });
  }

  it("answers a header dribble 408 within a second of the configured header timeout, with nosniff", async () => {
    const { answer, ms } = await dribble("GET /healthz HTTP/1.1\r\nHost: x\r\n", "X-Slow: a\r\n");
    expect(answer).toMatch(/^HTTP\/1.1 408 Request Timeout\r\n/);
    expect(answer.toLowerCase()).toContain("\r\nx-content-type-options: nosniff");
    expect(ms).toBeGreaterThanOrEqual(HEADERS_MS);
    expect(ms).toBeLessThan(HEADERS_MS + 1500);
  });

  it("answers a body dribble 408 within a second of the configured request timeout", async () => {
    const head = "POST /graphql HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\nContent-Length: 1000\r\n\r\n{";
    const { answer, ms } = await dribble(head, " ");
    expect(answer).toMatch(/^HTTP\/1.1 408 Request Timeout\r\n/);
    expect(ms).toBeGreaterThanOrEqual(REQUEST_MS);
    expect(ms).toBeLessThan(REQUEST_MS + 1500);
  });

  it("closes an address's connections past its cap at once, so other addresses still connect", async () => {
    const open = (localAddress: string) =>
      new Promise<net.Socket>((resolve, reject) => {
        const socket = net.connect({ port: short.port, host: "127.0.0.1", localAddress }, () => resolve(socket));
        socket.on("error", reject);
      });
    const closed = (socket: net.Socket) => socket.closed || socket.destroyed;
    // One address opens the whole server's cap (10) of idle sockets: 4 stay, 6 are closed at once.
    const hog: net.Socket[] = [];
    for (let i = 0; i < 10; i++) {
      const socket = await open("127.0.0.1");
      socket.on("error", () => undefined);
      hog.push(socket);
    }
    await new Promise((r) => setTimeout(r, 300));
    expect(hog.filter((s) => !closed(s)).length).toBe(4);
    try {
      // Another loopback address is served at once.
      const other = await open("127.0.0.2");
      let answer = "";
      other.on("data", (d) => (answer += d));
      other.write("GET /healthz HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n");
      await new Promise((r) => other.on("close", r));
      expect(answer).toMatch(/^HTTP\/1.1 200 OK/);
    } finally {
      for (const s of hog) s.destroy();
    }
    // Closed sockets give their places back.
    await new Promise((r) => setTimeout(r, 100));
    const again = await open("127.0.0.1");
    let answer = "";
    again.on("data", (d) => (answer += d));
    again.write("GET /healthz HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n");
    await new Promise((r) => again.on("close", r));
    expect(answer).toMatch(/^HTTP\/1.1 200 OK/);
  });

  it("configures the cap and the timeouts from the environment; defaults as documented", () => {
    expect(short.http.headersTimeout).toBe(HEADERS_MS);
    expect(short.http.requestTimeout).toBe(REQUEST_MS);
    const defaults = loadConfig({}).http;
    expect(defaults).toMatchObject({ headersTimeoutMs: 15_000, requestTimeoutMs: 60_000, maxConnectionsPerAddress: 1000 });
  });
});
