// The scoped client every resolver uses: tenant rules hold even for a query that forgets them.
import { scopedPrisma } from "../../src/auth/tenant-scope";
import { startTestApp, type TestApp } from "../helpers/app";

let t: TestApp;
beforeAll(async () => {
  t = await startTestApp();
});
afterAll(() => t.close());

describe("scopedPrisma", () => {
  it("hides other groups' rows from unfiltered queries, findUnique included", async () => {
    const A = t.manifest.groups.A;
    const B = t.manifest.groups.B;
    const db = scopedPrisma(t.db.primary, { propertyGroupId: B.id, propertyId: null });
    expect(await db.guestProfile.findUnique({ where: { id: A.guest_lookup.guest_id } })).toBeNull();
    const all = await db.guestProfile.findMany({ select: { propertyGroupId: true } });
    expect(all.length).toBeGreaterThan(0);
    expect(new Set(all.map((r) => r.propertyGroupId))).toEqual(new Set([B.id]));
    expect(await db.masterProfile.count({ where: { id: A.master_with_two_guests } })).toBe(0);
  });

  it("narrows to one property, keeping group-wide rows where they apply", async () => {
    const A = t.manifest.groups.A;
    const db = scopedPrisma(t.db.primary, { propertyGroupId: A.id, propertyId: A.properties[0] });
    const guests = await db.guestProfile.findMany({ select: { propertyId: true } });
    expect(new Set(guests.map((g) => g.propertyId))).toEqual(new Set([A.properties[0]]));
    const properties = await db.property.findMany();
    expect(properties.map((p) => p.id)).toEqual([A.properties[0]]);
  });

  it("refuses credential tables and writes into another group", async () => {
    const A = t.manifest.groups.A;
    const db = scopedPrisma(t.db.primary, { propertyGroupId: A.id, propertyId: null });
    await expect(db.apiKey.findMany()).rejects.toThrow(/not tenant data/);
    await expect(
      db.channel.create({ data: { id: "11111111-1111-4111-8111-111111111111", propertyGroupId: t.manifest.groups.B.id, code: "x", name: "x", kind: "direct" } }),
    ).rejects.toThrow(/outside the caller's group/);
  });
});
