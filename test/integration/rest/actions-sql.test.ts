// Actions are read in scoped SQL (data/engagement.ts): every filter, page and field answers what
// Prisma finds for the same filter, as the service answered when it read them through Prisma.
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

describe("GET /v1/actions, read in SQL", () => {
  it("lists what Prisma finds for the same filters, every page in order, each field as the API writes it; by id and a guest's the same", async () => {
    const group = A().id;
    const all = await t.admin.action.findMany({ where: { propertyGroupId: group } });
    expect(all.length).toBeGreaterThan(3);
    const pick = <T,>(values: T[]) => fc.constantFrom(...[...new Set(values)].filter((v) => v != null).slice(0, 4));
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
    const filters = fc
      .tuple(fc.record(values), fc.subarray(Object.keys(values) as (keyof typeof values)[], { maxLength: 2 }))
      .map(([v, keys]) => Object.fromEntries(keys.map((k) => [k, String(v[k])])) as Record<string, string>);
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
        const got: unknown[] = [];
        let cursor: string | null = null;
        do {
          const res = await get(`/v1/actions?${queryOf({ ...f, limit: String(limit) })}${cursor ? `&cursor=${encodeURIComponent(cursor)}` : ""}`);
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
    const ofGuest = all.filter((a) => a.guestProfileId === one.guestProfileId).sort((a, b) => a.createdAt.getTime() - b.createdAt.getTime() || (a.id < b.id ? -1 : 1));
    expect(graphql.body).toEqual({ data: { guest: { actions: ofGuest.map((a) => ({ id: a.id, status: a.status, dueAt: a.dueAt?.toISOString() ?? null })) } } });
  });
});
