// The JSON read path for /graphql (src/graphql/json-plan.ts): the documents it plans answer from one
// statement, byte for byte what the general executor writes for the same document; everything it
// cannot prove equal runs on the general executor. A document is sent twice: as written, and with
// `@include(if: true)` on its last field, which the planner refuses (any directive), so the second
// answer is the general executor's. The directive comes after every other token, so error
// locations are the same in both.
import { buildSchema, parse, print, getNamedType, getNullableType, isEnumType, isNonNullType, isObjectType } from "graphql";
import { Client } from "pg";
import { loadTypeDefs } from "../../src/graphql/schema-source";
import { GUEST, RESERVATION, TRANSACTION } from "../../src/graphql/row-types";
import { columnOf, tableOf, type SqlModel } from "../../src/data/models";
import { startTestApp, type TestApp } from "../helpers/app";
import { preparedOnLastConnection } from "../helpers/prepared-statements";
import { buildSchema as buildServiceSchema } from "../../src/graphql/schema";
import { prepareOperations, runRoute, type PreparedOperations } from "../../src/api/execute";
import { jsonPlan } from "../../src/graphql/json-plan";
import { toHttpError } from "../../src/http/http-errors";
import { routes } from "../../src/api/routes";
import { createContext } from "../../src/context";

let t: TestApp;
beforeAll(async () => {
  // Statement counts are compared between requests: each looks its token up (none remembered:
  // auth/remembered-credentials.ts, covered by remembered-credentials.test.ts).
  t = await startTestApp({ GCS_REMEMBER_CREDENTIALS: "false" });
});
afterAll(() => t.close());

const A = () => t.manifest.groups.A;
const post = (query: string, token: string, variables?: Record<string, unknown>) =>
  t.api.post("/graphql").set("Content-Type", "application/json").set("Authorization", `Bearer ${token}`).send({ query, variables });

/** The document on the general executor: `@include(if: true)` on its last field (the last `}` run closes it). */
const general = (query: string) => query.replace(/((?:\s*})+\s*)$/, " @include(if: true)$1");

const NESTED = `{ guests(limit: 30) { nodes { id givenName familyName email reservations { id confirmationNumber status arrivalDate departureDate totalAmountMinor currency } transactions { id kind category amountMinor currency occurredAt } } nextCursor hasMore } }`;

/**
 * The text of the guests page statement that ran last in the test's database, in any session
 * (pg_stat_activity keeps each session's last statement). Asked from the server itself, in another
 * database: so never from a session the app uses, through a pooler too.
 */
async function lastGuestPage(): Promise<string | undefined> {
  const server = new Client({ connectionString: process.env.GCS_TEST_SERVER_URL });
  await server.connect();
  try {
    const { rows } = await server.query(
      `SELECT query FROM pg_stat_activity WHERE datname = $1 AND query LIKE '%FROM guest_profiles t %' ORDER BY query_start DESC LIMIT 1`,
      [new URL(t.databaseUrl).pathname.slice(1)],
    );
    return rows[0]?.query;
  } finally {
    await server.end();
  }
}

/**
 * The guests page statement `send` makes, read from pg_stat_activity. The connection may run another
 * statement before the read (or close), so a missing page statement is asked for again, a few times.
 */
async function guestPageOf(send: () => Promise<unknown>): Promise<string | undefined> {
  for (let attempt = 0; attempt < 5; attempt++) {
    await send();
    const statement = await lastGuestPage();
    if (statement) return statement;
  }
  return undefined;
}

/** Sends both forms; expects the same status and body text, and returns them with each form's statement count. */
async function bothWays(query: string, token = A().credentials.api_key, variables?: Record<string, unknown>) {
  const fast = await post(query, token, variables);
  const slow = await post(general(query), token, variables);
  expect(fast.status).toBe(slow.status);
  expect(fast.text).toBe(slow.text);
  return { status: fast.status, body: fast.body, text: fast.text, fast: Number(fast.headers["x-sql-statements"]), slow: Number(slow.headers["x-sql-statements"]) };
}

