// The task-shaped fields behind find_guests, guest_context and check_contact_permission, run through
// /graphql with the very operations the MCP tools run (src/api/operations/tools/tasks.graphql), and the
// tools' toVariables/toResult on the results.
import { readFileSync } from "node:fs";
import path from "node:path";
import { Client } from "pg";
import fc from "fast-check";
import { z } from "zod";
import { startTestApp, type TestApp } from "../helpers/app";
import { taskTools } from "../../src/api/tools/task-tools";
import { searchStatement } from "../../src/data/search";
import { tenantSql } from "../../src/data/tenant";

const TASKS = readFileSync(path.resolve(__dirname, "../../src/api/operations/tools/tasks.graphql"), "utf8");

let t: TestApp;
let pg: Client;
beforeAll(async () => {
  t = await startTestApp();
  pg = new Client({ connectionString: t.databaseUrl });
  await pg.connect();
});
afterAll(async () => {
  await pg.end();
  await t.close();
});

const A = () => t.manifest.groups.A;
const B = () => t.manifest.groups.B;
const tool = (name: string) => taskTools.find((x) => x.name === name)!;

/** Runs one named operation of tasks.graphql on /graphql; the body's `data`, failing on errors. */
async function run(operation: string, variables: Record<string, unknown>, token = A().credentials.api_key) {
  const res = await t.api
    .post("/graphql")
    .set("Authorization", `Bearer ${token}`)
    .set("Content-Type", "application/json")
    .send({ query: TASKS, operationName: operation, variables });
  expect(res.body.errors).toBeUndefined();
  expect(res.status).toBe(200);
  return { data: res.body.data as Record<string, unknown>, statements: Number(res.headers["x-sql-statements"]) };
}

/** A tool call as the MCP server makes it: arguments → variables → operation → structured result. */
async function call(name: string, args: Record<string, unknown>, token?: string) {
  const x = tool(name);
  const parsed = z.object(x.inputSchema).strict().parse(args);
  const { data } = await run(x.operation, x.toVariables(parsed), token);
  const result = x.toResult(data);
  z.object(x.outputSchema).parse(result); // what the SDK checks structuredContent against
  return result as Record<string, any>; // eslint-disable-line @typescript-eslint/no-explicit-any
}

async function gqlError(query: string, variables: Record<string, unknown>) {
  const res = await t.api.post("/graphql").set("Authorization", `Bearer ${A().credentials.api_key}`).send({ query, variables });
  return res.body.errors?.[0]?.extensions?.code as string | undefined;
}

/** A guest of `group` written straight to the database, with the given fields. */
async function insertGuest(group: { id: string; integrations: { id: string; property_id: string }[] }, fields: Record<string, string>) {
  const integration = group.integrations[0];
  const { rows } = await pg.query(
    `INSERT INTO guest_profiles (id, property_group_id, property_id, integration_id, source_id, given_name, family_name, email, phone, updated_at)
     VALUES (gen_random_uuid(), $1, $2, $3, $4, $5, $6, $7, $8, now()) RETURNING id`,
    [group.id, integration.property_id, integration.id, fields.sourceId, fields.given, fields.family, fields.email ?? null, fields.phone ?? null],
  );
  return rows[0].id as string;
}

