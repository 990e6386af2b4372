// Who on a table may be contacted (issue 42): GET /v1/tables/{id}/reachability, GraphQL
// Table.reachability and tableReachability, and the MCP tool table_reachability. Every count is
// checked member by member against contactPermission (check_contact_permission); the answer keeps
// to the caller's group and pinned property; the statement count does not grow with the table.
import { Client as Pg } from "pg";
import { Client } from "@modelcontextprotocol/sdk/client/index.js";
import { StreamableHTTPClientTransport } from "@modelcontextprotocol/sdk/client/streamableHttp.js";
import type { CallToolResult } from "@modelcontextprotocol/sdk/types.js";
import { normaliseContact } from "../../../src/consent/precedence";
import { listenTestApp, startTestApp, type TestApp } from "../../helpers/app";

let t: TestApp;
let pg: Pg;
let server: Awaited<ReturnType<typeof listenTestApp>>;
let mcp: Client;
beforeAll(async () => {
  // Statement counts are compared between requests: each looks its token up (none remembered).
  t = await startTestApp({ GCS_REMEMBER_CREDENTIALS: "false" });
  pg = new Pg({ connectionString: t.databaseUrl });
  await pg.connect();
  server = await listenTestApp(t);
  mcp = new Client({ name: "gcs-test", version: "1.0.0" });
  await mcp.connect(
    new StreamableHTTPClientTransport(new URL(`${server.base}/mcp`), { requestInit: { headers: { Authorization: `Bearer ${A().credentials.api_key}` } } }),
  );
});
afterAll(async () => {
  await mcp.close();
  await server.close();
  await pg.end();
  await t.close();
});

const A = () => t.manifest.groups.A;
const B = () => t.manifest.groups.B;
const PURPOSE = "email_marketing";

// eslint-disable-next-line @typescript-eslint/no-explicit-any
type Json = Record<string, any>;

const reach = (tableId: string, query: string, token = A().credentials.api_key) =>
  t.api.get(`/v1/tables/${tableId}/reachability${query}`).set("Authorization", `Bearer ${token}`);

async function reachability(tableId: string, token?: string, purpose = PURPOSE): Promise<Json> {
  const res = await reach(tableId, `?purpose=${purpose}`, token);
  expect(res.body.error).toBeUndefined();
  expect(res.status).toBe(200);
  return res.body.data;
}

async function graphql(query: string, variables: Json, token = A().credentials.api_key) {
  const res = await t.api.post("/graphql").set("Authorization", `Bearer ${token}`).send({ query, variables });
  return res.body as { data?: Json; errors?: { message: string; extensions?: { code?: string } }[] };
}

/** check_contact_permission's status for one contact point. */
async function permission(type: "email" | "phone", value: string, purpose = PURPOSE): Promise<string> {
  const { data, errors } = await graphql(`query($e: String, $p: String, $purpose: String!) { contactPermission(email: $e, phone: $p, purpose: $purpose) { status } }`, {
    [type === "email" ? "e" : "p"]: value,
    purpose,
  });
  expect(errors).toBeUndefined();
  return data!.contactPermission.status;
}

/**
 * The counts, asked member by member: each member's own e-mail and phone (its guest or master
 * profile's, as in the members list) through check_contact_permission.
 */
async function memberByMember(tableId: string, token = A().credentials.api_key, purpose = PURPOSE) {
  const members: Json[] = [];
  for (let offset = 0; ; ) {
    const res = await t.api.get(`/v1/tables/${tableId}/members?limit=500&offset=${offset}`).set("Authorization", `Bearer ${token}`);
    expect(res.status).toBe(200);
    members.push(...res.body.data);
    if (!res.body.has_more) break;
    offset = res.body.next_offset;
  }
  const counts: Json = { email: zero(), phone: zero() };
  const reachable = { email: 0, phone: 0, any: 0 };
  const persons = new Set<string>();
  for (const m of members) {
    const record = m.guest ?? m.master_profile;
    persons.add(record ? (m.guest ? (record.master_profile_id ?? record.id) : record.id) : m.member_id);
    let any = false;
    for (const type of ["email", "phone"] as const) {
      const value = record?.[type] ? normaliseContact(type, record[type]) : null;
      const status = value === null ? "no_contact" : await permission(type, value, purpose);
      counts[type][status]++;
      if (status === "granted") {
        reachable[type]++;
        any = true;
      }
    }
    if (any) reachable.any++;
  }
  return { member_count: members.length, person_count: persons.size, by_contact_type: counts, reachable };
}

