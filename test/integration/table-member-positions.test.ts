// A curated table's member positions (the seek behind its offset pages): consecutive, in the order
// members were added, through sequential and concurrent adds and removes, with the REST pages
// agreeing; the fixture writes them too, and the migration numbers existing members.
import { randomUUID } from "node:crypto";
import fc from "fast-check";
import { addTableMembers, removeTableMembers } from "../../src/data/stores/table-membership";
import { migrate } from "../../src/db/migrate";
import { startTestApp, type TestApp } from "../helpers/app";
import { databaseBefore } from "../helpers/migration-database";

let t: TestApp;
let pool: string[];
beforeAll(async () => {
  t = await startTestApp();
  // Guests of group A to make members of; sorted, so an add's expected order is their order here.
  const { propertyId, integrationId } = await t.admin.guestProfile.findUniqueOrThrow({ where: { id: A().guest_lookup.guest_id } });
  const guests = await t.admin.guestProfile.createManyAndReturn({
    data: Array.from({ length: 24 }, (_, i) => ({ id: randomUUID(), propertyGroupId: A().id, propertyId, integrationId, sourceId: `positions-${i}` })),
    select: { id: true },
  });
  pool = guests.map((g) => g.id).sort();
});
afterAll(() => t.close());

const A = () => t.manifest.groups.A;

async function newTable(): Promise<string> {
  const table = await t.admin.guestTable.create({
    data: { id: randomUUID(), propertyGroupId: A().id, name: "Positions", kind: "curated", memberType: "guest_profile" },
  });
  return table.id;
}

type Op = { kind: "add" | "remove"; ids: string[] };
const run = (tableId: string, op: Op) =>
  (op.kind === "add" ? addTableMembers : removeTableMembers)(t.db.primary, { tableId, propertyGroupId: A().id, memberIds: op.ids });

/** What an op does to the ordered member list: an add appends its new ids in id order. */
function apply(list: string[], op: Op): string[] {
  if (op.kind === "remove") return list.filter((id) => !op.ids.includes(id));
  const fresh = [...new Set(op.ids)].filter((id) => !list.includes(id)).sort();
  return [...list, ...fresh];
}

const positions = async (tableId: string) =>
  (await t.admin.tableMember.findMany({ where: { tableId }, orderBy: { position: "asc" }, select: { position: true } })).map((r) => r.position);

/** The table's members by position, after checking positions are consecutive and added_at never decreases along them. */
async function stored(tableId: string): Promise<string[]> {
  const rows = await t.admin.tableMember.findMany({ where: { tableId }, orderBy: { position: "asc" } });
  expect(rows.map((r) => r.position)).toEqual(rows.map((_, i) => rows[0].position + i));
  for (let i = 1; i < rows.length; i++) expect(rows[i].addedAt.getTime()).toBeGreaterThanOrEqual(rows[i - 1].addedAt.getTime());
  return rows.map((r) => r.memberId);
}

const get = (p: string) => t.api.get(p).set("Authorization", `Bearer ${A().credentials.api_key}`);

/** Every page of `limit` from `offset`, and a walk over next_offset, agree with the expected list. */
async function expectPages(tableId: string, expected: string[], limit: number, offsets: number[]) {
  for (const offset of offsets) {
    const res = await get(`/v1/tables/${tableId}/members?limit=${limit}&offset=${offset}`);
    expect(res.status).toBe(200);
    const want = expected.slice(offset, offset + limit);
    expect(res.body.data.map((m: { member_id: string }) => m.member_id)).toEqual(want);
    expect(res.body.has_more).toBe(offset + limit < expected.length);
    expect(res.body.next_offset).toBe(offset + want.length);
  }
  const walked: string[] = [];
  for (let offset = 0; ; ) {
    const res = await get(`/v1/tables/${tableId}/members?limit=${limit}&offset=${offset}`);
    walked.push(...res.body.data.map((m: { member_id: string }) => m.member_id));
    if (!res.body.has_more) break;
    offset = res.body.next_offset;
  }
  expect(walked).toEqual(expected);
}

