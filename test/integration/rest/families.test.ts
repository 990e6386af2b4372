// Every keyset family of /v1, checked the same way: a full limit=2 walk with no duplicate or gap,
// isolation between groups A and B, X-Property-Id narrowing, the scope it needs, and bad input.
import { createApiKey } from "../../../src/auth/credentials";
import { READ_SCOPES } from "../../../src/auth/scopes";
import type { PrismaClient } from "../../../src/generated/prisma/client";
import { startTestApp, type TestApp } from "../../helpers/app";
import { preparedOnLastConnection } from "../../helpers/prepared-statements";
import { walk } from "../../helpers/walk";

let t: TestApp;
beforeAll(async () => {
  t = await startTestApp();
});
afterAll(() => t.close());

type Row = { id: string; property_id?: string | null; enrolment_property_id?: string | null };

interface Family {
  path: string;
  scope: string;
  /** Ids of the group's rows, straight from the database. */
  ids: (db: PrismaClient, groupId: string) => Promise<{ id: string }[]>;
  /** The row's property column, when rows belong to properties; `nullable` when group-wide rows exist. */
  property?: { field: keyof Row; nullable: boolean };
  /** A filter with a bad value of each kind the route accepts. */
  bad: string[];
}

const where = (groupId: string) => ({ where: { propertyGroupId: groupId }, select: { id: true } });
const families: Family[] = [
  { path: "/v1/guests", scope: "read:guests", ids: (db, g) => db.guestProfile.findMany(where(g)), property: { field: "property_id", nullable: false },
    bad: ["property_id=abc", "updated_since=yesterday"] },
  { path: "/v1/master-profiles", scope: "read:guests", ids: (db, g) => db.masterProfile.findMany(where(g)),
    bad: ["property_id=abc", "vip=maybe", "include_total=yes"] },
  { path: "/v1/reservations", scope: "read:reservations", ids: (db, g) => db.reservation.findMany(where(g)), property: { field: "property_id", nullable: false },
    bad: ["status=arrived", "arrival_from=2026-13-01", "guest_profile_id=1"] },
  { path: "/v1/transactions", scope: "read:transactions", ids: (db, g) => db.transaction.findMany(where(g)), property: { field: "property_id", nullable: false },
    bad: ["kind=tip", "occurred_from=2026-13-01", "reservation_id=x"] },
  { path: "/v1/consents", scope: "read:consents", ids: (db, g) => db.consentObservation.findMany(where(g)), property: { field: "property_id", nullable: true },
    bad: ["status=maybe", "observed_to=now"] },
  { path: "/v1/actions", scope: "read:actions", ids: (db, g) => db.action.findMany(where(g)), property: { field: "property_id", nullable: false },
    bad: ["status=pending", "priority=p1", "due_from=tomorrow"] },
  { path: "/v1/reviews", scope: "read:reviews", ids: (db, g) => db.review.findMany(where(g)), property: { field: "property_id", nullable: false },
    bad: ["min_rating=high", "published_from=2026"] },
  { path: "/v1/loyalty/programs", scope: "read:loyalty", ids: (db, g) => db.loyaltyProgram.findMany(where(g)), bad: ["active=yes"] },
  { path: "/v1/loyalty/members", scope: "read:loyalty", ids: (db, g) => db.loyaltyMember.findMany(where(g)),
    property: { field: "enrolment_property_id", nullable: true }, bad: ["status=gold", "program_id=1"] },
  { path: "/v1/channels", scope: "read:resources", ids: (db, g) => db.channel.findMany(where(g)), property: { field: "property_id", nullable: true },
    bad: ["active=2"] },
  { path: "/v1/spaces", scope: "read:resources", ids: (db, g) => db.space.findMany(where(g)), property: { field: "property_id", nullable: false },
    bad: ["min_capacity=four"] },
];

const A = () => t.manifest.groups.A;
const B = () => t.manifest.groups.B;
const get = (path: string, token = A().credentials.api_key) => t.api.get(path).set("Authorization", `Bearer ${token}`);