const zero = () => ({ granted: 0, withdrawn: 0, denied: 0, unknown: 0, no_contact: 0 });

let batches = 0;
/**
 * A curated table of group A of `n` new people written straight to the database (guest profiles
 * with master profiles, or the master profiles themselves), with e-mail consent that cycles through
 * granted, withdrawn, denied, granted-then-withdrawn and none, a granted phone for every third, and
 * no phone for every fourth.
 */
async function tableOf(n: number, memberType: "guest_profile" | "master_profile" = "guest_profile") {
  const batch = ++batches;
  const integration = A().integrations.find((i) => i.property_id === A().properties[0])!;
  const { rows } = await pg.query(
    `WITH p AS (SELECT i, gen_random_uuid() AS master, gen_random_uuid() AS guest, 'reach' || $1 || '-' || i AS tag,
                  CASE WHEN i % 4 = 0 THEN NULL ELSE '+44 77 ' || lpad($1::text, 2, '0') || lpad(i::text, 5, '0') END AS phone FROM generate_series(1, $2) i),
     m AS (INSERT INTO master_profiles (id, property_group_id, given_name, family_name, email, phone)
           SELECT master, $3, 'Reach', tag, upper(tag) || '@Reach.example', phone FROM p),
     g AS (INSERT INTO guest_profiles (id, property_group_id, property_id, integration_id, source_id, master_profile_id, given_name, family_name, email, phone)
           SELECT guest, $3, $4, $5, tag, master, 'Reach', tag, upper(tag) || '@Reach.example', phone FROM p),
     o AS (INSERT INTO consent_observations (id, property_group_id, property_id, contact_type, contact_value, purpose, channel, status, source, observed_at)
           SELECT gen_random_uuid(), $3, CASE WHEN s.n = 1 THEN $4::uuid END, 'email'::"ContactType", tag || '@reach.example', $6, 'email', s.status::"ConsentStatus", 'test', now() - s.n * interval '1 day'
           FROM p CROSS JOIN LATERAL (VALUES
             (CASE i % 5 WHEN 0 THEN 'granted' WHEN 1 THEN 'withdrawn' WHEN 2 THEN 'denied' WHEN 3 THEN 'granted' END, 1),
             (CASE i % 5 WHEN 3 THEN 'withdrawn' END, 2)) s(status, n)
           WHERE s.status IS NOT NULL
           UNION ALL
           SELECT gen_random_uuid(), $3, NULL, 'phone'::"ContactType", '+4477' || lpad($1::text, 2, '0') || lpad(i::text, 5, '0'), $6, 'sms', 'granted'::"ConsentStatus", 'test', now()
           FROM p WHERE i % 3 = 0 AND phone IS NOT NULL)
     SELECT CASE WHEN $7 = 'guest_profile' THEN guest ELSE master END AS id FROM p ORDER BY i`,
    [batch, n, A().id, integration.property_id, integration.id, PURPOSE, memberType],
  );
  const tableId = (await pg.query("SELECT gen_random_uuid() AS id")).rows[0].id as string;
  await pg.query(
    `INSERT INTO tables (id, property_group_id, name, kind, member_type) VALUES ($1, $2, $3, 'curated', $4::"MemberType")`,
    [tableId, A().id, `reachability ${batch}`, memberType],
  );
  await pg.query(
    `INSERT INTO table_members (table_id, property_group_id, member_id, position) SELECT $1, $2, m, n FROM unnest($3::uuid[]) WITH ORDINALITY AS x(m, n)`,
    [tableId, A().id, rows.map((r) => r.id)],
  );
  return tableId;
}

