// Master profile search with include_total, and the review summary.
import { randomUUID } from "node:crypto";
import { startTestApp, type TestApp } from "../../helpers/app";

let t: TestApp;
beforeAll(async () => {
  t = await startTestApp();
});
afterAll(() => t.close());

const A = () => t.manifest.groups.A;
const get = (path: string, token = A().credentials.api_key) => t.api.get(path).set("Authorization", `Bearer ${token}`);

describe("GET /v1/master-profiles include_total", () => {
  it("the first page carries total_count, later pages never do", async () => {
    const total = await t.admin.masterProfile.count({ where: { propertyGroupId: A().id } });
    for (const flag of ["true", "1"]) {
      const first = await get(`/v1/master-profiles?limit=2&include_total=${flag}`);
      expect(first.body.total_count).toBe(total);
      const second = await get(`/v1/master-profiles?limit=2&include_total=${flag}&cursor=${encodeURIComponent(first.body.next_cursor)}`);
      expect(second.status).toBe(200);
      expect(second.body).not.toHaveProperty("total_count");
    }
    expect(await get("/v1/master-profiles?limit=2").then((r) => r.body)).not.toHaveProperty("total_count");
  });

  it("keeps the unfiltered total exact through inserts and deletes (trigger-kept counts)", async () => {
    const totalNow = async () => (await get("/v1/master-profiles?limit=1&include_total=1")).body.total_count as number;
    const before = await totalNow();
    const ids = [randomUUID(), randomUUID(), randomUUID()];
    await t.admin.masterProfile.createMany({ data: ids.map((id) => ({ id, propertyGroupId: A().id, givenName: "Counted" })) });
    expect(await totalNow()).toBe(before + 3);
    await t.admin.masterProfile.deleteMany({ where: { id: { in: ids.slice(0, 2) } } });
    expect(await totalNow()).toBe(before + 1);
    expect(await totalNow()).toBe(await t.admin.masterProfile.count({ where: { propertyGroupId: A().id } }));
    // Group B's total is its own.
    const b = await get("/v1/master-profiles?limit=1&include_total=1", t.manifest.groups.B.credentials.api_key);
    expect(b.body.total_count).toBe(await t.admin.masterProfile.count({ where: { propertyGroupId: t.manifest.groups.B.id } }));
    // A master profile never moves between groups (the counts could not follow it).
    await expect(t.admin.masterProfile.update({ where: { id: ids[2] }, data: { propertyGroupId: t.manifest.groups.B.id } })).rejects.toThrow();
    await t.admin.masterProfile.delete({ where: { id: ids[2] } });
    expect(await totalNow()).toBe(before);
  });

  it("narrowed to a property, counts the master profiles with a guest there", async () => {
    const property = A().properties[0];
    const res = await get("/v1/master-profiles?limit=1&include_total=1").set("X-Property-Id", property);
    const expected = await t.admin.masterProfile.count({ where: { propertyGroupId: A().id, guests: { some: { propertyId: property } } } });
    expect(res.body.total_count).toBe(expected);
    expect(expected).toBeLessThan(await t.admin.masterProfile.count({ where: { propertyGroupId: A().id } }));
  });

  it("filters by e-mail (any case), vip, property and updated_since, and counts the same matches", async () => {
    const group = { propertyGroupId: A().id };
    const withEmail = await t.admin.masterProfile.findFirstOrThrow({ where: { ...group, email: { not: null } } });
    const byEmail = await get(`/v1/master-profiles?email=${encodeURIComponent(withEmail.email!.toUpperCase())}&include_total=1`);
    expect(byEmail.body.data.map((m: { id: string }) => m.id)).toContain(withEmail.id);
    expect(byEmail.body.total_count).toBe(await t.admin.masterProfile.count({ where: { ...group, email: { equals: withEmail.email!, mode: "insensitive" } } }));

    const property = A().properties[1];
    const middle = await t.admin.masterProfile.findFirstOrThrow({ where: group, orderBy: { updatedAt: "asc" }, skip: 5 });
    const cases: [string, object][] = [
      ["vip=true", { vip: true }],
      ["vip=false", { vip: false }],
      [`property_id=${property}`, { guests: { some: { propertyId: property } } }],
      [`updated_since=${encodeURIComponent(middle.updatedAt.toISOString())}`, { updatedAt: { gte: middle.updatedAt } }],
    ];
    for (const [query, where] of cases) {
      const expected = await t.admin.masterProfile.findMany({ where: { ...group, ...where }, select: { id: true }, orderBy: [{ createdAt: "asc" }, { id: "asc" }] });
      const res = await get(`/v1/master-profiles?${query}&include_total=1&limit=500`);
      expect({ query, total: res.body.total_count }).toEqual({ query, total: expected.length });
      expect(res.body.data.map((m: { id: string }) => m.id)).toEqual(expected.map((m) => m.id));
      expect(expected.length).toBeGreaterThan(0);
    }
  });

  it("searches names and e-mail and counts the matches", async () => {
    const master = await t.admin.masterProfile.findUniqueOrThrow({ where: { id: A().master_with_two_guests } });
    const res = await get(`/v1/master-profiles?q=${encodeURIComponent(master.familyName!.toUpperCase())}&include_total=1`);
    expect(res.body.data.map((m: { id: string }) => m.id)).toContain(master.id);
    const expected = await t.admin.masterProfile.count({
      where: { propertyGroupId: A().id, OR: [{ givenName: { contains: master.familyName!, mode: "insensitive" } }, { familyName: { contains: master.familyName!, mode: "insensitive" } }, { email: { contains: master.familyName!, mode: "insensitive" } }] },
    });
    expect(res.body.total_count).toBe(expected);
    const one = await get(`/v1/master-profiles/${master.id}`);
    expect(one.body.data.guest_profile_ids.length).toBeGreaterThanOrEqual(2);
  });
});

describe("GET /v1/reviews/summary", () => {
  it("aggregates the group's reviews consistently with the list", async () => {
    const res = await get("/v1/reviews/summary");
    expect(res.status).toBe(200);
    const reviews = await t.admin.review.findMany({ where: { propertyGroupId: A().id } });
    expect(res.body.count).toBe(reviews.length);
    const mean = reviews.reduce((s, r) => s + r.rating, 0) / reviews.length;
    expect(res.body.average_rating).toBeCloseTo(mean, 2);
    expect(res.body.by_rating.map((r: { rating: number }) => r.rating)).toEqual([1, 2, 3, 4, 5]);
    expect(res.body.by_rating.reduce((s: number, r: { count: number }) => s + r.count, 0)).toBe(reviews.length);
    expect(res.body.by_source.reduce((s: number, r: { count: number }) => s + r.count, 0)).toBe(reviews.length);
    for (const p of res.body.by_property) expect(A().properties).toContain(p.property_id);
  });

  it("honours filters and X-Property-Id", async () => {
    const property = A().properties[0];
    const narrowed = await get("/v1/reviews/summary").set("X-Property-Id", property);
    const filtered = await get(`/v1/reviews/summary?property_id=${property}`);
    const count = await t.admin.review.count({ where: { propertyGroupId: A().id, propertyId: property } });
    expect(narrowed.body.count).toBe(count);
    expect(filtered.body.count).toBe(count);
    const high = await get("/v1/reviews/summary?min_rating=4");
    expect(high.body.by_rating.slice(0, 3).every((r: { count: number }) => r.count === 0)).toBe(true);
    expect((await get("/v1/reviews/summary", t.manifest.groups.B.credentials.api_key)).body.count).toBe(
      await t.admin.review.count({ where: { propertyGroupId: t.manifest.groups.B.id } }),
    );
  });
});
