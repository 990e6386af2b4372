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

  it("routes as Express does though each request is matched only against its resource's routes: any case, a trailing slash, a 405 for a sibling path, /v1 alone and an unknown resource 404", async () => {
    const auth = `Bearer ${key()}`;
    const id = t.manifest.groups.A.guest_with_events;
    for (const path of ["/V1/Guests?limit=1", "/v1/guests/?limit=1", `/v1/GUESTS/${id}`, `/v1/guests/${id}/`]) {
      const res = await t.api.get(path).set("Authorization", auth);
      expect({ path, status: res.status }).toEqual({ path, status: 200 });
    }
    const wrong = await t.api.delete(`/V1/guests/${id}`).set("Authorization", auth);
    expect([wrong.status, wrong.body.error]).toEqual([405, "method_not_allowed"]);
    for (const path of ["/v1", "/v1/", "/v1/guestsx", "/v1//guests", "/v1x/guests"]) {
      const res = await t.api.get(path).set("Authorization", auth);
      expect({ path, status: res.status, error: res.body.error }).toEqual({ path, status: 404, error: "not_found" });
    }
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