describe("GET /v1/tables/{id}/reachability", () => {
  it("answers the Welcome-back question in one call: the member-by-member verdicts of check_contact_permission, beside the destinations' state", async () => {
    const tableId = A().tables.bound;
    const answer = await reachability(tableId);
    const expected = await memberByMember(tableId);
    expect(answer).toMatchObject({ table_id: tableId, purpose: PURPOSE, member_type: "guest_profile", ...expected });
    expect(answer.member_count).toBeGreaterThan(0);
    for (const type of ["email", "phone"]) {
      const c = answer.by_contact_type[type];
      expect(c.granted + c.withdrawn + c.denied + c.unknown + c.no_contact).toBe(answer.member_count);
    }
    const table = await t.api.get(`/v1/tables/${tableId}`).set("Authorization", `Bearer ${A().credentials.api_key}`);
    expect(answer.destinations).toEqual(
      table.body.data.bindings.map((b: Json) => ({ provider: b.provider, state: b.state, lag: b.lag, last_flush_at: b.last_flush_at, last_error: b.last_error })),
    );
    expect(answer.destinations.length).toBeGreaterThan(0);
  });

  it("counts every consent status and missing contact points exactly, for guest profile and master profile members", async () => {
    for (const memberType of ["guest_profile", "master_profile"] as const) {
      const tableId = await tableOf(20, memberType);
      const answer = await reachability(tableId);
      // i % 5: 0 granted, 1 withdrawn, 2 denied, 3 granted then withdrawn, 4 none (4 each of 20).
      expect(answer.by_contact_type.email).toEqual({ granted: 4, withdrawn: 8, denied: 4, unknown: 4, no_contact: 0 });
      // Phones: none for i % 4 = 0 (5); granted for i % 3 = 0 among the others (3, 6, 9, 15, 18); unknown for the other 10.
      expect(answer.by_contact_type.phone).toEqual({ granted: 5, withdrawn: 0, denied: 0, unknown: 10, no_contact: 5 });
      expect(answer).toMatchObject({ member_type: memberType, member_count: 20, person_count: 20 });
      expect(answer).toMatchObject(await memberByMember(tableId));
    }
  });

  it("counts a person once in person_count when two of their guest profiles are members", async () => {
    const master = A().master_with_two_guests;
    const { rows } = await pg.query("SELECT id FROM guest_profiles WHERE master_profile_id = $1", [master]);
    const tableId = (await pg.query("SELECT gen_random_uuid() AS id")).rows[0].id as string;
    await pg.query(`INSERT INTO tables (id, property_group_id, name, kind, member_type) VALUES ($1, $2, 'one person twice', 'curated', 'guest_profile')`, [tableId, A().id]);
    await pg.query(
      `INSERT INTO table_members (table_id, property_group_id, member_id, position) SELECT $1, $2, m, n FROM unnest($3::uuid[]) WITH ORDINALITY AS x(m, n)`,
      [tableId, A().id, rows.map((r) => r.id)],
    );
    const answer = await reachability(tableId);
    expect(answer).toMatchObject({ member_count: rows.length, person_count: 1 });
    expect(answer).toMatchObject(await memberByMember(tableId));
  });

  it("counts a filter-defined table's current selection", async () => {
    const answer = await reachability(A().tables.unbound);
    const preview = await t.api.get(`/v1/tables/${A().tables.unbound}/members?include_total=true`).set("Authorization", `Bearer ${A().credentials.api_key}`);
    expect(answer.member_count).toBe(preview.body.total_count);
    expect(answer.member_count).toBeGreaterThan(0);
    // Its document selects guests whose e-mail marketing consent is granted.
    expect(answer.by_contact_type.email.granted).toBe(answer.member_count);
    expect(answer.destinations).toEqual([]);
    expect(answer).toMatchObject(await memberByMember(A().tables.unbound));
  });

  it("refuses a missing or unknown purpose and a bad id with a clear 400, an unknown table with 404", async () => {
    const missing = await reach(A().tables.bound, "");
    expect(missing.status).toBe(400);
    expect(missing.body).toEqual({ error: "invalid_request", detail: "purpose is required, e.g. purpose=email_marketing" });
    const unknown = await reach(A().tables.bound, "?purpose=newsletter_typo");
    expect(unknown.status).toBe(400);
    expect(unknown.body.detail).toMatch(/^purpose "newsletter_typo" is not one this property group records consent for; known purposes: .*email_marketing/);
    const { errors } = await graphql(`{ contactPermission(email: "x@example.com", purpose: "newsletter_typo") { status } }`, {});
    expect(errors![0].message).toBe(unknown.body.detail);
    const empty = await reach(A().tables.bound, "?purpose=");
    expect(empty.status).toBe(400);
    const badId = await reach("not-a-uuid", "?purpose=email_marketing");
    expect(badId.status).toBe(400);
    expect(badId.body.detail).toMatch(/^id must be a uuid/);
    const none = await reach("00000000-0000-4000-8000-000000000000", "?purpose=email_marketing");
    expect(none.status).toBe(404);
    expect(none.body.error).toBe("not_found");
    const extra = await reach(A().tables.bound, "?purpose=email_marketing&purpse=x");
    expect(extra.status).toBe(400);
  });

  it("keeps to the caller's group and, for a pinned credential, to the members at its property", async () => {
    // Another group's table is not there.
    const other = await reach(A().tables.bound, `?purpose=${PURPOSE}`, B().credentials.api_key);
    expect(other.status).toBe(404);
    // B's own table answers B's members.
    const ofB = await reachability(B().tables.bound, B().credentials.api_key);
    expect(ofB).toMatchObject(await memberByMember(B().tables.bound, B().credentials.api_key));

    // Pinned: the group-wide table's members at the pinned property only, counted as its members list shows them.
    const pinned = A().credentials.api_key_pinned;
    const all = await reachability(A().tables.bound);
    const here = await reachability(A().tables.bound, pinned.token);
    const expected = await memberByMember(A().tables.bound, pinned.token);
    expect(here).toMatchObject(expected);
    const { rows } = await pg.query(
      "SELECT count(*)::int AS n FROM table_members t JOIN guest_profiles g ON g.id = t.member_id WHERE t.table_id = $1 AND g.property_id = $2",
      [A().tables.bound, pinned.property_id],
    );
    expect(here.member_count).toBe(rows[0].n);
    expect(here.member_count).toBeLessThan(all.member_count);
  });

  it("reads a constant number of SQL statements whatever the table's size", async () => {
    const statements = async (tableId: string) => {
      const res = await reach(tableId, `?purpose=${PURPOSE}`);
      expect(res.status).toBe(200);
      return Number(res.headers["x-sql-statements"]);
    };
    const five = await statements(await tableOf(5));
    expect(five).toBeGreaterThan(0);
    expect(await statements(await tableOf(50))).toBe(five);
    expect(await statements(await tableOf(400))).toBe(five);
  });
});

