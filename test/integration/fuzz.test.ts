// Property-based: whatever a client sends to any route of the route table, /graphql or an MCP tool,
// the answer is never a 5xx, and every 4xx is the documented error body `{ error, scope?, detail? }`
// with the code ERROR_STATUS maps to that status. Responses are also checked against openapi.yaml
// (startTestApp). Seeded and bounded: FUZZ_SEED replays a run, FUZZ_RUNS sets the runs per property.
// On failure fast-check prints the seed, the path to replay and the failing request as generated.
import fc from "fast-check";
import { Kind, print, type GraphQLInputType, type VariableDefinitionNode, type TypeNode, isInputObjectType, isEnumType, type GraphQLSchema } from "graphql";
import { startTestApp, type TestApp } from "../helpers/app";
import { routes, type RouteSpec } from "../../src/api/routes";
import { MERGED_TOOLS, ROUTE_TOOLS } from "../../src/api/tools/route-tools";
import { routeKey } from "../../src/api/openapi/generate";
import { ERROR_STATUS } from "../../src/errors";
import { buildSchema } from "../../src/graphql/schema";
import { prepareOperations } from "../../src/api/execute";
import { issueSessionToken } from "../../src/auth/session";
import { FIELDS } from "../../src/data/filter-document";
import request from "supertest";
import { createApp } from "../../src/app";

const SEED = Number(process.env.FUZZ_SEED ?? 20261124);
const RUNS = Number(process.env.FUZZ_RUNS ?? 40);

let t: TestApp;
beforeAll(async () => {
  // No rate limit: a few thousand requests on one key must all reach the parsers.
  t = await startTestApp({ GCS_RATE_LIMIT: "0" });
  // A fuzzed webhook URL is never looked up: every name "does not exist" (no packet leaves the machine).
  t.services.webhookResolver = async () => {
    throw Object.assign(new Error("not found"), { code: "ENOTFOUND" });
  };
});
afterAll(() => t.close());

// ---- Values ----------------------------------------------------------------------------------------

/** Names JavaScript objects inherit: each must be just another unknown name. */
const PROTO_NAMES = ["__proto__", "constructor", "toString", "hasOwnProperty", "valueOf", "prototype", "__defineGetter__"];

/** Strings that have broken parsers somewhere: NUL, lone surrogates, out-of-range dates, huge numbers. */
const SPECIAL_TEXT = [
  "\u0000", "a\u0000b", "\ud800", "x\udfff", "..", "../..", "%", "", " ", "-1", "0", "2147483648", "9".repeat(40), "1e309",
  "NaN", "1.5", "true", "null", "0000-01-01", "10000-01-01", "0001-01-01", "9999-12-31", "2026-02-30", "2026-03-14",
  "-000001-01-01", "0000-01-01T00:00:00Z", "0001-01-01T00:00:00+01:00", "9999-12-31T23:59:59-01:00", "2026-03-14T09:30:00Z",
  "+275760-09-13T00:00:00Z", "x".repeat(513), "é😀", "'; DROP TABLE guests; --", "%' OR 1=1 --", "\\", "_%", ...PROTO_NAMES,
];

const text: fc.Arbitrary<string> = fc.oneof(
  { weight: 4, arbitrary: fc.constantFrom(...SPECIAL_TEXT) },
  { weight: 2, arbitrary: fc.string({ maxLength: 16 }) },
  { weight: 2, arbitrary: fc.string({ unit: "binary", maxLength: 16 }) },
  { weight: 1, arbitrary: fc.uuid() },
  { weight: 1, arbitrary: fc.tuple(fc.constantFrom(...SPECIAL_TEXT), fc.string({ maxLength: 4 })).map(([a, b]) => a + b) },
);

/** Valid values for a query parameter, so generated requests also get past the parsers. */
function validValues(route: RouteSpec, name: string): string[] {
  const specs = { ...route.query, ...route.pathParams };
  if (!Object.hasOwn(specs, name)) return [];
  return valuesOf(specs[name].schema() as ValueSchema);
}