describe("the JSON read path", () => {
  it("answers the nested page from one statement, as the general executor does", async () => {
    const r = await bothWays(NESTED); // bench/run.ts asks for 100; the test data has 40 guests per group
    expect(r.status).toBe(200);
    const nodes = r.body.data.guests.nodes as { reservations: unknown[]; transactions: unknown[] }[];
    expect(nodes).toHaveLength(30);
    expect(nodes.some((g) => g.reservations.length > 1) && nodes.some((g) => g.transactions.length > 1)).toBe(true);
    expect(r.body.data.guests.hasMore).toBe(true);
    // The credential and the page, against the credential, the page and one per relation.
    expect(r.fast).toBe(2);
    expect(r.slow).toBe(4);
  });

  it("is the same with aliases, fragments, __typename, every column, variables and the next page", async () => {
    const reservation = `id propertyId integrationId sourceId guestProfileId confirmationNumber kind status arrivalDate departureDate startsAt adults
      children roomType roomNumber rateCode spaceId bookingChannel totalAmountMinor currency specialRequests bookedAt cancelledAt createdAt updatedAt`;
    const transaction = "id propertyId integrationId sourceId guestProfileId reservationId kind category description amountMinor currency outlet occurredAt createdAt";
    const guest = "id propertyId integrationId sourceId masterProfileId givenName familyName email phone language countryCode city birthDate vipCode createdAt updatedAt";
    const query = `query Page($cursor: String) { page: guests(limit: 15, cursor: $cursor) { __typename more: hasMore nodes { ...G } nextCursor } }
      fragment G on Guest { __typename ${guest} stays: reservations { ${reservation} } ... on Guest { folio: transactions { __typename ${transaction} } } }`;
    const first = await bothWays(query);
    expect(first.body.data.page.nodes).toHaveLength(15);
    expect(first.fast).toBe(2);
    const second = await bothWays(query, A().credentials.api_key, { cursor: first.body.data.page.nextCursor });
    expect(second.body.data.page.nodes[0].id).not.toBe(first.body.data.page.nodes[0].id);
    expect(second.fast).toBe(2);
  });

  it("is the same for a key pinned to a property and with filters", async () => {
    const pinned = A().credentials.api_key_pinned;
    const r = await bothWays(NESTED, pinned.token);
    expect(r.body.data.guests.nodes.length).toBeGreaterThan(0);
    expect(r.fast).toBe(2);
    const { integration_id, source_id } = A().guest_lookup;
    const bySource = await bothWays(`{ guests(filter: { integrationId: "${integration_id}", sourceId: "${source_id}" }) { nodes { id sourceId reservations { id } } hasMore } }`);
    expect(bySource.body.data.guests.nodes).toHaveLength(1);
  });

  it("answers the executor's errors: a bad limit, a foreign cursor, source_id alone, variables that do not coerce", async () => {
    expect((await bothWays(NESTED)).fast).toBe(2); // the same document without the error takes the JSON path
    for (const query of [
      `{ guests(limit: 0) { nodes { id } hasMore } }`,
      `{ guests(cursor: "bm90LmEuY3Vyc29y.AAAAAAAAAAAAAAAAAAAAAA") { nodes { id } hasMore } }`,
      `{ guests(filter: { sourceId: "x" }) { nodes { id } hasMore } }`,
    ]) {
      const r = await bothWays(query);
      expect(r.body.data).toBeNull();
      expect(r.body.errors).toHaveLength(1);
    }
    const badVariable = await bothWays(`query($limit: Int) { guests(limit: $limit) { nodes { id } hasMore } }`, A().credentials.api_key, { limit: "many" });
    expect(badVariable.status).toBe(400);
  });

  it("leaves a caller without a relation's scope to the executor: partial data and its errors", async () => {
    expect((await bothWays(NESTED)).fast).toBe(2); // a caller with every scope takes the JSON path
    const r = await bothWays(NESTED, A().credentials.api_key_limited);
    expect(r.body.errors.length).toBeGreaterThan(0);
    expect(r.body.errors[0].extensions.code).toBe("forbidden");
    expect(r.fast).toBe(r.slow);
  });

  it("runs on the executor what it cannot read as columns (a computed field, a relation it does not know)", async () => {
    expect((await bothWays(`{ guests(limit: 5) { nodes { id reservations { id } } } }`)).fast).toBe(2);
    for (const field of ["nights", "guest { id }"]) {
      const r = await bothWays(`{ guests(limit: 5) { nodes { id reservations { id ${field} } } } }`);
      expect(r.fast).toBe(r.slow);
    }
  });

  it("reads a flat page (columns only, the cursor's fields among them) as row objects, not PostgreSQL's JSON", async () => {
    const flat = `{ guests(limit: 12) { nodes { __typename at: createdAt id givenName email vipCode } hasMore nextCursor } }`;
    const first = await bothWays(flat);
    expect(first.body.data.guests.nodes).toHaveLength(12);
    expect(first.body.data.guests.nodes[0]).toEqual(expect.objectContaining({ __typename: "Guest", at: expect.any(String) }));
    // bothWays ran the general executor last. Read once: behind PgBouncer the server connection
    // may run another statement before a second read.
    const statement = await guestPageOf(() => post(flat, A().credentials.api_key));
    expect(statement).toMatch(/AS "at".*AS "givenName"/s);
    expect(statement).not.toContain("row_to_json");
    const next = await bothWays(flat.replace("limit: 12", `limit: 12, cursor: "${first.body.data.guests.nextCursor}"`));
    expect(next.body.data.guests.nodes[0].id).not.toBe(first.body.data.guests.nodes[0].id);
    // Without createdAt the cursor cannot be read from the row: PostgreSQL writes the JSON.
    const withoutKey = `{ guests(limit: 12) { nodes { id givenName } nextCursor } }`;
    await bothWays(withoutKey);
    expect(await guestPageOf(() => post(withoutKey, A().credentials.api_key))).toContain("row_to_json");
  });

  it("keeps a member aliased __proto__ on both paths, as a member (graphql-jit is patched: an object literal's __proto__ key sets the prototype)", async () => {
    for (const query of [
      `{ guests(limit: 2) { nodes { __proto__: givenName id createdAt } } }`,
      `{ __proto__: guests(limit: 2) { nodes { id createdAt } __proto__x: hasMore } }`,
      `{ guests(limit: 2) { nodes { id __proto__: reservations { __proto__: id } } } }`,
    ]) {
      const r = await bothWays(query);
      expect(r.status).toBe(200);
      expect(r.text).toContain('"__proto__":');
    }
    // And where only the general executor answers (a relation the JSON path does not know).
    const res = await post(`{ guests(limit: 1) { nodes { __proto__: givenName property { id } } } }`, A().credentials.api_key);
    expect(Object.keys(res.body.data.guests.nodes[0])).toEqual(["__proto__", "property"]);
  });

  it("prepares the page statement on the connection and runs it on its generic plan, so PostgreSQL plans it once per connection", async () => {
    // The planned request alone (bothWays would run the general executor last, on connections of its own).
    const fast = await post(NESTED, A().credentials.api_key);
    expect([fast.status, Number(fast.headers["x-sql-statements"])]).toEqual([200, 2]);
    const page = (await preparedOnLastConnection(t.db.readerPool)).find((r) => /^gcs_[0-9a-f]{32}$/.test(r.name) && r.statement.includes("row_to_json"));
    expect(page).toBeDefined();
    // Left to itself, PostgreSQL plans a statement whose LIMIT is a parameter afresh on every execution.
    expect({ generic: page!.generic > 0, custom: page!.custom }).toEqual({ generic: true, custom: 0 });
  });

  it("plans a page filtered on updatedSince afresh: its kept plan would walk the whole group", async () => {
    const since = NESTED.replace("guests(limit: 30)", 'guests(limit: 30, filter: { updatedSince: "2000-01-01T00:00:00Z" })');
    const res = await post(since, A().credentials.api_key);
    expect([res.status, Number(res.headers["x-sql-statements"])]).toEqual([200, 2]);
    expect(res.body.data.guests.nodes).toHaveLength(30);
    expect((await preparedOnLastConnection(t.db.readerPool)).filter((r) => r.statement.includes("updated_at >="))).toEqual([]);
  });

  it("holds the response cap", async () => {
    const capped = await startTestApp({ GCS_REMEMBER_CREDENTIALS: "false", GCS_GRAPHQL_MAX_RESPONSE_BYTES: "4096" });
    try {
      const res = await capped.api.post("/graphql").set("Content-Type", "application/json").set("Authorization", `Bearer ${A().credentials.api_key}`).send({ query: NESTED });
      expect(res.status).toBe(400);
      expect(res.body.errors[0].extensions.code).toBe("response_too_large");
    } finally {
      await capped.close();
    }
  });
});

