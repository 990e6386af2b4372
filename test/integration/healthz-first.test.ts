// GET /healthz is answered before Express (src/app/requests.ts answerHealthzFirst): the same answer,
// headers, access line and metrics as the Express route that still serves the probes the fast path
// passes on (a query string, CORS, a trace), and Connection: close while draining.
import { createServer, type Server } from "node:http";
import type { AddressInfo } from "node:net";
import request from "supertest";
import { createApp, type App } from "../../src/app";
import { metricsApp } from "../../src/observability/metrics";
import { capturingLogger, startTestApp, type TestApp } from "../helpers/app";

const { logger, lines } = capturingLogger();
let t: TestApp;
let app: App;
let server: Server;
let base: string;

beforeAll(async () => {
  t = await startTestApp({}, logger);
  app = await createApp({ ...t.services, logger });
  server = createServer(app.handler).listen(0, "127.0.0.1");
  await new Promise((resolve) => server.once("listening", resolve));
  base = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
});
afterAll(async () => {
  server.closeAllConnections();
  await new Promise((resolve) => server.close(resolve));
  await app.stop();
  await t.close();
});

const VOLATILE = new Set(["date", "x-request-id", "connection", "keep-alive"]);
const stable = (headers: Headers) => Object.fromEntries([...headers].filter(([name]) => !VOLATILE.has(name)).sort());
const accessLines = (requestId: string) => lines.map((l) => JSON.parse(l)).filter((l) => l.msg === "request" && l.requestId === requestId);

async function healthzCount(): Promise<number> {
  const text = (await request(metricsApp()).get("/metrics")).text;
  const m = /^gcs_http_request_duration_seconds_count\{(?=[^}]*route="\/healthz")(?=[^}]*status="200")(?=[^}]*method="GET")[^}]*\} (\d+)$/m.exec(text);
  return m ? Number(m[1]) : 0;
}

describe("GET /healthz before Express", () => {
  it("answers as the Express route does: body, headers (the query-string probe goes through Express)", async () => {
    const fast = await fetch(`${base}/healthz`);
    const stack = await fetch(`${base}/healthz?probe=1`); // not "/healthz": passed on to Express
    expect(fast.status).toBe(200);
    expect(await fast.json()).toEqual({ status: "ok" });
    expect(await stack.json()).toEqual({ status: "ok" });
    expect(stable(fast.headers)).toEqual(stable(stack.headers));
    expect(fast.headers.get("x-sql-statements")).toBe("0");
    expect(fast.headers.get("x-request-id")).toMatch(/^[0-9a-f-]{36}$/);
  });

  it("echoes a sane X-Request-Id, writes the access line and counts the request in the metrics", async () => {
    const before = await healthzCount();
    const res = await fetch(`${base}/healthz`, { headers: { "x-request-id": "probe-42" } });
    expect(res.headers.get("x-request-id")).toBe("probe-42");
    expect(await healthzCount()).toBe(before + 1);
    const [line] = accessLines("probe-42");
    expect(line).toMatchObject({ method: "GET", path: "/healthz", status: 200, sql: 0 });
    expect(typeof line.ms).toBe("number");
    // An unsafe id is replaced, as everywhere else.
    const odd = await fetch(`${base}/healthz`, { headers: { "x-request-id": "a b\u00e9" } });
    expect(odd.headers.get("x-request-id")).toMatch(/^[0-9a-f-]{36}$/);
  });

  it("answers HEAD with the headers and no body; other methods go to Express (404)", async () => {
    const head = await fetch(`${base}/healthz`, { method: "HEAD" });
    expect(head.status).toBe(200);
    expect(head.headers.get("content-length")).toBe("15");
    expect(await head.text()).toBe("");
    const post = await fetch(`${base}/healthz`, { method: "POST" });
    expect(post.status).toBe(404);
    expect(((await post.json()) as { error: string }).error).toBe("not_found");
  });

  it("closes the connection after its answer once the app drains", async () => {
    const other = await createApp({ ...t.services, logger });
    const s = createServer(other.handler).listen(0, "127.0.0.1");
    await new Promise((resolve) => s.once("listening", resolve));
    try {
      other.drain();
      const res = await fetch(`http://127.0.0.1:${(s.address() as AddressInfo).port}/healthz`);
      expect(res.status).toBe(200);
      expect(res.headers.get("connection")).toBe("close");
    } finally {
      s.closeAllConnections();
      await new Promise((resolve) => s.close(resolve));
      await other.stop();
    }
  });
});