describe.each(families)("$path", (family) => {
  it("walks the whole group with limit=2: several pages, no duplicate, no gap", async () => {
    const { rows, pages } = await walk<Row>(t, `${family.path}?limit=2`, A().credentials.api_key);
    const ids = rows.map((r) => r.id);
    expect(pages).toBeGreaterThan(1);
    expect(new Set(ids).size).toBe(ids.length);
    expect([...ids].sort()).toEqual((await family.ids(t.admin, A().id)).map((r) => r.id).sort());
  });

  it("never shows group A's rows to group B", async () => {
    const aIds = new Set((await family.ids(t.admin, A().id)).map((r) => r.id));
    const { rows } = await walk<Row>(t, `${family.path}?limit=500`, B().credentials.api_key);
    expect(rows.length).toBeGreaterThan(0);
    expect(rows.filter((r) => aIds.has(r.id))).toEqual([]);
  });

  it("narrows to one property with X-Property-Id", async () => {
    const property = A().properties[0];
    const res = await get(`${family.path}?limit=500`).set("X-Property-Id", property);
    expect(res.status).toBe(200);
    expect(res.body.data.length).toBeGreaterThan(0);
    if (family.property) {
      const { field, nullable } = family.property;
      for (const row of res.body.data as Row[]) expect(nullable ? [property, null] : [property]).toContain(row[field]);
      const all = await get(`${family.path}?limit=500`);
      expect(res.body.data.length).toBeLessThan(all.body.data.length);
    }
    const outside = await get(family.path).set("X-Property-Id", B().properties[0]);
    expect(outside.status).toBe(403);
  });

  it(`403 forbidden with scope ${family.scope} for a key without it`, async () => {
    const key = await createApiKey(t.admin, {
      propertyGroupId: A().id,
      name: "all but one",
      scopes: READ_SCOPES.filter((s) => s !== family.scope),
    });
    const res = await get(family.path, key.token);
    expect(res.status).toBe(403);
    expect(res.body).toEqual({ error: "forbidden", scope: family.scope, detail: expect.any(String) });
  });

  it("rejects bad input with 400 invalid_request naming the parameter", async () => {
    for (const query of [...family.bad, "limit=0", "cursor=zzz", "bogus=1"]) {
      const res = await get(`${family.path}?${query}`);
      expect(res.status).toBe(400);
      const name = query.split("=")[0];
      if (name === "cursor") expect(res.body.error).toBe("invalid_cursor");
      else {
        expect(res.body.error).toBe("invalid_request");
        expect(res.body.detail).toContain(name);
      }
    }
  });
});

describe("get by id", () => {
  const cases: [string, (db: PrismaClient, g: string) => Promise<{ id: string } | null>][] = [
    ["/v1/master-profiles", (db, g) => db.masterProfile.findFirst(where(g))],
    ["/v1/reservations", (db, g) => db.reservation.findFirst(where(g))],
    ["/v1/transactions", (db, g) => db.transaction.findFirst(where(g))],
    ["/v1/reviews", (db, g) => db.review.findFirst(where(g))],
    ["/v1/loyalty/members", (db, g) => db.loyaltyMember.findFirst(where(g))],
    ["/v1/actions", (db, g) => db.action.findFirst(where(g))],
    ["/v1/tables", (db, g) => db.guestTable.findFirst(where(g))],
  ];
  it.each(cases)("%s/{id}: 200 in scope, 404 for another group or a missing id, 400 for a bad id", async (path, first) => {
    const row = (await first(t.admin, A().id))!;
    const ok = await get(`${path}/${row.id}`);
    expect(ok.status).toBe(200);
    expect(ok.body.data.id).toBe(row.id);
    const other = await get(`${path}/${row.id}`, B().credentials.api_key);
    expect(other.status).toBe(404);
    expect(other.body.error).toBe("not_found");
    expect((await get(`${path}/00000000-0000-4000-8000-000000000000`)).status).toBe(404);
    expect((await get(`${path}/nope`)).status).toBe(400);
  });
});

describe("which pages keep their plan", () => {
  const pages = [
    { path: "/v1/reservations", table: "reservations", filter: "status=confirmed", column: "status" },
    { path: "/v1/transactions", table: "transactions", filter: "kind=charge", column: "kind" },
    { path: "/v1/master-profiles", table: "master_profiles", filter: "vip=true", column: "vip" },
  ];

  it.each(pages)("$path: the group's whole page runs on its kept generic plan, a filtered one is planned afresh", async ({ path, table, filter, column }) => {
    const key = t.manifest.groups.A.credentials.api_key;
    /** The service's page statements of this table prepared on the connection the last request used. */
    const page = async () =>
      (await preparedOnLastConnection(t.db.readerPool)).filter(
        (s) => /^gcs_[0-9a-f]{32}$/.test(s.name) && s.statement.includes(`FROM ${table} t WHERE`) && s.statement.includes("ORDER BY t.created_at, t.id"));
    for (let i = 0; i < 2; i++) expect((await t.api.get(`${path}?limit=2`).set("Authorization", `Bearer ${key}`)).status).toBe(200);
    // The first page's statement at least (the walks above may have prepared their cursor pages too).
    const kept = await page();
    expect(kept.length).toBeGreaterThan(0);
    expect(kept.filter((s) => s.custom !== 0)).toEqual([]);
    expect((await t.api.get(`${path}?limit=2&${filter}`).set("Authorization", `Bearer ${key}`)).status).toBe(200);
    expect((await page()).filter((s) => s.statement.includes(`t.${column} =`))).toEqual([]);
  });
});