type ValueSchema = { enum?: string[]; format?: string; type?: string; anyOf?: ValueSchema[]; items?: ValueSchema };
/** A range bound's forms (anyOf: a date and an instant) each, a list's (expand) items. */
function valuesOf(schema: ValueSchema): string[] {
  if (schema.anyOf) return schema.anyOf.flatMap(valuesOf);
  if (schema.type === "array" && schema.items) return valuesOf(schema.items);
  if (schema.enum) return schema.enum;
  if (schema.format === "date") return ["2026-03-14", "0001-01-01", "9999-12-31"];
  if (schema.format === "date-time") return ["2026-03-14T09:30:00Z", "0001-01-01T00:00:00Z", "9999-12-31T23:59:59Z"];
  if (schema.type === "integer") return ["1", "50", "0", "-1", "999999999"];
  return [];
}

/** Percent-encodes code point by code point; a lone surrogate goes out as the bytes of one (invalid UTF-8). */
function encode(value: string): string {
  let out = "";
  for (const ch of value) {
    try {
      out += encodeURIComponent(ch);
    } catch {
      out += "%ED%A0%80";
    }
  }
  return out;
}

/** Raw query or path text no encoder makes: bad escapes, overlong UTF-8, brackets. */
const RAW_FRAGMENTS = ["%FF", "%E0%A4%A", "%C0%AF", "%00", "%2e%2e", "%2F", "a%5Bb%5D=1", "=x", "limit", "limit=", "%25"];

// ---- Requests ----------------------------------------------------------------------------------------

type Credential = "api_key" | "session" | "static" | "partner" | "mcp" | "none" | "garbage" | { role: string; org: string; sub: string };

const credential: fc.Arbitrary<Credential> = fc.oneof(
  { weight: 12, arbitrary: fc.constant("api_key" as const) },
  { weight: 1, arbitrary: fc.constantFrom("session", "static", "partner", "mcp", "none", "garbage") as fc.Arbitrary<Credential> },
  {
    weight: 1,
    arbitrary: fc.record({
      role: fc.oneof(fc.constantFrom("admin", "viewer", ...PROTO_NAMES), fc.string({ maxLength: 8 })),
      org: fc.oneof(fc.constantFrom("", "not-a-uuid", "00000000-0000-0000-0000-000000000000"), fc.uuid(), fc.string({ maxLength: 8 })),
      sub: fc.oneof(fc.constantFrom("u1", "", " ", "\u0000"), fc.string({ maxLength: 8 })),
    }),
  },
);

async function authorization(c: Credential): Promise<string | undefined> {
  const creds = t.manifest.groups.A.credentials;
  if (typeof c === "object") {
    const token = await issueSessionToken(await t.services.sessionKey(), { userId: c.sub, organisationId: c.org, role: c.role });
    return `Bearer ${token}`;
  }
  const tokens: Record<Exclude<Credential, object>, string | undefined> = {
    api_key: creds.api_key,
    session: creds.session_token,
    static: creds.static_token,
    partner: creds.partner_token,
    mcp: creds.mcp_token,
    none: undefined,
    garbage: "gcs_not-a-real-key",
  };
  return tokens[c] === undefined ? undefined : `Bearer ${tokens[c]}`;
}

interface FuzzRequest {
  method: RouteSpec["method"];
  url: string;
  credential: Credential;
  propertyHeader?: string;
  contentType?: string;
  body?: string;
}

function queryString(route: RouteSpec): fc.Arbitrary<string> {
  const names = Object.keys(route.query ?? {});
  const name = fc.oneof(
    { weight: names.length ? 8 : 0, arbitrary: names.length ? fc.constantFrom(...names) : fc.constant("limit") },
    { weight: 1, arbitrary: fc.constantFrom(...PROTO_NAMES) },
    { weight: 1, arbitrary: fc.string({ maxLength: 8 }) },
  );
  const pair = name.chain((n) => {
    const valid = validValues(route, n);
    const value = valid.length ? fc.oneof(fc.constantFrom(...valid), text) : text;
    return value.map((v) => `${encode(n)}=${encode(v)}`);
  });
  const part = fc.oneof({ weight: 6, arbitrary: pair }, { weight: 1, arbitrary: fc.constantFrom(...RAW_FRAGMENTS) });
  const query = fc.array(part, { maxLength: 4 }).map((parts) => (parts.length ? `?${parts.join("&")}` : ""));
  // A route without parameters mostly gets none, so its body or path is what is explored.
  return names.length ? query : fc.oneof({ weight: 4, arbitrary: fc.constant("") }, { weight: 1, arbitrary: query });
}

