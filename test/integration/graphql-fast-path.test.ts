// The /graphql fast path (src/app/graphql-fast.ts): a query document Apollo has run without an error
// skips Apollo's per-request pipeline the next time. Each case is sent first through Apollo, then
// again once the document is known, and both answers must be the same: status, body bytes and the
// headers a client reads. The counters say which way each request went: "apollo" (the document was
// not known), "served" (answered by the fast path), "replayed" (executed on the fast path, answered
// by Apollo from that result), "declined" (left to Apollo before anything ran).
// A file of its own PostgreSQL: the last case stops it.
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import path from "node:path";
import type { Response, Test } from "supertest";
import { graphqlFastPath } from "../../src/app/graphql-fast";
import { documentHash } from "../../src/graphql/trusted-documents";
import type { FixtureManifest } from "../../src/fixtures";
import { startAppOn, type TestApp } from "../helpers/app";
import { startOwnPostgres } from "../helpers/own-postgres";
import type { TestPostgres } from "../helpers/postgres";

const TRUSTED = "query Trusted($limit: Int) { guests(limit: $limit) { nodes { id givenName } hasMore } }";
const dir = mkdtempSync(path.join(tmpdir(), "gcs-fast-"));
const trustedFile = path.join(dir, "trusted.json");
writeFileSync(trustedFile, JSON.stringify({ [documentHash(TRUSTED)]: TRUSTED }));

let pg: TestPostgres;
let manifest: FixtureManifest;
let t: TestApp;
let trusted: TestApp;
let capped: TestApp;
beforeAll(async () => {
  ({ pg, manifest } = await startOwnPostgres());
  // The answers compared include X-Sql-Statements: with credentials remembered, a token's first
  // request counts its lookup and the next does not. Each request looks its token up here;
  // remembered-credentials.test.ts covers the fast path with remembered ones.
  const lookups = { GCS_REMEMBER_CREDENTIALS: "false" };
  t = await startAppOn(pg.adminUrl(), manifest, lookups);
  trusted = await startAppOn(pg.adminUrl(), manifest, { ...lookups, GCS_GRAPHQL_TRUSTED_DOCUMENTS: trustedFile });
  capped = await startAppOn(pg.adminUrl(), manifest, { ...lookups, GCS_GRAPHQL_MAX_RESPONSE_BYTES: "1024" });
});
afterAll(async () => {
  await Promise.all([t, trusted, capped].map((app) => app?.close()));
  pg?.stop();
  rmSync(dir, { recursive: true, force: true });
});

const A = () => manifest.groups.A;
const B = () => manifest.groups.B;
const key = () => A().credentials.api_key;
const MISSING = "00000000-0000-4000-8000-0000000000ff";

/** The headers a client reads; not those that differ per request (date, request id, timings, the rate limit's count). */
const HEADERS = ["content-type", "content-length", "retry-after", "www-authenticate", "cache-control", "x-content-type-options", "x-sql-statements", "allow"];

type Way = "apollo" | "served" | "replayed" | "declined";
interface Answer {
  status: number;
  body: string;
  headers: Record<string, unknown>;
}

/** Sends one request and says which way it went. */
async function send(request: () => Test): Promise<{ answer: Answer; way: Way; res: Response }> {
  const before = { ...graphqlFastPath };
  const res = await request();
  const way: Way =
    graphqlFastPath.served > before.served ? "served"
    : graphqlFastPath.replayed > before.replayed ? "replayed"
    : graphqlFastPath.declined > before.declined ? "declined"
    : "apollo";
  const headers = Object.fromEntries(HEADERS.map((h) => [h, res.headers[h]]));
  return { answer: { status: res.status, body: res.text, headers }, way, res };
}

interface Post {
  app?: TestApp;
  token?: string | null;
  headers?: Record<string, string>;
}

const post =
  (body: Record<string, unknown>, { app = t, token = key(), headers = {} }: Post = {}) =>
  () => {
    const req = app.api.post("/graphql").set("Content-Type", "application/json");
    if (token) req.set("Authorization", `Bearer ${token}`);
    for (const [name, value] of Object.entries(headers)) req.set(name, value);
    return req.send(body);
  };

/** The first answer is Apollo's; each later one takes `way` and is the same. */
async function same(request: () => Test, way: Way, times = 2): Promise<Answer> {
  const first = await send(request);
  expect(first.way).toBe("apollo");
  for (let i = 1; i < times; i++) {
    const again = await send(request);
    expect(again.way).toBe(way);
    expect(again.answer).toEqual(first.answer);
  }
  return first.answer;
}

