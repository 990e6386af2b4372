// /graphql refuses operations deeper, larger or costlier than the configured bounds, before anything
// runs, with a 400 `query_too_complex` that says which bound and by how much; answers larger than the
// response cap are replaced by `response_too_large`; introspection follows configuration.
import { readFileSync, readdirSync } from "node:fs";
import path from "node:path";
import fc from "fast-check";
import {
  Kind,
  TypeInfo,
  ValidationContext,
  buildSchema,
  getIntrospectionQuery,
  getVariableValues,
  graphqlSync,
  parse,
  print,
  specifiedRules,
  validate,
  type OperationDefinitionNode,
} from "graphql";
import { createApp, type App } from "../../src/app";
import { loadConfig } from "../../src/config";
import { loadTypeDefs } from "../../src/graphql/schema-source";
import { AGGREGATE_COST, jsonSize, measureOperation, validationRules } from "../../src/graphql/limits";
import { prepareOperations } from "../../src/api/execute";
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

/** What an operation costs, measured in full. */
function costOf(query: string): number {
  const document = parse(query);
  const operation = document.definitions.find((d) => d.kind === Kind.OPERATION_DEFINITION)!;
  return measureOperation(new ValidationContext(schema, document, new TypeInfo(schema), () => {}), operation).cost;
}

/** What an operation costs with these variable values (coerced as execution coerces them). */
function measureWith(query: string, variables: Record<string, unknown>) {
  const document = parse(query);
  const operation = document.definitions.find((d) => d.kind === Kind.OPERATION_DEFINITION)!;
  const { coerced } = getVariableValues(schema, operation.variableDefinitions ?? [], variables);
  return measureOperation(new ValidationContext(schema, document, new TypeInfo(schema), () => {}), operation, Infinity, coerced);
}

/** The attacks of issue 13: `n` aliases of one field. */
const aliased = (n: number, field: string) => `{ ${Array.from({ length: n }, (_, i) => `a${i}: ${field}`).join(" ")} }`;
const REVIEW_SUMMARIES = aliased(1000, "reviewSummary { count averageRating }");
const SCHEMAS = aliased(1000, "__schema { types { name fields { name } } }");
/** Fragments that spread the one below twice, 30 deep: 2^30 fields once expanded. */
const FRAGMENT_BOMB =
  "{ reviewSummary { ...F29 } }\nfragment F0 on ReviewSummary { count averageRating }\n" +
  Array.from({ length: 29 }, (_, i) => `fragment F${i + 1} on ReviewSummary { ...F${i} ...F${i} }`).join("\n");
/** What GraphiQL and codegen send, with every option on. */
const FULL_INTROSPECTION = getIntrospectionQuery({
  descriptions: true,
  specifiedByUrl: true,
  directiveIsRepeatable: true,
  schemaDescription: true,
  inputValueDeprecation: true,
  oneOf: true,
});

/** Fields in a JSON value: what introspection is priced by. */
function fieldsIn(value: unknown): number {
  if (Array.isArray(value)) return value.reduce((n: number, v) => n + fieldsIn(v), 0);
  if (value === null || typeof value !== "object") return 0;
  return Object.values(value).reduce((n: number, v) => n + 1 + fieldsIn(v), 0);
}