describe("/v1/guests on the JSON read path", () => {
  const route = routes.find((r) => r.path === "/v1/guests")!;
  const schema = buildServiceSchema();
  const planned = prepareOperations(schema);
  // The route's operation with `@include(if: true)` on its last field: the planner refuses it, so it runs compiled.
  const compiled = new Map([[route.operation, parse(general(print(planned.get(route.operation)!)))]]);

  /** The route's body both ways in-process (JSON read path, compiled), as text or the error's HTTP answer. */
  async function bothWays(query: Record<string, string | undefined>, token = A().credentials.api_key) {
    const answer = async (operations: PreparedOperations) => {
      const context = await createContext(t.services, { authorization: `Bearer ${token}`, propertyHeader: undefined, surface: "rest", requiredScope: route.scope });
      try {
        return { status: 200, text: JSON.stringify(await runRoute(schema, operations, route, context, { path: {}, query })) };
      } catch (err) {
        const { status, body } = toHttpError(err);
        return { status, text: JSON.stringify(body) };
      }
    };
    const fast = await answer(planned);
    const slow = await answer(compiled);
    expect(fast.status).toBe(slow.status);
    expect(fast.text).toBe(slow.text);
    return fast;
  }

  it("writes the page PostgreSQL wrote, byte for byte the compiled answer, for every filter and the next pages", async () => {
    expect(jsonPlan(schema, planned.get(route.operation)!)).not.toBeNull();
    expect(jsonPlan(schema, compiled.get(route.operation)!)).toBeNull();
    const first = await bothWays({ limit: "7" });
    const page = JSON.parse(first.text);
    expect(page.data).toHaveLength(7);
    expect(page.has_more).toBe(true);
    const second = await bothWays({ limit: "7", cursor: page.next_cursor });
    expect(JSON.parse(second.text).data[0].id).not.toBe(page.data[0].id);

    const guest = page.data.find((g: { master_profile_id: string | null }) => g.master_profile_id) ?? page.data[0];
    const { integration_id, source_id } = A().guest_lookup;
    for (const query of [
      {},
      { limit: "500" },
      { integration_id, source_id },
      { email: guest.email.toUpperCase() },
      { property_id: guest.property_id, limit: "3" },
      { master_profile_id: guest.master_profile_id ?? guest.id },
      { updated_since: "2020-01-01T00:00:00Z", limit: "5" },
      { updated_since: "2999-01-01T00:00:00Z" },
    ]) {
      const r = await bothWays(query);
      expect(r.status).toBe(200);
    }
    expect(JSON.parse((await bothWays({ integration_id, source_id })).text).data).toHaveLength(1);
    // A key pinned to a property, walked to its end.
    let cursor: string | undefined;
    let walked = 0;
    do {
      const r = await bothWays({ limit: "9", ...(cursor ? { cursor } : {}) }, A().credentials.api_key_pinned.token);
      const body = JSON.parse(r.text);
      walked += body.data.length;
      cursor = body.next_cursor ?? undefined;
    } while (cursor);
    expect(walked).toBeGreaterThan(0);
  });

  it("answers the compiled path's errors: a bad limit, a foreign cursor, source_id alone, a bad uuid", async () => {
    expect(JSON.parse((await bothWays({ limit: "501" })).text).data.length).toBeLessThanOrEqual(500); // clamped, as the spec says
    for (const query of [{ limit: "0" }, { limit: "-1" }, { cursor: "bm90LmEuY3Vyc29y.AAAAAAAAAAAAAAAAAAAAAA" }, { source_id: "x" }, { property_id: "nope" }]) {
      const r = await bothWays(query);
      expect(r.status).toBe(400);
    }
    // Another group's cursor.
    const b = JSON.parse((await bothWays({ limit: "2" }, t.manifest.groups.B.credentials.api_key)).text);
    expect((await bothWays({ cursor: b.next_cursor })).status).toBe(400);
  });

  it("is what /v1/guests sends, from two statements: the credential and the page's row objects, keys as the answer names them", async () => {
    const { text } = await bothWays({ limit: "25" });
    const res = await t.api.get("/v1/guests?limit=25").set("Authorization", `Bearer ${A().credentials.api_key}`);
    expect(res.status).toBe(200);
    expect(res.headers["content-type"]).toBe("application/json; charset=utf-8");
    expect(res.text).toBe(text);
    expect(res.headers["x-sql-statements"]).toBe("2");
    // The connection may run another statement (a rate-limit sync) before the read: ask again if so.
    const statement = await guestPageOf(() => t.api.get("/v1/guests?limit=25").set("Authorization", `Bearer ${A().credentials.api_key}`));
    expect(statement).toContain('AS "given_name"');
    expect(statement).not.toContain("row_to_json");
  });
});

