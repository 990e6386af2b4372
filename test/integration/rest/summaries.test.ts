// Master profile search with include_total, and the review summary.
import { randomUUID } from "node:crypto";
import fc from "fast-check";
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

  /** Filters of the review list and summary (up to three at once: more select no review in the test's data), built from the group's reviews. */
  async function reviewFilters() {
    const reviews = await t.admin.review.findMany({ where: { propertyGroupId: A().id }, select: { guestProfileId: true, source: true, publishedAt: true } });
    const reviewers = [...new Set(reviews.map((r) => r.guestProfileId).filter((g): g is string => g !== null))].slice(0, 3);
    const sources = [...new Set(reviews.map((r) => r.source))];
    const days = reviews.map((r) => r.publishedAt.toISOString().slice(0, 10)).sort();
    const instants = reviews.map((r) => r.publishedAt.toISOString()).sort();
    const values = {
      property_id: fc.constantFrom(...A().properties),
      source: fc.constantFrom(...sources, "no_such_platform"),
      min_rating: fc.integer({ min: 1, max: 5 }),
      max_rating: fc.integer({ min: 1, max: 5 }),
      published_from: fc.constantFrom(days[0], days[Math.floor(days.length / 2)], instants[Math.floor(instants.length / 3)]),
      published_to: fc.constantFrom(days[Math.floor(days.length / 2)], days[days.length - 1], instants[Math.floor((2 * instants.length) / 3)]),
      guest_profile_id: fc.constantFrom(...reviewers, A().guest_with_events),
      master_profile_id: fc.constant(A().master_with_two_guests),
    };
    return fc
      .tuple(fc.record(values), fc.subarray(Object.keys(values) as (keyof typeof values)[], { maxLength: 3 }))
      .map(([all, keys]) => Object.fromEntries(keys.map((k) => [k, all[k]])) as Record<string, string | number>);
  }

  /** The filter as Prisma's where, the way the service said it before it read reviews in SQL. */
  async function prismaWhere(f: Record<string, string | number>) {
    const group = A().id;
    const to = f.published_to as string | undefined;
    const toEnd = to === undefined ? undefined : to.length === 10 ? new Date(Date.parse(to) + 86_400_000) : new Date(to);
    const ofMaster =
      f.master_profile_id === undefined
        ? undefined
        : (await t.admin.guestProfile.findMany({ where: { propertyGroupId: group, masterProfileId: f.master_profile_id as string }, select: { id: true } })).map((g) => g.id);
    return {
      propertyGroupId: group,
      AND: [
        f.property_id === undefined ? {} : { propertyId: f.property_id as string },
        f.source === undefined ? {} : { source: f.source as string },
        f.min_rating === undefined ? {} : { rating: { gte: f.min_rating as number } },
        f.max_rating === undefined ? {} : { rating: { lte: f.max_rating as number } },
        f.published_from === undefined ? {} : { publishedAt: { gte: new Date(f.published_from as string) } },
        toEnd === undefined ? {} : { publishedAt: { lt: toEnd } },
        f.guest_profile_id === undefined ? {} : { guestProfileId: f.guest_profile_id as string },
        ofMaster === undefined ? {} : { guestProfileId: { in: ofMaster } },
      ],
    };
  }
  const queryOf = (f: Record<string, string | number>) => new URLSearchParams(Object.entries(f).map(([k, v]): [string, string] => [k, String(v)])).toString();

  it("lists what Prisma finds for the same filters, every page in order, each field as the API writes it (read in SQL)", async () => {
    let nonEmpty = 0;
    await fc.assert(
      fc.asyncProperty(await reviewFilters(), fc.integer({ min: 1, max: 7 }), async (f, limit) => {
        const rows = await t.admin.review.findMany({ where: await prismaWhere(f), orderBy: [{ createdAt: "asc" }, { id: "asc" }] });
        const want = rows.map((r) => ({
          id: r.id, property_id: r.propertyId, integration_id: r.integrationId, source_id: r.sourceId, guest_profile_id: r.guestProfileId,
          reservation_id: r.reservationId, source: r.source, rating: r.rating, source_rating: r.sourceRating.toNumber(), source_scale: r.sourceScale,
          title: r.title, body: r.body, language: r.language, published_at: r.publishedAt.toISOString(), response_body: r.responseBody,
          responded_at: r.respondedAt?.toISOString() ?? null, created_at: r.createdAt.toISOString(),
        }));
        const got: unknown[] = [];
        let cursor: string | null = null;
        do {
          const res = await get(`/v1/reviews?${queryOf({ ...f, limit })}${cursor ? `&cursor=${encodeURIComponent(cursor)}` : ""}`);
          expect(res.status).toBe(200);
          got.push(...res.body.data);
          cursor = res.body.next_cursor;
        } while (cursor && got.length <= want.length);
        if (want.length > 0) nonEmpty++;
        expect({ filter: f, rows: got }).toEqual({ filter: f, rows: want });
      }),
      { numRuns: 40, seed: 39 },
    );
    expect(nonEmpty).toBeGreaterThan(5);
    // One by id, and the reviews of a guest (the batched relation) read the same rows.
    const [one] = await t.admin.review.findMany({ where: { propertyGroupId: A().id, guestProfileId: { not: null }, respondedAt: { not: null } }, take: 1 });
    const byId = await get(`/v1/reviews/${one.id}`);
    expect([byId.status, byId.body.data?.id ?? byId.body.id, byId.body.data?.source_rating ?? byId.body.source_rating]).toEqual([200, one.id, one.sourceRating.toNumber()]);
    const graphql = await t.api.post("/graphql").set("Authorization", `Bearer ${A().credentials.api_key}`).send({
      query: `query($id: UUID!) { guest(id: $id) { reviews { id sourceRating respondedAt } } }`,
      variables: { id: one.guestProfileId },
    });
    const ofGuest = await t.admin.review.findMany({ where: { propertyGroupId: A().id, guestProfileId: one.guestProfileId }, orderBy: [{ createdAt: "asc" }, { id: "asc" }] });
    expect(graphql.body).toEqual({ data: { guest: { reviews: ofGuest.map((r) => ({ id: r.id, sourceRating: r.sourceRating.toNumber(), respondedAt: r.respondedAt?.toISOString() ?? null })) } } });
  });

  it("answers what Prisma's aggregates answer for the same filters (one SQL statement with grouping sets), whatever the filters", async () => {
    const round2 = (n: number | null) => (n == null ? null : Math.round(n * 100) / 100);
    const expected = async (f: Record<string, string | number>) => {
      const where = await prismaWhere(f);
      const [all, byRating, bySource, byProperty, responded] = await Promise.all([
        t.admin.review.aggregate({ where, _count: { _all: true }, _avg: { rating: true } }),
        t.admin.review.groupBy({ by: ["rating"], where, _count: { _all: true } }),
        t.admin.review.groupBy({ by: ["source"], where, _count: { _all: true }, _avg: { rating: true }, orderBy: { source: "asc" } }),
        t.admin.review.groupBy({ by: ["propertyId"], where, _count: { _all: true }, _avg: { rating: true }, orderBy: { propertyId: "asc" } }),
        t.admin.review.aggregate({ where: { AND: [where, { respondedAt: { not: null } }] }, _count: { _all: true }, _avg: { rating: true } }),
      ]);
      return {
        count: all._count._all,
        average_rating: round2(all._avg.rating),
        by_rating: [1, 2, 3, 4, 5].map((rating) => ({ rating, count: byRating.find((x) => x.rating === rating)?._count._all ?? 0 })),
        by_source: bySource.map((x) => ({ source: x.source, count: x._count._all, average_rating: round2(x._avg.rating) })),
        by_property: byProperty.map((x) => ({ property_id: x.propertyId, count: x._count._all, average_rating: round2(x._avg.rating) })),
        responded: { count: responded._count._all, average_rating: round2(responded._avg.rating) },
      };
    };
    let nonEmpty = 0;
    await fc.assert(
      fc.asyncProperty(await reviewFilters(), async (f) => {
        const query = queryOf(f);
        const res = await get(`/v1/reviews/summary?${query}`);
        const want = await expected(f);
        if (want.count > 0) nonEmpty++;
        expect({ query, status: res.status, body: res.body }).toEqual({ query, status: 200, body: want });
      }),
      { numRuns: 60, seed: 43 },
    );
    expect(nonEmpty).toBeGreaterThan(5); // the filters select rows, not only empty summaries
    // No filter at all: the whole group, every breakdown present.
    const whole = await get("/v1/reviews/summary");
    expect(whole.body).toEqual(await expected({}));
    expect(whole.body.by_source.length).toBeGreaterThan(1);
  });
});
