// Every 500 (or internal_error) is a fault of ours: its cause, with the stack, goes to the log with
// the request id, and never into the response. Faults are provoked on the test's own database (a
// table renamed away) or by a data function made to throw.
import type { Express } from "express";
import request from "supertest";
import { createApp } from "../../src/app";
import * as credentials from "../../src/data/stores/credentials";
import * as oauthStore from "../../src/data/stores/oauth";
import { capturingLogger, startTestApp, type TestApp } from "../helpers/app";

const log = capturingLogger();
let t: TestApp;
let app: Express;

beforeAll(async () => {
  // A fault is injected into the credential lookup: every request looks its token up (none remembered).
  t = await startTestApp({ GCS_REMEMBER_CREDENTIALS: "false" }, log.logger);
  app = (await createApp(t.services)).app;
});

afterAll(async () => {
  await t?.close();
});

type Line = { level: number; msg: string; requestId?: string; tool?: string; err?: { message: string; stack: string } };
const errorLines = (requestId: string) => log.lines.map((l) => JSON.parse(l) as Line).filter((l) => l.level === 50 && l.requestId === requestId);

/** Runs `work` with the properties table renamed away: Prisma fails with a fault that is no database outage. */
async function withoutPropertiesTable(work: () => Promise<void>) {
  await t.admin.$executeRawUnsafe("ALTER TABLE properties RENAME TO properties_gone");
  try {
    await work();
  } finally {
    await t.admin.$executeRawUnsafe("ALTER TABLE properties_gone RENAME TO properties");
  }
}

describe("faults of ours are logged with their cause", () => {
  it("an MCP tool's internal_error", async () => {
    await withoutPropertiesTable(async () => {
      const res = await request(app)
        .post("/mcp")
        .set({ Authorization: `Bearer ${t.manifest.groups.A.credentials.api_key}`, Accept: "application/json, text/event-stream" })
        .send({ jsonrpc: "2.0", id: 1, method: "tools/call", params: { name: "list_properties", arguments: {} } });
      expect(res.status).toBe(200);
      expect(res.body.result.isError).toBe(true);
      expect(JSON.parse(res.body.result.content[0].text).error).toBe("internal_error");
      expect(res.text).not.toMatch(/properties_gone|does not exist|at .*\.ts/);
      const [line] = errorLines(res.headers["x-request-id"]);
      expect(line).toMatchObject({ msg: "unhandled error", tool: "list_properties", err: { message: expect.stringMatching(/properties/), stack: expect.stringContaining("\n    at ") } });
    });
  });

  it("a REST 500", async () => {
    await withoutPropertiesTable(async () => {
      const res = await request(app).get("/v1/properties").set("Authorization", `Bearer ${t.manifest.groups.A.credentials.api_key}`);
      expect(res.status).toBe(500);
      expect(res.body).toEqual({ error: "internal_error", detail: "unexpected server fault; retry later" });
      expect(errorLines(res.headers["x-request-id"])[0]).toMatchObject({ err: { stack: expect.stringContaining("\n    at ") } });
    });
  });

  it("a /graphql fault while building the context: the original cause and its stack, not Apollo's wrapper", async () => {
    const spy = jest.spyOn(credentials, "findTokenByHash").mockRejectedValueOnce(new Error("context-fault-51c2"));
    try {
      const res = await request(app).post("/graphql").set("Authorization", `Bearer ${t.manifest.groups.A.credentials.api_key}`).send({ query: "{ __typename }" });
      expect(res.status).toBe(500);
      expect(res.body.errors[0].extensions.code).toBe("internal_error");
      expect(res.text).not.toContain("context-fault-51c2");
      expect(errorLines(res.headers["x-request-id"])[0]).toMatchObject({
        msg: "unhandled GraphQL error",
        err: { message: "context-fault-51c2", stack: expect.stringContaining("fault-logging.test.ts") },
      });
    } finally {
      spy.mockRestore();
    }
  });

  it("an OAuth endpoint's 500 server_error (the SDK's handlers log nothing themselves)", async () => {
    const registered = await request(app).post("/register").send({ redirect_uris: ["http://127.0.0.1:9/cb"], token_endpoint_auth_method: "none" });
    expect(registered.status).toBe(201);
    const spy = jest.spyOn(oauthStore, "findRefreshTokenWithGrant").mockRejectedValueOnce(new Error("token-fault-9e01"));
    try {
      const res = await request(app).post("/token").type("form").send({ grant_type: "refresh_token", client_id: registered.body.client_id, refresh_token: "gcsmr_x" });
      expect(res.status).toBe(500);
      expect(res.body.error).toBe("server_error");
      expect(res.text).not.toContain("token-fault-9e01");
      expect(errorLines(res.headers["x-request-id"])[0]).toMatchObject({ err: { message: "token-fault-9e01", stack: expect.stringContaining("fault-logging.test.ts") } });
    } finally {
      spy.mockRestore();
    }
  });
});