function pathSegment(name: string): fc.Arbitrary<string> {
  const a = t.manifest.groups.A;
  const b = t.manifest.groups.B;
  const real = [a.guest_lookup.guest_id, a.master_with_two_guests, a.properties[0], a.tables.bound, a.tables.unbound, a.integrations[0].id, b.guest_lookup.guest_id, b.tables.bound];
  return fc.oneof(
    { weight: 3, arbitrary: fc.constantFrom(...real, ...(name === "provider" ? t.manifest.destinations : [])) },
    { weight: 2, arbitrary: fc.uuid() },
    { weight: 3, arbitrary: text.filter((s) => s !== "" && s !== "." && s !== "..").map(encode) },
    { weight: 2, arbitrary: fc.constantFrom(...RAW_FRAGMENTS, "..", ".") },
  );
}

function routePath(route: RouteSpec): fc.Arbitrary<string> {
  const parts = route.path.split("/").map((part) => (part.startsWith(":") ? pathSegment(part.slice(1)) : fc.constant(part)));
  return fc.tuple(...parts).map((segments) => segments.join("/"));
}

const J = (value: unknown) => JSON.stringify(value);

/** Filter documents (data/filter-document.ts) as JSON text: real and inherited field names, odd values, nesting. */
const FILTER_FIELDS = [...new Set(Object.values(FIELDS).flatMap((fields) => Object.keys(fields))), "consent.marketing_email", "consent.", ...PROTO_NAMES];
const FILTER_OPS = ["eq", "neq", "in", "not_in", "contains", "starts_with", "exists", "gt", "gte", "lt", "lte", ...PROTO_NAMES];
const filterDoc: fc.Arbitrary<string> = fc.letrec<{ node: string }>((tie) => ({
  node: fc.oneof(
    { depthSize: "small", withCrossShrink: true },
    fc
      .tuple(fc.constantFrom(...FILTER_FIELDS), fc.constantFrom(...FILTER_OPS), fc.oneof(text, fc.array(text, { maxLength: 3 }), fc.boolean(), fc.jsonValue({ maxDepth: 1 })))
      .map(([field, op, value]) => `{"field":${J(field)},"op":${J(op)},"value":${J(value)}}`),
    fc.tuple(fc.constantFrom("and", "or", ...PROTO_NAMES), fc.array(tie("node"), { maxLength: 3 })).map(([k, nodes]) => `{${J(k)}:[${nodes.join(",")}]}`),
    tie("node").map((node) => `{"not":${node}}`),
  ),
})).node;

/** A JSON value as text: any JSON, strings from `text`, a filter document, a deep nest, a valid enum value. */
const jsonText: fc.Arbitrary<string> = fc.oneof(
  { weight: 3, arbitrary: filterDoc },
  { weight: 3, arbitrary: text.map((s) => JSON.stringify(s)) },
  { weight: 2, arbitrary: fc.jsonValue({ maxDepth: 3 }).map((v) => JSON.stringify(v)) },
  { weight: 1, arbitrary: fc.constantFrom("guest_profile", "master_profile").map((s) => JSON.stringify(s)) },
  { weight: 1, arbitrary: fc.constantFrom("{}", '{"and":[]}', '{"field":"email","op":"eq","value":"a\\u0000"}', "1e400", "-0", "[]") },
  { weight: 1, arbitrary: fc.integer({ min: 1, max: 20_000 }).map((n) => '{"and":['.repeat(n) + "]}".repeat(n)) },
  { weight: 1, arbitrary: fc.integer({ min: 1, max: 50_000 }).map((n) => "[".repeat(n) + "]".repeat(n)) },
);

/** A body member's value as JSON text: often of the member's type, so requests get past the parsers. */
function memberValue(route: RouteSpec, name: string): fc.Arbitrary<string> {
  const spec = Object.hasOwn(route.body ?? {}, name) ? route.body![name] : undefined;
  const schema = (spec?.schema() ?? {}) as { enum?: string[]; type?: string };
  const typed = schema.enum
    ? fc.constantFrom(...schema.enum).map(J)
    : schema.type === "object"
      ? filterDoc
      : schema.type === "integer"
        ? fc.oneof({ weight: 4, arbitrary: fc.integer({ min: -5, max: 600 }) }, { weight: 1, arbitrary: fc.constantFrom(2 ** 31, 1e21, -0, 0.5) }).map(J)
        : schema.type === "boolean"
          ? fc.boolean().map(J)
          : jsonText;
  return fc.oneof({ weight: 5, arbitrary: typed }, { weight: 1, arbitrary: jsonText });
}

