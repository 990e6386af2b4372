// Tables: offset pages, members, previews and the filter document language.
import { startTestApp, type TestApp } from "../../helpers/app";

let t: TestApp;
beforeAll(async () => {
  t = await startTestApp();
});
afterAll(() => t.close());

const A = () => t.manifest.groups.A;
const B = () => t.manifest.groups.B;
const auth = (token = A().credentials.api_key) => ({ Authorization: `Bearer ${token}` });
const get = (path: string, token?: string) => t.api.get(path).set(auth(token));
const preview = (body: unknown, token?: string) => t.api.post("/v1/tables/preview").set(auth(token)).send(body as object);

async function walkOffset(path: string, body?: Record<string, unknown>) {
  const ids: string[] = [];
  let offset = 0;
  let pages = 0;
  for (;;) {
    const res = body ? await preview({ ...body, offset }) : await get(`${path}${path.includes("?") ? "&" : "?"}offset=${offset}`);
    expect(res.status).toBe(200);
    expect(Object.keys(res.body).sort()).toEqual(["data", "has_more", "next_offset"]);
    ids.push(...res.body.data.map((r: { id?: string; member_id?: string }) => r.id ?? r.member_id));
    pages++;
    if (!res.body.has_more) return { ids, pages };
    offset = res.body.next_offset;
  }
}

describe("GET /v1/tables", () => {
  it("offset-walks the group's tables and only those", async () => {
    const { ids, pages } = await walkOffset("/v1/tables?limit=1");
    expect(pages).toBe(2);
    expect(ids.sort()).toEqual([A().tables.bound, A().tables.unbound].sort());
    const b = await get("/v1/tables", B().credentials.api_key);
    expect(b.body.data.map((r: { id: string }) => r.id)).not.toContain(A().tables.bound);
  });

  it("include_total adds total_count; offset clamps at 50,000 and ends the walk", async () => {
    const res = await get("/v1/tables?limit=1&include_total=true");
    expect(res.body.total_count).toBe(2);
    const far = await get("/v1/tables?offset=999999");
    expect(far.status).toBe(200);
    expect(far.body).toEqual({ data: [], has_more: false, next_offset: 50000 });
    expect((await get("/v1/tables?offset=-1")).status).toBe(400);
  });

  it("narrows with X-Property-Id: the property's own tables and group-wide ones, never another property's", async () => {
    const [p0, p1] = A().properties;
    const own = await t.admin.guestTable.create({
      data: { id: "7a0c0000-0000-4000-8000-000000000001", propertyGroupId: A().id, propertyId: p1, name: "Arrivals at p1", kind: "curated", memberType: "guest_profile" },
    });
    const ids = async (property: string) =>
      (await get("/v1/tables?limit=500").set("X-Property-Id", property)).body.data.map((r: { id: string; property_id: string | null }) => r);
    const atP1 = await ids(p1);
    expect(atP1.map((r: { id: string }) => r.id)).toContain(own.id);
    const atP0 = await ids(p0);
    expect(atP0.map((r: { id: string }) => r.id)).not.toContain(own.id);
    for (const r of atP0) expect([p0, null]).toContain(r.property_id);
    expect((await get(`/v1/tables/${own.id}`).set("X-Property-Id", p0)).status).toBe(404);
    // A filter-defined table's members, seen from one property, are that property's guests.
    const members = await get(`/v1/tables/${A().tables.unbound}/members?limit=500`).set("X-Property-Id", p0);
    expect(members.status).toBe(200);
    for (const m of members.body.data) expect(m.guest.property_id).toBe(p0);
    await t.admin.guestTable.delete({ where: { id: own.id } });
  });

  it("needs read:tables", async () => {
    const res = await get("/v1/tables", A().credentials.api_key_limited);
    expect(res.body).toMatchObject({ error: "forbidden", scope: "read:tables" });
  });
});

describe("GET /v1/tables/{id}/members", () => {
  it("walks a curated table's stored members with their guest records", async () => {
    const stored = await t.admin.tableMember.findMany({ where: { tableId: A().tables.bound } });
    const { ids, pages } = await walkOffset(`/v1/tables/${A().tables.bound}/members?limit=2`);
    expect(pages).toBeGreaterThan(2);
    expect(ids.sort()).toEqual(stored.map((m) => m.memberId).sort());
    const page = await get(`/v1/tables/${A().tables.bound}/members?limit=1&include_total=1`);
    expect(page.body.total_count).toBe(stored.length);
    expect(page.body.data[0].guest.id).toBe(page.body.data[0].member_id);
    expect((await get(`/v1/tables/${A().tables.bound}`)).body.data.member_count).toBe(stored.length);
  });

  it("evaluates a filter-defined table's document", async () => {
    const table = await t.admin.guestTable.findUniqueOrThrow({ where: { id: A().tables.unbound } });
    const viaMembers = await walkOffset(`/v1/tables/${table.id}/members?limit=3`);
    const viaPreview = await walkOffset("", { member_type: table.memberType, filter_doc: table.filterDoc, limit: 3 });
    expect(viaMembers.ids).toEqual(viaPreview.ids);
  });

  it("404 for another group's table", async () => {
    const res = await get(`/v1/tables/${A().tables.bound}/members`, B().credentials.api_key);
    expect(res.status).toBe(404);
  });
});

