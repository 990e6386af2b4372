// Input rules (issue 13, "no input yields a 5xx"): each case here answered 500 (or was silently
// accepted) before. Inherited names, NUL and lone surrogates, dates PostgreSQL cannot hold, bodies
// that are not JSON in UTF-8, session tokens with odd claims, and the /mcp transport's edges.
import { issueSessionToken } from "../../../src/auth/session";
import { routes, type RouteSpec } from "../../../src/api/routes";
import { capturingLogger, startTestApp, type TestApp } from "../../helpers/app";

let t: TestApp;
const { logger, lines: logLines } = capturingLogger();
beforeAll(async () => {
  t = await startTestApp({}, logger);
});
afterAll(() => t.close());

const key = () => t.manifest.groups.A.credentials.api_key_admin; // every scope: every route is reached
const ANY_ID = "3f1c2a9e-7d4b-4c1a-9e2f-5b6a7c8d9e0f";
const INHERITED = ["__proto__", "constructor", "toString", "hasOwnProperty", "valueOf"];

/** The route's path with every parameter filled (a uuid, or a known destination provider). */
const pathOf = (route: RouteSpec) => route.path.replace(/:(\w+)/g, (_m, name: string) => (name === "provider" ? t.manifest.destinations[0] : ANY_ID));

function call(route: RouteSpec, url = pathOf(route)) {
  const req = route.method === "GET" ? t.api.get(url) : route.method === "DELETE" ? t.api.delete(url) : t.api.post(url);
  return req.set("Authorization", `Bearer ${key()}`);
}

const previewBody = { member_type: "guest_profile", filter_doc: { field: "email", op: "exists", value: true } };

describe("names inherited from Object.prototype", () => {
  it.each(INHERITED)("?%s=x is an unknown query parameter on every route", async (name) => {
    for (const route of routes) {
      const res = await call(route, `${pathOf(route)}?${name}=x`);
      expect([route.path, res.status, res.body.error]).toEqual([route.path, 400, "invalid_request"]);
      expect(res.body.detail).toMatch(new RegExp(`^unknown query parameter ${name}`));
    }
  });

  it.each(INHERITED)("a body member %s is an unknown body member", async (name) => {
    const body = JSON.stringify(previewBody).replace(/}$/, `,${JSON.stringify(name)}:1}`);
    const res = await t.api.post("/v1/tables/preview").set("Authorization", `Bearer ${key()}`).set("Content-Type", "application/json").send(body);
    expect(res.status).toBe(400);
    expect(res.body).toEqual({ error: "invalid_request", detail: expect.stringMatching(new RegExp(`^unknown body member ${name}`)) });
  });
});

