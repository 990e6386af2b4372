// Families read in scoped SQL that were read through Prisma (data/loyalty.ts, consents.ts,
// engagement.ts): every filter, page and field answers what Prisma finds for the same filter, as the
// service answered when it read them through Prisma. (Reviews: summaries.test.ts.)
import fc from "fast-check";
import { startTestApp, type TestApp } from "../../helpers/app";
import { decideConsent } from "../../../src/data/consents";

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

/** A Prisma row as the REST body writes it: snake_case keys, instants as ISO text, the group column left out. */
const asApiRow = (row: object) =>
  Object.fromEntries(
    Object.entries(row)
      .filter(([k]) => k !== "propertyGroupId")
      .map(([k, v]) => [k.replace(/[A-Z]/g, (c) => `_${c.toLowerCase()}`), v instanceof Date ? v.toISOString() : v]),
  );

describe("reference data read in SQL (properties, integrations, channels, spaces, loyalty programs, tables)", () => {
  it("properties and integrations: the whole set in name order, by id, as Prisma finds them; a pinned key sees its property only", async () => {
    const group = A().id;
    const byName = [{ name: "asc" as const }, { id: "asc" as const }];
    const properties = await t.admin.property.findMany({ where: { propertyGroupId: group }, orderBy: byName });
    const integrations = await t.admin.integration.findMany({ where: { propertyGroupId: group }, orderBy: byName });
    expect(properties.length).toBeGreaterThan(1);
    expect(integrations.length).toBeGreaterThan(1);
    const listed = await get("/v1/properties");
    expect(listed.status).toBe(200);
    expect(listed.body.data).toEqual(properties.map(asApiRow));
    const one = await get(`/v1/properties/${properties[1].id}`);
    expect(one.body.data ?? one.body).toEqual(asApiRow(properties[1]));
    const roster = await get("/v1/integrations");
    expect(roster.status).toBe(200);
    // The roster's operation selects some of the columns: each row is Prisma's, on those.
    const shown = Object.keys(roster.body.data[0]);
    expect(shown.length).toBeGreaterThan(3);
    const onShown = (row: object) => Object.fromEntries(Object.entries(asApiRow(row)).filter(([k]) => shown.includes(k)));
    expect(roster.body.data).toEqual(integrations.map(onShown));
    const pinned = await get("/v1/properties", A().credentials.api_key_pinned.token);
    expect(pinned.body.data).toHaveLength(1);
    expect((await get("/v1/integrations", A().credentials.api_key_pinned.token)).body.data.map((i: { property_id: string }) => i.property_id)).toEqual(
      integrations.filter((i) => i.propertyId === pinned.body.data[0].id).map((i) => i.propertyId),
    );
    const foreign = await t.admin.property.findFirst({ where: { propertyGroupId: t.manifest.groups.B.id } });
    expect((await get(`/v1/properties/${foreign!.id}`)).status).toBe(404);
  });

  it("channels, spaces and loyalty programs: what Prisma finds for the same filters, every page in order", async () => {
    const group = A().id;
    const [channels, spaces, programs] = await Promise.all([
      t.admin.channel.findMany({ where: { propertyGroupId: group } }),
      t.admin.space.findMany({ where: { propertyGroupId: group } }),
      t.admin.loyaltyProgram.findMany({ where: { propertyGroupId: group } }),
    ]);
    expect(channels.length).toBeGreaterThan(1);
    expect(spaces.length).toBeGreaterThan(1);
    expect(programs.length).toBeGreaterThan(0);
    const bool = fc.constantFrom(true, false);
    const oldest = [{ createdAt: "asc" as const }, { id: "asc" as const }];
    const asBool = (v: string | undefined) => (v === undefined ? undefined : v === "true");
    let nonEmpty = 0;
    await fc.assert(
      fc.asyncProperty(
        someOf({ property_id: pick(channels.map((c) => c.propertyId)), kind: pick(channels.map((c) => c.kind)), active: bool }),
        someOf({ property_id: pick(spaces.map((s) => s.propertyId)), kind: pick(spaces.map((s) => s.kind)), active: bool, min_capacity: pick(spaces.map((s) => s.capacity)) }),
        someOf({ active: bool }, 1),
        fc.integer({ min: 1, max: 5 }),
        async (c, s, p, limit) => {
          const [wantChannels, wantSpaces, wantPrograms] = await Promise.all([
            t.admin.channel.findMany({ where: { propertyGroupId: group, propertyId: c.property_id, kind: c.kind, active: asBool(c.active) }, orderBy: oldest }),
            t.admin.space.findMany({
              where: { propertyGroupId: group, propertyId: s.property_id, kind: s.kind, active: asBool(s.active), capacity: s.min_capacity === undefined ? undefined : { gte: Number(s.min_capacity) } },
              orderBy: oldest,
            }),
            t.admin.loyaltyProgram.findMany({ where: { propertyGroupId: group, active: asBool(p.active) }, orderBy: oldest }),
          ]);
          if (wantChannels.length && wantSpaces.length) nonEmpty++;
          expect({ filter: c, rows: await allPages("/v1/channels", c, limit, wantChannels.length) }).toEqual({ filter: c, rows: wantChannels.map(asApiRow) });
          expect({ filter: s, rows: await allPages("/v1/spaces", s, limit, wantSpaces.length) }).toEqual({ filter: s, rows: wantSpaces.map(asApiRow) });
          const gotPrograms = (await allPages("/v1/loyalty/programs", p, limit, wantPrograms.length)) as { id: string }[];
          expect({ filter: p, ids: gotPrograms.map((x) => x.id) }).toEqual({ filter: p, ids: wantPrograms.map((x) => x.id) });
        },
      ),
      { numRuns: 25, seed: 40 },
    );
    expect(nonEmpty).toBeGreaterThan(3);
  });

  it("tables: what Prisma finds and counts for the same filters, at every offset", async () => {
    const group = A().id;
    const all = await t.admin.guestTable.findMany({ where: { propertyGroupId: group } });
    expect(all.length).toBeGreaterThan(1);
    const properties = await t.admin.property.findMany({ where: { propertyGroupId: group } });
    await fc.assert(
      fc.asyncProperty(
        someOf({ kind: fc.constantFrom("curated", "filter"), member_type: fc.constantFrom("guest_profile", "master_profile"), property_id: pick([...all.map((x) => x.propertyId), ...properties.map((p) => p.id)]) }),
        fc.integer({ min: 0, max: 3 }),
        fc.integer({ min: 1, max: 4 }),
        async (f, offset, limit) => {
          const where = { propertyGroupId: group, kind: f.kind as "curated" | undefined, memberType: f.member_type as "guest_profile" | undefined, propertyId: f.property_id };
          const want = await t.admin.guestTable.findMany({ where, orderBy: [{ createdAt: "asc" }, { id: "asc" }], skip: offset, take: limit });
          const total = await t.admin.guestTable.count({ where });
          const res = await get(`/v1/tables?${queryOf({ ...f, offset: String(offset), limit: String(limit), include_total: "true" })}`);
          expect({ filter: f, status: res.status }).toEqual({ filter: f, status: 200 });
          expect({ filter: f, ids: res.body.data.map((x: { id: string }) => x.id), total: res.body.total_count }).toEqual({ filter: f, ids: want.map((x) => x.id), total });
        },
      ),
      { numRuns: 25, seed: 40 },
    );
  });
});