/**
 * A request that does not succeed: answered by Apollo while the document is unknown, then (once
 * `known` made the document known by succeeding) through `way`, the same.
 */
async function sameOnceKnown(failing: () => Test, known: () => Test, way: Way): Promise<Answer> {
  const first = await send(failing);
  expect(first.way).toBe("apollo");
  const primed = await send(known);
  expect([primed.way, primed.answer.status]).toEqual(["apollo", 200]);
  expect(JSON.parse(primed.answer.body).errors).toBeUndefined();
  const again = await send(failing);
  expect(again.way).toBe(way);
  expect(again.answer).toEqual(first.answer);
  return first.answer;
}

const EVENTS = (() => {
  // The REST door's own events operation and its fragment, as the bench sends it (bench/graphql-door.ts).
  const routes = path.join(__dirname, "../../src/api/operations/routes");
  const guests = readFileSync(path.join(routes, "guests.graphql"), "utf8");
  const fragment = guests.slice(guests.indexOf("fragment GuestSummaryFields")).split("\n}\n")[0] + "\n}\n";
  return readFileSync(path.join(routes, "events.graphql"), "utf8").split("\n\n")[0] + "\n" + fragment;
})();

describe("a known document skips Apollo and answers the same", () => {
  it("without variables", async () => {
    const answer = await same(post({ query: "{ viewer { kind propertyGroupId } guests(limit: 3) { nodes { id givenName email } hasMore nextCursor } }" }), "served", 3);
    expect(answer.status).toBe(200);
    expect(JSON.parse(answer.body).data.guests.nodes).toHaveLength(3);
  });

  it("with variables and an operation name: the REST door's events timeline, of a guest with events and of one without", async () => {
    for (const guest of [A().guest_with_events, MISSING]) {
      const body = { query: EVENTS, operationName: "ListEvents", variables: { filter: { guestProfileId: guest }, limit: 100 } };
      if (guest === MISSING) {
        const answer = await send(post(body));
        expect(answer.way).toBe("served"); // known from the first guest's request
        expect(JSON.parse(answer.answer.body).data.events.data).toEqual([]);
        continue;
      }
      const answer = await same(post(body), "served", 3);
      expect(JSON.parse(answer.body).data.events.data.length).toBeGreaterThan(0);
    }
    // Other variables, the same document: still the fast path, and what Apollo answers for them.
    const other = { query: EVENTS, operationName: "ListEvents", variables: { filter: { guestProfileId: A().guest_with_events }, limit: 2 } };
    const fast = await send(post(other));
    expect(fast.way).toBe("served");
    const apollo = await send(post({ ...other, query: `${EVENTS}\n# through Apollo` }));
    expect(apollo.way).toBe("apollo");
    expect(fast.answer).toEqual(apollo.answer);
  });

  it("in the content type Accept asks for, and 406 for one Apollo does not write", async () => {
    const query = "{ viewer { kind } guests(limit: 1) { nodes { id } } }";
    const answer = await same(post({ query }, { headers: { Accept: "application/graphql-response+json" } }), "served");
    expect(answer.headers["content-type"]).toBe("application/graphql-response+json; charset=utf-8");
    expect((await same(post({ query: `${query} # json` }, { headers: { Accept: "application/json, */*" } }), "served")).headers["content-type"]).toBe(
      "application/json; charset=utf-8",
    );
    // Apollo runs the operation and then refuses to write it (406): known, and left to Apollo.
    expect((await same(post({ query: `${query} # html` }, { headers: { Accept: "text/html" } }), "declined")).status).toBe(406);
  });

  it("over GET with a preflight header", async () => {
    const query = "query Get($limit: Int) { guests(limit: $limit) { nodes { id email } } }";
    const get = () => t.api.get(`/graphql?query=${encodeURIComponent(query)}&variables=${encodeURIComponent(JSON.stringify({ limit: 2 }))}`).set("Authorization", `Bearer ${key()}`).set("apollo-require-preflight", "1");
    const answer = await same(get, "served");
    expect(JSON.parse(answer.body).data.guests.nodes).toHaveLength(2);
    // Without the header, Apollo's CSRF refusal, every time.
    const bare = () => t.api.get(`/graphql?query=${encodeURIComponent(query)}`).set("Authorization", `Bearer ${key()}`);
    expect((await same(bare, "apollo")).status).toBe(400);
  });
});