function objectText(route: RouteSpec): fc.Arbitrary<string> {
  const names = Object.keys(route.body ?? {});
  const key = fc.oneof(
    { weight: names.length ? 6 : 0, arbitrary: names.length ? fc.constantFrom(...names) : fc.constant("x") },
    { weight: 1, arbitrary: fc.constantFrom(...PROTO_NAMES) },
    { weight: 1, arbitrary: fc.string({ maxLength: 8 }) },
  );
  // Built as text, so "__proto__" and repeated keys reach the server as sent.
  const member = key.chain((k) => memberValue(route, k).map((v) => `${J(k)}:${v}`));
  const free = fc.array(member, { maxLength: 6 });
  // The required members and some optional ones, mostly well typed: such bodies reach the resolver
  // (data/filter-document.ts) rather than stopping at the parsers.
  const required = names.filter((n) => route.body![n].required);
  const shaped = fc
    .tuple(...names.map((n) => fc.option(memberValue(route, n).map((v) => `${J(n)}:${v}`), { freq: required.includes(n) ? 20 : 2, nil: undefined })))
    .map((members) => members.filter((m) => m !== undefined));
  return fc.oneof(free, shaped).map((members) => `{${members.join(",")}}`);
}

function bodyFor(route: RouteSpec): fc.Arbitrary<string | undefined> {
  return fc.oneof(
    { weight: 8, arbitrary: objectText(route) },
    { weight: 1, arbitrary: jsonText },
    { weight: 1, arbitrary: fc.constantFrom(undefined, "", "{", "{}", "null", "[]", '{"a":1}garbage') },
  );
}

const contentType = fc.oneof(
  { weight: 12, arbitrary: fc.constant("application/json") },
  { weight: 1, arbitrary: fc.constantFrom("application/json; charset=utf-8", "application/json; charset=latin1", "application/json; charset=utf-16", "text/plain", "application/x-www-form-urlencoded", "application/json; charset=bogus") },
);

const propertyHeader = fc.oneof(
  { weight: 10, arbitrary: fc.constant(undefined) },
  { weight: 1, arbitrary: fc.oneof(fc.uuid(), fc.string({ maxLength: 40 }).map((s) => s.trim()), fc.constantFrom(...PROTO_NAMES)) },
);

function requestFor(route: RouteSpec): fc.Arbitrary<FuzzRequest> {
  return fc.record({
    method: fc.constant(route.method),
    url: fc.tuple(routePath(route), queryString(route)).map(([p, q]) => p + q),
    credential,
    propertyHeader,
    contentType: route.method === "POST" ? contentType : fc.constant(undefined),
    body: route.method === "POST" ? bodyFor(route) : fc.constant(undefined),
  });
}

async function send(r: FuzzRequest) {
  let req = r.method === "GET" ? t.api.get(r.url) : r.method === "DELETE" ? t.api.delete(r.url) : t.api.post(r.url);
  const auth = await authorization(r.credential);
  if (auth) req = req.set("Authorization", auth);
  if (r.propertyHeader !== undefined) req = req.set("X-Property-Id", r.propertyHeader);
  if (r.contentType) req = req.set("Content-Type", r.contentType);
  return r.body !== undefined ? req.send(r.body) : req;
}

// ---- Assertions ----------------------------------------------------------------------------------------

interface Answer {
  status: number;
  text: string;
  headers: Record<string, string>;
  body: unknown;
}

/** No 5xx; a 4xx is JSON `{ error, scope?, detail? }` whose code maps to that status. */
function expectDocumentedAnswer(res: Answer) {
  if (res.status >= 500) throw new Error(`answered ${res.status}: ${res.text.slice(0, 300)}`);
  if (res.status < 400) return;
  expect(res.headers["content-type"]).toMatch(/^application\/json/);
  expectErrorBody(res.body, res.status);
}