describe("table member positions", () => {
  it("stay dense and in the order added through adds and removals at the start, middle and end", async () => {
    const tableId = await newTable();
    const [first, second] = [pool.slice(0, 10), pool.slice(10, 14)];
    // Within one add, members share added_at and go in id order, whatever the input order.
    await run(tableId, { kind: "add", ids: [...first].reverse() });
    await run(tableId, { kind: "add", ids: [second[1], first[0], second[0], second[3], second[2]] });
    let expected = [...first, ...second];
    expect(await stored(tableId)).toEqual(expected);

    const middle = [first[3], first[5], first[6], second[1]];
    await run(tableId, { kind: "remove", ids: middle });
    expected = expected.filter((id) => !middle.includes(id));
    expect(await stored(tableId)).toEqual(expected);
    await expectPages(tableId, expected, 3, [0, 2, 3, 8, 9, 10, 50_000]);

    await run(tableId, { kind: "remove", ids: [first[0], second[3]] });
    expected = expected.filter((id) => id !== first[0] && id !== second[3]);
    expect(await stored(tableId)).toEqual(expected);
    await expectPages(tableId, expected, 4, [0, 1, 4, 7, 8]);
    const count = await get(`/v1/tables/${tableId}/members?limit=1&include_total=true`);
    expect(count.body.total_count).toBe(expected.length);
    expect((await get(`/v1/tables/${tableId}`)).body.data.member_count).toBe(expected.length);
  });

  it("close a gap from the shorter side: removing near an end moves the few members beyond it, not the rest", async () => {
    const tableId = await newTable();
    const ids = pool.slice(0, 10);
    await run(tableId, { kind: "add", ids });
    expect(await positions(tableId)).toEqual([1, 2, 3, 4, 5, 6, 7, 8, 9, 10]);
    await run(tableId, { kind: "remove", ids: [ids[1]] });
    expect(await positions(tableId)).toEqual([2, 3, 4, 5, 6, 7, 8, 9, 10]);
    await run(tableId, { kind: "remove", ids: [ids[8]] });
    expect(await positions(tableId)).toEqual([2, 3, 4, 5, 6, 7, 8, 9]);
    await run(tableId, { kind: "remove", ids: [ids[0], ids[3]] });
    expect(await positions(tableId)).toEqual([4, 5, 6, 7, 8, 9]);
    const expected = ids.filter((_, i) => ![0, 1, 3, 8].includes(i));
    expect(await stored(tableId)).toEqual(expected);
    await expectPages(tableId, expected, 4, [0, 2, 5, 6]);
  });

  it("stay dense and the pages right under random sequential and concurrent adds and removes", async () => {
    const op = fc.record({ kind: fc.constantFrom("add" as const, "remove" as const), ids: fc.subarray(pool, { minLength: 1, maxLength: 8 }) });
    // A step is one op, or two ops racing on two connections.
    const step = fc.array(op, { minLength: 1, maxLength: 2 });
    await fc.assert(
      fc.asyncProperty(fc.array(step, { minLength: 1, maxLength: 8 }), fc.integer({ min: 1, max: 7 }), async (steps, limit) => {
        const tableId = await newTable();
        let expected: string[] = [];
        for (const ops of steps) {
          await Promise.all(ops.map((o) => run(tableId, o)));
          // Racing writers take turns on the table lock, in either order.
          const outcomes = ops.length === 1 ? [apply(expected, ops[0])] : [apply(apply(expected, ops[0]), ops[1]), apply(apply(expected, ops[1]), ops[0])];
          const actual = await stored(tableId);
          expect(outcomes).toContainEqual(actual);
          expected = actual;
        }
        const n = expected.length;
        await expectPages(tableId, expected, limit, [...new Set([0, Math.floor(n / 2), Math.max(n - 1, 0), n, n + 3])]);
      }),
      { numRuns: 25 },
    );
  });

  it("are written by the fixtures: each fixture table is numbered 1..n in (added_at, member_id) order", async () => {
    const fixtureTables = Object.values(t.manifest.groups).map((g) => g.tables.bound);
    const rows = await t.admin.$queryRaw<{ table_id: string; position: number; expected: bigint }[]>`
      SELECT table_id, position, row_number() OVER (PARTITION BY table_id ORDER BY added_at, member_id) AS expected
      FROM table_members WHERE table_id = ANY(${fixtureTables}::uuid[])`;
    expect(rows.length).toBeGreaterThan(0);
    expect(rows.filter((r) => BigInt(r.position) !== r.expected)).toEqual([]);
  });
});

describe("migration 20261124101700_table_member_positions", () => {
  const MIGRATION = "20261124101700_table_member_positions";

  it("numbers each table's existing members 1..n in (added_at, member_id) order", async () => {
    // The schema as it was before the migration, recorded as applied.
    const { url, db, drop } = await databaseBefore(MIGRATION);
    try {
      const g = "00000000-0000-4000-8000-000000000002";
      const [t1, t2] = ["00000000-0000-4000-8000-0000000000a1", "00000000-0000-4000-8000-0000000000a2"];
      await db.query(`INSERT INTO organisations (id, name) VALUES ('00000000-0000-4000-8000-000000000001', 'o')`);
      await db.query(`INSERT INTO property_groups (id, organisation_id, name) VALUES ($1, '00000000-0000-4000-8000-000000000001', 'g')`, [g]);
      await db.query(`INSERT INTO tables (id, property_group_id, name, kind, member_type) VALUES ($1, $3, 't1', 'curated', 'guest_profile'), ($2, $3, 't2', 'curated', 'guest_profile')`, [t1, t2, g]);
      // Two tables interleaved; in t1 two members share an added_at (member_id breaks the tie).
      const member = (n: number) => `00000000-0000-4000-8000-0000000000${String(n).padStart(2, "0")}`;
      const rows: [string, string, string][] = [
        [t1, member(30), "2026-01-03"], [t2, member(11), "2026-01-01"], [t1, member(12), "2026-01-02"],
        [t1, member(40), "2026-01-01"], [t2, member(50), "2026-01-02"], [t1, member(13), "2026-01-02"],
      ];
      for (const [table, id, at] of rows) {
        await db.query("INSERT INTO table_members (table_id, member_id, property_group_id, added_at) VALUES ($1, $2, $3, $4)", [table, id, g, at]);
      }

      expect((await migrate(url)).applied).toContain(MIGRATION);
      const numbered = (await db.query("SELECT table_id, member_id, position FROM table_members ORDER BY table_id, position")).rows;
      expect(numbered.map((r) => `${r.table_id.slice(-2)}:${r.position}:${r.member_id.slice(-2)}`)).toEqual([
        "a1:1:40", "a1:2:12", "a1:3:13", "a1:4:30", "a2:1:11", "a2:2:50",
      ]);
    } finally {
      await drop();
    }
  });
});
