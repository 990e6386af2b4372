// Errors that are not about one route: unknown routes, wrong methods, malformed bodies, faults.
import { capturingLogger, startTestApp, type TestApp } from "../../helpers/app";

let t: TestApp;
const { logger, lines: logLines } = capturingLogger();
beforeAll(async () => {
  t = await startTestApp({}, logger);
});
afterAll(() => t.close());

const key = () => t.manifest.groups.A.credentials.api_key;

describe("errors", () => {
  it("404 not_found JSON for an unknown route", async () => {
    const res = await t.api.get("/v1/nope").set("Authorization", `Bearer ${key()}`);
    expect(res.status).toBe(404);
    expect(res.headers["content-type"]).toMatch(/application\/json/);
    expect(res.body.error).toBe("not_found");
  });

  it("405 JSON with Allow for a wrong method", async () => {
    const res = await t.api.delete("/v1/guests").set("Authorization", `Bearer ${key()}`);
    expect(res.status).toBe(405);
    expect(res.headers.allow).toBe("GET");
    expect(res.body.error).toBe("method_not_allowed");
  });

  it("400 invalid_request for a malformed JSON body", async () => {
    const res = await t.api.post("/v1/guests").set("Authorization", `Bearer ${key()}`).set("Content-Type", "application/json").send("{not json");
    expect(res.status).toBe(400);
    expect(res.body.error).toBe("invalid_request");
  });

  it("echoes a request id, or makes one", async () => {
    const given = await t.api.get("/healthz").set("X-Request-Id", "abc-123");
    expect(given.headers["x-request-id"]).toBe("abc-123");
    const made = await t.api.get("/healthz");
    expect(made.headers["x-request-id"]).toMatch(/^[0-9a-f-]{36}$/);
  });

  it("healthz and readyz answer", async () => {
    expect((await t.api.get("/healthz")).body).toEqual({ status: "ok" });
    expect((await t.api.get("/readyz")).body).toEqual({ status: "ready" });
  });

  it("500 internal_error with no internals in the body, details in the log, and no secret logged", async () => {
    // A real fault: the table behind the route disappears from this test's own database.
    await t.admin.$executeRawUnsafe("ALTER TABLE properties RENAME TO properties_gone");
    try {
      const res = await t.api.get("/v1/properties").set("Authorization", `Bearer ${key()}`).set("X-Request-Id", "fault-1");
      expect(res.status).toBe(500);
      expect(res.body).toEqual({ error: "internal_error", detail: expect.any(String) });
      expect(JSON.stringify(res.body)).not.toMatch(/properties|prisma|at .*\.ts|stack/i);
      const logged = logLines.filter((l) => l.includes("fault-1")).join("\n");
      expect(logged).toMatch(/properties/);
      expect(logLines.join("\n")).not.toContain(key());
    } finally {
      await t.admin.$executeRawUnsafe("ALTER TABLE properties_gone RENAME TO properties");
    }
  });
});