function expectErrorBody(body: unknown, status?: number) {
  expect(body).toEqual(expect.objectContaining({ error: expect.any(String) }));
  const { error, ...rest } = body as Record<string, unknown>;
  expect(Object.keys(rest).filter((k) => k !== "scope" && k !== "detail")).toEqual([]);
  expect(Object.hasOwn(ERROR_STATUS, error as string)).toBe(true);
  if (status !== undefined) expect(ERROR_STATUS[error as keyof typeof ERROR_STATUS]).toBe(status);
  expect(error).not.toBe("internal_error");
}

/** endOnFailure: no shrinking, which could take thousands more requests; the failing request is printed as generated. */
const options = (runs: number) => ({ seed: SEED, numRuns: runs, endOnFailure: true });

// ---- Properties ----------------------------------------------------------------------------------------

describe(`fuzz (seed ${SEED}; replay with FUZZ_SEED=${SEED})`, () => {
  it.each(routes.map((r) => [`${r.method} ${r.path}`, r] as const))("%s: no 5xx, every 4xx documented", async (_label, route) => {
    await fc.assert(
      fc.asyncProperty(requestFor(route), async (r) => expectDocumentedAnswer(await send(r))),
      options(route.body ? RUNS * 4 : RUNS), // a body has the most to explore
    );
  });

  describe("/graphql variables", () => {
    const schema: GraphQLSchema = buildSchema();
    const documents = prepareOperations(schema);
    const OPERATIONS = ["ListGuests", "ListReservations", "ListMasterProfiles", "ListTransactions", "PreviewTable", "GetGuest", "ListEvents"];

    /** A variable's value as JSON text: mostly of its type's shape (known fields, enum values), often not. */
    function valueOf(type: GraphQLInputType | undefined, depth = 0): fc.Arbitrary<string> {
      const anything = fc.oneof(
        { weight: 4, arbitrary: jsonText },
        { weight: 1, arbitrary: fc.constantFrom(2 ** 31, -(2 ** 53), 1e308, 0.5, true, null).map(J) },
      );
      if (!type || depth > 2) return anything;
      if (type.toString() === "JSON") return fc.oneof(filterDoc, anything);
      const inner = "ofType" in type && type.ofType ? (type.ofType as GraphQLInputType) : type;
      if (inner !== type) return fc.oneof(valueOf(inner, depth), fc.array(valueOf(inner, depth + 1), { maxLength: 2 }).map((items) => `[${items.join(",")}]`));
      if (isEnumType(type)) return fc.oneof(fc.constantFrom(...type.getValues().map((v) => v.name)).map(J), anything);
      if (isInputObjectType(type)) {
        const fields = type.getFields();
        const member = fc.oneof(
          { weight: 6, arbitrary: fc.constantFrom(...Object.keys(fields)).chain((n) => valueOf(fields[n].type, depth + 1).map((v) => [n, v] as const)) },
          { weight: 1, arbitrary: fc.tuple(fc.constantFrom(...PROTO_NAMES), anything) },
        );
        return fc.array(member, { maxLength: 4 }).map((members) => `{${members.map(([k, v]) => `${J(k)}:${v}`).join(",")}}`);
      }
      return anything;
    }

    function typeOf(node: TypeNode): GraphQLInputType | undefined {
      if (node.kind === Kind.NAMED_TYPE) return schema.getType(node.name.value) as GraphQLInputType | undefined;
      return typeOf(node.type);
    }

    it.each(OPERATIONS)("%s: no 5xx, no internal_error", async (name) => {
      const document = documents.get(name)!;
      const query = print(document);
      const definitions = (document.definitions[0] as { variableDefinitions?: readonly VariableDefinitionNode[] }).variableDefinitions ?? [];
      // Built as text, so deep nests and "__proto__" members reach the server as sent.
      const variables = fc
        .array(fc.constantFrom(...definitions).chain((d) => valueOf(typeOf(d.type)).map((v) => `${J(d.variable.name.value)}:${v}`)), { maxLength: definitions.length })
        .map((members) => `{${members.join(",")}}`);
      await fc.assert(
        fc.asyncProperty(variables, credential, async (vars, c) => {
          let req = t.api.post("/graphql").set("Content-Type", "application/json");
          const auth = await authorization(c);
          if (auth) req = req.set("Authorization", auth);
          const res = await req.send(`{"query":${J(query)},"operationName":${J(name)},"variables":${vars}}`);
          if (res.status >= 500) throw new Error(`answered ${res.status}: ${res.text.slice(0, 300)}`);
          // Refused before Apollo (415, a body that is not JSON): the REST error body.
          if (res.status >= 400 && !res.body.errors) return expectDocumentedAnswer(res);
          const codes = ((res.body.errors ?? []) as { extensions?: { code?: string } }[]).map((e) => e.extensions?.code);
          for (const code of codes) expect(code).toEqual(expect.any(String));
          expect(codes).not.toContain("internal_error");
          expect(codes).not.toContain("INTERNAL_SERVER_ERROR");
        }),
        options(Math.ceil(RUNS * 1.5)),
      );
    });
  });

  describe("/mcp tools/call arguments", () => {
    const routeArgs = (route: (typeof routes)[number]) => [...Object.keys(route.pathParams ?? {}), ...Object.keys(route.query ?? {}), ...Object.keys(route.body ?? {})];
    const tools: (readonly [string, string[], string[]])[] = routes.filter((r) => ROUTE_TOOLS[routeKey(r)]).map((r) => [ROUTE_TOOLS[routeKey(r)].name, routeArgs(r), []] as const);
    // A merged tool takes type and every argument of the tools it stands for.
    for (const merged of MERGED_TOOLS) {
      const members = routes.filter((r) => Object.values(merged.types).includes(ROUTE_TOOLS[routeKey(r)]?.name));
      tools.push([merged.name, ["type", ...new Set(members.flatMap(routeArgs))], Object.keys(merged.types)]);
    }
    it.each(tools)("%s: no 5xx, errors are the REST error body", async (tool, names, types) => {
      const value = fc.oneof(
        { weight: 6, arbitrary: text },
        { weight: 1, arbitrary: fc.jsonValue({ maxDepth: 2 }) },
        { weight: types.length ? 6 : 0, arbitrary: types.length ? fc.constantFrom(...types) : text },
      );
      const args = fc
        .array(fc.tuple(fc.oneof({ weight: 6, arbitrary: fc.constantFrom(...(names.length ? names : ["limit"])) }, { weight: 1, arbitrary: fc.constantFrom(...PROTO_NAMES) }), value), { maxLength: 4 })
        .map((members) => `{${members.map(([k, v]) => `${JSON.stringify(k)}:${JSON.stringify(v)}`).join(",")}}`);
      await fc.assert(
        fc.asyncProperty(args, async (argsText) => {
          const res = await t.api
            .post("/mcp")
            .set("Authorization", `Bearer ${t.manifest.groups.A.credentials.api_key}`)
            .set("Accept", "application/json, text/event-stream")
            .set("Content-Type", "application/json")
            .send(`{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":${JSON.stringify(tool)},"arguments":${argsText}}}`);
          if (res.status >= 500) throw new Error(`answered ${res.status}: ${res.text.slice(0, 300)}`);
          expect(res.status).toBe(200);
          // A JSON-RPC error (arguments of the wrong type) or a tool result; never an internal error.
          if (res.body.error) {
            expect(res.body.error.code).not.toBe(-32603);
            return;
          }
          if (res.body.result.isError) {
            const text = res.body.result.content[0].text as string;
            // The SDK reports arguments its input schema rejects as plain text; ours are the REST error body.
            if (text.startsWith("{")) expectErrorBody(JSON.parse(text));
            else expect(text).toMatch(/validation|invalid/i);
          }
        }),
        options(Math.ceil(RUNS / 2)), // each call builds an MCP server: the slowest path
      );
    });
  });

  describe("/mcp JSON-RPC batches", () => {
    it("no 5xx; a batch over the cap is one -32600 and runs nothing; others answer every call", async () => {
      const maxBatch = t.services.config.mcpMaxBatch;
      const names = Object.values(ROUTE_TOOLS).map((tool) => tool.name);
      const message = fc.record({
        name: fc.oneof({ weight: 5, arbitrary: fc.constantFrom(...names) }, { weight: 1, arbitrary: text }),
        args: fc.oneof({ weight: 3, arbitrary: fc.constant({}) }, { weight: 1, arbitrary: fc.dictionary(fc.constantFrom("limit", "guest_id", ...PROTO_NAMES), fc.jsonValue({ maxDepth: 1 })) }),
      });
      await fc.assert(
        fc.asyncProperty(fc.array(message, { minLength: 1, maxLength: maxBatch + 6 }), async (messages) => {
          const batch = messages.map((m, i) => `{"jsonrpc":"2.0","id":${i + 1},"method":"tools/call","params":{"name":${J(m.name)},"arguments":${J(m.args)}}}`);
          const res = await t.api
            .post("/mcp")
            .set("Authorization", `Bearer ${t.manifest.groups.A.credentials.api_key}`)
            .set("Accept", "application/json, text/event-stream")
            .set("Content-Type", "application/json")
            .send(`[${batch.join(",")}]`);
          if (res.status >= 500) throw new Error(`answered ${res.status}: ${res.text.slice(0, 300)}`);
          if (messages.length > maxBatch) {
            expect(res.status).toBe(400);
            expect(res.body.error.code).toBe(-32600);
            return;
          }
          expect(res.status).toBe(200);
          // The SDK answers a batch of one with the bare response object.
          const answers = (Array.isArray(res.body) ? res.body : [res.body]) as { error?: { code: number } }[];
          expect(answers).toHaveLength(messages.length);
          for (const a of answers) expect(a.error?.code).not.toBe(-32603);
        }),
        options(Math.ceil(RUNS / 2)),
      );
    });
  });

  describe("POST /register metadata (RFC 7591)", () => {
    const REGISTRATION_ERRORS = ["invalid_client_metadata", "invalid_redirect_uri"];
    const uri = fc.oneof(
      { weight: 3, arbitrary: fc.constantFrom("https://ok.example/cb", "http://127.0.0.1:9/cb", "cursor://cb", "https://ok.example/cb#", "https://x/cb#f", "http://evil.example/", "javascript:alert(1)") },
      { weight: 2, arbitrary: fc.tuple(fc.constantFrom("https://ok.example/", "http://[::1]/", "app:"), text).map(([a, b]) => a + b) },
      { weight: 1, arbitrary: text },
    );
    /** JSON nested `depth` levels: up to 200, past Prisma's limit of 128. */
    const nested = fc.integer({ min: 0, max: 200 }).map((depth) => "[".repeat(depth) + '"k"' + "]".repeat(depth));
    const value = fc.oneof({ weight: 4, arbitrary: text.map(J) }, { weight: 1, arbitrary: nested }, { weight: 1, arbitrary: fc.jsonValue({ maxDepth: 2 }).map(J) });
    const member = fc.oneof(
      { weight: 3, arbitrary: fc.array(uri, { maxLength: 3 }).map((u) => ["redirect_uris", J(u)] as const) },
      { weight: 2, arbitrary: value.map((v) => ["client_name", v] as const) },
      { weight: 2, arbitrary: nested.map((v) => ["jwks", `{"keys":${v}}`] as const) },
      { weight: 2, arbitrary: fc.tuple(fc.constantFrom("contacts", "scope", "grant_types", "logo_uri", "software_id", "token_endpoint_auth_method", ...PROTO_NAMES), value) },
    );
    const metadata = fc.array(member, { maxLength: 5 }).map((members) => `{${members.map(([k, v]) => `${J(k)}:${v}`).join(",")}}`);

    it("no 5xx; a 400 is invalid_client_metadata or invalid_redirect_uri with a description", async () => {
      // Each run registers from an address of its own (X-Forwarded-For, trusted from loopback), so the
      // per-address limit does not stop valid metadata short of the insert.
      const app = (await createApp({ ...t.services, config: { ...t.services.config, trustProxy: ["loopback"] } })).app;
      let run = 0;
      await fc.assert(
        fc.asyncProperty(metadata, async (body) => {
          run++;
          const res = await request(app).post("/register").set("X-Forwarded-For", `198.51.${run >> 8}.${run & 255}`).set("Content-Type", "application/json").send(body);
          if (res.status >= 500) throw new Error(`answered ${res.status}: ${res.text.slice(0, 300)}`);
          if (res.status === 201) return expect(res.body.client_id).toEqual(expect.any(String));
          expect(res.status).toBe(400);
          expect(Object.keys(res.body).sort()).toEqual(["error", "error_description"]);
          expect(REGISTRATION_ERRORS).toContain(res.body.error);
          expect(res.body.error_description).toEqual(expect.any(String));
        }),
        options(RUNS * 4),
      );
    });
  });
});