describe("NUL and lone surrogates in text", () => {
  const textParams = routes.flatMap((route) =>
    Object.entries(route.query ?? {})
      .filter(([, spec]) => spec.schema().type === "string" && !spec.schema().format && !spec.schema().enum)
      .map(([name]) => [`${route.path}?${name}`, route, name] as const),
  );

  it.each(textParams)("%s=a%00b is a 400 naming the parameter", async (_label, route, name) => {
    const extra = name === "source_id" && route.query?.integration_id ? `&integration_id=${ANY_ID}` : "";
    const res = await call(route, `${pathOf(route)}?${name}=a%00b${extra}`);
    expect(res.status).toBe(400);
    expect(res.body).toEqual({ error: "invalid_request", detail: `${name} must be text without NUL characters (U+0000) or lone UTF-16 surrogates` });
  });

  it("a NUL in a path segment is a 400 naming it", async () => {
    const res = await t.api.post(`/v1/tables/${t.manifest.groups.A.tables.bound}/destinations/%00/pause`).set("Authorization", `Bearer ${key()}`);
    expect(res.status).toBe(400);
    expect(res.body.detail).toMatch(/^provider must be text without NUL/);
  });

  it("a NUL or a lone surrogate anywhere in a filter document is a 400 naming its place", async () => {
    const send = (text: string) =>
      t.api.post("/v1/tables/preview").set("Authorization", `Bearer ${key()}`).set("Content-Type", "application/json").send(text);
    const nul = await send('{"member_type":"guest_profile","filter_doc":{"and":[{"field":"email","op":"eq","value":"a\\u0000"}]}}');
    expect(nul.status).toBe(400);
    expect(nul.body.detail).toBe("filter_doc.and[0].value must be text without NUL characters (U+0000) or lone UTF-16 surrogates");
    const surrogate = await send('{"member_type":"guest_profile","filter_doc":{"field":"email","op":"eq","value":"\\ud800"}}');
    expect(surrogate.status).toBe(400);
    expect(surrogate.body.detail).toMatch(/^filter_doc\.value must be text/);
  });

  it("an array nested 10,000 deep where a number belongs is a 400", async () => {
    const deep = "[".repeat(10_000) + "]".repeat(10_000);
    const res = await t.api
      .post("/v1/tables/preview")
      .set("Authorization", `Bearer ${key()}`)
      .set("Content-Type", "application/json")
      .send(`{"member_type":"guest_profile","filter_doc":{},"limit":${deep}}`);
    expect(res.status).toBe(400);
    expect(res.body.detail).toBe("limit must be a string, number or boolean, not an object or array");
  });

  it("a GraphQL variable holding a NUL is a 400 naming the variable path", async () => {
    const res = await graphql("query($f: GuestFilter) { guests(filter: $f) { nodes { id } } }", { f: { email: "a\u0000b" } });
    expect(res.status).toBe(400);
    expect(res.body.errors[0].extensions).toEqual({
      code: "invalid_request",
      detail: "variable $f.email must be text without NUL characters (U+0000) or lone UTF-16 surrogates",
    });
  });

  it("a GraphQL string literal holding a NUL is a 400", async () => {
    const res = await graphql('{ guests(filter: { email: "a\\u0000b" }) { nodes { id } } }', {});
    expect(res.status).toBe(400);
    expect(res.body.errors[0].extensions.code).toBe("invalid_request");
    expect(res.body.errors[0].message).toMatch(/string literal at line 1, column 27 must be text without NUL/);
  });

  it("an MCP argument holding a NUL is the REST 400 body", async () => {
    const res = await mcpCall("list_reservations", { confirmation_number: "x\u0000" });
    expect(res.body.result.isError).toBe(true);
    expect(JSON.parse(res.body.result.content[0].text)).toEqual({
      error: "invalid_request",
      detail: "confirmation_number must be text without NUL characters (U+0000) or lone UTF-16 surrogates",
    });
  });

  it("invalid percent-encoding in a path is a 400, in a query string it decodes to U+FFFD", async () => {
    const path = await t.api.get("/v1/guests/%FF").set("Authorization", `Bearer ${key()}`);
    expect(path.status).toBe(400);
    expect(path.body).toEqual({ error: "invalid_request", detail: "the path is not valid percent-encoded UTF-8" });
    const query = await t.api.get("/v1/guests?email=%ED%A0%80").set("Authorization", `Bearer ${key()}`);
    expect(query.status).toBe(200);
  });
});

describe("dates PostgreSQL cannot hold", () => {
  it.each([
    ["/v1/reservations?arrival_from=0000-01-01", "arrival_from"],
    ["/v1/reservations?departure_to=10000-01-01", "departure_to"],
    ["/v1/guests?updated_since=0000-01-01T00:00:00Z", "updated_since"],
    ["/v1/transactions?occurred_from=0001-01-01T00:00:00%2B01:00", "occurred_from"],
    ["/v1/actions?due_to=9999-12-31T23:30:00-01:00", "due_to"],
  ])("%s is a 400 naming %s", async (url, name) => {
    const res = await t.api.get(url).set("Authorization", `Bearer ${key()}`);
    expect(res.status).toBe(400);
    expect(res.body.detail).toMatch(new RegExp(`^${name} must be .* in the years 0001 to 9999`));
  });

  it("0000-01-01 is refused where 0001-01-01 to 9999-12-31 is accepted", async () => {
    const get = (query: string) => t.api.get(`/v1/reservations?${query}`).set("Authorization", `Bearer ${key()}`);
    expect((await get("arrival_from=0001-01-01&arrival_to=9999-12-31")).status).toBe(200);
    expect((await get("arrival_from=0000-01-01&arrival_to=9999-12-31")).status).toBe(400);
  });

  it("a GraphQL DateTime variable in year 0 is invalid_request", async () => {
    const res = await graphql("query($s: DateTime) { guests(filter: { updatedSince: $s }) { nodes { id } } }", { s: "0000-06-01T00:00:00Z" });
    expect(res.body.errors[0].message).toMatch(/between the years 0001 and 9999/);
    expect(res.body.data ?? null).toBeNull();
    expect(JSON.stringify(res.body)).not.toMatch(/internal/i);
  });
});

