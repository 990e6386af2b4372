// The scoped client every resolver uses, and the scoped SQL of the hot read paths: tenant rules hold
// even for a query that forgets them, and both renderings of the rules select the same rows.
import { scopedPrisma } from "../../src/data/tenant";
import { scopedSql } from "../../src/data/sql";
import { startTestApp, type TestApp } from "../helpers/app";

let t: TestApp;
beforeAll(async () => {
  t = await startTestApp();
});
afterAll(() => t.close());

describe("scopedPrisma", () => {
  it("hides other groups' rows from unfiltered queries and lookups by id", async () => {
    const A = t.manifest.groups.A;
    const B = t.manifest.groups.B;
    const db = scopedPrisma(t.db.primary, { propertyGroupId: B.id, propertyId: null });
    expect(await db.guestProfile.findFirst({ where: { id: A.guest_lookup.guest_id } })).toBeNull();
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

describe("scopedSql", () => {
  // Every model the SQL read paths use, with a key that identifies its rows.
  const models = [
    { model: "GuestProfile", key: "id", prisma: "guestProfile" },
    { model: "MasterProfile", key: "id", prisma: "masterProfile" },
    { model: "Reservation", key: "id", prisma: "reservation" },
    { model: "Transaction", key: "id", prisma: "transaction" },
    { model: "Event", key: "seq", prisma: "event" },
    { model: "TableMember", key: "memberId", prisma: "tableMember" },
  ] as const;

  it("selects exactly the rows the scoped Prisma client sees, group-wide and narrowed to a property", async () => {
    const { A, B } = t.manifest.groups;
    const scopes = [
      { propertyGroupId: A.id, propertyId: null },
      { propertyGroupId: A.id, propertyId: A.properties[0] },
      { propertyGroupId: A.id, propertyId: A.properties[1] },
      { propertyGroupId: B.id, propertyId: null },
      { propertyGroupId: B.id, propertyId: B.properties[0] },
    ];
    for (const scope of scopes) {
      const prisma = scopedPrisma(t.db.primary, scope) as unknown as Record<string, { findMany(args: object): Promise<Record<string, unknown>[]> }>;
      const sql = scopedSql(t.db.readerPool, scope);
      for (const { model, key, prisma: delegate } of models) {
        const viaPrisma = (await prisma[delegate].findMany({ select: { [key]: true, ...(model === "TableMember" ? { tableId: true } : {}) } }))
          .map((r) => `${r.tableId ?? ""}${String(r[key])}`)
          .sort();
        const viaSql = (await sql.rows<Record<string, unknown>>({ from: model, shape: model === "TableMember" ? { tableId: "value", [key]: "value" } : { [key]: "value" } }))
          .map((r) => `${r.tableId ?? ""}${String(r[key])}`)
          .sort();
        expect({ model, scope, rows: viaSql }).toEqual({ model, scope, rows: viaPrisma });
        if (scope.propertyId === null) expect(viaSql.length).toBeGreaterThan(0);
      }
    }
  });

  it("refuses models that are not tenant data", async () => {
    const sql = scopedSql(t.db.readerPool, { propertyGroupId: t.manifest.groups.A.id, propertyId: null });
    await expect(sql.rows({ from: "ApiKey" as never, shape: { id: "value" } })).rejects.toThrow(/not tenant data/);
  });
});
