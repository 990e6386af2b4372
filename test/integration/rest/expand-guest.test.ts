// expand=guest (issue 42, "rows that carry their person"): every list whose rows point at a guest
// adds each row's guest { id, master_profile_id, name, vip } on REST, GraphQL and MCP, in one batched
// read per page, within the caller's group and property.
import { randomUUID } from "node:crypto";
import { createApiKey } from "../../../src/auth/credentials";
import { startTestApp, type TestApp } from "../../helpers/app";

let t: TestApp;
beforeAll(async () => {
  t = await startTestApp();
});
afterAll(() => t.close());

const A = () => t.manifest.groups.A;
const B = () => t.manifest.groups.B;
const get = (path: string, token = A().credentials.api_key) => t.api.get(path).set("Authorization", `Bearer ${token}`);

type Row = Record<string, any>; // eslint-disable-line @typescript-eslint/no-explicit-any
interface Summary {
  id: string;
  master_profile_id: string | null;
  name: string | null;
  vip: boolean;
}

/** Each route that takes expand=guest, how its rows name their guest, and its MCP call. */
const ROUTES: { path: () => string; guestIdOf: (row: Row) => string | null; tool: () => [string, Record<string, unknown>] }[] = [
  { path: () => "/v1/reservations", guestIdOf: (r) => r.guest_profile_id, tool: () => ["list_records", { type: "reservations" }] },
  { path: () => "/v1/transactions", guestIdOf: (r) => r.guest_profile_id, tool: () => ["list_records", { type: "transactions" }] },
  { path: () => "/v1/consents", guestIdOf: (r) => r.guest_profile_id, tool: () => ["list_records", { type: "consent_observations" }] },
  { path: () => "/v1/consents/effective", guestIdOf: () => null, tool: () => ["effective_consent", {}] },
  { path: () => "/v1/actions", guestIdOf: (r) => r.guest_profile_id, tool: () => ["list_records", { type: "actions" }] },
  { path: () => "/v1/reviews", guestIdOf: (r) => r.guest_profile_id, tool: () => ["list_records", { type: "reviews" }] },
  { path: () => "/v1/loyalty/members", guestIdOf: (r) => r.guest_profile_id, tool: () => ["list_records", { type: "loyalty_members" }] },
  // Reservation events: the log starts with channels and programs, which concern no guest.
  { path: () => "/v1/events?entity_type=reservation", guestIdOf: (r) => r.guest_profile_id, tool: () => ["list_records", { type: "events", entity_type: "reservation" }] },
  {
    path: () => `/v1/tables/${A().tables.bound}/members`,
    guestIdOf: (r) => (r.member_type === "guest_profile" ? r.member_id : null),
    tool: () => ["list_records", { type: "table_members", id: A().tables.bound }],
  },
];
const PATHS = ["reservations", "transactions", "consents", "consents/effective", "actions", "reviews", "loyalty/members", "events", "tables/{id}/members"];
const names = PATHS.map((p, i) => [`/v1/${p}`, i] as const);

const withQuery = (path: string, query: string) => `${path}${path.includes("?") ? "&" : "?"}${query}`;

/** Name and vip as the service defines them, read straight from the database. */
async function expectedSummary(guestId: string): Promise<Summary> {
  const g = await t.admin.guestProfile.findUniqueOrThrow({ where: { id: guestId } });
  const master = g.masterProfileId ? await t.admin.masterProfile.findUnique({ where: { id: g.masterProfileId } }) : null;
  return {
    id: g.id,
    master_profile_id: g.masterProfileId,
    name: [g.givenName, g.familyName].filter(Boolean).join(" ") || null,
    vip: master?.vip ?? g.vipCode != null,
  };
}

/** The guest part of a row under expand=guest: the summary's four members. */
const summaryOf = (guest: Row | null): Summary | null =>
  guest && { id: guest.id, master_profile_id: guest.master_profile_id, name: guest.name, vip: guest.vip };

async function mcp(token: string, name: string, args: Record<string, unknown>) {
  const res = await t.api
    .post("/mcp")
    .set("Authorization", `Bearer ${token}`)
    .set("Accept", "application/json, text/event-stream")
    .send({ jsonrpc: "2.0", id: 1, method: "tools/call", params: { name, arguments: args } });
  expect(res.status).toBe(200);
  const result = res.body.result as { isError?: boolean; content: { text: string }[] };
  return { isError: result.isError === true, body: JSON.parse(result.content[0].text) as Row };
}

