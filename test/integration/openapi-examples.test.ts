// The document's examples against the real service: every documented request body is accepted
// (Redoc, Postman and Bruno send it as is), and mode=rollup answers with the Deprecation and
// Sunset headers the document describes. Every response is checked against openapi.yaml too.
import { openApiDocument } from "../../src/api/openapi";
import { ROLLUP_DEPRECATION } from "../../src/api/routes";
import { startTestApp, type TestApp } from "../helpers/app";

type Json = Record<string, any>; // eslint-disable-line @typescript-eslint/no-explicit-any

let t: TestApp;
beforeAll(async () => {
  t = await startTestApp();
});
afterAll(() => t.close());

const auth = () => ({ Authorization: `Bearer ${t.manifest.groups.A.credentials.api_key}` });

// Webhook endpoint bodies name receivers: their example URL would be resolved through DNS, so they
// are exercised in webhooks.test.ts with an injected resolver instead.
const withBodies = Object.entries(openApiDocument().paths).filter(([path]) => !path.startsWith("/v1/webhook-endpoints")).flatMap(([path, methods]) =>
  Object.entries(methods as Record<string, Json>)
    .filter(([, op]) => op.requestBody)
    .map(([method, op]) => [`${method.toUpperCase()} ${path}`, path, method as "post", op] as const),
);

describe("documented request bodies", () => {
  it("there is at least one (POST /v1/tables/preview)", () => {
    expect(withBodies.map(([key]) => key)).toContain("POST /v1/tables/preview");
  });

  it.each(withBodies)("%s accepts its example body and answers rows of the demo data", async (_key, path, method, op) => {
    const url = path.replace(/\{(\w+)\}/g, (_m, name: string) => op.parameters.find((p: Json) => p.name === name).example);
    const res = await t.api[method](url).set(auth()).send(op.requestBody.content["application/json"].example);
    expect([res.status, res.body.error]).toEqual([200, undefined]);
    expect(res.body.data.length).toBeGreaterThan(0);
  });
});

describe("GET /v1/events?mode=rollup", () => {
  it("answers Deprecation (RFC 9745) and Sunset (RFC 8594)", async () => {
    const res = await t.api.get("/v1/events?mode=rollup&limit=1").set(auth());
    expect(res.status).toBe(200);
    expect(res.body.mode).toBe("latest");
    expect(res.headers.deprecation).toBe(`@${ROLLUP_DEPRECATION.deprecatedAt.getTime() / 1000}`);
    expect(res.headers.sunset).toBe("Tue, 01 Jun 2027 00:00:00 GMT");
  });

  it("other modes, and a rollup request that fails, carry neither", async () => {
    for (const query of ["mode=latest&limit=1", "mode=timeline&limit=1", "limit=1", "mode=rollup&limit=0"]) {
      const res = await t.api.get(`/v1/events?${query}`).set(auth());
      expect([query, res.headers.deprecation, res.headers.sunset]).toEqual([query, undefined, undefined]);
    }
  });
});
