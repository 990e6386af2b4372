// Many guests at once (issue 42): POST /v1/guests/lookup, GraphQL lookupGuests and the MCP tool
// lookup_guests, on the fixtures' data. Each person's row is checked against what the one-person
// reads answer (guestContext, contactPermission); inputs that find nobody are listed; a pinned
// credential and another group see only their own; the statement count does not grow with the inputs.
import { Client as Pg } from "pg";
import { Client } from "@modelcontextprotocol/sdk/client/index.js";
import { StreamableHTTPClientTransport } from "@modelcontextprotocol/sdk/client/streamableHttp.js";
import type { CallToolResult } from "@modelcontextprotocol/sdk/types.js";
import { listenTestApp, startTestApp, type TestApp } from "../../helpers/app";

let t: TestApp;
let pg: Pg;
let server: Awaited<ReturnType<typeof listenTestApp>>;
let mcp: Client;
beforeAll(async () => {
  t = await startTestApp();
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
const UNKNOWN_ID = "00000000-0000-4000-8000-000000000000";

// eslint-disable-next-line @typescript-eslint/no-explicit-any
type Json = Record<string, any>;

const lookup = (body: unknown, token = A().credentials.api_key) =>
  t.api.post("/v1/guests/lookup").set("Authorization", `Bearer ${token}`).send(body as object);

async function found(body: unknown, token?: string): Promise<Json> {
  const res = await lookup(body, token);
  expect(res.body.error).toBeUndefined();
  expect(res.status).toBe(200);
  return res.body;
}

async function refused(body: unknown, status = 400, code = "invalid_request"): Promise<string> {
  const res = await lookup(body);
  expect(res.status).toBe(status);
  expect(res.body.error).toBe(code);
  return res.body.detail as string;
}

async function graphql(query: string, variables: Json, token = A().credentials.api_key) {
  const res = await t.api.post("/graphql").set("Authorization", `Bearer ${token}`).send({ query, variables });
  return res.body as { data?: Json; errors?: { message: string; extensions?: { code?: string } }[] };
}

/** A profile's e-mail, phone, property and master profile, read straight from the database. */
async function profile(id: string) {
  const { rows } = await pg.query("SELECT id, email, phone, property_id, master_profile_id FROM guest_profiles WHERE id = $1", [id]);
  return rows[0] as { id: string; email: string | null; phone: string | null; property_id: string; master_profile_id: string | null };
}

/** Guests of `group` with a master profile and both an e-mail and a phone, one per master profile. */
async function clusteredGuests(groupId: string, n: number) {
  const { rows } = await pg.query(
    `SELECT DISTINCT ON (master_profile_id) id, master_profile_id, email, phone FROM guest_profiles
     WHERE property_group_id = $1 AND master_profile_id IS NOT NULL AND email IS NOT NULL AND phone LIKE '+%'
     ORDER BY master_profile_id, created_at LIMIT $2`,
    [groupId, n],
  );
  return rows as { id: string; master_profile_id: string; email: string; phone: string }[];
}

let batches = 0;
/**
 * `n` new people of group A at its first property, written straight to the database: a master
 * profile each with one guest profile (e-mail and E.164 phone of their own), a stay begun and a charge.
 */
async function insertPeople(n: number) {
  const batch = ++batches;
  const integration = A().integrations.find((i) => i.property_id === A().properties[0])!;
  const { rows } = await pg.query(
    `WITH p AS (SELECT i, gen_random_uuid() AS master, gen_random_uuid() AS guest, 'lookup' || $1 || '-' || i AS tag,
                  '+4477' || lpad($1::text, 2, '0') || lpad(i::text, 5, '0') AS phone FROM generate_series(1, $2) i),
     m AS (INSERT INTO master_profiles (id, property_group_id, given_name, family_name, email, phone)
           SELECT master, $3, 'Lookup', tag, tag || '@lookup.example', phone FROM p),
     g AS (INSERT INTO guest_profiles (id, property_group_id, property_id, integration_id, source_id, master_profile_id, given_name, family_name, email, phone)
           SELECT guest, $3, $4, $5, tag, master, 'Lookup', tag, tag || '@lookup.example', phone FROM p),
     r AS (INSERT INTO reservations (id, property_group_id, property_id, integration_id, source_id, confirmation_number, guest_profile_id, status,
             arrival_date, departure_date, currency, booked_at)
           SELECT gen_random_uuid(), $3, $4, $5, tag, tag, guest, 'checked_out', current_date - 30, current_date - 28, 'GBP', now() FROM p),
     x AS (INSERT INTO transactions (id, property_group_id, property_id, integration_id, source_id, guest_profile_id, kind, category, amount_minor, currency, occurred_at)
           SELECT gen_random_uuid(), $3, $4, $5, tag, guest, 'charge', 'room', 10000 + i, 'GBP', now() FROM p)
     SELECT master AS master_profile_id, guest AS id, tag || '@lookup.example' AS email, phone FROM p ORDER BY i`,
    [batch, n, A().id, integration.property_id, integration.id],
  );
  return rows as { id: string; master_profile_id: string; email: string; phone: string }[];
}

const personOf = (body: Json, masterProfileId: string) => body.data.find((p: Json) => p.master_profile_id === masterProfileId);

describe("POST /v1/guests/lookup", () => {
  it("answers one row per person for ids, e-mails and phones in any formatting, and lists the inputs that found nobody", async () => {
    const master = A().master_with_two_guests;
    const { rows: guests } = await pg.query("SELECT id FROM guest_profiles WHERE master_profile_id = $1 ORDER BY created_at", [master]);
    const lone = await profile(A().unclustered_guest);
    const [other] = await clusteredGuests(A().id, 1);
    const phone = other.phone; // E.164: "+447700900123" → "0044 7700-900 123"
    const formatted = `00${phone.slice(1, 3)} ${phone.slice(3, 7)}-${phone.slice(7)}`;
    const body = await found({
      master_profile_ids: [master],
      guest_profile_ids: [guests[0].id, A().unclustered_guest, UNKNOWN_ID],
      emails: [`  ${other.email.toUpperCase()} `, "nobody@nowhere.example"],
      phones: [formatted, "+44 20 0000 0000"],
    });

    // The master profile and one of its guest profiles are one person; so are an e-mail and a phone of another.
    expect(body.data.map((p: Json) => p.master_profile_id ?? p.guest_profile_ids[0])).toEqual([master, lone.master_profile_id ?? lone.id, other.master_profile_id]);
    expect(personOf(body, master).matched).toEqual([
      { kind: "guest_profile_id", value: guests[0].id },
      { kind: "master_profile_id", value: master },
    ]);
    expect(personOf(body, master).guest_profile_ids.sort()).toEqual(guests.map((g) => g.id).sort());
    expect(personOf(body, other.master_profile_id).matched).toEqual([
      { kind: "email", value: `  ${other.email.toUpperCase()} ` },
      { kind: "phone", value: formatted },
    ]);
    expect(body.not_found).toEqual([
      { kind: "guest_profile_id", value: UNKNOWN_ID, reason: null },
      { kind: "email", value: "nobody@nowhere.example", reason: null },
      { kind: "phone", value: "+44 20 0000 0000", reason: null },
    ]);
    expect(body.next_offset).toBeNull();
  });

  it("gives each person what guest_context gives: VIP, properties, stays, spend, loyalty and contacts", async () => {
    const people = await clusteredGuests(A().id, 8);
    expect(people.length).toBeGreaterThan(4);
    const ids = [...new Set([A().master_with_two_guests, ...people.map((p) => p.master_profile_id)])];
    const body = await found({ master_profile_ids: ids });
    expect(body.data).toHaveLength(ids.length);
    const context = `query($id: UUID!) { guestContext(masterProfileId: $id) {
      guestProfileIds identity { givenName familyName vip emails phones profiles { propertyId } }
      stays { count lastStay nextStay } spend { byCurrency { currency totalMinor } }
      loyalty { memberships { memberNumber tier pointsBalance } } } }`;
    for (const id of ids) {
      const person = personOf(body, id);
      const { data } = await graphql(context, { id });
      const c = data!.guestContext;
      expect(person.guest_profile_ids.sort()).toEqual([...c.guestProfileIds].sort());
      expect(person).toMatchObject({ given_name: c.identity.givenName, family_name: c.identity.familyName, vip: c.identity.vip, stay_count: c.stays.count });
      expect(person.name).toBe([c.identity.givenName, c.identity.familyName].filter(Boolean).join(" ") || null);
      expect(person.property_ids.sort()).toEqual([...new Set(c.identity.profiles.map((p: Json) => p.propertyId))].sort());
      expect(person.last_stay?.arrival_date ?? null).toBe(c.stays.lastStay);
      expect(person.next_stay?.arrival_date ?? null).toBe(c.stays.nextStay);
      const spend = Object.fromEntries(person.spend.map((s: Json) => [s.currency, s.amount_minor]));
      expect(spend).toEqual(Object.fromEntries(c.spend.byCurrency.map((s: Json) => [s.currency, s.totalMinor])));
      expect(person.loyalty.map((m: Json) => [m.member_number, m.tier, m.points])).toEqual(
        c.loyalty.memberships.map((m: Json) => [m.memberNumber, m.tier, m.pointsBalance]),
      );
      expect(person.contacts.filter((x: Json) => x.type === "email").map((x: Json) => x.value).sort()).toEqual([...c.identity.emails].sort());
      expect(person.contacts.every((x: Json) => x.consent === null)).toBe(true);
    }
  });

  it("with a purpose, each contact point's consent is the verdict check_contact_permission gives it", async () => {
    const { rows: people } = await pg.query("SELECT DISTINCT master_profile_id FROM guest_profiles WHERE property_group_id = $1 AND master_profile_id IS NOT NULL", [A().id]);
    const conflict = A().consent_conflict;
    const grantedOnly = A().consent_granted_only;
    const purpose = conflict.purpose;
    const body = await found({ master_profile_ids: people.map((p) => p.master_profile_id), emails: [conflict.contact_value, grantedOnly.contact_value], purpose });
    expect(body.not_found).toEqual([]);
    const contacts = body.data.flatMap((p: Json) => p.contacts);
    expect(contacts.length).toBeGreaterThan(10);
    const seen = new Set<string>();
    for (const c of contacts) {
      const { data } = await graphql(`query($e: String, $p: String, $purpose: String!) { contactPermission(email: $e, phone: $p, purpose: $purpose) { status } }`, {
        [c.type === "email" ? "e" : "p"]: c.value,
        purpose,
      });
      expect(c.consent).toBe(data!.contactPermission.status);
      seen.add(c.consent);
    }
    // The fixtures' conflict (granted at one property, withdrawn at another) is withdrawn here too.
    const consentOf = (value: string) => contacts.find((c: Json) => c.type === "email" && c.value === value)?.consent;
    expect([consentOf(conflict.contact_value), consentOf(grantedOnly.contact_value)]).toEqual(["withdrawn", "granted"]);
    expect(seen.has("unknown")).toBe(true);
  });

  it("refuses a purpose the group does not record consent for, listing the ones it does, as check_contact_permission does", async () => {
    const detail = await refused({ master_profile_ids: [A().master_with_two_guests], purpose: "email_marketingg" });
    expect(detail).toMatch(/^purpose "email_marketingg" is not one this property group records consent for; known purposes: .*email_marketing/);
    const { errors } = await graphql(`{ contactPermission(email: "x@example.com", purpose: "email_marketingg") { status } }`, {});
    expect(errors![0].message).toBe(detail);
    expect(await refused({ master_profile_ids: [A().master_with_two_guests], purpose: "  " })).toMatch(/purpose must not be empty/);
  });

  it("lists an e-mail without @ or a phone without its country code as not found, with the reason, and looks up the rest", async () => {
    const [p] = await clusteredGuests(A().id, 1);
    const national = `0${p.phone.slice(3, 7)} ${p.phone.slice(7)}`; // "+447700900123" → "07700 900123"
    const body = await found({ phones: [p.phone, national, "not a phone"], emails: ["not-an-address", "  ", p.email] });
    expect(body.data.map((x: Json) => x.master_profile_id)).toEqual([p.master_profile_id]);
    expect(body.data[0].matched).toEqual([
      { kind: "email", value: p.email },
      { kind: "phone", value: p.phone },
    ]);
    const phone = "a phone needs its country code, e.g. +44 7700 900123";
    const email = "an e-mail address needs an @, e.g. olivia.smith@example.com";
    expect(body.not_found).toEqual([
      { kind: "email", value: "not-an-address", reason: email },
      { kind: "email", value: "  ", reason: email },
      { kind: "phone", value: national, reason: phone },
      { kind: "phone", value: "not a phone", reason: phone },
    ]);
    // Only unreadable entries: all not found, nothing read.
    expect((await found({ phones: [national] })).not_found).toEqual([{ kind: "phone", value: national, reason: phone }]);
    // GraphQL and MCP list them alike.
    const { data, errors } = await graphql(`query($p: [String!]) { lookupGuests(input: { phones: $p }) { notFound { kind value reason } } }`, { p: [national] });
    expect(errors).toBeUndefined();
    expect(data!.lookupGuests.notFound).toEqual([{ kind: "phone", value: national, reason: phone }]);
    const result = (await mcp.callTool({ name: "lookup_guests", arguments: { phones: [national] } })) as CallToolResult;
    expect(result.isError).toBeFalsy();
    expect(JSON.parse((result.content[0] as { text: string }).text).not_found).toEqual([{ kind: "phone", value: national, reason: phone }]);
  });

  it("shows a stored phone without its country code with consent null, as reachability counts it no_contact", async () => {
    const [person] = await insertPeople(1);
    await pg.query("UPDATE guest_profiles SET phone = ' 07700 900123 ' WHERE id = $1", [person.id]);
    await pg.query("UPDATE master_profiles SET phone = NULL WHERE id = $1", [person.master_profile_id]);
    const body = await found({ guest_profile_ids: [person.id], purpose: "sms_marketing" });
    expect(body.data[0].contacts).toEqual([
      { type: "email", value: person.email, consent: "unknown" },
      { type: "phone", value: "07700 900123", consent: null },
    ]);
    const { errors } = await graphql(`{ contactPermission(phone: "07700 900123", purpose: "sms_marketing") { status } }`, {});
    expect(errors![0].extensions!.code).toBe("invalid_request");
  });

  it("refuses more than 100 inputs in all, naming the limit", async () => {
    const ids = (n: number) => Array.from({ length: n }, (_, i) => `00000000-0000-4000-8000-${String(i).padStart(12, "0")}`);
    expect(await refused({ guest_profile_ids: ids(101) })).toMatch(/at most 100 inputs in all/);
    expect(await refused({ guest_profile_ids: ids(60), master_profile_ids: ids(30), emails: ["a@example.com"], phones: Array(10).fill("+44 7700 900123") })).toBe(
      "a lookup takes at most 100 inputs in all across guest_profile_ids, master_profile_ids, emails and phones; got 101 (use table_id for a table's members, 100 per call)",
    );
    const exactly = await found({ guest_profile_ids: ids(100) });
    expect(exactly.not_found).toHaveLength(100);
  });

  it("counts an input given twice once, and keeps both spellings of one e-mail as matches of one person", async () => {
    const [p] = await clusteredGuests(A().id, 1);
    const body = await found({ emails: [p.email, p.email, p.email.toUpperCase()], guest_profile_ids: [p.id, p.id] });
    expect(body.data).toHaveLength(1);
    expect(body.data[0].matched).toEqual([
      { kind: "guest_profile_id", value: p.id },
      { kind: "email", value: p.email },
      { kind: "email", value: p.email.toUpperCase() },
    ]);
    expect(body.not_found).toEqual([]);
  });

  it("answers bad input with 400 invalid_request naming the member, never a 500", async () => {
    expect(await refused({ guest_profile_ids: ["not-a-uuid"] })).toMatch(/^guest_profile_ids must be an array of guest profile uuids/);
    expect(await refused({ master_profile_ids: "c4a1d2e3-f405-4617-8829-9a0b1c2d3e4f" })).toMatch(/^master_profile_ids must be an array/);
    expect(await refused({ emails: [42] })).toMatch(/^emails must be an array/);
    expect(await refused({ phones: ["+44 7700 900123", 7700900123] })).toMatch(/^phones must be an array/);
    expect(await refused({ emails: ["a@example.com", null] })).toMatch(/^emails must be an array/);
    expect(await refused({ table_id: "nope" })).toMatch(/^table_id must be a uuid/);
    expect(await refused({})).toMatch(/^give guest_profile_ids, master_profile_ids, emails or phones/);
    expect(await refused({ emails: [] })).toMatch(/^give guest_profile_ids/);
    expect(await refused({ email: ["a@example.com"] })).toMatch(/unknown body member email; did you mean emails\?/);
    expect(await refused({ table_id: A().tables.bound, emails: ["a@example.com"] })).toBe(
      "table_id cannot be combined with guest_profile_ids, master_profile_ids, emails or phones",
    );
    expect(await refused({ emails: ["a@example.com"], offset: 100 })).toBe("offset pages a table's members: give it with table_id");
    expect(await refused({ table_id: A().tables.bound, offset: -1 })).toMatch(/^offset must be an integer ≥ 0/);
    expect(await refused({ table_id: A().tables.bound, offset: "ten" })).toMatch(/^offset must be an integer/);
    expect(await refused({ emails: ["a@example.com"], purpose: 42 })).toBe("purpose must be a string, e.g. email_marketing");
    expect(await refused({ table_id: UNKNOWN_ID }, 404, "not_found")).toMatch(/table/);
    const res = await t.api.post("/v1/guests/lookup").set("Authorization", `Bearer ${A().credentials.api_key}`).set("Content-Type", "application/json").send("[1,2]");
    expect(res.status).toBe(400);
  });

  it("looks up a table's members, 100 per call, paged by offset", async () => {
    // A curated table of 150 new guest profiles of group A, written straight to the database.
    const tableId = "5e1f0c4d-0000-4000-8000-000000000150";
    const members = await insertPeople(150);
    await pg.query(
      `INSERT INTO tables (id, property_group_id, name, kind, member_type, created_at, updated_at) VALUES ($1, $2, 'lookup paging', 'curated', 'guest_profile', now(), now())`,
      [tableId, A().id],
    );
    await pg.query(
      `INSERT INTO table_members (table_id, property_group_id, member_id, added_at, position) SELECT $1, $2, m, now(), n FROM unnest($3::uuid[]) WITH ORDINALITY AS x(m, n)`,
      [tableId, A().id, members.map((m) => m.id)],
    );
    const first = await found({ table_id: tableId });
    expect(first.next_offset).toBe(100);
    const second = await found({ table_id: tableId, offset: first.next_offset });
    expect(second.next_offset).toBeNull();
    const matched = [...first.data, ...second.data].flatMap((p: Json) => p.matched.map((m: Json) => m.value));
    expect([...matched, ...[...first.not_found, ...second.not_found].map((m: Json) => m.value)].sort()).toEqual(members.map((m) => m.id).sort());
    expect(first.data.every((p: Json) => p.matched.every((m: Json) => m.kind === "guest_profile_id"))).toBe(true);
    expect(first.not_found).toEqual([]);

    // A table of master profiles: each member is its own person, found by its id.
    const masterTable = "5e1f0c4d-0000-4000-8000-000000000003";
    await pg.query(`INSERT INTO tables (id, property_group_id, name, kind, member_type) VALUES ($1, $2, 'lookup masters', 'curated', 'master_profile')`, [masterTable, A().id]);
    await pg.query(
      `INSERT INTO table_members (table_id, property_group_id, member_id, position) SELECT $1, $2, m, n FROM unnest($3::uuid[]) WITH ORDINALITY AS x(m, n)`,
      [masterTable, A().id, members.slice(0, 3).map((m) => m.master_profile_id)],
    );
    const masters = await found({ table_id: masterTable });
    expect(masters.data.map((p: Json) => [p.master_profile_id, p.matched])).toEqual(
      members.slice(0, 3).map((m) => [m.master_profile_id, [{ kind: "master_profile_id", value: m.master_profile_id }]]),
    );

    // Pinned: the members at its property (all 150 are at the group's first property), 100 per call.
    const pinned = A().credentials.api_key_pinned;
    const pinnedPage = await found({ table_id: tableId }, pinned.token);
    expect([pinnedPage.data.length, pinnedPage.next_offset]).toEqual(pinned.property_id === A().properties[0] ? [100, 100] : [0, null]);
    // Pinned to theirs, or group-wide: the bound table's members at the pinned property only.
    const atPinned = await found({ table_id: A().tables.bound }, pinned.token);
    expect(atPinned.data.length).toBeGreaterThan(0);
    const { rows: pinnedGuests } = await pg.query("SELECT id FROM guest_profiles WHERE property_id = $1", [pinned.property_id]);
    const here = new Set(pinnedGuests.map((g) => g.id));
    for (const p of atPinned.data) expect(p.guest_profile_ids.every((id: string) => here.has(id))).toBe(true);

    // The fixtures' bound table and filter table.
    const bound = await found({ table_id: A().tables.bound, purpose: "email_marketing" });
    const { rows } = await pg.query("SELECT count(*)::int AS n FROM table_members WHERE table_id = $1", [A().tables.bound]);
    expect(bound.data.reduce((n: number, p: Json) => n + p.matched.length, 0)).toBe(rows[0].n);
    const filter = await found({ table_id: A().tables.unbound });
    // Its document selects GB guests whose e-mail marketing consent is granted.
    const granted = await found({ table_id: A().tables.unbound, purpose: "email_marketing" });
    expect(granted.data.length).toBe(filter.data.length);
    for (const p of granted.data) expect(p.contacts.some((c: Json) => c.type === "email" && c.consent === "granted")).toBe(true);
  });

  it("ends a walk at the offset clamp: next_offset is null there, so following it never loops", async () => {
    // 50,102 stored members (ids no profile has: each is not found), enough for a 101st row past the clamp.
    const tableId = "5e1f0c4d-0000-4000-8000-000000050102";
    await pg.query(`INSERT INTO tables (id, property_group_id, name, kind, member_type) VALUES ($1, $2, 'lookup clamp', 'curated', 'guest_profile')`, [tableId, A().id]);
    await pg.query(
      `INSERT INTO table_members (table_id, property_group_id, member_id, position) SELECT $1, $2, gen_random_uuid(), n FROM generate_series(1, 50102) n`,
      [tableId, A().id],
    );
    const before = await found({ table_id: tableId, offset: 49_900 });
    expect([before.not_found.length, before.next_offset]).toEqual([100, 50_000]);
    const atClamp = await found({ table_id: tableId, offset: before.next_offset });
    expect([atClamp.not_found.length, atClamp.next_offset]).toEqual([100, null]);
    // Past the clamp: the clamp's page, and the walk ends there too.
    const past = await found({ table_id: tableId, offset: 60_000 });
    expect(past.not_found).toEqual(atClamp.not_found);
    expect(past.next_offset).toBeNull();
  });

  it("keeps to the caller's group and, for a pinned credential, to its property", async () => {
    const master = A().master_with_two_guests;
    const { rows: guests } = await pg.query("SELECT id, property_id, email FROM guest_profiles WHERE master_profile_id = $1", [master]);
    expect(new Set(guests.map((g) => g.property_id)).size).toBe(2);
    const [b] = await clusteredGuests(B().id, 1);
    const [a] = await insertPeople(1);

    // Group B's credential finds none of group A's people, by id or contact point; and the reverse.
    const fromB = await found(
      { master_profile_ids: [master, a.master_profile_id], guest_profile_ids: [...guests.map((g) => g.id), a.id], emails: [a.email], phones: [a.phone] },
      B().credentials.api_key,
    );
    expect(fromB.data).toEqual([]);
    expect(fromB.not_found).toHaveLength(5 + guests.length);
    const fromA = await found({ master_profile_ids: [b.master_profile_id], guest_profile_ids: [b.id] });
    expect(fromA.data).toEqual([]);
    expect(fromA.not_found).toHaveLength(2);
    // The fixtures give both groups people with the same e-mail: each group finds its own.
    const sameEmail = await found({ emails: [b.email] });
    const { rows: ofA } = await pg.query("SELECT id FROM guest_profiles WHERE property_group_id = $1", [A().id]);
    const idsOfA = new Set(ofA.map((r) => r.id));
    for (const p of sameEmail.data) expect(p.guest_profile_ids.every((id: string) => idsOfA.has(id))).toBe(true);

    // Pinned to one property: the person, with only the guest profiles, stays and spend at that property.
    const pinned = A().credentials.api_key_pinned;
    const here = guests.find((g) => g.property_id === pinned.property_id)!;
    const there = guests.find((g) => g.property_id !== pinned.property_id)!;
    const seen = await found({ master_profile_ids: [master], guest_profile_ids: [there.id] }, pinned.token);
    expect(seen.data).toHaveLength(1);
    expect(seen.data[0]).toMatchObject({ master_profile_id: master, guest_profile_ids: [here.id], property_ids: [pinned.property_id] });
    expect(seen.not_found).toEqual([{ kind: "guest_profile_id", value: there.id, reason: null }]);
    for (const stay of [seen.data[0].last_stay, seen.data[0].next_stay]) if (stay) expect(stay.property_id).toBe(pinned.property_id);
    const { rows: stays } = await pg.query(
      `SELECT count(*)::int AS n FROM reservations WHERE guest_profile_id = $1 AND kind = 'stay' AND status NOT IN ('cancelled', 'no_show') AND arrival_date <= current_date`,
      [here.id],
    );
    expect(seen.data[0].stay_count).toBe(stays[0].n);
    // A person with no guest profile at the pinned property is not found at all.
    const elsewhere = await pg.query(
      `SELECT m.id FROM master_profiles m WHERE m.property_group_id = $1 AND NOT EXISTS (SELECT 1 FROM guest_profiles g WHERE g.master_profile_id = m.id AND g.property_id = $2) LIMIT 1`,
      [A().id, pinned.property_id],
    );
    const hidden = await found({ master_profile_ids: [elsewhere.rows[0].id] }, pinned.token);
    expect(hidden.data).toEqual([]);
  });

  it("reads a constant number of SQL statements whatever the number of inputs", async () => {
    const people = await insertPeople(50);
    const statements = async (n: number) => {
      const few = people.slice(0, n);
      const res = await lookup({ guest_profile_ids: few.map((p) => p.id), emails: few.map((p) => p.email), purpose: "email_marketing" });
      expect(res.status).toBe(200);
      expect(res.body.data).toHaveLength(n);
      return Number(res.headers["x-sql-statements"]);
    };
    const five = await statements(5);
    expect(five).toBeGreaterThan(0);
    expect(await statements(50)).toBe(five);
    expect(five).toBeLessThanOrEqual(10);
  });
});

describe("GraphQL lookupGuests and MCP lookup_guests", () => {
  it("answer what REST answers", async () => {
    const people = await clusteredGuests(A().id, 3);
    const body = { master_profile_ids: people.map((p) => p.master_profile_id), phones: [people[0].phone, "+1 202 555 0100"], purpose: "email_marketing" };
    const rest = await found(body);
    const { data, errors } = await graphql(
      `query($input: GuestLookupInput!) { lookupGuests(input: $input) {
        nodes { masterProfileId guestProfileIds stayCount spend { currency amountMinor } contacts { type value consent } matched { kind value } }
        notFound { kind value reason } nextOffset } }`,
      { input: { masterProfileIds: body.master_profile_ids, phones: body.phones, purpose: body.purpose } },
    );
    expect(errors).toBeUndefined();
    expect(data!.lookupGuests.nodes.map((p: Json) => [p.masterProfileId, p.guestProfileIds, p.stayCount, p.spend, p.contacts, p.matched])).toEqual(
      rest.data.map((p: Json) => [p.master_profile_id, p.guest_profile_ids, p.stay_count, p.spend.map((s: Json) => ({ currency: s.currency, amountMinor: s.amount_minor })), p.contacts, p.matched]),
    );
    expect(data!.lookupGuests.notFound).toEqual(rest.not_found);
    expect(data!.lookupGuests.nextOffset).toBeNull();

    const result = (await mcp.callTool({ name: "lookup_guests", arguments: body })) as CallToolResult;
    expect(result.isError).toBeFalsy();
    expect(JSON.parse((result.content[0] as { text: string }).text)).toEqual(rest);
  });

  it("refuse bad input in their own words", async () => {
    const { errors } = await graphql(`query($input: GuestLookupInput!) { lookupGuests(input: $input) { nextOffset } }`, { input: { guestProfileIds: ["nope"] } });
    expect(errors![0].message).toMatch(/uuid/);
    const tooMany = await graphql(`query($input: GuestLookupInput!) { lookupGuests(input: $input) { nextOffset } }`, {
      input: { emails: Array.from({ length: 101 }, (_, i) => `p${i}@example.com`) },
    });
    expect(tooMany.errors![0]).toMatchObject({ message: expect.stringMatching(/at most 100 inputs in all/), extensions: { code: "invalid_request" } });

    const bad = (await mcp.callTool({ name: "lookup_guests", arguments: { email: ["a@example.com"] } })) as CallToolResult;
    expect(bad.isError).toBe(true);
    expect((bad.content[0] as { text: string }).text).toMatch(/unknown argument email; did you mean emails\?/);
    const phone = (await mcp.callTool({ name: "lookup_guests", arguments: { phones: [42] } })) as CallToolResult;
    expect(phone.isError).toBe(true);
    expect((phone.content[0] as { text: string }).text).toMatch(/phones/);
  });

  it("lists lookup_guests within its budget of 1,500 characters", async () => {
    const { tools } = await mcp.listTools();
    const tool = tools.find((x) => x.name === "lookup_guests")!;
    expect(Object.keys(tool.inputSchema.properties ?? {}).sort()).toEqual(
      ["emails", "guest_profile_ids", "master_profile_ids", "offset", "phones", "purpose", "table_id"].sort(),
    );
    expect(JSON.stringify(tool).length).toBeLessThanOrEqual(1500);
  });
});