describe("REST expand=guest on every list whose rows point at a guest", () => {
  it.each(names)("%s: rows gain guest { id, master_profile_id, name, vip }; without expand they do not", async (_name, i) => {
    const route = ROUTES[i];
    const plain = await get(withQuery(route.path(), "limit=20"));
    expect(plain.status).toBe(200);
    expect(plain.body.data.length).toBeGreaterThan(0);
    // Table members carried their guest record before expand; the other lists carry none.
    if (!route.path().includes("/members")) for (const row of plain.body.data) expect(row).not.toHaveProperty("guest");

    const expanded = await get(withQuery(route.path(), "limit=20&expand=guest"));
    expect(expanded.status).toBe(200);
    expect(expanded.body.data.map((r: Row) => ({ ...r, guest: undefined }))).toEqual(plain.body.data.map((r: Row) => ({ ...r, guest: undefined })));
    let withGuest = 0;
    for (const row of expanded.body.data as Row[]) {
      expect(row).toHaveProperty("guest");
      const guestId = route.path().endsWith("/effective") ? row.guest?.id ?? null : route.guestIdOf(row);
      if (guestId === null) {
        expect(row.guest).toBeNull();
        continue;
      }
      withGuest++;
      expect(summaryOf(row.guest)).toEqual(await expectedSummary(guestId));
      if (!route.path().includes("/members")) expect(Object.keys(row.guest).sort()).toEqual(["id", "master_profile_id", "name", "vip"]);
    }
    expect(withGuest).toBeGreaterThan(0);
  });

  it("events of entities without a guest (channels, spaces, programs) carry guest: null", async () => {
    const res = await get("/v1/events?entity_type=channel&limit=5&expand=guest");
    expect(res.body.data.length).toBeGreaterThan(0);
    for (const row of res.body.data) expect([row.guest_profile_id, row.guest]).toEqual([null, null]);
  });

  it("a consent row recorded against no guest profile carries guest: null", async () => {
    const orphan = await t.admin.consentObservation.findFirst({ where: { propertyGroupId: A().id, guestProfileId: null } });
    const observed = orphan ?? (await t.admin.consentObservation.findFirstOrThrow({ where: { propertyGroupId: A().id } }));
    const res = await get(`/v1/consents?contact_value=${encodeURIComponent(observed.contactValue)}&expand=guest&limit=100`);
    for (const row of res.body.data) {
      if (row.guest_profile_id === null) expect(row.guest).toBeNull();
      else expect(row.guest.id).toBe(row.guest_profile_id);
    }
    if (orphan) expect(res.body.data.some((r: Row) => r.guest === null)).toBe(true);
  });

  it("effective consent: the one person holding the contact point; null when different people share it", async () => {
    const point = A().consent_conflict;
    const res = await get(`/v1/consents/effective?contact_value=${encodeURIComponent(point.contact_value)}&expand=guest`);
    expect(res.status).toBe(200);
    expect(res.body.data.length).toBeGreaterThan(0);
    const holders = await t.admin.guestProfile.findMany({
      where: { propertyGroupId: A().id, email: { equals: point.contact_value, mode: "insensitive" } },
      orderBy: [{ createdAt: "asc" }, { id: "asc" }],
    });
    const people = new Set(holders.map((g) => g.masterProfileId ?? g.id));
    const expected = people.size === 1 ? await expectedSummary(holders[0].id) : null;
    for (const row of res.body.data) expect(summaryOf(row.guest)).toEqual(expected);

    // Shared by two people: nobody is named.
    const shared = `shared.${Date.now()}@example.com`;
    const guests = await t.admin.guestProfile.findMany({ where: { propertyGroupId: A().id, masterProfileId: null }, take: 2 });
    const master = await t.admin.guestProfile.findFirstOrThrow({ where: { propertyGroupId: A().id, masterProfileId: { not: null } } });
    const integration = A().integrations[0];
    await t.admin.guestProfile.update({ where: { id: guests[0].id }, data: { email: shared.toUpperCase() } });
    await t.admin.consentObservation.create({
      data: {
        id: randomUUID(), propertyGroupId: A().id, propertyId: integration.property_id, integrationId: integration.id, guestProfileId: guests[0].id,
        contactType: "email", contactValue: shared, purpose: "email_marketing", channel: "email", status: "granted", source: "test",
        observedAt: new Date(),
      },
    });
    const one = await get(`/v1/consents/effective?contact_value=${shared}&expand=guest`);
    expect(summaryOf(one.body.data[0].guest)).toEqual(await expectedSummary(guests[0].id)); // one holder, any case
    await t.admin.guestProfile.update({ where: { id: master.id }, data: { email: shared } });
    const two = await get(`/v1/consents/effective?contact_value=${shared}&expand=guest`);
    expect(two.body.data[0].guest).toBeNull();

    // A phone: held by the guest whose number has the same digits, however the source formatted it.
    const phone = "+447700900555";
    await t.admin.guestProfile.update({ where: { id: guests[1].id }, data: { phone: "+44 7700 900555" } });
    await t.admin.consentObservation.create({
      data: {
        id: randomUUID(), propertyGroupId: A().id, propertyId: integration.property_id, integrationId: integration.id, guestProfileId: null,
        contactType: "phone", contactValue: phone, purpose: "sms_marketing", channel: "sms", status: "withdrawn", source: "test",
        observedAt: new Date(),
      },
    });
    const byPhone = await get(`/v1/consents/effective?contact_value=${encodeURIComponent(phone)}&expand=guest`);
    expect(byPhone.body.data).toHaveLength(1);
    expect(summaryOf(byPhone.body.data[0].guest)).toEqual(await expectedSummary(guests[1].id));
  });

  it("table members of a master profile table keep guest null; guest profile members gain name and vip", async () => {
    const res = await get(`/v1/tables/${A().tables.bound}/members?expand=guest&limit=5`);
    for (const row of res.body.data) {
      if (row.member_type === "guest_profile") expect(row.guest).toMatchObject({ id: row.member_id, name: expect.anything(), vip: expect.any(Boolean) });
      else expect(row.guest).toBeNull();
    }
  });

  it("expand[]=guest is expand=guest; unknown or repeated values are 400 invalid_request naming the allowed value", async () => {
    const brackets = await get("/v1/reservations?limit=3&expand[]=guest");
    expect(brackets.status).toBe(200);
    for (const row of brackets.body.data) expect(row.guest.id).toBe(row.guest_profile_id);
    expect((await get("/v1/reservations?limit=3&expand=guest,guest")).status).toBe(200);
    for (const q of ["expand=guests", "expand=guest,property", "expand=", "expand=GUEST", "expand[]=guest&expand[]=nope"]) {
      const res = await get(`/v1/reservations?${q}`);
      expect([q, res.status, res.body.error]).toEqual([q, 400, "invalid_request"]);
      expect(res.body.detail).toMatch(/expand must be a comma-separated list of guest/);
    }
    const twice = await get("/v1/reservations?expand=guest&expand=guest");
    expect([twice.status, twice.body.error]).toEqual([400, "invalid_request"]);
    // A list whose rows point at no guest does not take it.
    const properties = await get("/v1/channels?expand=guest");
    expect([properties.status, properties.body.error]).toEqual([400, "invalid_request"]);
  });

  it("expand=guest needs read:guests as well: a credential without it is 403 naming the scope", async () => {
    const { token } = await createApiKey(t.admin, { propertyGroupId: A().id, name: "no guests", scopes: ["read:reservations"] });
    expect((await get("/v1/reservations?limit=2", token)).status).toBe(200);
    const res = await get("/v1/reservations?limit=2&expand=guest", token);
    expect(res.status).toBe(403);
    expect(res.body).toMatchObject({ error: "forbidden", scope: "read:guests" });
  });
});