describe("the done-when question: what do we know about her, and may we e-mail her?", () => {
  it("find_guests then guest_context answer who and the e-mail marketing decision with its evidence, under 6,000 characters", async () => {
    const masterId = A().master_with_two_guests;
    const { rows } = await pg.query("SELECT given_name, family_name FROM master_profiles WHERE id = $1", [masterId]);
    const who = `${rows[0].given_name} ${rows[0].family_name}`;

    const found = await call("find_guests", { query: who });
    const candidate = found.candidates.find((c: { master_profile_id: string }) => c.master_profile_id === masterId);
    expect(candidate).toMatchObject({ name: who, matched_on: ["name"], score: 90 });
    expect(candidate.guest_profile_ids).toHaveLength(2);
    expect(candidate.properties).toHaveLength(2);

    const context = await call("guest_context", { master_profile_id: candidate.master_profile_id });
    expect(context.found).toBe(true);
    expect(`${context.identity.given_name} ${context.identity.family_name}`).toBe(who);
    expect(context.identity.profiles).toHaveLength(2);
    const conflict = A().consent_conflict;
    const marketing = context.consent.effective.find(
      (c: { contact_value: string; purpose: string }) => c.contact_value === conflict.contact_value && c.purpose === "email_marketing",
    );
    // Granted at one property, withdrawn later at another: the withdrawal decides.
    expect(marketing).toMatchObject({ status: "withdrawn", observation_count: 2, decided_by: { status: "withdrawn" } });
    expect(marketing.decided_by.property).toEqual(expect.any(String));
    // more names a listed tool: list_records, which stands for list_reservations.
    expect(context.stays.more).toEqual({ tool: "list_records", arguments: { type: "reservations", master_profile_id: masterId } });
    // Spend: charges and adjustments less refunds, as the folio lines are signed; payments are not spend.
    const { rows: spent } = await pg.query(
      `SELECT sum(amount_minor)::int AS total
       FROM transactions WHERE kind <> 'payment' AND guest_profile_id IN (SELECT id FROM guest_profiles WHERE master_profile_id = $1)`,
      [masterId],
    );
    expect(context.spend.by_currency.map((c: { total_minor: number }) => c.total_minor)).toEqual([spent[0].total]);
    for (const c of context.spend.by_currency[0].by_category) if (/refund/.test(c.category)) expect(c.amount_minor).toBeLessThan(0);

    const characters = JSON.stringify(found).length + JSON.stringify(context).length;
    expect(JSON.stringify(context).length).toBeLessThan(4000);
    expect(characters).toBeLessThan(6000);
  });

  it("guest_context reads in a handful of statements, by master profile, guest profile or e-mail alike", async () => {
    const masterId = A().master_with_two_guests;
    const byMaster = await run("GuestContext", { masterProfileId: masterId });
    // Credential, person (2), then one or two per section: not one per row.
    expect(byMaster.statements).toBeLessThanOrEqual(16);
    const byGuest = await run("GuestContext", { guestProfileId: A().guest_lookup.guest_id });
    expect(byGuest.data).toEqual(byMaster.data);
    const email = A().consent_conflict.contact_value.toUpperCase();
    expect((await run("GuestContext", { email })).data).toEqual(byMaster.data);
    // An unclustered guest is its own person; its rows are found by guest_profile_id.
    const single = await call("guest_context", { guest_profile_id: A().unclustered_guest });
    expect(single).toMatchObject({ found: true, master_profile_id: null });
    expect(single.stays.more.arguments).toEqual({ type: "reservations", guest_profile_id: A().unclustered_guest });
    expect(await call("guest_context", { email: "nobody@example.invalid" })).toEqual({ found: false });
  });

  it("guest_context wants exactly one identifying argument", async () => {
    const q = `query($m: UUID, $e: String) { guestContext(masterProfileId: $m, email: $e) { masterProfileId } }`;
    expect(await gqlError(q, {})).toBe("invalid_request");
    expect(await gqlError(q, { m: A().master_with_two_guests, e: "a@b.c" })).toBe("invalid_request");
  });
});