describe("bodies that are not JSON in UTF-8", () => {
  it.each(["/v1/tables/preview", "/graphql", "/mcp"])("POST %s with charset=latin1 is a 415 before authentication, logged without a stack", async (path) => {
    const res = await t.api.post(path).set("Content-Type", "application/json; charset=latin1").set("X-Request-Id", `latin1-${path.length}`).send("{}");
    expect(res.status).toBe(415);
    expect(res.body).toEqual({ error: "unsupported_media_type", detail: "send the body as Content-Type: application/json in UTF-8; got charset latin1" });
    const logged = logLines.filter((l) => l.includes(`latin1-${path.length}`));
    const warning = logged.find((l) => l.includes("unsupported media type"));
    expect(warning).toBeDefined();
    expect(JSON.parse(warning!)).toMatchObject({ level: 40, path }); // the full path, not the part below the mount
    expect(logged.join("\n")).not.toMatch(/stack|"level":50/);
  });

  it.each([
    ["/v1/tables/preview", '{"member_type":"guest_profile","filter_doc":{"field":"email","op":"eq","value":"\xC3\x28"}}'],
    ["/graphql", '{"query":"{ guests(filter: { email: \\"\xFF\xFE\\" }) { nodes { id } } }"}'],
    ["/mcp", '{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"list_guests","arguments":{"email":"\xED\xA0\x80@x"}}}'],
  ])("POST %s with bytes that are not UTF-8 is a 415, not read with U+FFFD", async (path, text) => {
    const body = Buffer.from(text, "latin1"); // each \x.. one byte: an invalid UTF-8 sequence
    const res = await t.api.post(`${path}?x=1`).set("Authorization", `Bearer ${key()}`).set("Content-Type", "application/json")
      .set("Accept", "application/json, text/event-stream").set("X-Request-Id", `not-utf8-${path.length}`).serialize((b: Buffer) => b as unknown as string).send(body);
    expect(res.status).toBe(415);
    expect(res.body).toEqual({ error: "unsupported_media_type", detail: "the body is not valid UTF-8; send JSON encoded as UTF-8" });
    const warning = logLines.find((l) => l.includes(`not-utf8-${path.length}`) && l.includes("unsupported media type"));
    expect(JSON.parse(warning!)).toMatchObject({ level: 40, path });
    // The same bytes as UTF-8 text are accepted.
    const valid = await t.api.post(path).set("Authorization", `Bearer ${key()}`).set("Content-Type", "application/json")
      .set("Accept", "application/json, text/event-stream").send(text.replace(/[\x80-\xff]/g, "e"));
    expect(valid.status).toBe(200);
  });

  it("charset=utf-16 is a 415 too (JSON is UTF-8), charset=UTF-8 is fine", async () => {
    const post = (type: string) => t.api.post("/v1/tables/preview").set("Authorization", `Bearer ${key()}`).set("Content-Type", type).send(JSON.stringify(previewBody));
    const utf16 = await post("application/json; charset=utf-16");
    expect(utf16.status).toBe(415);
    expect(utf16.body.detail).toBe("send the body as Content-Type: application/json in UTF-8; got charset utf-16");
    expect((await post('application/json; charset="UTF-8"')).status).toBe(200);
  });

  it("a Content-Encoding the service cannot inflate is a 415", async () => {
    const res = await t.api.post("/v1/tables/preview").set("Content-Type", "application/json").set("Content-Encoding", "bogus").send("{}");
    expect(res.status).toBe(415);
    expect(res.body).toEqual({ error: "unsupported_media_type", detail: "Content-Encoding bogus is not supported; send gzip, deflate, br or none" });
  });

  it.each(["/v1/tables/preview", "/graphql", "/mcp"])("POST %s with text/plain is a 415, not a body read as empty", async (path) => {
    const res = await t.api.post(path).set("Content-Type", "text/plain").send(JSON.stringify(previewBody));
    expect(res.status).toBe(415);
    expect(res.body).toEqual({ error: "unsupported_media_type", detail: "send the body as Content-Type: application/json; got text/plain" });
  });

  it("a POST without a body needs no Content-Type; with a text/plain body it is a 415", async () => {
    const url = `/v1/tables/${t.manifest.groups.A.tables.bound}/destinations/${t.manifest.destinations[0]}/resume`;
    expect((await t.api.post(url).set("Authorization", `Bearer ${key()}`)).status).toBe(200);
    expect((await t.api.post(url).set("Authorization", `Bearer ${key()}`).set("Content-Type", "text/plain").send("hello")).status).toBe(415);
  });
});