describe("batched: the statement count per request does not grow with the page", () => {
  it.each(names)("%s with expand=guest: limit 5 and limit 50 issue the same number of statements", async (_name, i) => {
    const route = ROUTES[i];
    const statements = async (limit: number) => {
      const res = await get(withQuery(route.path(), `limit=${limit}&expand=guest`));
      expect(res.status).toBe(200);
      return { rows: res.body.data.length as number, count: Number(res.headers["x-sql-statements"]) };
    };
    const [small, large] = [await statements(5), await statements(50)];
    expect(small.rows).toBe(5);
    expect(large.rows).toBeGreaterThan(small.rows);
    expect(large.count).toBe(small.count);
  });

  it("GraphQL nests guest { id name vip } on every such list through the loader: 5 or 50 rows, same statements", async () => {
    const lists = ["reservations", "transactions", "consents", "actions", "reviews", "loyaltyMembers", "events"];
    for (const list of lists) {
      const filter = list === "events" ? ", filter: { entityType: reservation }" : "";
      const count = async (limit: number) => {
        const res = await t.api
          .post("/graphql")
          .set("Authorization", `Bearer ${A().credentials.api_key}`)
          .send({ query: `{ ${list}(limit: ${limit}${filter}) { nodes { guest { id masterProfileId name vip } } } }` });
        expect(res.body.errors).toBeUndefined();
        expect(res.body.data[list].nodes.some((n: Row) => n.guest !== null)).toBe(true);
        return Number(res.headers["x-sql-statements"]);
      };
      expect([list, await count(50)]).toEqual([list, await count(5)]);
    }
  });
});

describe("GraphQL Guest.name and Guest.vip", () => {
  it("read only the columns they need on the guests page and say what the REST summary says", async () => {
    const res = await t.api
      .post("/graphql")
      .set("Authorization", `Bearer ${A().credentials.api_key}`)
      .send({ query: "{ guests(limit: 30) { nodes { id masterProfileId name vip } } }" });
    expect(res.body.errors).toBeUndefined();
    const nodes = res.body.data.guests.nodes as Row[];
    expect(nodes.some((n) => n.vip)).toBe(true);
    for (const n of nodes) expect({ id: n.id, master_profile_id: n.masterProfileId, name: n.name, vip: n.vip }).toEqual(await expectedSummary(n.id));
  });
});

