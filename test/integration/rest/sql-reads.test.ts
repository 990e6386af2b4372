// Families read in scoped SQL that were read through Prisma (data/loyalty.ts, consents.ts,
// engagement.ts): every filter, page and field answers what Prisma finds for the same filter, as the
// service answered when it read them through Prisma. (Reviews: summaries.test.ts.)
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
/** Up to four distinct values seen in the rows, as an arbitrary. */
const pick = <T,>(values: T[]) => fc.constantFrom(...[...new Set(values)].filter((v) => v != null).slice(0, 4));
/** Filters of up to `max` of these parameters at once (more select nothing in the test's data), as query values. */
const someOf = <V extends Record<string, fc.Arbitrary<unknown>>>(values: V, max = 2) =>
  fc
    .tuple(fc.record(values), fc.subarray(Object.keys(values) as (keyof V & string)[], { maxLength: max }))
    .map(([v, keys]) => Object.fromEntries(keys.map((k) => [k, String(v[k])])) as Record<string, string>);
/** Every row of a list walked page by page at `limit` (never past `atMost` rows, should the walk go wrong). */
async function allPages(path: string, filter: Record<string, string>, limit: number, atMost: number) {
  const got: unknown[] = [];
  let cursor: string | null = null;
  do {
    const res = await get(`${path}?${queryOf({ ...filter, limit: String(limit) })}${cursor ? `&cursor=${encodeURIComponent(cursor)}` : ""}`);
    expect({ filter, status: res.status }).toEqual({ filter, status: 200 });
    got.push(...res.body.data);
    cursor = res.body.next_cursor;
  } while (cursor && got.length <= atMost);
  return got;
}
/** Sorted as the lists and a guest's relations are: created_at, then id. */
const oldestFirst = <R extends { createdAt: Date; id: string }>(rows: R[]) =>
  [...rows];

describe("GET /v1/loyalty/members, read in SQL", () => {
  it("lists what Prisma finds for the same filters, every page in order, each field as the API writes it; by id and a guest's the same", async () => {
    const group = A().id;
    const all = await t.admin.loyaltyMember.findMany({ where: { propertyGroupId: group } });
    expect(all.length).toBeGreaterThan(3);
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
    const filters = someOf(values);
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
        const got = await allPages("/v1/loyalty/members", f, limit, rows.length);
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
    const ofGuest = oldestFirst(all.filter((m) => m.guestProfileId === one.guestProfileId));
    expect(graphql.body).toEqual({ data: { guest: { loyaltyMemberships: ofGuest.map((m) => ({ id: m.id, tier: m.tier, pointsBalance: m.pointsBalance, tierExpiresAt: m.tierExpiresAt?.toISOString() ?? null })) } } });
  });
});