describe("what is not a plain success is answered as Apollo answers it", () => {
  it("variables that do not coerce (400)", async () => {
    const query = "query Coerce($limit: Int, $id: UUID) { guests(limit: $limit) { nodes { id } } guest1: guests(filter: { masterProfileId: $id }, limit: 1) { hasMore } }";
    const answer = await sameOnceKnown(post({ query, variables: { limit: "many" } }), post({ query, variables: { limit: 1 } }), "replayed");
    expect(answer.status).toBe(400);
    await sameOnceKnown(post({ query: `${query} `, variables: { limit: 1, id: "not-a-uuid" } }), post({ query: `${query} `, variables: { limit: 1 } }), "replayed");
  });

  it("a resolver's error (not_found)", async () => {
    const query = "query One($id: UUID!) { guest(id: $id) { id givenName } }";
    const answer = await sameOnceKnown(post({ query, variables: { id: MISSING } }), post({ query, variables: { id: A().guest_lookup.guest_id } }), "replayed");
    expect(JSON.parse(answer.body).errors[0].extensions.code).toBe("not_found");
  });

  it("a partial result (a nullable field that failed beside one that did not)", async () => {
    const query = "query Partial($id: UUID) { viewer { kind } guestContext(guestProfileId: $id) { __typename } }";
    const answer = await sameOnceKnown(post({ query, variables: {} }), post({ query, variables: { id: A().guest_lookup.guest_id } }), "replayed");
    const body = JSON.parse(answer.body);
    expect(body.data).toEqual({ viewer: { kind: "api_key" }, guestContext: null });
    expect(body.errors).toHaveLength(1);
  });

  it("a relation the caller has no scope for (forbidden)", async () => {
    const query = "{ guests(limit: 5) { nodes { id givenName reservations { id status } transactions { id kind } } hasMore } }";
    const answer = await sameOnceKnown(post({ query }, { token: A().credentials.api_key_limited }), post({ query }), "replayed");
    expect(JSON.parse(answer.body).errors[0].extensions.code).toBe("forbidden");
  });

  it("authentication failures: no token, a bad token, a token of another door", async () => {
    const query = "{ viewer { kind } }";
    const tokens = [null, "gcs_not_a_token", A().credentials.mcp_token, A().credentials.partner_token];
    const firsts = [];
    for (const token of tokens) firsts.push(await send(post({ query }, { token })));
    expect(firsts.map((f) => f.way)).toEqual(["apollo", "apollo", "apollo", "apollo"]);
    expect(firsts.map((f) => f.answer.status)).toEqual([401, 401, expect.any(Number), expect.any(Number)]);
    expect(firsts.every((f) => f.answer.status >= 400 && f.answer.status < 500)).toBe(true);
    expect((await send(post({ query }))).way).toBe("apollo"); // now known
    for (const [i, token] of tokens.entries()) {
      const again = await send(post({ query }, { token }));
      expect(again.way).toBe("declined");
      expect(again.answer).toEqual(firsts[i].answer);
    }
  });

  it("a variable-priced operation over the cost bound (400 query_too_complex)", async () => {
    const query = `query Cost($limit: Int) { guests(limit: $limit) { nodes { id givenName familyName email
      reservations { id kind status arrivalDate departureDate currency totalAmountMinor roomType bookingChannel confirmationNumber } } } }`;
    const answer = await sameOnceKnown(post({ query, variables: { limit: 500 } }), post({ query, variables: { limit: 1 } }), "declined");
    expect([answer.status, JSON.parse(answer.body).errors[0].extensions.code]).toEqual([400, "query_too_complex"]);
  });

  it("text a variable cannot hold (400 invalid_request, the input guard)", async () => {
    const query = "query Find($email: String) { guests(filter: { email: $email }, limit: 1) { nodes { id } } }";
    const answer = await sameOnceKnown(post({ query, variables: { email: "a\u0000@example.com" } }), post({ query, variables: { email: "nobody@example.com" } }), "declined");
    expect(answer.status).toBe(400);
  });

  it("a response over GCS_GRAPHQL_MAX_RESPONSE_BYTES (response_too_large)", async () => {
    const query = "query Big($limit: Int) { guests(limit: $limit) { nodes { id givenName familyName email createdAt updatedAt } } }";
    const answer = await sameOnceKnown(post({ query, variables: { limit: 12 } }, { app: capped }), post({ query, variables: { limit: 1 } }, { app: capped }), "replayed");
    expect(JSON.parse(answer.body).errors[0].extensions.code).toBe("response_too_large");
  });
});