describe("guestSearch", () => {
  const ids = (result: Record<string, any>) => // eslint-disable-line @typescript-eslint/no-explicit-any
    result.candidates.flatMap((c: { master_profile_id: string | null; guest_profile_ids: string[] }) => [c.master_profile_id, ...c.guest_profile_ids]);

  it("finds a name in either order, with accents and case folded, and by prefixes", async () => {
    const id = await insertGuest(A(), { sourceId: "accent-1", given: "Zoë", family: "Núñez-Ørsted", email: "zoe@example.invalid" });
    for (const query of ["Zoë Núñez-Ørsted", "zoe nunez-orsted", "NUNEZ-ORSTED, ZOE", "Nún Zo", "núñez-ørsted"]) {
      const result = await call("find_guests", { query });
      expect(ids(result)).toContain(id);
    }
    const exact = await call("find_guests", { query: "nunez-orsted zoe" });
    expect(exact.candidates[0]).toMatchObject({ guest_profile_ids: [id], master_profile_id: null, name: "Zoë Núñez-Ørsted", matched_on: ["name"] });
    const prefix = await call("find_guests", { query: "Nún Zo" });
    expect(prefix.candidates.find((c: { guest_profile_ids: string[] }) => c.guest_profile_ids[0] === id).matched_on).toEqual(["name_prefix"]);
  });

  it("finds a phone number in any formatting, normalised to E.164", async () => {
    const id = await insertGuest(A(), { sourceId: "phone-1", given: "Pia", family: "Phone", phone: "+41791234567" });
    for (const query of ["+41791234567", "+41 79 123 45 67", "0041 (0)79-123.45.67", "(+41) 79 123 4567", "41791234567"]) {
      const result = await call("find_guests", { query });
      expect(result.candidates.map((c: { guest_profile_ids: string[] }) => c.guest_profile_ids[0])).toEqual([id]);
      expect(result.candidates[0].matched_on).toEqual(["phone"]);
    }
  });

  it("finds e-mail, source id, member number and confirmation number", async () => {
    const masterId = A().master_with_two_guests;
    const { rows: reservations } = await pg.query(
      `SELECT r.confirmation_number FROM reservations r JOIN guest_profiles g ON g.id = r.guest_profile_id WHERE g.master_profile_id = $1 LIMIT 1`,
      [masterId],
    );
    const { rows: members } = await pg.query(`SELECT member_number FROM loyalty_members WHERE master_profile_id = $1 LIMIT 1`, [masterId]);
    const lookups: [string, string][] = [
      [A().consent_conflict.contact_value.toUpperCase(), "email"],
      [A().guest_lookup.source_id, "source_id"],
      [reservations[0].confirmation_number, "confirmation_number"],
      [reservations[0].confirmation_number.toLowerCase(), "confirmation_number"],
    ];
    if (members.length > 0) lookups.push([members[0].member_number, "member_number"]);
    for (const [query, field] of lookups) {
      // Source ids and confirmation numbers are unique per integration only: other candidates may share them.
      const result = await call("find_guests", { query });
      const mine = result.candidates.find((c: { master_profile_id: string }) => c.master_profile_id === masterId);
      expect({ query, matched: mine?.matched_on }).toEqual({ query, matched: expect.arrayContaining([field]) });
    }
  });

  it("a group never finds another group's guests, by any key", async () => {
    const b = B();
    const id = await insertGuest(b, { sourceId: "iso-src-77", given: "Isolde", family: "Quarantaine", email: "isolde@b.invalid", phone: "+49152777001" });
    await pg.query(
      `INSERT INTO reservations (id, property_group_id, property_id, integration_id, source_id, guest_profile_id, confirmation_number,
         status, arrival_date, departure_date, currency, booked_at, updated_at)
       SELECT gen_random_uuid(), property_group_id, property_id, integration_id, 'iso-res', id, 'ISO-CONF-77', 'confirmed',
         current_date, current_date + 1, 'EUR', now(), now() FROM guest_profiles WHERE id = $1`,
      [id],
    );
    const program = (await pg.query(`SELECT id FROM loyalty_programs WHERE property_group_id = $1 LIMIT 1`, [b.id])).rows[0].id;
    await pg.query(
      `INSERT INTO loyalty_members (id, property_group_id, program_id, guest_profile_id, member_number, tier, enrolled_at, updated_at)
       VALUES (gen_random_uuid(), $1, $2, $3, 'ISO-MEMBER-77', 'blue', now(), now())`,
      [b.id, program, id],
    );
    const keys = ["Isolde Quarantaine", "quarantaine", "isolde@b.invalid", "+49 152 777001", "iso-src-77", "ISO-CONF-77", "ISO-MEMBER-77"];
    for (const query of keys) {
      // Group B finds her by every key (so the keys are real) …
      expect({ query, found: ids(await call("find_guests", { query }, b.credentials.api_key)) }).toEqual({ query, found: expect.arrayContaining([id]) });
      // … group A by none.
      expect({ query, found: (await call("find_guests", { query })).candidates }).toEqual({ query, found: [] });
    }
  });

  it("caps the page and says so; rejects an empty query and a limit over 25", async () => {
    const result = await call("find_guests", { query: "a", limit: 2 });
    expect(result.candidates).toHaveLength(2);
    expect(result.truncated).toBe(true);
    expect((await call("find_guests", { query: "?? !!" })).candidates).toEqual([]);
    expect(await gqlError(`query($q: String!) { guestSearch(query: $q) { truncated } }`, { q: "   " })).toBe("invalid_request");
    expect(await gqlError(`query($q: String!) { guestSearch(query: $q, limit: 26) { truncated } }`, { q: "olivia" })).toBe("invalid_request");
  });

  it("any text, in any script or punctuation, is an answer or invalid_request, never a 5xx", async () => {
    const word = fc.oneof(fc.string({ unit: "grapheme", maxLength: 12 }), fc.constantFrom("%", "_", "\\", "'", "@", "+", "00", "(0)", "O'Brien", "ß", "İ"));
    await fc.assert(
      fc.asyncProperty(fc.array(word, { minLength: 1, maxLength: 6 }), fc.integer({ min: -1, max: 30 }), async (words, limit) => {
        const res = await t.api
          .post("/graphql")
          .set("Authorization", `Bearer ${A().credentials.api_key}`)
          .send({ query: `query($q: String!, $l: Int) { guestSearch(query: $q, limit: $l) { truncated candidates { name } } }`, variables: { q: words.join(" "), l: limit } });
        const code = res.body.errors?.[0]?.extensions?.code;
        // Resolver refusals are GraphQL errors on a 200; the input guard's (NUL, surrogates) are 400s.
        expect({ server: res.status < 500, code: code ?? "ok" }).toEqual({ server: true, code: code ? "invalid_request" : "ok" });
      }),
      { numRuns: 60 },
    );
  });

  it("uses the indexes: EXPLAIN at a few thousand guests shows no sequential scan of guests", async () => {
    const group = A();
    const integration = group.integrations[0];
    await pg.query(
      `INSERT INTO guest_profiles (id, property_group_id, property_id, integration_id, source_id, given_name, family_name, email, phone, updated_at)
       SELECT gen_random_uuid(), $1, $2, $3, 'bulk-' || n, 'Given' || (n % 500), 'Family' || n, 'bulk' || n || '@example.invalid',
         '+4477009' || lpad(n::text, 5, '0'), now()
       FROM generate_series(1, 5000) n`,
      [group.id, integration.property_id, integration.id],
    );
    await pg.query("ANALYZE guest_profiles; ANALYZE reservations; ANALYZE loyalty_members");
    const scope = { propertyGroupId: group.id, propertyId: null };
    const plans: Record<string, string> = {};
    for (const query of ["Given207 Family1207", "family12", "bulk77@example.invalid", "+44 7700 900077", "bulk-4711"]) {
      const statement = searchStatement(query, 5)((model, alias) => tenantSql(model, scope, alias));
      const { rows } = await pg.query({ text: `EXPLAIN ${statement.text}`, values: statement.values as unknown[] });
      plans[query] = rows.map((r) => r["QUERY PLAN"]).join("\n");
      expect({ query, plan: plans[query] }).not.toEqual({ query, plan: expect.stringMatching(/Seq Scan on guest_profiles/) });
    }
    expect(plans["Given207 Family1207"]).toContain("guest_profiles_group_fold_family_given_idx");
    expect(plans["family12"]).toContain("guest_profiles_group_fold_given_idx");
    expect(plans["bulk77@example.invalid"]).toContain("guest_profiles_property_group_id_lower_email_idx");
    expect(plans["+44 7700 900077"]).toContain("guest_profiles_group_phone_digits_idx");
    expect(plans["bulk-4711"]).toContain("guest_profiles_property_group_id_source_id_idx");
    // And the answers are right at that size.
    expect((await call("find_guests", { query: "family1207 given207" })).candidates[0].name).toBe("Given207 Family1207");
  });
});