describe("GET /v1/consents, read in SQL", () => {
  it("lists what Prisma finds for the same filters, every page in order, each field as the API writes it; a guest's the same", async () => {
    const group = A().id;
    const all = await t.admin.consentObservation.findMany({ where: { propertyGroupId: group } });
    expect(all.length).toBeGreaterThan(3);
    const observed = all.map((o) => o.observedAt.toISOString()).sort();
    const guests = await t.admin.guestProfile.findMany({ where: { propertyGroupId: group, masterProfileId: { not: null } }, select: { masterProfileId: true }, take: 3 });
    const values = {
      guest_profile_id: pick(all.map((o) => o.guestProfileId)),
      master_profile_id: fc.constantFrom(A().master_with_two_guests, ...guests.map((g) => g.masterProfileId!)),
      // As people type them: any case, spaces around.
      contact_value: pick(all.map((o) => o.contactValue)).chain((v) => fc.constantFrom(v, ` ${v.toUpperCase()} `)),
      purpose: pick(all.map((o) => o.purpose)),
      status: fc.constantFrom("granted", "denied", "withdrawn"),
      property_id: fc.constantFrom(...A().properties),
      observed_from: fc.constantFrom(observed[0], observed[Math.floor(observed.length / 2)], observed[0].slice(0, 10)),
      observed_to: fc.constantFrom(observed[Math.floor(observed.length / 2)], observed[observed.length - 1].slice(0, 10)),
    };
    const filters = someOf(values);
    const asApi = (o: (typeof all)[number]) => ({
      id: o.id, property_id: o.propertyId, integration_id: o.integrationId, guest_profile_id: o.guestProfileId, contact_type: o.contactType,
      contact_value: o.contactValue, purpose: o.purpose, channel: o.channel, status: o.status, source: o.source,
      observed_at: o.observedAt.toISOString(), created_at: o.createdAt.toISOString(),
    });
    const wanted = async (f: Record<string, string>) => {
      const to = f.observed_to;
      const ofMaster = f.master_profile_id && (await t.admin.guestProfile.findMany({ where: { propertyGroupId: group, masterProfileId: f.master_profile_id }, select: { id: true } })).map((g) => g.id);
      return t.admin.consentObservation.findMany({
        where: {
          propertyGroupId: group,
          AND: [
            f.guest_profile_id ? { guestProfileId: f.guest_profile_id } : {},
            ofMaster ? { guestProfileId: { in: ofMaster } } : {},
            f.contact_value ? { contactValue: { equals: f.contact_value.trim(), mode: "insensitive" as const } } : {},
            f.purpose ? { purpose: f.purpose } : {},
            f.status ? { status: f.status as "granted" } : {},
            f.property_id ? { propertyId: f.property_id } : {},
            f.observed_from ? { observedAt: { gte: new Date(f.observed_from) } } : {},
            to ? { observedAt: { lt: to.length === 10 ? new Date(Date.parse(to) + 86_400_000) : new Date(to) } } : {},
          ],
        },
        orderBy: [{ createdAt: "asc" }, { id: "asc" }],
      });
    };
    let nonEmpty = 0;
    await fc.assert(
      fc.asyncProperty(filters, fc.integer({ min: 1, max: 9 }), async (f, limit) => {
        const rows = await wanted(f);
        const got = await allPages("/v1/consents", f, limit, rows.length);
        if (rows.length > 0) nonEmpty++;
        expect({ filter: f, rows: got }).toEqual({ filter: f, rows: rows.map(asApi) });
      }),
      { numRuns: 40, seed: 39 },
    );
    expect(nonEmpty).toBeGreaterThan(5);
    const one = all.find((o) => o.guestProfileId !== null)!;
    const graphql = await t.api.post("/graphql").set("Authorization", `Bearer ${A().credentials.api_key}`).send({
      query: `query($id: UUID!) { guest(id: $id) { consents { id status observedAt } } }`,
      variables: { id: one.guestProfileId },
    });
    const ofGuest = oldestFirst(all.filter((o) => o.guestProfileId === one.guestProfileId));
    expect(graphql.body).toEqual({ data: { guest: { consents: ofGuest.map((o) => ({ id: o.id, status: o.status, observedAt: o.observedAt.toISOString() })) } } });
  });
});