describe("table members seen by a property-narrowed caller (issue 26)", () => {
  /** The bound table's stored members whose guest is at `property`, in the order they were added. */
  async function membersAt(property: string) {
    const stored = await t.admin.tableMember.findMany({ where: { tableId: A().tables.bound }, orderBy: { position: "asc" } });
    const at = new Set(
      (await t.admin.guestProfile.findMany({ where: { id: { in: stored.map((m) => m.memberId) }, propertyId: property }, select: { id: true } })).map((g) => g.id),
    );
    const expected = stored.map((m) => m.memberId).filter((id) => at.has(id));
    // The group-wide table really holds guests of other properties too.
    expect(expected.length).toBeGreaterThan(0);
    expect(expected.length).toBeLessThan(stored.length);
    return expected;
  }

  const narrowed = () => [
    ["X-Property-Id", A().credentials.api_key, { "X-Property-Id": A().properties[0] }],
    ["a pinned key", A().credentials.api_key_pinned.token, {}],
  ] as const;

  it("/v1 shows only members in scope: no other property's member id, offsets and counts over what is shown", async () => {
    expect(A().credentials.api_key_pinned.property_id).toBe(A().properties[0]);
    const expected = await membersAt(A().properties[0]);
    for (const [label, token, headers] of narrowed()) {
      const seen: string[] = [];
      let offset = 0;
      for (;;) {
        const res = await get(`/v1/tables/${A().tables.bound}/members?limit=2&offset=${offset}`, token).set(headers);
        expect([label, res.status]).toEqual([label, 200]);
        for (const m of res.body.data) expect([label, m.guest?.property_id]).toEqual([label, A().properties[0]]);
        seen.push(...res.body.data.map((m: { member_id: string }) => m.member_id));
        expect(res.body.next_offset).toBe(offset + res.body.data.length);
        if (!res.body.has_more) break;
        offset = res.body.next_offset;
      }
      expect([label, seen]).toEqual([label, expected]);
      const total = await get(`/v1/tables/${A().tables.bound}/members?limit=1&include_total=true`, token).set(headers);
      expect([label, total.body.total_count]).toEqual([label, expected.length]);
      const table = await get(`/v1/tables/${A().tables.bound}`, token).set(headers);
      expect([label, table.body.data.member_count]).toEqual([label, expected.length]);
    }
  });

  it("GraphQL tableMembers and Table.memberCount, and MCP list_table_members, show the same members", async () => {
    const expected = await membersAt(A().properties[0]);
    const narrow = { "X-Property-Id": A().properties[0] };
    const gql = await t.api.post("/graphql").set(auth()).set(narrow).send({
      query: "query($id: UUID!) { tableMembers(tableId: $id, limit: 500, includeTotal: true) { nodes { memberId guest { propertyId } } totalCount nextOffset } table(id: $id) { memberCount } }",
      variables: { id: A().tables.bound },
    });
    expect(gql.body.errors).toBeUndefined();
    const page = gql.body.data.tableMembers;
    expect(page.nodes.map((n: { memberId: string }) => n.memberId)).toEqual(expected);
    expect(page).toMatchObject({ totalCount: expected.length, nextOffset: expected.length });
    expect(gql.body.data.table.memberCount).toBe(expected.length);
    const mcp = await t.api.post("/mcp").set(auth()).set(narrow).set("Accept", "application/json, text/event-stream")
      .send({ jsonrpc: "2.0", id: 1, method: "tools/call", params: { name: "list_table_members", arguments: { id: A().tables.bound, limit: 500 } } });
    const body = JSON.parse(mcp.body.result.content[0].text);
    expect(body.data.map((m: { member_id: string }) => m.member_id)).toEqual(expected);
  });

  it("a curated table of master profiles shows a narrowed caller only those with a guest at its property", async () => {
    const [p0] = A().properties;
    const masters = await t.admin.masterProfile.findMany({ where: { propertyGroupId: A().id }, orderBy: { id: "asc" }, take: 30, include: { guests: { select: { propertyId: true } } } });
    const atP0 = masters.filter((m) => m.guests.some((g) => g.propertyId === p0)).map((m) => m.id);
    expect(atP0.length).toBeGreaterThan(0);
    expect(atP0.length).toBeLessThan(masters.length);
    const table = await t.admin.guestTable.create({
      data: { id: "7a0c0000-0000-4000-8000-000000000002", propertyGroupId: A().id, name: "Masters", kind: "curated", memberType: "master_profile" },
    });
    await t.admin.tableMember.createMany({ data: masters.map((m, i) => ({ tableId: table.id, propertyGroupId: A().id, memberId: m.id, position: i + 1 })) });
    const res = await get(`/v1/tables/${table.id}/members?limit=500&include_total=1`).set("X-Property-Id", p0);
    expect(res.body.data.map((m: { member_id: string }) => m.member_id)).toEqual(atP0);
    for (const m of res.body.data) expect(m.master_profile).not.toBeNull();
    expect(res.body.total_count).toBe(atP0.length);
    const all = await get(`/v1/tables/${table.id}/members?limit=500&include_total=1`);
    expect(all.body.total_count).toBe(masters.length);
    await t.admin.guestTable.delete({ where: { id: table.id } });
  });
});