describe("depth and cost, as validation rules", () => {
  it("defaults: depth 10, cost 16000, 1000 selections, 100 aliases, 10000 tokens, 5 MiB responses", () => {
    expect(DEFAULTS.graphqlMaxDepth).toBe(10);
    expect(DEFAULTS.graphqlMaxCost).toBe(16_000);
    expect(DEFAULTS.graphqlMaxSelections).toBe(1000);
    expect(DEFAULTS.graphqlMaxAliases).toBe(100);
    expect(DEFAULTS.graphqlMaxTokens).toBe(10_000);
    expect(DEFAULTS.graphqlMaxResponseBytes).toBe(5 * 1024 * 1024);
  });

  it("counts depth as fields on the longest path; 10 passes, 11 does not", () => {
    expect(errorsOf(nested(10))).toEqual([]);
    expect(errorsOf(nested(11))).toEqual([
      {
        message: "the operation nests 11 fields deep; at most 10 are allowed",
        code: "query_too_complex",
        detail: "the operation nests 11 fields deep; at most 10 are allowed",
        limit: "depth",
        maximum: 10,
        actual: 11,
      },
    ]);
  });

  it("counts a page's selection `limit` times, 100 when absent, a variable's from its value", () => {
    // guests(limit: 500) { nodes { 16 fields } } = 1 + 500 × (1 + 16)
    const fields = "id propertyId integrationId sourceId masterProfileId givenName familyName email phone language countryCode city birthDate vipCode createdAt updatedAt";
    expect(errorsOf(`{ guests(limit: 500) { nodes { ${fields} } } }`)).toEqual([]);
    const costly = errorsOf(`{ guests(limit: 500) { nodes { ${fields} reservations { transactions { id } } } } }`);
    expect(costly).toEqual([expect.objectContaining({ limit: "cost", maximum: 16_000, actual: 1 + 500 * (1 + 16 + 1 + 5 * (1 + 5)) })]);
    expect(costly[0].message).toMatch(/costs \d+; at most 16000 is allowed/);
    // A variable limit is priced per request from its value (validation results are cached per
    // document): validation leaves the cost alone, and the measure says it depends on variables.
    const variable = `query($n: Int) { guests(limit: $n) { nodes { ${fields} reservations { transactions { id } } } } }`;
    expect(errorsOf(variable)).toEqual([]);
    expect(measureWith(variable, { n: 500 })).toMatchObject({ cost: 1 + 500 * (1 + 16 + 1 + 5 * (1 + 5)), variablePriced: true });
    expect(measureWith(variable, { n: 5 }).cost).toBe(1 + 5 * (1 + 16 + 1 + 5 * (1 + 5)));
    expect(measureWith(variable, {}).cost).toBe(1 + 100 * (1 + 16 + 1 + 5 * (1 + 5))); // null: the default page
    expect(measureWith(`query($n: Int = 300) { guests(limit: $n) { nodes { id } } }`, {}).cost).toBe(1 + 300 * 2); // its default
    expect(measureWith(`query($t: Boolean) { masterProfiles(limit: 1, includeTotal: $t) { totalCount } }`, { t: true }).cost).toBe(1 + AGGREGATE_COST + 1);
    expect(measureWith(`query($t: Boolean) { masterProfiles(limit: 1, includeTotal: $t) { totalCount } }`, { t: false }).cost).toBe(2);
    expect(measureWith(`{ guests(limit: 5) { nodes { id } } }`, {}).variablePriced).toBe(false);
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

  it("prices introspection by the fields of its answer; the standard introspection query passes", () => {
    const walk = "{ __schema { types { name fields { name } } } }";
    expect(costOf(walk)).toBe(1 + fieldsIn(graphqlSync({ schema, source: walk }).data!.__schema));
    expect(costOf('{ __type(name: "Viewer") { name fields { name } } }')).toBe(1 + 1 + 1 + 4 * 1);
    const full = costOf(FULL_INTROSPECTION);
    expect(full).toBe(1 + fieldsIn(graphqlSync({ schema, source: FULL_INTROSPECTION }).data!.__schema));
    expect(full).toBeLessThan(DEFAULTS.graphqlMaxCost);
    expect(errorsOf(getIntrospectionQuery())).toEqual([]);
    expect(errorsOf(FULL_INTROSPECTION)).toEqual([]);
  });

  it("prices aggregates by the queries they run, AGGREGATE_COST each", () => {
    expect(AGGREGATE_COST).toBe(500);
    // 1 + five aggregate queries + two fields
    expect(costOf("{ reviewSummary { count averageRating } }")).toBe(1 + 5 * 500 + 2);
    // includeTotal counts every match when true or a variable, not when false (a page's own fields
    // count `limit` times, like its nodes)
    const masters = (include: string) => `query($t: Boolean) { masterProfiles(limit: 10, includeTotal: ${include}) { nodes { id } totalCount } }`;
    expect(costOf(masters("false"))).toBe(1 + 10 * (2 + 1));
    expect(costOf(masters("true"))).toBe(1 + 500 + 10 * (2 + 1));
    expect(costOf(masters("$t"))).toBe(1 + 500 + 10 * (2 + 1));
    expect(costOf("{ events(mode: timeline, limit: 10) { nodes { seq } } }")).toBe(1 + 10 * 2);
    expect(costOf("{ events(mode: latest, limit: 10) { nodes { seq } } }")).toBe(1 + 500 + 10 * 2);
    // a batched count: 5 per table, one aggregate per page of 100
    expect(costOf("{ tables(limit: 100) { nodes { memberCount } } }")).toBe(1 + 100 * (1 + 1 + 5));
  });

  it("prices the worked examples of docs/operations.md and passes the benchmark's nested query", () => {
    expect(costOf("{ guests(limit: 50) { nodes { id givenName email } nextCursor } }")).toBe(1 + 50 * (1 + 3 + 1));
    expect(costOf("{ reviewSummary { count averageRating bySource { source count } } }")).toBe(1 + 5 * 500 + 2 + 1 + 5 * 2);
    expect(costOf("{ masterProfiles(limit: 20, includeTotal: true) { nodes { id guests { email } } totalCount } }")).toBe(
      1 + 500 + 20 * (1 + 1 + (1 + 5 * 1) + 1),
    );
    const bench =
      "{ guests(limit: 100) { nodes { id givenName familyName email " +
      "reservations { id confirmationNumber status arrivalDate departureDate totalAmountMinor currency } " +
      "transactions { id kind category amountMinor currency occurredAt } } nextCursor hasMore } }";
    expect(costOf(bench)).toBe(1 + 100 * (1 + 4 + (1 + 5 * 7) + (1 + 5 * 6) + 2));
    expect(errorsOf(bench)).toEqual([]);
  });

  it("refuses the 1,000-alias attacks and a fragment bomb on every count", () => {
    const bySummary = errorsOf(REVIEW_SUMMARIES);
    expect(bySummary).toEqual([
      expect.objectContaining({ code: "query_too_complex", limit: "selections", maximum: 1000, actual: 3000 }),
      expect.objectContaining({ code: "query_too_complex", limit: "aliases", maximum: 100, actual: 1000 }),
      expect.objectContaining({ code: "query_too_complex", limit: "cost", maximum: 16_000, actual: 1000 * (1 + 5 * 500 + 2) }),
    ]);
    expect(bySummary[1].message).toBe(
      "the operation has 1000 aliased fields (counted after expanding fragments); at most 100 are allowed",
    );
    expect(errorsOf(SCHEMAS).map((e) => e.limit)).toEqual(["selections", "aliases", "cost"]);
    const bomb = errorsOf(FRAGMENT_BOMB);
    expect(bomb.map((e) => e.limit)).toEqual(["selections", "cost"]);
    expect(bomb[0]).toMatchObject({ actual: 1 + 2 ** 30 });
    expect(bomb[0].message).toBe(
      `the operation selects ${1 + 2 ** 30} fields (counted after expanding fragments); at most 1000 are allowed`,
    );
  });

  it("measures a fragment bomb in one step per fragment, and stops an introspection walk at the limit", () => {
    const document = parse(FRAGMENT_BOMB);
    const context = new ValidationContext(schema, document, new TypeInfo(schema), () => {});
    const started = performance.now();
    expect(measureOperation(context, document.definitions[0] as OperationDefinitionNode).selections).toBe(1 + 2 ** 30);
    expect(performance.now() - started).toBeLessThan(1000); // the old checker never finished
    // 1,000 walks of 593 fields each would visit 593,000; the walk gives up past the limit.
    const schemas = parse(SCHEMAS);
    const measured = measureOperation(
      new ValidationContext(schema, schemas, new TypeInfo(schema), () => {}),
      schemas.definitions[0] as OperationDefinitionNode,
      10_000,
    );
    expect(measured).toMatchObject({ atLeast: true });
    expect(measured.cost).toBeGreaterThan(10_000);
    expect(measured.cost).toBeLessThan(20_000);
    expect(errorsOf(SCHEMAS).find((e) => e.limit === "cost")!.message).toMatch(/^the operation costs at least \d+; at most 16000 is allowed/);
  });

  it("counts aliases and selections after fragment expansion, configurably", () => {
    const limits = loadConfig({ GCS_GRAPHQL_MAX_ALIASES: "3", GCS_GRAPHQL_MAX_SELECTIONS: "6" });
    const twice = "{ viewer { ...V } again: viewer { ...V } } fragment V on Viewer { k: kind s: scopes }";
    expect(errorsOf(twice, limits)).toEqual([
      expect.objectContaining({ limit: "aliases", maximum: 3, actual: 5 }),
    ]);
    expect(errorsOf("{ viewer { kind scopes propertyId } v: viewer { kind scopes propertyId } }", limits)).toEqual([
      expect.objectContaining({ limit: "selections", maximum: 6, actual: 8 }),
    ]);
  });

  it("passes every REST operation's document (their variable-priced costs are /graphql's to check per request)", () => {
    const dir = path.resolve(__dirname, "../../src/api/operations/routes");
    const prepared = prepareOperations(schema);
    const files = readdirSync(dir).filter((f) => f.endsWith(".graphql"));
    expect(files.length).toBeGreaterThanOrEqual(10);
    for (const file of files) {
      const names = parse(readFileSync(path.join(dir, file), "utf8")).definitions.flatMap((d) =>
        d.kind === Kind.OPERATION_DEFINITION && d.name ? [d.name.value] : [],
      );
      expect(names.length).toBeGreaterThan(0);
      for (const name of names) {
        expect({ file, name, errors: errorsOf(print(prepared.get(name)!)) }).toEqual({ file, name, errors: [] });
      }
    }
  });

  it("refuses subscriptions on /graphql: they are served at /graphql/stream", () => {
    expect(errorsOf("subscription { events { cursor } }")).toEqual([
      expect.objectContaining({ message: "subscriptions are served over Server-Sent Events at /graphql/stream, not here; use query", code: "unsupported_operation" }),
    ]);
  });

  it("measures JSON size without serialising: exact for ASCII", () => {
    const ascii = fc.string({ unit: fc.constantFrom(..."abc XYZ-019:._") });
    const json = fc.letrec((tie) => ({
      value: fc.oneof({ depthSize: "small" }, ascii, fc.integer(), fc.boolean(), fc.constant(null), tie("array"), tie("object")),
      array: fc.array(tie("value"), { maxLength: 4 }),
      object: fc.dictionary(ascii, tie("value"), { maxKeys: 4 }),
    })).value;
    fc.assert(fc.property(json, (v) => jsonSize(v, Infinity) === JSON.stringify(v).length));
    // stops counting past the cap
    expect(jsonSize(Array.from({ length: 1000 }, () => "x".repeat(1000)), 5000)).toBeLessThan(10_000);
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
    return request(app.handler);
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
        extensions: expect.objectContaining({ code: "query_too_complex", limit: "depth", maximum: 10, actual: 11 }),
      }),
    ]);
    expect(res.headers["x-sql-statements"]).toBe("1"); // the credential lookup only: nothing ran
  });

  it("refuses a too costly operation with 400", async () => {
    const res = await gql(t.api, "{ guests(limit: 500) { nodes { reservations { transactions { id amountMinor currency occurredAt } } } } }");
    expect(res.status).toBe(400);
    expect(res.body.errors[0].extensions).toMatchObject({ code: "query_too_complex", limit: "cost", maximum: 16_000 });
  });

  it("prices a variable limit and includeTotal from their values: $l = 500 is refused as limit: 500 is", async () => {
    const query = "query($l: Int, $t: Boolean) { guests(limit: $l) { nodes { reservations { transactions { id amountMinor currency occurredAt } } } } masterProfiles(limit: 1, includeTotal: $t) { totalCount } }";
    const send = (variables: Record<string, unknown>) =>
      t.api.post("/graphql").set("Authorization", `Bearer ${t.manifest.groups.A.credentials.api_key}`).send({ query, variables });
    const big = await send({ l: 500 });
    expect(big.status).toBe(400);
    expect(big.body.data).toBeUndefined();
    expect(big.body.errors).toEqual([
      expect.objectContaining({ extensions: expect.objectContaining({ code: "query_too_complex", limit: "cost", maximum: 16_000, actual: 1 + 500 * (1 + 1 + 5 * (1 + 5 * 4)) + 1 + 1 }) }),
    ]);
    expect(big.headers["x-sql-statements"]).toBe("1"); // the credential lookup only: nothing ran
    // The same document (validated once, cached) with a small limit runs; includeTotal: true adds its aggregate.
    const small = await send({ l: 2, t: true });
    expect(small.status).toBe(200);
    expect(small.body.data.guests.nodes).toHaveLength(2);
    expect(typeof small.body.data.masterProfiles.totalCount).toBe("number");
    // A variable that does not coerce is execution's error to report, not a cost refusal.
    const wrong = await send({ l: "many" });
    expect(wrong.status).toBe(400);
    expect(wrong.body.errors[0].extensions.code).toBe("BAD_USER_INPUT");
    // Variables priced once are remembered per document (graphql/limits.ts): the small ones pass
    // again (through the fast path too), the big ones are still refused, on both paths.
    for (let i = 0; i < 3; i++) {
      expect((await send({ l: 2, t: true })).status).toBe(200);
      const refused = await send({ l: 500 });
      expect(refused.status).toBe(400);
      expect(refused.body.errors[0].extensions).toMatchObject({ code: "query_too_complex", limit: "cost" });
      expect((await send({ t: true, l: 400 })).status).toBe(400);
    }
  });

  const refusal = (limit?: string) => ["query_too_complex", limit];
  it.each([
    ["1,000 aliases of reviewSummary", REVIEW_SUMMARIES, [refusal("selections"), refusal("aliases"), refusal("cost")]],
    // 10 tokens an alias: the parser stops at 10,000, before validation
    ["1,000 aliases of __schema", SCHEMAS, [["GRAPHQL_PARSE_FAILED", undefined]]],
    ["500 aliases of __schema", aliased(500, "__schema { types { name fields { name } } }"), [refusal("selections"), refusal("aliases"), refusal("cost")]],
    ["a fragment bomb", FRAGMENT_BOMB, [refusal("selections"), refusal("cost")]],
  ])("refuses %s with 400 before running it", async (_, query, expected) => {
    const started = Date.now();
    const res = await gql(t.api, query);
    // Generous for a loaded CI machine; running any of these took 8 s or more before the limits.
    expect(Date.now() - started).toBeLessThan(5000);
    expect(res.status).toBe(400);
    expect(res.body.data).toBeUndefined();
    expect(res.body.errors.map((e: { extensions: { code: string; limit?: string } }) => [e.extensions.code, e.extensions.limit])).toEqual(expected);
    expect(res.headers["x-sql-statements"]).toBe("1"); // the credential lookup only: nothing ran
  });

  it("serves a nested dashboard query with aggregates and a standard introspection query", async () => {
    const dashboard = await gql(
      t.api,
      `{ viewer { kind scopes } properties { id name }
         reviewSummary { count averageRating byRating { rating count } bySource { source count } }
         masterProfiles(limit: 20, includeTotal: true) { nodes { id givenName guests { id email } } totalCount }
         guests(limit: 50) { nodes { id givenName reservations { confirmationNumber transactions { amountMinor } } } nextCursor } }`,
    );
    expect(dashboard.status).toBe(200);
    expect(dashboard.body.errors).toBeUndefined();
    expect(dashboard.body.data.reviewSummary.byRating).toHaveLength(5);
    const introspection = await gql(t.api, FULL_INTROSPECTION);
    expect(introspection.status).toBe(200);
    expect(introspection.body.data.__schema.types.length).toBeGreaterThan(10);
  });

  it("answers subscriptions with a clear 400, not an internal error", async () => {
    // The last two made graphql-js's single-field subscription rule throw inside validation (a 500).
    for (const [query, variables] of [
      ["subscription { events { cursor } }", undefined],
      ["subscription ($on: Boolean!) { events @include(if: $on) { cursor } }", { on: true }],
      ["subscription ($on: Boolean!) { ... on Subscription { events @skip(if: $on) { cursor } } }", { on: false }],
    ] as const) {
      const res = await t.api.post("/graphql").set("Authorization", `Bearer ${t.manifest.groups.A.credentials.api_key}`).send({ query, variables });
      expect([query, res.status]).toEqual([query, 400]);
      expect(res.body.errors).toEqual([
        expect.objectContaining({ message: "subscriptions are served over Server-Sent Events at /graphql/stream, not here; use query", extensions: expect.objectContaining({ code: "unsupported_operation" }) }),
      ]);
    }
  });

  it("replaces an answer over GCS_GRAPHQL_MAX_RESPONSE_BYTES with response_too_large", async () => {
    const capped = await appWith({ GCS_GRAPHQL_MAX_RESPONSE_BYTES: "4096" });
    const big = await gql(capped, "{ __schema { types { name fields { name } } } }"); // about 12 KB
    expect(big.status).toBe(400);
    expect(big.body.data).toBeUndefined();
    expect(big.body.errors).toEqual([
      expect.objectContaining({
        message: "the response would be larger than 4096 bytes; ask for fewer rows or fields (a smaller limit, fewer aliases)",
        extensions: expect.objectContaining({ code: "response_too_large" }),
      }),
    ]);
    const small = await gql(capped, "{ viewer { kind } guests(limit: 2) { nodes { id } } }");
    expect(small.status).toBe(200);
    expect(small.body.data.guests.nodes).toHaveLength(2);
  });

  it("stops parsing past GCS_GRAPHQL_MAX_TOKENS and refuses bodies over 1 MB", async () => {
    const res = await gql(t.api, `{ ${"__typename ".repeat(20_000)} }`);
    expect(res.status).toBe(400);
    expect(res.body.errors[0].extensions.code).toBe("GRAPHQL_PARSE_FAILED");
    expect(res.body.errors[0].message).toMatch(/Document contains more tha[nt] 10000 tokens/); // graphql-js spells it "that"
    const huge = await gql(t.api, `{ viewer { kind } } # ${"x".repeat(1024 * 1024)}`);
    expect(huge.status).toBe(413);
    expect(huge.body).toMatchObject({ error: "payload_too_large" });
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
