// /graphql refuses operations deeper or costlier than the configured bounds, before anything runs,
// with an error that says which bound and by how much; introspection follows configuration.
import { buildSchema, getIntrospectionQuery, parse, specifiedRules, validate } from "graphql";
import { createApp, type App } from "../../src/app";
import { loadConfig } from "../../src/config";
import { loadTypeDefs } from "../../src/graphql/schema-source";
import { validationRules } from "../../src/graphql/limits";
import { startTestApp, type TestApp } from "../helpers/app";
import request from "supertest";

const schema = buildSchema(loadTypeDefs());
const DEFAULTS = loadConfig({});
const errorsOf = (query: string, limits = DEFAULTS) =>
  validate(schema, parse(query), [...specifiedRules, ...validationRules(limits)]).map(
    (e): Record<string, unknown> => ({ message: e.message, ...e.extensions }),
  );

/** A selection on Guest nesting `levels` fields: masterProfile { guests { masterProfile { … id } } }. */
function guestChain(levels: number): string {
  let body = "id";
  for (let i = levels - 2; i >= 0; i--) body = `${i % 2 === 0 ? "masterProfile" : "guests"} { ${body} }`;
  return body;
}

/** A query nesting `levels` fields: guests → nodes → masterProfile → guests → … → id. */
const nested = (levels: number) => `{ guests(limit: 1) { nodes { ${guestChain(levels - 2)} } } }`;

describe("depth and cost, as validation rules", () => {
  it("defaults: depth 10, cost 10000", () => {
    expect(DEFAULTS.graphqlMaxDepth).toBe(10);
    expect(DEFAULTS.graphqlMaxCost).toBe(10_000);
  });

  it("counts depth as fields on the longest path; 10 passes, 11 does not", () => {
    expect(errorsOf(nested(10))).toEqual([]);
    expect(errorsOf(nested(11))).toEqual([
      { message: "the operation nests 11 fields deep; at most 10 are allowed", limit: "depth", maximum: 10, actual: 11 },
    ]);
  });

  it("counts a page's selection `limit` times, 100 when the limit is not a literal", () => {
    // guests(limit: 500) { nodes { 16 fields } } = 1 + 500 × (1 + 16)
    const fields = "id propertyId integrationId sourceId masterProfileId givenName familyName email phone language countryCode city birthDate vipCode createdAt updatedAt";
    expect(errorsOf(`{ guests(limit: 500) { nodes { ${fields} } } }`)).toEqual([]);
    const costly = errorsOf(`{ guests(limit: 500) { nodes { ${fields} reservations { transactions { id } } } } }`);
    expect(costly).toEqual([expect.objectContaining({ limit: "cost", maximum: 10_000, actual: 1 + 500 * (1 + 16 + 1 + 5 * (1 + 5)) })]);
    expect(costly[0].message).toMatch(/costs \d+; at most 10000 is allowed/);
    // A variable limit counts as the default page size (validation results are cached per document).
    expect(errorsOf(`query($n: Int) { guests(limit: $n) { nodes { ${fields} reservations { transactions { id } } } } }`)).toEqual([]);
  });

  it("follows fragments, and leaves unknown fragments and cycles to graphql's own rules", () => {
    const viaFragment = `{ guests(limit: 1) { nodes { ...F } } } fragment F on Guest { ${guestChain(10)} }`;
    expect(errorsOf(viaFragment).map((e) => e.limit)).toContain("depth");
    expect(errorsOf("{ guests { nodes { ...Missing } } }").map((e) => e.message)).toEqual(['Unknown fragment "Missing".']);
    const cycle = errorsOf("{ guests { nodes { ...A } } } fragment A on Guest { masterProfile { guests { ...A } } }");
    expect(cycle.map((e) => e.message)).toEqual(['Cannot spread fragment "A" within itself.']);
  });

  it("is configurable", () => {
    const limits = loadConfig({ GCS_GRAPHQL_MAX_DEPTH: "3", GCS_GRAPHQL_MAX_COST: "50" });
    expect(errorsOf("{ viewer { kind } }", limits)).toEqual([]);
    expect(errorsOf("{ guests(limit: 5) { nodes { masterProfile { id } } } }", limits).map((e) => e.limit)).toEqual(["depth"]);
    expect(errorsOf("{ guests(limit: 50) { nodes { id } } }", limits).map((e) => e.limit)).toEqual(["cost"]);
  });

  it("ignores introspection, which has its own switch", () => {
    expect(errorsOf(getIntrospectionQuery())).toEqual([]);
  });
});