describe("session tokens with a valid signature and odd claims", () => {
  const session = async (claims: { role: string; organisationId: string; userId: string }) =>
    t.api.get("/v1/guests").set("Authorization", `Bearer ${await issueSessionToken(await t.services.sessionKey(), claims)}`);

  it.each(["__proto__", "constructor", "toString", "superuser"])("role %s is a 401", async (role) => {
    const res = await session({ role, organisationId: t.manifest.groups.A.organisation_id, userId: "u1" });
    expect(res.status).toBe(401);
    expect(res.body).toEqual({ error: "unauthorized", detail: `session role ${JSON.stringify(role)} is not known` });
  });

  it.each(["", "not-a-uuid", "'; select 1 --"])("org %j is a 401", async (org) => {
    const res = await session({ role: "admin", organisationId: org, userId: "u1" });
    expect(res.status).toBe(401);
    expect(res.body).toEqual({ error: "unauthorized", detail: "session token's org claim is not an organisation id (a uuid)" });
  });

  it.each(["", "with space", "x".repeat(256)])("sub %j is a 401", async (sub) => {
    const res = await session({ role: "admin", organisationId: t.manifest.groups.A.organisation_id, userId: sub });
    expect(res.status).toBe(401);
    expect(res.body.detail).toBe("session token's sub claim is not a user id");
  });
});

describe("/mcp transport edges", () => {
  it.each(["get", "delete", "put"] as const)("%s /mcp is a 405 with Allow: POST", async (method) => {
    const res = await t.api[method]("/mcp").set("Authorization", `Bearer ${key()}`);
    expect(res.status).toBe(405);
    expect(res.headers.allow).toBe("POST");
    expect(res.body.error).toBe("method_not_allowed");
  });

  it("an empty JSON-RPC batch is an invalid request", async () => {
    const res = await t.api.post("/mcp").set("Authorization", `Bearer ${key()}`).set("Accept", "application/json, text/event-stream").send([]);
    expect(res.status).toBe(400);
    expect(res.body).toEqual({ jsonrpc: "2.0", error: { code: -32600, message: "Invalid Request: empty batch" }, id: null });
  });
});

function graphql(query: string, variables: Record<string, unknown>) {
  return t.api.post("/graphql").set("Authorization", `Bearer ${key()}`).set("Content-Type", "application/json").send({ query, variables });
}

function mcpCall(name: string, args: Record<string, unknown>) {
  return t.api
    .post("/mcp")
    .set("Authorization", `Bearer ${key()}`)
    .set("Accept", "application/json, text/event-stream")
    .send({ jsonrpc: "2.0", id: 1, method: "tools/call", params: { name, arguments: args } });
}