describe("contactPermission", () => {
  it("granted then withdrawn is not_allowed, with the withdrawal as evidence", async () => {
    const r = await call("check_contact_permission", { email: A().consent_conflict.contact_value.toUpperCase(), purpose: "email_marketing" });
    expect(r).toMatchObject({ answer: "not_allowed", status: "withdrawn", contact_value: A().consent_conflict.contact_value, observation_count: 2 });
    expect(r.decided_by.status).toBe("withdrawn");
    expect(r.observations.map((o: { status: string }) => o.status)).toEqual(["withdrawn", "granted"]);
    expect(r.rule).toMatch(/withdrawn or denied observation beats any granted one/);
  });

  it("granted only is allowed; no observation is unknown", async () => {
    const granted = await call("check_contact_permission", { email: A().consent_granted_only.contact_value, purpose: "email_marketing" });
    expect(granted).toMatchObject({ answer: "allowed", status: "granted", decided_by: { status: "granted" }, observation_count: 1 });
    const none = await call("check_contact_permission", { email: "nobody@example.invalid", purpose: "email_marketing" });
    expect(none).toMatchObject({ answer: "unknown", status: "unknown", decided_by: null, observations: [], observation_count: 0 });
    // A purpose the group records (on phones), never observed for this e-mail: unknown too.
    const otherPurpose = await call("check_contact_permission", { email: A().consent_granted_only.contact_value, purpose: "sms_marketing" });
    expect(otherPurpose).toMatchObject({ answer: "unknown", observation_count: 0 });
  });

  it("a purpose the group never records consent for is an error listing the ones it does, not a silent unknown", async () => {
    const q = `query($e: String!, $purpose: String!) { contactPermission(email: $e, purpose: $purpose) { answer } }`;
    for (const purpose of ["profiling", "email_marketting"]) {
      const res = await t.api
        .post("/graphql")
        .set("Authorization", `Bearer ${A().credentials.api_key}`)
        .send({ query: q, variables: { e: A().consent_granted_only.contact_value, purpose } });
      expect(res.body.errors[0]).toMatchObject({
        extensions: { code: "invalid_request" },
        message: expect.stringContaining(`purpose "${purpose}" is not one this property group records consent for; known purposes: email_marketing, sms_marketing`),
      });
    }
  });

  it("a phone in any formatting is looked up as E.164", async () => {
    const { rows } = await pg.query(
      `SELECT contact_value, purpose FROM consent_observations WHERE property_group_id = $1 AND contact_type = 'phone' ORDER BY id LIMIT 1`,
      [A().id],
    );
    const e164: string = rows[0].contact_value;
    const spaced = `00${e164.slice(1, 3)} ${e164.slice(3, 6)}-${e164.slice(6)}`;
    const r = await call("check_contact_permission", { phone: spaced, purpose: rows[0].purpose });
    expect(r.contact_value).toBe(e164);
    expect(r.observation_count).toBeGreaterThan(0);
    expect(r.answer).not.toBe("unknown");
  });

  it("exactly one contact point, a real property, an international phone", async () => {
    const q = `query($e: String, $p: String, $prop: UUID) { contactPermission(email: $e, phone: $p, purpose: "email_marketing", propertyId: $prop) { answer } }`;
    expect(await gqlError(q, {})).toBe("invalid_request");
    expect(await gqlError(q, { e: "a@b.c", p: "+447700900123" })).toBe("invalid_request");
    expect(await gqlError(q, { p: "07700 900123" })).toBe("invalid_request");
    expect(await gqlError(q, { e: "a@b.c", prop: B().properties[0] })).toBe("not_found");
    expect(await gqlError(q, { e: "a@b.c", prop: A().properties[0] })).toBeUndefined();
  });
});
