// Errors an agent can act on, and inputs people type, the same on every door (issue 42, item 8):
// a purpose typo is refused with the group's purposes (not 0 rows), an e-mail with surrounding
// spaces or capitals matches, a date and a timestamp are accepted alike wherever a range is asked
// (errors naming the tool's or route's own argument), and guest_context's `more` names a tool that
// tools/list offers. REST, GraphQL and MCP run on one app and one PostgreSQL, as a client would.
import { randomUUID } from "node:crypto";
import { createApiKey } from "../../src/auth/credentials";
import { startTestApp, type TestApp } from "../helpers/app";

let t: TestApp;
beforeAll(async () => {
  t = await startTestApp();
});
afterAll(() => t.close());

const A = () => t.manifest.groups.A;
const B = () => t.manifest.groups.B;
type Json = Record<string, any>; // eslint-disable-line @typescript-eslint/no-explicit-any

const rest = (path: string, token = A().credentials.api_key) => t.api.get(path).set("Authorization", `Bearer ${token}`);

async function graphql(query: string, variables: Json = {}, token = A().credentials.api_key) {
  const res = await t.api.post("/graphql").set("Authorization", `Bearer ${token}`).send({ query, variables });
  expect(res.status).toBe(200);
  return res.body as { data?: Json; errors?: { message: string; extensions: { code: string } }[] };
}

async function gqlData(query: string, variables: Json = {}, token = A().credentials.api_key) {
  const body = await graphql(query, variables, token);
  expect(body.errors).toBeUndefined();
  return body.data!;
}

/** A tools/call: its result's JSON text and whether it is an error. */
async function mcp(name: string, args: Json, token = A().credentials.api_key): Promise<{ isError: boolean; body: Json }> {
  const res = await t.api
    .post("/mcp")
    .set("Authorization", `Bearer ${token}`)
    .set("Accept", "application/json, text/event-stream")
    .send({ jsonrpc: "2.0", id: 1, method: "tools/call", params: { name, arguments: args } });
  expect(res.status).toBe(200);
  return { isError: res.body.result.isError === true, body: JSON.parse(res.body.result.content[0].text) };
}

async function mcpOk(name: string, args: Json, token?: string) {
  const { isError, body } = await mcp(name, args, token);
  if (isError) throw new Error(`${name} failed: ${JSON.stringify(body)}`);
  return body;
}

const ids = (rows: { id: string }[]) => rows.map((r) => r.id).sort();

describe("a purpose the group does not record is refused on every door, listing the group's purposes", () => {
  let purposes: string[];
  beforeAll(async () => {
    purposes = (await t.admin.consentObservation.groupBy({ by: ["purpose"], where: { propertyGroupId: A().id }, orderBy: { purpose: "asc" } })).map((p) => p.purpose);
    expect(purposes).toContain("email_marketing");
  });
  const listed = (detail: string) => {
    expect(detail).toContain('purpose "emial_marketing" is not one this property group records consent for');
    for (const p of purposes) expect(detail).toContain(p);
  };

  it.each(["/v1/consents", "/v1/consents/effective"])("REST %s?purpose= is 400 invalid_request", async (path) => {
    const res = await rest(`${path}?purpose=emial_marketing`);
    expect(res.status).toBe(400);
    expect(res.body.error).toBe("invalid_request");
    listed(res.body.detail);
    // A known purpose with surrounding spaces is the purpose (trimmed, as check_contact_permission does).
    const spaced = await rest(`${path}?purpose=${encodeURIComponent(" email_marketing ")}&limit=5`);
    const exact = await rest(`${path}?purpose=email_marketing&limit=5`);
    expect(spaced.status).toBe(200);
    expect(exact.body.data.length).toBeGreaterThan(0);
    expect(spaced.body.data).toEqual(exact.body.data);
    // Compared as stored and as check_contact_permission compares it: case matters.
    expect((await rest(`${path}?purpose=Email_Marketing`)).status).toBe(400);
  });

  it.each(["consents", "effectiveConsents"])("GraphQL %s(filter: {purpose}) answers extensions.code invalid_request", async (field) => {
    const body = await graphql(`query($p: String) { ${field}(filter: { purpose: $p }) { nodes { purpose } } }`, { p: "emial_marketing" });
    expect(body.errors![0].extensions.code).toBe("invalid_request");
    listed(body.errors![0].message);
    // The same code as contactPermission's refusal.
    const permission = await graphql(`{ contactPermission(email: "nobody@example.com", purpose: "emial_marketing") { status } }`);
    expect(permission.errors![0].extensions.code).toBe(body.errors![0].extensions.code);
    const known = await gqlData(`query($p: String) { ${field}(filter: { purpose: $p }, limit: 3) { nodes { purpose } } }`, { p: "email_marketing" });
    expect(known[field].nodes.length).toBeGreaterThan(0);
    expect(known[field].nodes.every((n: Json) => n.purpose === "email_marketing")).toBe(true);
  });

  it("MCP list_records consent_observations, effective_consent and check_contact_permission refuse it alike", async () => {
    for (const [tool, args] of [
      ["list_records", { type: "consent_observations", purpose: "emial_marketing" }],
      ["effective_consent", { purpose: "emial_marketing" }],
      ["check_contact_permission", { email: "nobody@example.com", purpose: "emial_marketing" }],
    ] as const) {
      const { isError, body } = await mcp(tool, args);
      expect([tool, isError, body.error]).toEqual([tool, true, "invalid_request"]);
      listed(body.detail);
    }
  });

  it("lists only the caller's group's purposes, and a pinned key still sees only its property's rows", async () => {
    // A purpose only group B records: unknown to A (and not listed to A), known to B.
    const purpose = `b_only_${randomUUID().slice(0, 8)}`;
    const b = await t.admin.consentObservation.findFirstOrThrow({ where: { propertyGroupId: B().id } });
    await t.admin.consentObservation.create({ data: { ...b, id: randomUUID(), purpose, createdAt: undefined } });
    const refused = await rest(`/v1/consents?purpose=${purpose}`);
    expect(refused.status).toBe(400);
    expect(refused.body.detail).toContain("known purposes: ");
    expect(refused.body.detail.split("known purposes: ")[1]).not.toContain(purpose);
    const ofB = await rest(`/v1/consents?purpose=${purpose}`, B().credentials.api_key);
    expect(ofB.status).toBe(200);
    expect(ofB.body.data.map((r: Json) => r.purpose)).toEqual([purpose]);

    const pinned = A().credentials.api_key_pinned;
    const rows = await rest(`/v1/consents?purpose=email_marketing&limit=100`, pinned.token);
    expect(rows.status).toBe(200);
    expect(rows.body.data.length).toBeGreaterThan(0);
    expect(rows.body.data.every((r: Json) => r.property_id === pinned.property_id)).toBe(true);
    expect((await rest(`/v1/consents?purpose=emial_marketing`, pinned.token)).status).toBe(400);
  });
});