describe("what makes its text the executor's", () => {
  const schema = buildSchema(loadTypeDefs());
  const TYPES: [string, SqlModel, Record<string, string>][] = [
    ["Guest", "GuestProfile", GUEST.shape],
    ["Reservation", "Reservation", RESERVATION.shape],
    ["Transaction", "Transaction", TRANSACTION.shape],
  ];
  // The PostgreSQL types whose JSON is the text each scalar's serialiser writes for the value pg returns.
  const STORED_AS: Record<string, string[]> = {
    String: ["text", "character varying", "character"],
    UUID: ["uuid"],
    Int: ["integer", "smallint"],
    Long: ["bigint"],
    Boolean: ["boolean"],
    DateTime: ["timestamp with time zone"],
    Date: ["date"],
  };

  it("reads only columns whose type, nullability and enum values the GraphQL field serialises unchanged", async () => {
    const db = new Client({ connectionString: t.databaseUrl });
    await db.connect();
    try {
      const problems: string[] = [];
      for (const [typeName, model, shape] of TYPES) {
        const type = schema.getType(typeName);
        if (!isObjectType(type)) throw new Error(typeName);
        for (const [name, field] of Object.entries(type.getFields())) {
          if (!Object.hasOwn(shape, name)) continue;
          const column = columnOf(model, name);
          const { rows } = await db.query(
            `SELECT data_type, is_nullable, udt_name FROM information_schema.columns WHERE table_schema = 'public' AND table_name = $1 AND column_name = $2`,
            [tableOf(model), column],
          );
          const [c] = rows;
          const leaf = getNamedType(field.type);
          if (isNonNullType(field.type) && c.is_nullable !== "NO") problems.push(`${typeName}.${name} is non-null, ${column} is nullable`);
          const nullable = getNullableType(field.type);
          if (isEnumType(nullable)) {
            const { rows: labels } = await db.query(`SELECT unnest(enum_range(NULL::"${c.udt_name}"))::text AS label`);
            const values = new Set(nullable.getValues().map((v) => v.name));
            for (const { label } of labels) if (!values.has(label)) problems.push(`${typeName}.${name}: ${label} is not a value of ${leaf.name}`);
          } else if (!(STORED_AS[leaf.name] ?? []).includes(c.data_type)) {
            problems.push(`${typeName}.${name}: ${leaf.name} stored as ${c.data_type}`);
          }
        }
      }
      expect(problems).toEqual([]);
    } finally {
      await db.end();
    }
  });
});
