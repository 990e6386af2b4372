// Consent observations are listed in scoped SQL (data/consents.ts): every filter, page and field
// answers what Prisma finds for the same filter, as the service answered when it read them through Prisma.
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

describe("GET /v1/consents, read in SQL", () => {
  it("lists what Prisma finds for the same filters, every page in order, each field as the API writes it; a guest's the same", async () => {
    const group = A().id;
    const all = await t.admin.consentObservation.findMany({ where: { propertyGroupId: group } });
    expect(all.length).toBeGreaterThan(3);
    const pick = <T,>(values: T[]) => fc.constantFrom(...[...new Set(values)].filter((v) => v != null).slice(0, 4));
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
    const filters = fc
      .tuple(fc.record(values), fc.subarray(Object.keys(values) as (keyof typeof values)[], { maxLength: 2 }))
      .map(([v, keys]) => Object.fromEntries(keys.map((k) => [k, String(v[k])])) as Record<string, string>);
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
        const got: unknown[] = [];
        let cursor: string | null = null;
        do {
          const res = await get(`/v1/consents?${queryOf({ ...f, limit: String(limit) })}${cursor ? `&cursor=${encodeURIComponent(cursor)}` : ""}`);
          expect({ filter: f, status: res.status }).toEqual({ filter: f, status: 200 });
          got.push(...res.body.data);
          cursor = res.body.next_cursor;
        } while (cursor && got.length <= rows.length);
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
    const ofGuest = all.filter((o) => o.guestProfileId === one.guestProfileId).sort((a, b) => a.createdAt.getTime() - b.createdAt.getTime() || (a.id < b.id ? -1 : 1));
    expect(graphql.body).toEqual({ data: { guest: { consents: ofGuest.map((o) => ({ id: o.id, status: o.status, observedAt: o.observedAt.toISOString() })) } } });
  });
});