describe("the consent aggregates refuse a purpose the caller gave, never a default", () => {
  const refused = (detail: string, name: string) => expect(detail).toMatch(new RegExp(`^${name} "emial_marketing" is not one this property group records consent for; known purposes: .*email_marketing`));

  it("MCP guest_reach names its own argument: email_purpose or sms_purpose", async () => {
    for (const name of ["email_purpose", "sms_purpose"]) {
      const { isError, body } = await mcp("guest_reach", { [name]: "emial_marketing" });
      expect([name, isError, body.error]).toEqual([name, true, "invalid_request"]);
      refused(body.detail, name);
    }
    // The defaults, and a purpose the group records with spaces around it, answer.
    const defaults = await mcpOk("guest_reach", {});
    const given = await mcpOk("guest_reach", { email_purpose: " email_marketing ", sms_purpose: "sms_marketing" });
    expect(given).toEqual(defaults);
    expect(defaults.buckets[0].reachable_by_email).toBeGreaterThan(0);
  });

  it("GraphQL guestMetrics(emailPurpose, smsPurpose) and consentMetrics(purpose) answer extensions.code invalid_request", async () => {
    for (const [field, name] of [["guestMetrics(emailPurpose: $p) { guests reachableByEmail }", "emailPurpose"], ["guestMetrics(smsPurpose: $p) { guests reachableBySms }", "smsPurpose"], ["consentMetrics(purpose: $p) { granted }", "purpose"]]) {
      const body = await graphql(`query($p: String!) { ${field} }`, { p: "emial_marketing" });
      expect([name, body.errors?.[0]?.extensions.code]).toEqual([name, "invalid_request"]);
      refused(body.errors![0].message, name);
    }
    // The dashboard's purposes answer, also for a pinned key (its property's guests only).
    const pinned = A().credentials.api_key_pinned;
    const all = await gqlData(`{ consentMetrics(purpose: "sms_marketing") { granted unknown } guestMetrics { guests } }`);
    const here = await gqlData(`{ consentMetrics(purpose: "sms_marketing") { granted unknown } guestMetrics { guests } }`, {}, pinned.token);
    expect(here.guestMetrics[0].guests).toBeLessThan(all.guestMetrics[0].guests);
    expect((await graphql(`{ consentMetrics(purpose: "emial_marketing") { granted } }`, {}, pinned.token)).errors![0].extensions.code).toBe("invalid_request");
  });

  it("a group with more than 100 purposes takes every one of them, and a refusal lists the first 50 and says how many more", async () => {
    const b = await t.admin.consentObservation.findFirstOrThrow({ where: { propertyGroupId: B().id } });
    const many = Array.from({ length: 120 }, (_, i) => `zz_many_${String(i).padStart(3, "0")}`);
    await t.admin.consentObservation.createMany({ data: many.map((purpose) => ({ ...b, id: randomUUID(), purpose, createdAt: undefined })) });
    const last = await rest(`/v1/consents?purpose=${many.at(-1)}`, B().credentials.api_key);
    expect(last.status).toBe(200);
    expect(last.body.data.map((r: Json) => r.purpose)).toEqual([many.at(-1)]);
    const typo = await rest(`/v1/consents?purpose=emial_marketing`, B().credentials.api_key);
    expect(typo.status).toBe(400);
    const listed = typo.body.detail.split("known purposes: ")[1] as string;
    const total = (await t.admin.consentObservation.groupBy({ by: ["purpose"], where: { propertyGroupId: B().id } })).length;
    expect(listed).toMatch(new RegExp(` …and ${total - 50} more$`));
    expect(listed.replace(/ …and \d+ more$/, "").split(", ")).toHaveLength(50);
  });
});

