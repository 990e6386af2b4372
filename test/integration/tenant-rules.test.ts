// "A master profile is at a property" is said once (data/tenant.ts masterAtProperty) and read four
// ways: the tenant rule of a property-narrowed request in SQL and as a Prisma where, the master
// profile list's property filter, and a table filter document's property_id. All four must select
// the same master profiles.
import { createData } from "../../src/data";
import { scopedPrisma } from "../../src/data/tenant";
import { startTestApp, type TestApp } from "../helpers/app";

let t: TestApp;
beforeAll(async () => {
  t = await startTestApp();
});
afterAll(() => t.close());

const ALL = 50_000;

describe("master profile at a property", () => {
  it("selects the same master profiles as tenant rule (SQL and Prisma), list filter and table filter", async () => {
    const A = t.manifest.groups.A;
    const group = { propertyGroupId: A.id, propertyId: null };
    const everyone = (await createData(t.db, group).masterProfiles.page<{ id: string }>({}, null, ALL, { id: "value" })).map((m) => m.id);
    for (const property of A.properties) {
      const narrowed = { propertyGroupId: A.id, propertyId: property };
      const bySqlRule = (await createData(t.db, narrowed).masterProfiles.page<{ id: string }>({}, null, ALL, { id: "value" })).map((m) => m.id);
      const byPrismaRule = (await scopedPrisma(t.db.reader, narrowed).masterProfile.findMany({ select: { id: true } })).map((m) => m.id);
      const byListFilter = (await createData(t.db, group).masterProfiles.page<{ id: string }>({ propertyId: property }, null, ALL, { id: "value" })).map(
        (m) => m.id,
      );
      const byTableFilter = (
        await createData(t.db, group).tables.matching("master_profile", { field: "property_id", op: "eq", value: property }).ids(0, ALL)
      ).map((m) => m.id);
      expect(bySqlRule.length).toBeGreaterThan(0);
      // Meaningful only if some master profile of the group is not at this property.
      expect(bySqlRule.length).toBeLessThan(everyone.length);
      expect([...byPrismaRule].sort()).toEqual([...bySqlRule].sort());
      expect(byListFilter).toEqual(bySqlRule);
      expect(byTableFilter).toEqual(bySqlRule);
    }
  });
});