describe("reachability is counted in SQL, priced as an aggregate and one table per request", () => {
  it("counts 20,000 members in a constant number of statements (a few integers reach Node)", async () => {
    const small = await tableOf(5);
    const large = await tableOf(20_000);
    const timed = async (tableId: string) => {
      const started = performance.now();
      const res = await reach(tableId, `?purpose=${PURPOSE}`);
      expect(res.status).toBe(200);
      return { statements: Number(res.headers["x-sql-statements"]), ms: performance.now() - started, body: res.body.data };
    };
    const few = await timed(small);
    const many = await timed(large);
    expect(many.statements).toBe(few.statements);
    // i % 5 cycles e-mail consent (4,000 each), i % 4 = 0 has no phone, i % 3 = 0 of the others a granted one.
    expect(many.body.by_contact_type.email).toEqual({ granted: 4000, withdrawn: 8000, denied: 4000, unknown: 4000, no_contact: 0 });
    expect(many.body.by_contact_type.phone).toEqual({ granted: 5000, withdrawn: 0, denied: 0, unknown: 10000, no_contact: 5000 });
    expect(many.body.member_count).toBe(20_000);
    console.log(`reachability of 20,000 members: ${many.ms.toFixed(0)} ms, ${many.statements} statements`);
    expect(many.ms).toBeLessThan(5000);
  });

  it("a phone stored without its country code is no contact, as check_contact_permission refuses it; an e-mail is read trimmed of any whitespace", async () => {
    const tableId = await tableOf(4);
    const { rows } = await pg.query("SELECT member_id FROM table_members WHERE table_id = $1 ORDER BY position", [tableId]);
    await pg.query("UPDATE guest_profiles SET phone = '07700 900123' WHERE id = $1", [rows[0].member_id]);
    // i = 1 (withdrawn e-mail) and i = 2 (denied) with a tab and a newline around their e-mails: still decided.
    await pg.query("UPDATE guest_profiles SET email = E'\\t' || email || E'\\n' WHERE id = ANY($1::uuid[])", [[rows[0].member_id, rows[1].member_id]]);
    const answer = await reachability(tableId);
    expect(answer).toMatchObject(await memberByMember(tableId));
    expect(answer.by_contact_type.email).toEqual({ granted: 0, withdrawn: 2, denied: 1, unknown: 1, no_contact: 0 });
    // i = 1, 2, 3 had phones; the first has none usable now; i = 3 stays granted.
    expect(answer.by_contact_type.phone).toEqual({ granted: 1, withdrawn: 0, denied: 0, unknown: 1, no_contact: 2 });
  });

  it("refuses Table.reachability inside a list of tables, and prices both fields as aggregates", async () => {
    const listed = await graphql(`{ tables(limit: 2) { nodes { reachability(purpose: "email_marketing") { memberCount } } } }`, {});
    expect(listed.errors![0].extensions!.code).toBe("invalid_request");
    expect(listed.errors![0].message).toMatch(/one table at a time/);
    const one = await graphql(`query($id: UUID!) { table(id: $id) { reachability(purpose: "email_marketing") { memberCount } } }`, { id: A().tables.bound });
    expect(one.errors).toBeUndefined();
    // Aliased 40 times, the root field costs what 40 aggregates cost (40 × 500): over the cost bound, refused before it runs.
    const aliased = Array.from({ length: 40 }, (_, i) => `a${i}: tableReachability(tableId: $id, purpose: "email_marketing") { memberCount }`).join(" ");
    const res = await t.api.post("/graphql").set("Authorization", `Bearer ${A().credentials.api_key}`).send({ query: `query($id: UUID!) { ${aliased} }`, variables: { id: A().tables.bound } });
    expect(res.status).toBe(400);
    expect(JSON.stringify(res.body)).toMatch(/cost/i);
  });
});