describe("an e-mail with surrounding spaces or capitals matches on every door", () => {
  let email: string;
  let guestIds: string[];
  let masterId: string;
  beforeAll(async () => {
    // A clustered guest whose e-mail consent was observed.
    const observed = await t.admin.consentObservation.findMany({ where: { propertyGroupId: A().id, contactType: "email" }, select: { contactValue: true } });
    const guest = await t.admin.guestProfile.findFirstOrThrow({
      where: { propertyGroupId: A().id, masterProfileId: { not: null }, email: { in: observed.map((o) => o.contactValue) } },
      orderBy: { id: "asc" },
    });
    email = guest.email!;
    masterId = guest.masterProfileId!;
    guestIds = (await t.admin.guestProfile.findMany({ where: { propertyGroupId: A().id, email: { equals: email, mode: "insensitive" } } })).map((g) => g.id).sort();
  });
  const typed = () => `  ${email.toUpperCase()} `;

  it("REST /v1/guests, /v1/master-profiles, /v1/consents (email, contact_value) and /v1/consents/effective", async () => {
    const guests = await rest(`/v1/guests?email=${encodeURIComponent(typed())}`);
    expect(ids(guests.body.data)).toEqual(guestIds);
    const masters = await rest(`/v1/master-profiles?email=${encodeURIComponent(typed())}`);
    const exactMasters = await rest(`/v1/master-profiles?email=${encodeURIComponent(email)}`);
    expect(ids(masters.body.data)).toEqual(ids(exactMasters.body.data));
    for (const path of ["/v1/consents", "/v1/consents/effective"]) {
      const exact = await rest(`${path}?email=${encodeURIComponent(email)}`);
      expect(exact.body.data.length).toBeGreaterThan(0);
      for (const name of ["email", "contact_value"]) {
        const res = await rest(`${path}?${name}=${encodeURIComponent(typed())}`);
        expect([path, name, res.body.data]).toEqual([path, name, exact.body.data]);
      }
    }
  });

  it("GraphQL guests, masterProfiles, consents, effectiveConsents, contactPermission and guestContext", async () => {
    const data = await gqlData(
      `query($e: String!) {
        guests(filter: { email: $e }) { nodes { id } }
        masterProfiles(filter: { email: $e }) { nodes { id } }
        consents(filter: { contactValue: $e }) { nodes { id } }
        effectiveConsents(filter: { contactValue: $e }) { nodes { contactValue purpose } }
        contactPermission(email: $e, purpose: "email_marketing") { contactValue observationCount }
        guestContext(email: $e) { masterProfileId }
      }`,
      { e: typed() },
    );
    expect(ids(data.guests.nodes)).toEqual(guestIds);
    expect(data.consents.nodes.length).toBeGreaterThan(0);
    expect(data.effectiveConsents.nodes.every((n: Json) => n.contactValue === email.toLowerCase())).toBe(true);
    expect(data.contactPermission.contactValue).toBe(email.toLowerCase());
    expect(data.guestContext.masterProfileId).toBe(masterId);
  });

  it("MCP list_records (guests, master_profiles, consent_observations), effective_consent, find_guests, check_contact_permission, guest_context", async () => {
    expect(ids((await mcpOk("list_records", { type: "guests", email: typed() })).data)).toEqual(guestIds);
    expect((await mcpOk("list_records", { type: "master_profiles", email: typed() })).data.length).toBeGreaterThan(0);
    expect((await mcpOk("list_records", { type: "consent_observations", email: typed() })).data.length).toBeGreaterThan(0);
    expect((await mcpOk("effective_consent", { email: typed() })).data.length).toBeGreaterThan(0);
    const found = await mcpOk("find_guests", { query: typed() });
    expect(found.candidates[0].master_profile_id).toBe(masterId);
    expect((await mcpOk("check_contact_permission", { email: typed(), purpose: "email_marketing" })).observation_count).toBeGreaterThan(0);
    expect((await mcpOk("guest_context", { email: typed() })).master_profile_id).toBe(masterId);
  });

  it("group B's credential finds only group B's guests by that e-mail; a pinned key only its property's", async () => {
    const bProperties = new Set(B().properties);
    const ofB = [(await rest(`/v1/guests?email=${encodeURIComponent(typed())}`, B().credentials.api_key)).body.data, (await mcpOk("list_records", { type: "guests", email: typed() }, B().credentials.api_key)).data];
    for (const rows of ofB) {
      expect(rows.some((r: Json) => guestIds.includes(r.id))).toBe(false);
      expect(rows.every((r: Json) => bProperties.has(r.property_id))).toBe(true);
    }
    // Pinned: a guest at the key's property is found by its spaced e-mail; none at another property is.
    const pinned = A().credentials.api_key_pinned;
    const here = await t.admin.guestProfile.findFirstOrThrow({ where: { propertyId: pinned.property_id, email: { not: null } } });
    const mine = (await rest(`/v1/guests?email=${encodeURIComponent(`  ${here.email!.toUpperCase()} `)}`, pinned.token)).body.data;
    expect(mine.map((r: Json) => r.id)).toContain(here.id);
    expect(mine.every((r: Json) => r.property_id === pinned.property_id)).toBe(true);
  });
});