describe("over HTTP", () => {
  let t: TestApp;
  const apps: App[] = [];
  beforeAll(async () => {
    t = await startTestApp();
  });
  afterAll(async () => {
    for (const app of apps) await app.stop();
    await t.close();
  });

  /** Another app on the same database with other settings. */
  async function appWith(env: Record<string, string>) {
    const app = await createApp({ ...t.services, config: loadConfig({ LOG_LEVEL: "silent", DATABASE_URL: t.databaseUrl, ...env }) });
    apps.push(app);
    return request(app.app);
  }

  const gql = (api: ReturnType<typeof request>, query: string) =>
    api.post("/graphql").set("Authorization", `Bearer ${t.manifest.groups.A.credentials.api_key}`).send({ query });

  it("refuses a too deep operation with 400 and says why, before running it", async () => {
    const res = await gql(t.api, nested(11));
    expect(res.status).toBe(400);
    expect(res.body.data).toBeUndefined();
    expect(res.body.errors).toEqual([
      expect.objectContaining({
        message: "the operation nests 11 fields deep; at most 10 are allowed",
        extensions: expect.objectContaining({ code: "GRAPHQL_VALIDATION_FAILED", limit: "depth", maximum: 10, actual: 11 }),
      }),
    ]);
    expect(res.headers["x-sql-statements"]).toBe("1"); // the credential lookup only: nothing ran
  });

  it("refuses a too costly operation with 400", async () => {
    const res = await gql(t.api, "{ guests(limit: 500) { nodes { reservations { transactions { id amountMinor currency occurredAt } } } } }");
    expect(res.status).toBe(400);
    expect(res.body.errors[0].extensions).toMatchObject({ code: "GRAPHQL_VALIDATION_FAILED", limit: "cost", maximum: 10_000 });
  });

  it("serves ordinary dashboard queries", async () => {
    const res = await gql(t.api, "{ guests(limit: 50) { nodes { id givenName masterProfile { id } reservations { confirmationNumber } } nextCursor } }");
    expect(res.status).toBe(200);
    expect(res.body.errors).toBeUndefined();
  });

  it("introspection: on outside production by default, off in production, on again when configured", async () => {
    const introspect = "{ __schema { queryType { name } } }";
    expect((await gql(t.api, introspect)).body.data.__schema.queryType.name).toBe("Query");
    const production = await gql(await appWith({ NODE_ENV: "production" }), introspect);
    expect(production.status).toBe(400);
    expect(production.body.errors[0].message).toMatch(/introspection/i);
    const dashboards = await gql(await appWith({ NODE_ENV: "production", GCS_GRAPHQL_INTROSPECTION: "true" }), getIntrospectionQuery());
    expect(dashboards.status).toBe(200);
    expect(dashboards.body.data.__schema.types.length).toBeGreaterThan(10);
  });

  it("bounds come from the environment", async () => {
    const strict = await appWith({ GCS_GRAPHQL_MAX_DEPTH: "3" });
    const res = await gql(strict, "{ guests(limit: 5) { nodes { masterProfile { id } } } }");
    expect(res.status).toBe(400);
    expect(res.body.errors[0].extensions).toMatchObject({ limit: "depth", maximum: 3, actual: 4 });
  });
});