describe("GraphQL and MCP table_reachability", () => {
  it("answer what REST answers", async () => {
    const rest = await reachability(A().tables.bound);
    const fields = `tableId purpose memberType memberCount personCount
      byContactType { email { granted withdrawn denied unknown noContact } phone { granted withdrawn denied unknown noContact } }
      reachable { email phone any } destinations { provider state lag lastFlushAt lastError }`;
    const viaTable = await graphql(`query($id: UUID!) { table(id: $id) { reachability(purpose: "email_marketing") { ${fields} } } }`, { id: A().tables.bound });
    const viaRoot = await graphql(`query($id: UUID!) { tableReachability(tableId: $id, purpose: "email_marketing") { ${fields} } }`, { id: A().tables.bound });
    expect(viaTable.errors).toBeUndefined();
    expect(viaTable.data!.table.reachability).toEqual(viaRoot.data!.tableReachability);
    const g = viaRoot.data!.tableReachability;
    expect([g.memberCount, g.personCount, g.byContactType.email.noContact, g.reachable]).toEqual([rest.member_count, rest.person_count, rest.by_contact_type.email.no_contact, rest.reachable]);

    const result = (await mcp.callTool({ name: "table_reachability", arguments: { id: A().tables.bound, purpose: PURPOSE } })) as CallToolResult;
    expect(result.isError).toBeFalsy();
    expect(JSON.parse((result.content[0] as { text: string }).text)).toEqual({ data: rest });
  });

  it("refuse a missing purpose in their own words, and the tool stays within its budget of 600 characters", async () => {
    const { errors } = await graphql(`query($id: UUID!) { table(id: $id) { reachability(purpose: "nope_purpose") { memberCount } } }`, { id: A().tables.bound });
    expect(errors![0]).toMatchObject({ extensions: { code: "invalid_request" } });
    const missing = (await mcp.callTool({ name: "table_reachability", arguments: { id: A().tables.bound } })) as CallToolResult;
    expect(missing.isError).toBe(true);
    expect((missing.content[0] as { text: string }).text).toMatch(/purpose is required/);
    const { tools } = await mcp.listTools();
    const tool = tools.find((x) => x.name === "table_reachability")!;
    expect(tool.inputSchema.required).toEqual(["id", "purpose"]);
    expect(JSON.stringify(tool).length).toBeLessThanOrEqual(600);
  });
});