describe("POST /v1/tables/preview", () => {
  it("400 invalid_request without member_type or filter_doc", async () => {
    for (const body of [{}, { member_type: "guest_profile" }, { filter_doc: { field: "email", op: "exists", value: true } }]) {
      const res = await preview(body);
      expect(res.status).toBe(400);
      expect(res.body.error).toBe("invalid_request");
    }
  });

  it("names the offending part of a bad filter document", async () => {
    const cases: [unknown, RegExp][] = [
      [{ and: [{ field: "country_code", op: "eq", value: "GB" }, { field: "country_code", op: "like", value: "G%" }] }, /filter_doc\.and\[1\]\.op/],
      [{ field: "shoe_size", op: "eq", value: 9 }, /filter_doc\.field: unknown field shoe_size/],
      [{ field: "created_at", op: "gt", value: "last week" }, /filter_doc\.value/],
      [{ or: [] }, /filter_doc\.or/],
      [{ not: { field: "consent.email_marketing", op: "eq", value: "yes" } }, /filter_doc\.not\.value/],
      ["everyone", /filter_doc: expected an object/],
    ];
    for (const [doc, detail] of cases) {
      const res = await preview({ member_type: "guest_profile", filter_doc: doc });
      expect(res.status).toBe(400);
      expect(res.body.error).toBe("invalid_request");
      expect(res.body.detail).toMatch(detail);
    }
  });

  it("selects by fields, nesting and effective consent", async () => {
    const gb = await preview({ member_type: "guest_profile", filter_doc: { field: "country_code", op: "eq", value: "gb" }, limit: 500, include_total: true });
    const expected = await t.admin.guestProfile.count({ where: { propertyGroupId: A().id, countryCode: "GB" } });
    expect(gb.body.total_count).toBe(expected);
    expect(gb.body.data.every((m: { guest: { country_code: string } }) => m.guest.country_code === "GB")).toBe(true);

    const granted = await preview({ member_type: "guest_profile", filter_doc: { field: "consent.email_marketing", op: "eq", value: "granted" }, limit: 500 });
    const emails = granted.body.data.map((m: { guest: { email: string } }) => m.guest.email.toLowerCase());
    expect(emails).toContain(A().consent_granted_only.contact_value);
    expect(emails).not.toContain(A().consent_conflict.contact_value);

    const notGranted = await preview({
      member_type: "guest_profile",
      filter_doc: { and: [{ not: { field: "consent.email_marketing", op: "eq", value: "granted" } }, { field: "email", op: "exists", value: true }] },
      limit: 500,
      include_total: true,
    });
    const all = await t.admin.guestProfile.count({ where: { propertyGroupId: A().id, email: { not: null } } });
    expect(notGranted.body.total_count + granted.body.data.length).toBe(all);
  });

  it("previews master profiles and never another group's rows", async () => {
    const res = await preview({ member_type: "master_profile", filter_doc: { field: "property_id", op: "in", value: A().properties }, limit: 500 });
    expect(res.status).toBe(200);
    const mine = await t.admin.masterProfile.findMany({ where: { propertyGroupId: A().id }, select: { id: true } });
    const ids = res.body.data.map((m: { member_id: string }) => m.member_id);
    expect(ids.length).toBeGreaterThan(0);
    for (const id of ids) expect(mine.map((m) => m.id)).toContain(id);
    const cross = await preview({ member_type: "guest_profile", filter_doc: { field: "email", op: "exists", value: true }, limit: 500 }, B().credentials.api_key);
    const aGuests = new Set((await t.admin.guestProfile.findMany({ where: { propertyGroupId: A().id }, select: { id: true } })).map((g) => g.id));
    expect(cross.body.data.filter((m: { member_id: string }) => aGuests.has(m.member_id))).toEqual([]);
  });
});
