// GET /v1/guests and /v1/guests/{id}: keyset walk, source_id lookup, limits, cursors, isolation.
import { randomUUID } from "node:crypto";
import { startTestApp, type TestApp } from "../../helpers/app";
import { walk } from "../../helpers/walk";

let t: TestApp;
beforeAll(async () => {
  t = await startTestApp();
});
afterAll(() => t.close());

const A = () => t.manifest.groups.A;
const B = () => t.manifest.groups.B;
const get = (path: string, token = A().credentials.api_key) => t.api.get(path).set("Authorization", `Bearer ${token}`);

async function groupGuestIds(groupId: string): Promise<string[]> {
  const rows = await t.admin.guestProfile.findMany({ where: { propertyGroupId: groupId }, select: { id: true } });
  return rows.map((r) => r.id);
}

describe("GET /v1/guests", () => {
  it("walks every guest of the group with limit=2: several pages, no duplicate, no gap", async () => {
    const { rows, pages } = await walk(t, "/v1/guests?limit=2", A().credentials.api_key);
    const ids = rows.map((r) => r.id);
    expect(pages).toBeGreaterThan(3);
    expect(new Set(ids).size).toBe(ids.length);
    expect([...ids].sort()).toEqual((await groupGuestIds(A().id)).sort());
  });

  it("returns the documented guest record", async () => {
    const res = await get("/v1/guests?limit=1");
    expect(res.status).toBe(200);
    expect(Object.keys(res.body.data[0]).sort()).toEqual(
      ["id", "property_id", "integration_id", "source_id", "master_profile_id", "given_name", "family_name", "email", "phone",
        "language", "country_code", "city", "birth_date", "vip_code", "created_at", "updated_at"].sort(),
    );
    expect(res.body.data[0].created_at).toMatch(/^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}\.\d{3}Z$/);
  });

  it("never shows another group's guests (isolation)", async () => {
    const aIds = new Set(await groupGuestIds(A().id));
    const { rows } = await walk(t, "/v1/guests?limit=500", B().credentials.api_key);
    expect(rows.length).toBeGreaterThan(0);
    for (const r of rows) expect(aIds.has(r.id)).toBe(false);
    const aGuest = A().guest_lookup.guest_id;
    expect((await get(`/v1/guests/${aGuest}`, B().credentials.api_key)).status).toBe(404);
    const lookup = A().guest_lookup;
    const cross = await get(`/v1/guests?source_id=${encodeURIComponent(lookup.source_id)}&integration_id=${lookup.integration_id}`, B().credentials.api_key);
    expect(cross.body).toEqual({ data: [], next_cursor: null, has_more: false });
  });

  it("finds one guest by source_id and integration_id, and answers a miss with an empty page", async () => {
    const { integration_id, source_id, guest_id } = A().guest_lookup;
    const hit = await get(`/v1/guests?source_id=${encodeURIComponent(source_id)}&integration_id=${integration_id}`);
    expect(hit.status).toBe(200);
    expect(hit.body.data.map((g: { id: string }) => g.id)).toEqual([guest_id]);
    expect(hit.body.data[0]).toMatchObject({ source_id, integration_id });
    const miss = await get(`/v1/guests?source_id=no-such-guest&integration_id=${integration_id}`);
    expect(miss.status).toBe(200);
    expect(miss.body).toEqual({ data: [], next_cursor: null, has_more: false });
  });

  it("matches e-mail addresses literally: LIKE wildcards are not patterns", async () => {
    const guest = await t.admin.guestProfile.findUniqueOrThrow({ where: { id: A().guest_lookup.guest_id } });
    const exact = await get(`/v1/guests?email=${encodeURIComponent(guest.email!.toUpperCase())}`);
    expect(exact.body.data.map((g: { id: string }) => g.id)).toContain(guest.id);
    for (const pattern of ["%", "_%", guest.email!.replace(/^./, "_")]) {
      const res = await get(`/v1/guests?email=${encodeURIComponent(pattern)}`);
      expect(res.status).toBe(200);
      expect(res.body.data).toEqual([]);
    }
    const search = await get("/v1/master-profiles?q=%25&include_total=1");
    expect(search.body.total_count).toBe(0);
    const preview = await t.api
      .post("/v1/tables/preview")
      .set("Authorization", `Bearer ${A().credentials.api_key}`)
      .send({ member_type: "guest_profile", filter_doc: { field: "email", op: "contains", value: "%" }, include_total: true });
    expect(preview.body.total_count).toBe(0);
  });

  it("400 'source_id requires integration_id' for a source_id alone", async () => {
    const res = await get("/v1/guests?source_id=abc");
    expect(res.status).toBe(400);
    expect(res.body.error).toBe("source_id requires integration_id");
  });

  it("filters by master profile and property", async () => {
    const master = A().master_with_two_guests;
    const res = await get(`/v1/guests?master_profile_id=${master}`);
    expect(res.body.data.length).toBeGreaterThanOrEqual(2);
    for (const g of res.body.data) expect(g.master_profile_id).toBe(master);
    const property = A().properties[0];
    const byProperty = await walk<{ property_id: string }>(t, `/v1/guests?property_id=${property}&limit=50`, A().credentials.api_key);
    expect(byProperty.rows.length).toBeGreaterThan(0);
    for (const g of byProperty.rows) expect(g.property_id).toBe(property);
  });

  it("validates limit: below 1 or not a number is 400, above 500 is clamped to 500", async () => {
    for (const bad of ["0", "-1", "abc", "2.5"]) {
      const res = await get(`/v1/guests?limit=${bad}`);
      expect(res.status).toBe(400);
      expect(res.body.error).toBe("invalid_request");
      expect(res.body.detail).toMatch(/limit/);
    }
    // 520 more guests in this test's own database, so that a page can hit the cap.
    const integration = A().guest_lookup.integration_id;
    const integ = await t.admin.integration.findUniqueOrThrow({ where: { id: integration } });
    await t.admin.guestProfile.createMany({
      data: Array.from({ length: 520 }, (_, i) => ({
        id: randomUUID(),
        propertyGroupId: A().id,
        propertyId: integ.propertyId,
        integrationId: integration,
        sourceId: `bulk-${i}`,
      })),
    });
    const res = await get("/v1/guests?limit=1000");
    expect(res.status).toBe(200);
    expect(res.body.data).toHaveLength(500);
    expect(res.body.has_more).toBe(true);
    const def = await get("/v1/guests");
    expect(def.body.data).toHaveLength(100);
  });

  it("rejects tampered, foreign and mismatched cursors with 400 invalid_cursor", async () => {
    const first = await get("/v1/guests?limit=2");
    const cursor: string = first.body.next_cursor;
    const tampered = cursor.slice(0, 3) + (cursor[3] === "x" ? "y" : "x") + cursor.slice(4);
    for (const [path, token] of [
      [`/v1/guests?limit=2&cursor=${encodeURIComponent(tampered)}`, A().credentials.api_key],
      [`/v1/guests?limit=2&cursor=garbage`, A().credentials.api_key],
      [`/v1/guests?limit=2&cursor=${encodeURIComponent(cursor)}`, B().credentials.api_key],
      [`/v1/guests?limit=2&master_profile_id=${A().master_with_two_guests}&cursor=${encodeURIComponent(cursor)}`, A().credentials.api_key],
    ]) {
      const res = await get(path, token);
      expect(res.status).toBe(400);
      expect(res.body.error).toBe("invalid_cursor");
    }
    // The same cursor with a different page size is fine: limit is not part of the query.
    expect((await get(`/v1/guests?limit=3&cursor=${encodeURIComponent(cursor)}`)).status).toBe(200);
  });

  it("rejects unknown query parameters and names the one meant", async () => {
    const res = await get("/v1/guests?after=abc");
    expect(res.status).toBe(400);
    expect(res.body.error).toBe("invalid_request");
    expect(res.body.detail).toMatch(/after.*did you mean cursor\?/);
  });

  it("a walk stays exact while guests are inserted concurrently", async () => {
    const before = new Set(await groupGuestIds(A().id));
    const integ = await t.admin.integration.findUniqueOrThrow({ where: { id: A().guest_lookup.integration_id } });
    let inserted = 0;
    const { rows } = await walk(t, "/v1/guests?limit=7", A().credentials.api_key, async () => {
      // New rows created now sort after every existing row; they may or may not appear, but no
      // existing row may be skipped or repeated.
      await t.admin.guestProfile.create({
        data: { id: randomUUID(), propertyGroupId: A().id, propertyId: integ.propertyId, integrationId: integ.id, sourceId: `live-${inserted++}` },
      });
    });
    const seen = rows.map((r) => r.id);
    expect(new Set(seen).size).toBe(seen.length);
    for (const id of before) expect(seen).toContain(id);
    expect(inserted).toBeGreaterThan(5);
  });
});

describe("GET /v1/guests/{id}", () => {
  it("returns { data } for a guest in scope", async () => {
    const id = A().guest_lookup.guest_id;
    const res = await get(`/v1/guests/${id}`);
    expect(res.status).toBe(200);
    expect(res.body.data.id).toBe(id);
    expect(Object.keys(res.body)).toEqual(["data"]);
  });

  it("404 not_found when missing or outside the narrowed property; 400 for a bad uuid", async () => {
    const missing = await get(`/v1/guests/${randomUUID()}`);
    expect(missing.status).toBe(404);
    expect(missing.body.error).toBe("not_found");
    const guest = await t.admin.guestProfile.findUniqueOrThrow({ where: { id: A().guest_lookup.guest_id } });
    const other = A().properties.find((p) => p !== guest.propertyId)!;
    const narrowed = await get(`/v1/guests/${guest.id}`).set("X-Property-Id", other);
    expect(narrowed.status).toBe(404);
    const bad = await get("/v1/guests/not-a-uuid");
    expect(bad.status).toBe(400);
    expect(bad.body.error).toBe("invalid_request");
  });
});