describe("tenant isolation", () => {
  it.each(names)("%s: group B's key never sees a group A guest, a pinned key only its property's guests", async (_name, i) => {
    const route = ROUTES[i];
    const aGuests = new Set((await t.admin.guestProfile.findMany({ where: { propertyGroupId: A().id }, select: { id: true } })).map((g) => g.id));
    const bPath = route.path().replace(A().tables.bound, B().tables.bound);
    const other = await get(withQuery(bPath, "limit=200&expand=guest"), B().credentials.api_key);
    expect(other.status).toBe(200);
    const bGuests = (other.body.data as Row[]).map((r) => r.guest?.id).filter(Boolean);
    expect(bGuests.length).toBeGreaterThan(0);
    expect(bGuests.filter((id) => aGuests.has(id))).toEqual([]);

    const pinned = A().credentials.api_key_pinned;
    const mine = await get(withQuery(route.path(), "limit=200&expand=guest"), pinned.token);
    expect(mine.status).toBe(200);
    const ids = (mine.body.data as Row[]).map((r) => r.guest?.id).filter(Boolean);
    const rows = await t.admin.guestProfile.findMany({ where: { id: { in: ids } }, select: { propertyId: true } });
    expect(rows.length).toBe(new Set(ids).size);
    for (const g of rows) expect(g.propertyId).toBe(pinned.property_id);
  });
});

describe("MCP: the same routes' tools take expand: \"guest\"", () => {
  it.each(names)("%s: the tool answers the REST page with each row's guest", async (_name, i) => {
    const route = ROUTES[i];
    const [tool, args] = route.tool();
    const { isError, body } = await mcp(A().credentials.api_key, tool, { ...args, limit: 5, expand: "guest" });
    expect(isError).toBe(false);
    const rest = await get(withQuery(route.path(), "limit=5&expand=guest"));
    expect(body.data).toEqual(rest.body.data);
    expect(body.data.some((r: Row) => r.guest !== null)).toBe(true);
  });

  it("a bad expand is a tool error naming expand; a type whose list has no guest refuses the argument", async () => {
    const bad = await mcp(A().credentials.api_key, "list_records", { type: "reservations", expand: "guests" });
    expect(bad.isError).toBe(true);
    expect(bad.body).toMatchObject({ error: "invalid_request" });
    expect(bad.body.detail).toMatch(/expand must be a comma-separated list of guest/);
    const other = await mcp(A().credentials.api_key, "list_records", { type: "channels", expand: "guest" });
    expect(other.isError).toBe(true);
    expect(other.body.detail).toMatch(/unknown argument expand/);
  });

  it("expand as an array of strings (the form models most often send) is expand as a string; a bad member is an error naming expand", async () => {
    const asString = await mcp(A().credentials.api_key, "list_records", { type: "reservations", limit: 5, expand: "guest" });
    const asArray = await mcp(A().credentials.api_key, "list_records", { type: "reservations", limit: 5, expand: ["guest"] });
    expect(asArray.isError).toBe(false);
    expect(asArray.body.data).toEqual(asString.body.data);
    expect(asArray.body.data.some((r: Row) => r.guest !== null)).toBe(true);
    const viaTool = await mcp(A().credentials.api_key, "guest_events", { limit: 5, expand: ["guest", "guest"] });
    expect(viaTool.isError).toBe(false);
    expect(viaTool.body.data.every((r: Row) => "guest" in r)).toBe(true);
    for (const bad of [["guest", "property"], [1], [["guest"]]]) {
      const res = await mcp(A().credentials.api_key, "list_records", { type: "reservations", expand: bad });
      expect([bad, res.isError, res.body.error]).toEqual([bad, true, "invalid_request"]);
      expect(res.body.detail).toMatch(/^expand /);
    }
    // Other arguments still take one value.
    const listed = await mcp(A().credentials.api_key, "list_records", { type: "reservations", status: ["confirmed"] });
    expect(listed.body.detail).toMatch(/status must be a string, number or boolean/);
  });

  it("a pinned key's tool rows name only guests at its property", async () => {
    const pinned = A().credentials.api_key_pinned;
    const { body } = await mcp(pinned.token, "list_records", { type: "reviews", limit: 50, expand: "guest" });
    const ids = (body.data as Row[]).map((r) => r.guest?.id).filter(Boolean);
    expect(ids.length).toBeGreaterThan(0);
    const rows = await t.admin.guestProfile.findMany({ where: { id: { in: ids } }, select: { propertyId: true } });
    for (const g of rows) expect(g.propertyId).toBe(pinned.property_id);
  });
});