describe("GET /v1/consents/effective, read in SQL", () => {
  it("walks the (contact, purpose, type) keys Prisma groups for the same filters, in key order, page by page, each decided as decideConsent decides it", async () => {
    const group = A().id;
    const all = await t.admin.consentObservation.findMany({ where: { propertyGroupId: group } });
    await fc.assert(
      fc.asyncProperty(someOf({ purpose: pick(all.map((o) => o.purpose)), contact_value: pick(all.map((o) => o.contactValue)) }), fc.integer({ min: 1, max: 7 }), async (f, limit) => {
        const keys = await t.admin.consentObservation.groupBy({
          by: ["contactValue", "purpose", "contactType"],
          where: { propertyGroupId: group, purpose: f.purpose, contactValue: f.contact_value },
          orderBy: [{ contactValue: "asc" }, { purpose: "asc" }, { contactType: "asc" }],
        });
        type Effective = { contact_value: string; purpose: string; contact_type: string; status: string; observation_count: number; last_observed_at: string; decided_by: { id: string } | null };
        const got = (await allPages("/v1/consents/effective", f, limit, keys.length)) as Effective[];
        expect({ filter: f, keys: got.map((k) => [k.contact_value, k.purpose, k.contact_type]) }).toEqual({
          filter: f,
          keys: keys.map((k) => [k.contactValue, k.purpose, k.contactType]),
        });
        // Each decided as the delivery engine's Prisma read decides it (decideConsent, spec 1.5).
        const decisions = await decideConsent(t.admin, group, [...new Set(keys.map((k) => k.contactValue))], f.purpose === undefined ? {} : { purpose: f.purpose });
        const want = new Map(decisions.map((d) => [`${d.contactValue} ${d.purpose} ${d.contactType}`, d.effective]));
        expect({ filter: f, decisions: got.map((k) => [k.status, k.observation_count, k.last_observed_at, k.decided_by?.id ?? null]) }).toEqual({
          filter: f,
          decisions: got.map((k) => {
            const e = want.get(`${k.contact_value} ${k.purpose} ${k.contact_type}`)!;
            return [e.status, e.observationCount, e.lastObservedAt?.toISOString() ?? null, e.decidedBy?.id ?? null];
          }),
        });
      }),
      { numRuns: 25, seed: 40 },
    );
  });
});