describe("dates and timestamps are accepted alike wherever a range is asked", () => {
  const nextDay = (d: string) => new Date(Date.parse(`${d}T00:00:00Z`) + 86_400_000).toISOString().slice(0, 10);
  let day: string; // a day on which group A has transactions

  beforeAll(async () => {
    const tx = await t.admin.transaction.findFirstOrThrow({ where: { propertyGroupId: A().id }, orderBy: { occurredAt: "asc" } });
    day = tx.occurredAt.toISOString().slice(0, 10);
  });

  it("REST: a date as an instant bound is the day's start (from) or takes the whole day in (_to); an instant as a date bound is the date it is written in", async () => {
    const asDates = await rest(`/v1/transactions?occurred_from=${day}&occurred_to=${day}&limit=500`);
    const asInstants = await rest(`/v1/transactions?occurred_from=${day}T00:00:00Z&occurred_to=${nextDay(day)}T00:00:00Z&limit=500`);
    expect(asDates.status).toBe(200);
    expect(asDates.body.data.length).toBeGreaterThan(0);
    expect(ids(asDates.body.data)).toEqual(ids(asInstants.body.data));
    expect(asDates.body.data.every((r: Json) => r.occurred_at.startsWith(day))).toBe(true);

    const reservation = await t.admin.reservation.findFirstOrThrow({ where: { propertyGroupId: A().id }, orderBy: { arrivalDate: "asc" } });
    const arrival = reservation.arrivalDate.toISOString().slice(0, 10);
    const byDate = await rest(`/v1/reservations?arrival_from=${arrival}&arrival_to=${arrival}&limit=500`);
    const byInstant = await rest(`/v1/reservations?arrival_from=${arrival}T09:30:00Z&arrival_to=${arrival}T23:59:59Z&limit=500`);
    expect(byDate.body.data.length).toBeGreaterThan(0);
    expect(ids(byInstant.body.data)).toEqual(ids(byDate.body.data));
    // In the instant's own offset, not UTC: 23:30-02:00 is the client's day (in UTC the day after), 00:00+01:00 too (in UTC the day before).
    const local = `arrival_from=${encodeURIComponent(`${arrival}T23:30:00-02:00`)}&arrival_to=${encodeURIComponent(`${arrival}T00:00:00+01:00`)}`;
    expect(ids((await rest(`/v1/reservations?${local}&limit=500`)).body.data)).toEqual(ids(byDate.body.data));

    for (const path of ["/v1/guests", "/v1/master-profiles", "/v1/reservations", "/v1/actions", "/v1/loyalty/members"]) {
      const [d, i] = [await rest(`${path}?updated_since=2000-01-01&limit=5`), await rest(`${path}?updated_since=2000-01-01T00:00:00Z&limit=5`)];
      expect([path, d.status, d.body.data]).toEqual([path, 200, i.body.data]);
    }
    for (const query of ["observed_from=2000-01-01", "observed_to=2999-12-31"]) expect((await rest(`/v1/consents?${query}&limit=1`)).status).toBe(200);
    for (const query of ["due_from=2000-01-01", "due_to=2999-12-31"]) expect((await rest(`/v1/actions?${query}&limit=1`)).status).toBe(200);
    for (const query of ["published_from=2000-01-01", "published_to=2999-12-31"]) {
      expect((await rest(`/v1/reviews?${query}&limit=1`)).status).toBe(200);
      expect((await rest(`/v1/reviews/summary?${query}`)).status).toBe(200);
    }
  });

  it("REST: a value that is neither is a 400 naming the query parameter and both forms", async () => {
    const res = await rest("/v1/transactions?occurred_to=yesterday");
    expect(res.status).toBe(400);
    expect(res.body.detail).toMatch(/^occurred_to must be an ISO 8601 instant with time zone or a date YYYY-MM-DD/);
    const bad = await rest("/v1/reservations?arrival_to=2026-02-30");
    expect(bad.body.detail).toMatch(/^arrival_to must be a date YYYY-MM-DD \(or an ISO 8601 instant/);
  });

  it("GraphQL filters take either form for Date and DateTime", async () => {
    const query = `query($f: TransactionFilter) { transactions(filter: $f, limit: 500) { nodes { id } } }`;
    const dates = await gqlData(query, { f: { occurredFrom: day, occurredTo: day } });
    const instants = await gqlData(query, { f: { occurredFrom: `${day}T00:00:00Z`, occurredTo: `${nextDay(day)}T00:00:00Z` } });
    expect(dates.transactions.nodes.length).toBeGreaterThan(0);
    expect(ids(dates.transactions.nodes)).toEqual(ids(instants.transactions.nodes));
    const literal = await gqlData(`{ reservations(filter: { arrivalFrom: "2000-01-01T10:00:00Z", updatedSince: "2000-01-01" }, limit: 1) { nodes { id } } }`);
    expect(literal.reservations.nodes.length).toBe(1);
    const reservation = await t.admin.reservation.findFirstOrThrow({ where: { propertyGroupId: A().id }, orderBy: { arrivalDate: "asc" } });
    const arrival = reservation.arrivalDate.toISOString().slice(0, 10);
    const stays = `query($f: ReservationFilter) { reservations(filter: $f, limit: 500) { nodes { id } } }`;
    const byDate = await gqlData(stays, { f: { arrivalFrom: arrival, arrivalTo: arrival } });
    const byLocal = await gqlData(stays, { f: { arrivalFrom: `${arrival}T23:30:00-02:00`, arrivalTo: `${arrival}T00:00:00+01:00` } });
    expect(byDate.reservations.nodes.length).toBeGreaterThan(0);
    expect(ids(byLocal.reservations.nodes)).toEqual(ids(byDate.reservations.nodes));
    const bad = await t.api.post("/graphql").set("Authorization", `Bearer ${A().credentials.api_key}`).send({ query: `{ transactions(filter: { occurredTo: "yesterday" }) { nodes { id } } }` });
    expect(bad.status).toBe(400); // a literal no scalar reads fails validation
    expect(bad.body.errors[0].message).toMatch(/ISO 8601 instant .* or a date YYYY-MM-DD/);
  });

  it("review_trend: an instant to is an exclusive instant (not its whole day), an instant from inclusive, as /v1/reviews/summary", async () => {
    const review = await t.admin.review.findFirstOrThrow({ where: { propertyGroupId: A().id }, orderBy: { publishedAt: "desc" } });
    const at = review.publishedAt.toISOString();
    const justAfter = new Date(review.publishedAt.getTime() + 1).toISOString();
    const count = async (args: Json) => (await mcpOk("review_trend", args)).buckets.reduce((n: number, b: Json) => n + b.count, 0);
    const sameMs = await t.admin.review.count({ where: { propertyGroupId: A().id, publishedAt: review.publishedAt } });
    const dayOf = at.slice(0, 10);
    expect(await count({ from: dayOf, to: justAfter })).toBe((await count({ from: dayOf, to: at })) + sameMs);
    expect(await count({ from: at, to: justAfter })).toBe(sameMs);
    expect(await count({ from: justAfter, to: dayOf })).toBe((await count({ from: dayOf, to: dayOf })) - (await count({ from: dayOf, to: justAfter })));
    const summary = await rest(`/v1/reviews/summary?published_from=${dayOf}&published_to=${encodeURIComponent(at)}`);
    expect(summary.status).toBe(200);
  });

  it("MCP: list_records and the summary tools take either form; errors name the tool's own argument", async () => {
    const dates = await mcpOk("list_records", { type: "transactions", occurred_from: day, occurred_to: day, limit: 500 });
    const instants = await mcpOk("list_records", { type: "transactions", occurred_from: `${day}T00:00:00Z`, occurred_to: `${nextDay(day)}T00:00:00Z`, limit: 500 });
    expect(dates.data.length).toBeGreaterThan(0);
    expect(ids(dates.data)).toEqual(ids(instants.data));

    const [from, to] = [t.manifest.anchor_date.slice(0, 8) + "01", t.manifest.anchor_date];
    const stays = await mcpOk("stay_performance", { from, to });
    expect(await mcpOk("stay_performance", { from: `${from}T12:00:00Z`, to: `${to}T23:59:59Z` })).toEqual(stays);
    expect(await mcpOk("stay_performance", { from: `${from}T23:30:00-02:00`, to: `${to}T00:00:00+01:00` })).toEqual(stays); // the dates written
    const reviews = await mcpOk("review_trend", { from: "2000-01-01", to });
    expect(reviews.buckets[0].count).toBeGreaterThan(0);
    expect(await mcpOk("review_trend", { from: "2000-01-01T00:00:00Z", to: `${nextDay(to)}T00:00:00Z` })).toEqual(reviews);

    const listError = await mcp("list_records", { type: "reservations", arrival_to: "bogus" });
    expect(listError.isError).toBe(true);
    expect(listError.body.detail).toMatch(/^arrival_to must be a date YYYY-MM-DD/);
    expect(listError.body.detail).not.toContain("filter.");
    for (const tool of ["stay_performance", "review_trend"]) {
      const { isError, body } = await mcp(tool, { from: "2026-01-01", to: "bogus" });
      expect([tool, isError]).toEqual([tool, true]);
      expect(body.detail).toMatch(/^to: must be a real calendar date YYYY-MM-DD \(or an ISO 8601 instant/);
      expect(JSON.stringify(body)).not.toMatch(/arrivalTo|publishedTo|filter\./);
    }
  });
});

describe("guest_context's more names the tools tools/list offers", () => {
  it("the recent events' more (list_records events, order desc) says it is commit order, not occurred_at as the events are", async () => {
    const { __type } = await gqlData(`{ __type(name: "GuestRecentEvents") { fields { name description } } }`);
    const described = Object.fromEntries(__type.fields.map((f: Json) => [f.name, f.description]));
    expect(described.events).toContain("occurred_at");
    expect(described.more).toMatch(/order desc.*commit order.*not by occurred_at/);
    const master = await t.admin.masterProfile.findFirstOrThrow({ where: { propertyGroupId: A().id } });
    const context = await mcpOk("guest_context", { master_profile_id: master.id });
    expect(context.recent_events.more.arguments).toMatchObject({ type: "events", order: "desc" });
  });

  it("on /graphql and through the guest_context tool: list_records with the type, get_record for an unclustered guest", async () => {
    const listed = await t.api
      .post("/mcp")
      .set("Authorization", `Bearer ${A().credentials.api_key}`)
      .set("Accept", "application/json, text/event-stream")
      .send({ jsonrpc: "2.0", id: 1, method: "tools/list" });
    const names = new Set((listed.body.result.tools as { name: string }[]).map((x) => x.name));
    const master = await t.admin.masterProfile.findFirstOrThrow({ where: { propertyGroupId: A().id } });
    const data = await gqlData(
      `query($m: UUID, $g: UUID) {
        clustered: guestContext(masterProfileId: $m) { identity { more { tool arguments } } stays { more { tool arguments } } spend { more { tool arguments } }
          consent { more { tool arguments } } loyalty { more { tool arguments } } reviews { more { tool arguments } } recentEvents { more { tool arguments } } }
        single: guestContext(guestProfileId: $g) { identity { more { tool arguments } } }
      }`,
      { m: master.id, g: A().unclustered_guest },
    );
    const mores = Object.values(data.clustered as Json).map((section: Json) => section.more);
    expect(mores.map((m) => m.arguments.type)).toEqual(["guests", "reservations", "transactions", "consent_observations", "loyalty_members", "reviews", "events"]);
    for (const m of mores) {
      expect(m.tool).toBe("list_records");
      expect(names.has(m.tool)).toBe(true);
      expect(m.arguments.master_profile_id).toBe(master.id);
      const { isError } = await mcp(m.tool, { ...m.arguments, limit: 1 });
      expect([m.arguments.type, isError]).toEqual([m.arguments.type, false]);
    }
    expect(data.single.identity.more).toEqual({ tool: "get_record", arguments: { type: "guest", id: A().unclustered_guest } });
    expect(names.has("get_record")).toBe(true);
    const viaTool = await mcpOk("guest_context", { master_profile_id: master.id });
    expect(viaTool.stays.more).toEqual(data.clustered.stays.more);
  });
});

describe("nothing found: the closest candidates, with their similarity, on every door", () => {
  /** A clustered guest of group A with a name long enough to misspell and a +44 phone, and its master profile's name. */
  let person: { masterId: string; given: string; family: string; phone: string; masterGiven: string; masterFamily: string };
  beforeAll(async () => {
    const guest = await t.admin.guestProfile.findFirstOrThrow({
      where: { propertyGroupId: A().id, masterProfileId: { not: null }, phone: { startsWith: "+44" }, givenName: { not: null }, familyName: { not: null } },
      orderBy: { id: "asc" },
    });
    const master = await t.admin.masterProfile.findUniqueOrThrow({ where: { id: guest.masterProfileId! } });
    person = { masterId: master.id, given: guest.givenName!, family: guest.familyName!, phone: guest.phone!, masterGiven: master.givenName!, masterFamily: master.familyName! };
  });
  const findGuests = `query($q: String!, $l: Int) { guestSearch(query: $q, limit: $l) { closest truncated candidates { masterProfileId matchedOn score similarity } } }`;

  it("find_guests: a near-miss name is a closest candidate with its similarity, on /graphql and /mcp", async () => {
    const query = `${person.given} ${person.family}e`; // "Lucia Browne" for Lucia Brown
    const { guestSearch } = await gqlData(findGuests, { q: query });
    expect(guestSearch.closest).toBe(true);
    const mine = guestSearch.candidates.find((c: Json) => c.masterProfileId === person.masterId);
    expect(mine.matchedOn).toEqual(["similar_name"]);
    expect(mine.similarity).toBeGreaterThanOrEqual(0.8);
    expect(mine.similarity).toBeLessThan(1);
    expect(mine.score).toBe(Math.round(mine.similarity * 50));
    const viaTool = await mcpOk("find_guests", { query });
    expect(viaTool.closest).toBe(true);
    expect(viaTool.candidates.find((c: Json) => c.master_profile_id === person.masterId).similarity).toBe(mine.similarity);
    // An exact name is a match, not a closest candidate.
    const exact = await gqlData(findGuests, { q: `${person.given} ${person.family}` });
    expect(exact.guestSearch.closest).toBe(false);
    expect(exact.guestSearch.candidates[0].similarity).toBeNull();
  });

  it("find_guests: a phone without its country code (national format, or bare digits) is a closest candidate", async () => {
    const national = person.phone.slice(3); // +44 2079460958 → 2079460958
    for (const query of [`0${national.slice(0, 3)} ${national.slice(3, 6)} ${national.slice(6)}`, national]) {
      const { guestSearch } = await gqlData(findGuests, { q: query });
      expect([query, guestSearch.closest]).toEqual([query, true]);
      const mine = guestSearch.candidates.find((c: Json) => c.masterProfileId === person.masterId);
      expect([query, mine?.matchedOn, mine?.similarity]).toEqual([query, ["phone_national"], 0.9]);
      const viaTool = await mcpOk("find_guests", { query });
      expect(viaTool.candidates.some((c: Json) => c.master_profile_id === person.masterId)).toBe(true);
    }
  });

  it("master profiles: q with a full name matches across given and family name; a near miss answers candidates beside empty data (REST, GraphQL, MCP)", async () => {
    for (const q of [`${person.masterGiven} ${person.masterFamily}`, `${person.masterFamily} ${person.masterGiven}`]) {
      const res = await rest(`/v1/master-profiles?q=${encodeURIComponent(q)}&limit=100`);
      expect(res.body.data.map((r: Json) => r.id)).toContain(person.masterId);
      expect(res.body).not.toHaveProperty("candidates"); // matched: no candidates
    }
    const near = `${person.masterGiven} ${person.masterFamily}e`;
    const res = await rest(`/v1/master-profiles?q=${encodeURIComponent(near)}`);
    expect(res.status).toBe(200);
    expect(res.body.data).toEqual([]);
    const mine = res.body.candidates.find((c: Json) => c.master_profile.id === person.masterId);
    // One vocabulary with find_guests: similarity 0 to 1, no score on this door.
    expect(mine.similarity).toBeGreaterThanOrEqual(0.8);
    expect(mine.similarity).toBeLessThan(1);
    expect(mine).not.toHaveProperty("score");
    expect(mine.master_profile.guest_profile_ids.length).toBeGreaterThan(0);
    expect(res.body.candidates.length).toBeLessThanOrEqual(5);

    const { masterProfiles } = await gqlData(`query($q: String) { masterProfiles(filter: { q: $q }) { nodes { id } candidates { similarity masterProfile { id } } } }`, { q: near });
    expect(masterProfiles.nodes).toEqual([]);
    expect(masterProfiles.candidates.map((c: Json) => [c.masterProfile.id, c.similarity])).toEqual(res.body.candidates.map((c: Json) => [c.master_profile.id, c.similarity]));
    const viaTool = await mcpOk("list_records", { type: "master_profiles", q: near });
    expect(viaTool.candidates).toEqual(res.body.candidates);
    // Nothing close at all: an empty list of candidates, still beside empty data.
    const none = await rest(`/v1/master-profiles?q=${encodeURIComponent("Qwxyz Zzqvv")}`);
    expect([none.body.data, none.body.candidates]).toEqual([[], []]);
  });

  it("group B never gets group A's people as candidates; a pinned key only people at its property", async () => {
    const near = `${person.given} ${person.family}e`;
    const ofB = await gqlData(findGuests, { q: near }, B().credentials.api_key);
    expect(ofB.guestSearch.candidates.some((c: Json) => c.masterProfileId === person.masterId)).toBe(false);
    const masters = await rest(`/v1/master-profiles?q=${encodeURIComponent(`${person.masterGiven} ${person.masterFamily}e`)}`, B().credentials.api_key);
    expect(masters.body.candidates.some((c: Json) => c.master_profile.id === person.masterId)).toBe(false);
    for (const c of masters.body.candidates) expect((await rest(`/v1/master-profiles/${c.master_profile.id}`, B().credentials.api_key)).status).toBe(200);

    // Pinned: a person with a guest profile at the key's property is found (only those profiles), one without is not.
    const pinned = A().credentials.api_key_pinned;
    const atPinned = await t.admin.guestProfile.findMany({ where: { propertyId: pinned.property_id }, select: { id: true, masterProfileId: true, givenName: true, familyName: true } });
    const pinnedMasters = new Set(atPinned.map((g) => g.masterProfileId));
    const pinnedGuests = new Set(atPinned.map((g) => g.id));
    const here = atPinned.find((g) => g.masterProfileId && g.givenName && g.familyName && g.familyName.length > 3)!;
    const elsewhere = await t.admin.guestProfile.findFirstOrThrow({ where: { propertyGroupId: A().id, masterProfileId: { notIn: [...pinnedMasters].filter((m): m is string => m !== null) }, familyName: { not: null } } });
    for (const [who, expected] of [[here, true], [elsewhere, false]] as const) {
      const q = `${who.givenName} ${who.familyName}e`;
      const seen = await gqlData(`query($q: String!) { guestSearch(query: $q, limit: 25) { closest candidates { masterProfileId guestProfileIds } } }`, { q }, pinned.token);
      expect([q, seen.guestSearch.candidates.some((c: Json) => c.masterProfileId === who.masterProfileId)]).toEqual([q, expected]);
      for (const c of seen.guestSearch.candidates) {
        expect(c.guestProfileIds.every((id: string) => pinnedGuests.has(id))).toBe(true);
        if (c.masterProfileId) expect(pinnedMasters.has(c.masterProfileId)).toBe(true);
      }
      const masters = await rest(`/v1/master-profiles?q=${encodeURIComponent(q)}`, pinned.token);
      expect([q, (masters.body.candidates ?? []).some((c: Json) => c.master_profile.id === who.masterProfileId)]).toEqual([q, expected]);
      for (const c of masters.body.candidates ?? []) expect(pinnedMasters.has(c.master_profile.id)).toBe(true);
    }
  });

  it("closest candidates are batched: the statement count does not grow with the number asked for", async () => {
    const counts: number[] = [];
    for (const limit of [1, 5, 25]) {
      const res = await t.api.post("/graphql").set("Authorization", `Bearer ${A().credentials.api_key}`).send({ query: findGuests, variables: { q: `${person.given.slice(0, 3)}x`, l: limit } });
      expect(res.body.data.guestSearch.closest).toBe(true);
      counts.push(Number(res.headers["x-sql-statements"]));
    }
    expect(counts[0]).toBeGreaterThan(0);
    expect(new Set(counts).size).toBe(1);
    const masters = [];
    for (const limit of [1, 100]) {
      const res = await rest(`/v1/master-profiles?q=${encodeURIComponent(`${person.masterGiven}x ${person.masterFamily}`)}&limit=${limit}`);
      expect(res.body.candidates.length).toBeGreaterThan(0);
      masters.push(Number(res.headers["x-sql-statements"]));
    }
    expect(masters[0]).toBe(masters[1]);
  });
});

// Last in the file: it renames group A's Olivia Smiths (so "Olivia Smith" matches nothing) and adds
// older master profiles, which no test above must see.
describe("closest names: a typo in any name part's first letters, and the nearest names within the master search's cap", () => {
  let smyth: { masterId: string; guestId: string };
  beforeAll(async () => {
    const olivias = { propertyGroupId: A().id, givenName: { equals: "Olivia", mode: "insensitive" as const }, familyName: { startsWith: "Sm", mode: "insensitive" as const } };
    await t.admin.guestProfile.updateMany({ where: olivias, data: { familyName: "Jones" } });
    await t.admin.masterProfile.updateMany({ where: olivias, data: { familyName: "Jones" } });
    const pinned = A().credentials.api_key_pinned.property_id;
    const integration = await t.admin.integration.findFirstOrThrow({ where: { propertyId: pinned } });
    smyth = { masterId: randomUUID(), guestId: randomUUID() };
    await t.admin.masterProfile.create({ data: { id: smyth.masterId, propertyGroupId: A().id, givenName: "Olivia", familyName: "Smyth" } });
    await t.admin.guestProfile.create({
      data: { id: smyth.guestId, propertyGroupId: A().id, propertyId: pinned, integrationId: integration.id, sourceId: `smyth-${smyth.guestId}`, masterProfileId: smyth.masterId, givenName: "Olivia", familyName: "Smyth" },
    });
    // More near-named master profiles than the closest search reads, all older: read oldest first, they would push Olivia Smyth out.
    await t.admin.masterProfile.createMany({
      data: Array.from({ length: 600 }, (_, i) => ({ id: randomUUID(), propertyGroupId: A().id, givenName: `Xavier${i}`, familyName: `Smithson${i}`, createdAt: new Date("2001-01-01T00:00:00Z") })),
    });
  });

  // Typos after the prefix letters were found before; these are in the first letters of one part (or both parts' later letters).
  it.each(["Olivia Smith", "Olivia Symth", "Olivia Msyth", "Oilvia Smyth", "Olivai Smtyh", "Smith Olivia"])(
    "%s finds Olivia Smyth as a closest candidate on find_guests, the master profiles route and list_records",
    async (query) => {
      const viaTool = await mcpOk("find_guests", { query, limit: 25 });
      expect(viaTool.closest).toBe(true);
      const found = viaTool.candidates.find((c: Json) => c.master_profile_id === smyth.masterId);
      expect(found?.matched_on).toEqual(["similar_name"]);
      expect(found.similarity).toBeGreaterThanOrEqual(0.5);

      const res = await rest(`/v1/master-profiles?q=${encodeURIComponent(query)}`);
      expect(res.body.data).toEqual([]);
      const master = res.body.candidates.find((c: Json) => c.master_profile.id === smyth.masterId);
      expect(master?.similarity).toBeGreaterThanOrEqual(0.5);
      const listed = await mcpOk("list_records", { type: "master_profiles", q: query });
      expect(listed.candidates).toEqual(res.body.candidates);
    },
  );

  it("group B never gets Olivia Smyth; a key pinned to her property does, one pinned elsewhere does not", async () => {
    const ofB = await mcpOk("find_guests", { query: "Olivia Smith", limit: 25 }, B().credentials.api_key);
    expect(ofB.candidates.some((c: Json) => c.master_profile_id === smyth.masterId)).toBe(false);
    const mastersOfB = await rest(`/v1/master-profiles?q=${encodeURIComponent("Olivia Smith")}`, B().credentials.api_key);
    expect((mastersOfB.body.candidates ?? []).some((c: Json) => c.master_profile.id === smyth.masterId)).toBe(false);

    const pinned = await mcpOk("find_guests", { query: "Olivia Smith", limit: 25 }, A().credentials.api_key_pinned.token);
    expect(pinned.candidates.find((c: Json) => c.master_profile_id === smyth.masterId)?.guest_profile_ids).toEqual([smyth.guestId]);
    const elsewhere = await t.admin.property.findFirstOrThrow({ where: { propertyGroupId: A().id, id: { not: A().credentials.api_key_pinned.property_id } } });
    const { token } = await createApiKey(t.admin, { propertyGroupId: A().id, propertyId: elsewhere.id, name: "pinned elsewhere", scopes: ["read:guests"] });
    const notHere = await mcpOk("find_guests", { query: "Olivia Smith", limit: 25 }, token);
    expect(notHere.candidates.some((c: Json) => c.master_profile_id === smyth.masterId)).toBe(false);
    const mastersElsewhere = await rest(`/v1/master-profiles?q=${encodeURIComponent("Olivia Smith")}`, token);
    expect(mastersElsewhere.status).toBe(200);
    expect((mastersElsewhere.body.candidates ?? []).some((c: Json) => c.master_profile.id === smyth.masterId)).toBe(false);
  });
});