describe("GET /v1/actions, read in SQL", () => {
  it("lists what Prisma finds for the same filters, every page in order, each field as the API writes it; by id and a guest's the same", async () => {
    const group = A().id;
    const all = await t.admin.action.findMany({ where: { propertyGroupId: group } });
    expect(all.length).toBeGreaterThan(3);
    const due = all.flatMap((a) => (a.dueAt ? [a.dueAt.toISOString()] : [])).sort();
    const updated = all.map((a) => a.updatedAt.toISOString()).sort();
    const values = {
      guest_profile_id: pick(all.map((a) => a.guestProfileId)),
      master_profile_id: fc.constant(A().master_with_two_guests),
      reservation_id: pick(all.map((a) => a.reservationId)),
      property_id: fc.constantFrom(...A().properties),
      status: pick(all.map((a) => a.status)),
      priority: pick(all.map((a) => a.priority)),
      kind: pick(all.map((a) => a.kind)),
      due_from: fc.constantFrom(due[0], due[Math.floor(due.length / 2)], due[0].slice(0, 10)),
      due_to: fc.constantFrom(due[Math.floor(due.length / 2)], due[due.length - 1].slice(0, 10)),
      updated_since: fc.constantFrom(updated[0], updated[Math.floor(updated.length / 2)]),
    };
    const filters = someOf(values);
    const asApi = (a: (typeof all)[number]) => ({
      id: a.id, property_id: a.propertyId, guest_profile_id: a.guestProfileId, reservation_id: a.reservationId, kind: a.kind, title: a.title,
      body: a.body, status: a.status, priority: a.priority, assignee: a.assignee, due_at: a.dueAt?.toISOString() ?? null,
      completed_at: a.completedAt?.toISOString() ?? null, created_at: a.createdAt.toISOString(), updated_at: a.updatedAt.toISOString(),
    });
    const wanted = async (f: Record<string, string>) => {
      const to = f.due_to;
      const ofMaster = f.master_profile_id && (await t.admin.guestProfile.findMany({ where: { propertyGroupId: group, masterProfileId: f.master_profile_id }, select: { id: true } })).map((g) => g.id);
      return t.admin.action.findMany({
        where: {
          propertyGroupId: group,
          AND: [
            f.guest_profile_id ? { guestProfileId: f.guest_profile_id } : {},
            ofMaster ? { guestProfileId: { in: ofMaster } } : {},
            f.reservation_id ? { reservationId: f.reservation_id } : {},
            f.property_id ? { propertyId: f.property_id } : {},
            f.status ? { status: f.status as "open" } : {},
            f.priority ? { priority: f.priority as "normal" } : {},
            f.kind ? { kind: f.kind } : {},
            f.due_from ? { dueAt: { gte: new Date(f.due_from) } } : {},
            to ? { dueAt: { lt: to.length === 10 ? new Date(Date.parse(to) + 86_400_000) : new Date(to) } } : {},
            f.updated_since ? { updatedAt: { gte: new Date(f.updated_since) } } : {},
          ],
        },
        orderBy: [{ createdAt: "asc" }, { id: "asc" }],
      });
    };
    let nonEmpty = 0;
    await fc.assert(
      fc.asyncProperty(filters, fc.integer({ min: 1, max: 9 }), async (f, limit) => {
        const rows = await wanted(f);
        const got = await allPages("/v1/actions", f, limit, rows.length);
        if (rows.length > 0) nonEmpty++;
        expect({ filter: f, rows: got }).toEqual({ filter: f, rows: rows.map(asApi) });
      }),
      { numRuns: 40, seed: 39 },
    );
    expect(nonEmpty).toBeGreaterThan(5);
    const one = all.find((a) => a.guestProfileId !== null && a.dueAt !== null) ?? all.find((a) => a.guestProfileId !== null)!;
    const byId = await get(`/v1/actions/${one.id}`);
    expect(byId.status).toBe(200);
    expect(byId.body.data ?? byId.body).toEqual(asApi(one));
    const foreign = await t.admin.action.findFirst({ where: { propertyGroupId: t.manifest.groups.B.id } });
    expect((await get(`/v1/actions/${foreign!.id}`)).status).toBe(404);
    const graphql = await t.api.post("/graphql").set("Authorization", `Bearer ${A().credentials.api_key}`).send({
      query: `query($id: UUID!) { guest(id: $id) { actions { id status dueAt } } }`,
      variables: { id: one.guestProfileId },
    });
    const ofGuest = oldestFirst(all.filter((a) => a.guestProfileId === one.guestProfileId));
    expect(graphql.body).toEqual({ data: { guest: { actions: ofGuest.map((a) => ({ id: a.id, status: a.status, dueAt: a.dueAt?.toISOString() ?? null })) } } });
  });
});
