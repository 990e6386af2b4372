// Loyalty members are read in scoped SQL (data/loyalty.ts): every filter, page and field answers
// what Prisma finds for the same filter, as the service answered when it read them through Prisma.
import fc from "fast-check";
import { startTestApp, type TestApp } from "../../helpers/app";

let t: TestApp;
beforeAll(async () => {
  t = await startTestApp();
});
afterAll(() => t.close());

const A = () => t.manifest.groups.A;
const get = (path: string, token = A().credentials.api_key) => t.api.get(path).set("Authorization", `Bearer ${token}`);
const queryOf = (f: Record<string, string>) => new URLSearchParams(Object.entries(f)).toString();

describe("GET /v1/loyalty/members, read in SQL", () => {
  it("lists what Prisma finds for the same filters, every page in order, each field as the API writes it; by id and a guest's the same", async () => {
    const group = A().id;
    const all = await t.admin.loyaltyMember.findMany({ where: { propertyGroupId: group } });
    expect(all.length).toBeGreaterThan(3);
    const pick = <T,>(values: T[]) => fc.constantFrom(...[...new Set(values)].filter((v) => v != null).slice(0, 4));
    const sorted = all.map((m) => m.updatedAt.toISOString()).sort();
    const values = {
      program_id: pick(all.map((m) => m.programId)),
      guest_profile_id: pick(all.map((m) => m.guestProfileId)),
      master_profile_id: pick(all.map((m) => m.masterProfileId)),
      member_number: pick(all.map((m) => m.memberNumber)),
      tier: pick(all.map((m) => m.tier)),
      status: fc.constantFrom("active", "suspended", "closed"),
      updated_since: fc.constantFrom(sorted[0], sorted[Math.floor(sorted.length / 2)]),
    };
    const filters = fc
      .tuple(fc.record(values), fc.subarray(Object.keys(values) as (keyof typeof values)[], { maxLength: 2 }))
      .map(([v, keys]) => Object.fromEntries(keys.map((k) => [k, String(v[k])])) as Record<string, string>);
    const asApi = (m: (typeof all)[number]) => ({
      id: m.id, program_id: m.programId, guest_profile_id: m.guestProfileId, master_profile_id: m.masterProfileId,
      enrolment_property_id: m.enrolmentPropertyId, member_number: m.memberNumber, tier: m.tier, status: m.status,
      points_balance: m.pointsBalance, lifetime_points: m.lifetimePoints, enrolled_at: m.enrolledAt.toISOString(),
      tier_expires_at: m.tierExpiresAt?.toISOString() ?? null, created_at: m.createdAt.toISOString(), updated_at: m.updatedAt.toISOString(),
    });
    let nonEmpty = 0;
    await fc.assert(
      fc.asyncProperty(filters, fc.integer({ min: 1, max: 9 }), async (f, limit) => {
        const rows = await t.admin.loyaltyMember.findMany({
          where: {
            propertyGroupId: group,
            programId: f.program_id,
            guestProfileId: f.guest_profile_id,
            masterProfileId: f.master_profile_id,
            memberNumber: f.member_number,
            tier: f.tier,
            status: f.status as "active" | undefined,
            updatedAt: f.updated_since === undefined ? undefined : { gte: new Date(f.updated_since) },
          },
          orderBy: [{ createdAt: "asc" }, { id: "asc" }],
        });
        const got: unknown[] = [];
        let cursor: string | null = null;
        do {
          const res = await get(`/v1/loyalty/members?${queryOf({ ...f, limit: String(limit) })}${cursor ? `&cursor=${encodeURIComponent(cursor)}` : ""}`);
          expect(res.status).toBe(200);
          got.push(...res.body.data);
          cursor = res.body.next_cursor;
        } while (cursor && got.length <= rows.length);
        if (rows.length > 0) nonEmpty++;
        expect({ filter: f, rows: got }).toEqual({ filter: f, rows: rows.map(asApi) });
      }),
      { numRuns: 40, seed: 39 },
    );
    expect(nonEmpty).toBeGreaterThan(5);
    const one = all.find((m) => m.guestProfileId !== null && m.tierExpiresAt !== null) ?? all[0];
    const byId = await get(`/v1/loyalty/members/${one.id}`);
    expect(byId.status).toBe(200);
    expect(byId.body.data ?? byId.body).toEqual(asApi(one));
    // Another group's member is not found with this group's key.
    const foreign = await t.admin.loyaltyMember.findFirst({ where: { propertyGroupId: t.manifest.groups.B.id } });
    expect((await get(`/v1/loyalty/members/${foreign!.id}`)).status).toBe(404);
    const graphql = await t.api.post("/graphql").set("Authorization", `Bearer ${A().credentials.api_key}`).send({
      query: `query($id: UUID!) { guest(id: $id) { loyaltyMemberships { id tier pointsBalance tierExpiresAt } } }`,
      variables: { id: one.guestProfileId },
    });
    const ofGuest = all.filter((m) => m.guestProfileId === one.guestProfileId).sort((a, b) => a.createdAt.getTime() - b.createdAt.getTime() || (a.id < b.id ? -1 : 1));
    expect(graphql.body).toEqual({ data: { guest: { loyaltyMemberships: ofGuest.map((m) => ({ id: m.id, tier: m.tier, pointsBalance: m.pointsBalance, tierExpiresAt: m.tierExpiresAt?.toISOString() ?? null })) } } });
  });
});