describe("scope on the fast path", () => {
  const query = "query Scope { guests(limit: 50) { nodes { id propertyId } } }";
  const ids = (answer: Answer) => (JSON.parse(answer.body).data.guests.nodes as { id: string; propertyId: string }[]);

  it("a key of another group sees its own rows, never the group's that made the document known", async () => {
    const b = await same(post({ query }, { token: B().credentials.api_key }), "served");
    const a = await send(post({ query }));
    expect(a.way).toBe("served");
    const bIds = new Set(ids(b).map((g) => g.id));
    expect(ids(a.answer).some((g) => bIds.has(g.id))).toBe(false);
    expect((await send(post({ query }, { token: B().credentials.api_key }))).answer).toEqual(b);
  });

  it("a key pinned to a property, and a key narrowed by X-Property-Id, see that property's rows only", async () => {
    const pinned = A().credentials.api_key_pinned;
    const text = `${query} # pinned`;
    const answer = await same(post({ query: text }, { token: pinned.token }), "served");
    expect(ids(answer).length).toBeGreaterThan(0);
    expect(ids(answer).every((g) => g.propertyId === pinned.property_id)).toBe(true);
    const all = await send(post({ query: text }));
    expect(all.way).toBe("served");
    expect(ids(all.answer).some((g) => g.propertyId !== pinned.property_id)).toBe(true);

    const narrowed = await same(post({ query: `${query} # narrowed` }, { headers: { "X-Property-Id": pinned.property_id } }), "served");
    expect(ids(narrowed)).toEqual(ids(answer));
    // A property of another group: the scope's refusal, made while creating the context.
    const foreign = await send(post({ query: `${query} # narrowed` }, { headers: { "X-Property-Id": B().credentials.api_key_pinned.property_id } }));
    expect(foreign.way).toBe("declined");
    const apollo = await send(post({ query: `${query} # foreign` }, { headers: { "X-Property-Id": B().credentials.api_key_pinned.property_id } }));
    expect(apollo.way).toBe("apollo");
    expect(foreign.answer).toEqual(apollo.answer);
  });
});

describe("trusted documents and persisted queries", () => {
  it("with GCS_GRAPHQL_TRUSTED_DOCUMENTS: a listed document takes the fast path, any other is refused every time", async () => {
    const answer = await same(post({ query: TRUSTED, variables: { limit: 2 } }, { app: trusted }), "served", 3);
    expect(JSON.parse(answer.body).data.guests.nodes).toHaveLength(2);
    const refused = await same(post({ query: "{ viewer { kind } }" }, { app: trusted }), "apollo", 3);
    expect([refused.status, JSON.parse(refused.body).errors[0].extensions.code]).toEqual([400, "untrusted_document"]);
  });

  it("APQ: the hash with the text, then the hash alone", async () => {
    const query = "query Persisted($limit: Int) { guests(limit: $limit) { nodes { id familyName } } }";
    const persistedQuery = { version: 1, sha256Hash: documentHash(query) };
    const answer = await same(post({ query, variables: { limit: 2 }, extensions: { persistedQuery } }), "served");
    const hashOnly = await send(post({ variables: { limit: 2 }, extensions: { persistedQuery } }));
    expect(hashOnly.way).toBe("served");
    expect(hashOnly.answer).toEqual(answer);
    // Its errors too, from the hash alone.
    const failing = await send(post({ variables: { limit: "two" }, extensions: { persistedQuery } }));
    expect(failing.way).toBe("replayed");
    expect(failing.answer).toEqual((await send(post({ query: `${query} `, variables: { limit: "two" } }))).answer);
    // A hash Apollo does not hold, and a text under another hash: Apollo's refusals.
    const unknown = await same(post({ extensions: { persistedQuery: { version: 1, sha256Hash: documentHash("{ nothing }") } } }), "apollo");
    expect(JSON.parse(unknown.body).errors[0].extensions.code).toBe("PERSISTED_QUERY_NOT_FOUND");
    const mismatch = await same(post({ query, extensions: { persistedQuery: { version: 1, sha256Hash: documentHash("{ other }") } } }), "apollo");
    expect(mismatch.status).toBe(400);
  });
});

describe("the database down", () => {
  it("503 unavailable with Retry-After, as Apollo answers it", async () => {
    const query = "{ guests(limit: 2) { nodes { id } } }";
    expect((await send(post({ query }))).way).toBe("apollo");
    expect((await send(post({ query }))).way).toBe("served");
    await pg.halt();
    try {
      const apollo = await send(post({ query: `${query} # through Apollo` }));
      expect(apollo.way).toBe("apollo");
      expect([apollo.answer.status, apollo.answer.headers["retry-after"]]).toEqual([503, "2"]);
      const fast = await send(post({ query }));
      expect(["declined", "replayed"]).toContain(fast.way);
      expect(fast.answer).toEqual(apollo.answer);
    } finally {
      await pg.resume();
    }
  });
});
