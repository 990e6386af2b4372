// Stay rollups that follow the writes (issue 44): after each kind of write a refresh applies the
// change rows' touches (path "touches", never a whole rebuild), and every stored stay bucket of every
// shape equals what the live statement returns, for the whole group and for a caller narrowed to a
// property. Also: two refreshers racing writers end equal to live, and random interleavings of writes
// and refreshes (fast-check) end equal to live after every refresh.
import { randomUUID } from "node:crypto";
import { Client } from "pg";
import fc from "fast-check";
import { createReaders } from "../../src/data/readers";
import { liveMetrics, type StayDimension } from "../../src/data/metrics";
import { STAY_SHAPES, stayShapeKey, staysFromRollups } from "../../src/data/metric-rollups";
import { rebuildFamily, refreshRollups } from "../../src/rollups/refresh";
import type { Scope } from "../../src/data/scope";
import type { TestApp } from "../helpers/app";
import { closeRollupTestApp, startRollupTestApp } from "../helpers/rollups";

let t: TestApp;
let admin: Client;
beforeAll(async () => ({ t, admin } = await startRollupTestApp()));
afterAll(() => closeRollupTestApp(t, admin));

const A = () => t.manifest.groups.A;
const groupScope = (): Scope => ({ propertyGroupId: A().id, propertyId: null });
const pinnedScope = (): Scope => ({ propertyGroupId: A().id, propertyId: A().credentials.api_key_pinned.property_id });
const plain = (rows: unknown) => JSON.parse(JSON.stringify(rows));
const ALL_DATES = { arrivalFrom: "0001-01-01", arrivalTo: "9999-12-31" };
const sortByKey = (rows: Record<string, unknown>[]) =>
  [...rows].sort((a, b) => (JSON.stringify([a.period, a.propertyId, a.channel, a.guestCountry, a.inMonth]) < JSON.stringify([b.period, b.propertyId, b.channel, b.guestCountry, b.inMonth]) ? -1 : 1));

/** Every stored bucket of every stay shape (without the delta's bookkeeping) equals the live statement's, for the whole group. */
async function expectGroupEqualsLive() {
  const live = liveMetrics(createReaders(t.db, groupScope()));
  const { rows } = await admin.query<{ shape: string; bucket: Record<string, unknown> }>(
    "SELECT shape, bucket - 'folioStays' AS bucket FROM metric_rollups WHERE property_group_id = $1 AND metric = 'stays'",
    [A().id],
  );
  for (const { grain, dims } of STAY_SHAPES) {
    const shape = stayShapeKey(grain, dims);
    const want = (await live.stays(ALL_DATES, [grain, ...dims], true, dims.includes("property") ? "caller-and-property" : "caller")).map(({ bucket: _b, ...row }) => row);
    expect({ shape, rows: sortByKey(plain(rows.filter((r) => r.shape === shape).map((r) => r.bucket))) }).toEqual({ shape, rows: sortByKey(plain(want)) });
  }
}

/** The answers a caller narrowed to a property reads from the rollups equal the live ones, for each year with stays. */
async function expectPinnedEqualsLive() {
  const r = createReaders(t.db, pinnedScope());
  const { rows: years } = await admin.query<{ y: number }>(
    "SELECT DISTINCT extract(year FROM arrival_date)::int AS y FROM reservations WHERE property_group_id = $1 AND property_id = $2 ORDER BY 1",
    [A().id, pinnedScope().propertyId],
  );
  const groupings: StayDimension[][] = [[], ["month"], ["week"], ["day"], ["month", "channel"], ["guest_country", "month"], ["channel"]];
  for (const { y } of years) {
    const filter = { arrivalFrom: `${y}-01-01`, arrivalTo: `${y}-12-31` };
    for (const groupBy of groupings) {
      const stored = await staysFromRollups(r, filter, groupBy, true, true);
      expect({ y, groupBy, served: stored !== undefined }).toEqual({ y, groupBy, served: true });
      const want = (await liveMetrics(r).stays(filter, groupBy, true, "caller")).map(({ bucket: _b, ...row }) => row);
      expect({ y, groupBy, rows: plain(stored) }).toEqual({ y, groupBy, rows: plain(want) });
    }
  }
}

async function expectEqualsLive() {
  await expectGroupEqualsLive();
  await expectPinnedEqualsLive();
}

/**
 * One refresh pass of group A: the stays pair applies its touches (no whole rebuild). `due`: it has
 * changes (else it may have none: a write that changed no stay).
 */
async function refreshByTouches(due = true): Promise<number> {
  const reports = (await refreshRollups(t.db, { groupId: A().id })).filter((x) => x.metric === "stays");
  if (!due && !reports.length) return 0;
  expect(reports.map(({ path, repaired }) => ({ path, repaired }))).toEqual([{ path: "touches", repaired: undefined }]);
  const { rows: [state] } = await admin.query("SELECT last_path, facts_built FROM metric_rollup_state WHERE property_group_id = $1 AND metric = 'stays'", [A().id]);
  expect(state).toEqual({ last_path: "touches", facts_built: true });
  return reports[0].rows;
}

/** A copy of a row with a new id (and source id), some columns set to SQL expressions; returns the new id. */
async function copyRow(table: "reservations" | "transactions", id: string, set: Record<string, string> = {}, c: Client = admin): Promise<string> {
  const { rows: cols } = await c.query<{ c: string }>(
    "SELECT column_name AS c FROM information_schema.columns WHERE table_schema = 'public' AND table_name = $1 AND column_name NOT IN ('id', 'source_id') ORDER BY ordinal_position",
    [table],
  );
  const newId = randomUUID();
  const names = cols.map(({ c }) => `"${c}"`).join(", ");
  const values = cols.map(({ c }) => set[c] ?? `"${c}"`).join(", ");
  await c.query(`INSERT INTO ${table} (id, source_id, ${names}) SELECT $2::uuid, source_id || '-' || $2::text, ${values} FROM ${table} WHERE id = $1`, [id, newId]);
  return newId;
}

/** A counted stay of group A with a guest profile (and a charge on its folio when `charged`): the `n`th such, round the list. */
async function aStay(n = 0, c: Client = admin, charged = false): Promise<{ id: string; guest: string; property: string; arrival: string }> {
  const { rows } = await c.query(
    `SELECT r.id, r.guest_profile_id AS guest, r.property_id AS property, to_char(r.arrival_date, 'YYYY-MM-DD') AS arrival
     FROM reservations r WHERE r.property_group_id = $1 AND r.kind = 'stay' AND r.status NOT IN ('cancelled', 'no_show') AND r.guest_profile_id IS NOT NULL
       AND (NOT $2 OR EXISTS (SELECT 1 FROM transactions x WHERE x.reservation_id = r.id AND x.kind = 'charge'))
     ORDER BY r.id`,
    [A().id, charged],
  );
  expect(rows.length).toBeGreaterThan(charged ? 3 : 10);
  return rows[n % rows.length];
}

/** A guest profile of `property` other than `guest` (the `n`th, round the list). */
async function anotherGuestAt(c: Client, property: string, guest: string | null, n: number): Promise<string> {
  const { rows } = await c.query("SELECT id FROM guest_profiles WHERE property_id = $1 AND id IS DISTINCT FROM $2 ORDER BY id", [property, guest]);
  return rows[n % rows.length].id;
}

/** Any stay of group A, cancelled or without a guest too (the `n`th, round the list). */
async function anyStay(n: number, c: Client): Promise<string> {
  const { rows } = await c.query("SELECT id FROM reservations WHERE property_group_id = $1 AND kind = 'stay' ORDER BY id", [A().id]);
  return rows[n % rows.length].id;
}

const monthTotals = async (field: "returningGuests" | "stays") => {
  const { rows } = await admin.query<{ n: string }>(
    `SELECT coalesce(sum((bucket->>$2)::int), 0) AS n FROM metric_rollups WHERE property_group_id = $1 AND metric = 'stays' AND shape = 'month:'`,
    [A().id, field],
  );
  return Number(rows[0].n);
};

describe("each kind of write moves the stored buckets by its delta", () => {
  test("the first refresh after this release rebuilds whole once, then applies touches", async () => {
    await admin.query("UPDATE metric_rollup_state SET facts_built = false WHERE property_group_id = $1 AND metric = 'stays'", [A().id]);
    await admin.query("UPDATE reservations SET updated_at = updated_at WHERE id = $1", [(await aStay()).id]);
    const [whole] = (await refreshRollups(t.db, { groupId: A().id })).filter((x) => x.metric === "stays");
    expect(whole.path).toBe("whole");
    await admin.query("UPDATE reservations SET updated_at = updated_at WHERE id = $1", [(await aStay()).id]);
    expect(await refreshByTouches()).toBeGreaterThan(0);
    await expectEqualsLive();
  });

  test("a new stay", async () => {
    const before = await monthTotals("stays");
    await copyRow("reservations", (await aStay(1)).id);
    await refreshByTouches();
    expect(await monthTotals("stays")).toBe(before + 1);
    await expectEqualsLive();
  });

  test("a cancelled stay, then a no-show restored", async () => {
    const { id } = await aStay(2);
    await admin.query("UPDATE reservations SET status = 'cancelled' WHERE id = $1", [id]);
    await refreshByTouches();
    await expectEqualsLive();
    await admin.query("UPDATE reservations SET status = 'checked_out' WHERE id = $1", [id]);
    await refreshByTouches();
    await expectEqualsLive();
  });

  test("a changed arrival date (into another month and year) and changed nights", async () => {
    const { id } = await aStay(3);
    await admin.query("UPDATE reservations SET arrival_date = arrival_date - 200, departure_date = departure_date - 200 WHERE id = $1", [id]);
    await refreshByTouches();
    await expectEqualsLive();
    await admin.query("UPDATE reservations SET departure_date = departure_date + 3 WHERE id = $1", [id]);
    await refreshByTouches();
    await expectEqualsLive();
  });

  test("a stay moved to another property, with its folio lines and its guest", async () => {
    await moveStay(admin, 4);
    await refreshByTouches();
    await expectEqualsLive();
  });

  test("a new folio line (in a new currency), changed, then removed", async () => {
    const { id } = await aStay(5, admin, true);
    const { rows: [line] } = await admin.query("SELECT id FROM transactions WHERE reservation_id = $1 AND kind = 'charge' ORDER BY id LIMIT 1", [id]);
    const added = await copyRow("transactions", line.id, { currency: "'JPY'", category: "'accommodation'", amount_minor: "12345" });
    await refreshByTouches();
    const { rows: [jpy] } = await admin.query(
      "SELECT count(*)::int AS n FROM metric_rollups WHERE property_group_id = $1 AND metric = 'stays' AND bucket->'revenue' @> '[{\"currency\": \"JPY\"}]'", [A().id]);
    expect(jpy.n).toBeGreaterThan(0);
    await expectEqualsLive();
    await admin.query("UPDATE transactions SET kind = 'refund' WHERE id = $1", [added]);
    await refreshByTouches();
    await expectEqualsLive();
    await admin.query("DELETE FROM transactions WHERE id = $1", [added]);
    await refreshByTouches();
    const { rows: [gone] } = await admin.query(
      "SELECT count(*)::int AS n FROM metric_rollups WHERE property_group_id = $1 AND metric = 'stays' AND bucket->'revenue' @> '[{\"currency\": \"JPY\"}]'", [A().id]);
    expect(gone.n).toBe(0);
    await expectEqualsLive();
  });

  test("a guest merged into another guest's master profile, then split off again", async () => {
    const { rows: [m] } = await admin.query(
      `SELECT g.master_profile_id AS master FROM guest_profiles g JOIN reservations r ON r.guest_profile_id = g.id
       WHERE g.property_group_id = $1 AND g.master_profile_id IS NOT NULL AND r.kind = 'stay' ORDER BY g.id LIMIT 1`, [A().id]);
    const { rows: [g] } = await admin.query(
      `SELECT g.id, g.master_profile_id AS master FROM guest_profiles g WHERE g.property_group_id = $1 AND g.master_profile_id IS DISTINCT FROM $2
         AND (SELECT count(*) FROM reservations r WHERE r.guest_profile_id = g.id AND r.kind = 'stay') >= 2 ORDER BY g.id LIMIT 1`, [A().id, m.master]);
    await admin.query("UPDATE guest_profiles SET master_profile_id = $2 WHERE id = $1", [g.id, m.master]);
    await refreshByTouches();
    await expectEqualsLive();
    await admin.query("UPDATE guest_profiles SET master_profile_id = $2 WHERE id = $1", [g.id, g.master]);
    await refreshByTouches();
    await expectEqualsLive();
  });

  test("a guest's country changed", async () => {
    const { guest } = await aStay(6);
    await admin.query("UPDATE guest_profiles SET country_code = CASE WHEN country_code = 'IS' THEN 'NO' ELSE 'IS' END WHERE id = $1", [guest]);
    await refreshByTouches();
    const { rows: [is] } = await admin.query(
      "SELECT count(*)::int AS n FROM metric_rollups WHERE property_group_id = $1 AND metric = 'stays' AND shape = 'year:guest_country' AND bucket->>'guestCountry' IN ('IS', 'NO')", [A().id]);
    expect(is.n).toBeGreaterThan(0);
    await expectEqualsLive();
  });

  test("stays without a guest profile: a new one, and a guest's stay whose guest is removed", async () => {
    await copyRow("reservations", (await aStay(7)).id, { guest_profile_id: "NULL" });
    await refreshByTouches();
    await expectEqualsLive();
    const { id } = await aStay(8);
    await admin.query("UPDATE reservations SET guest_profile_id = NULL WHERE id = $1", [id]);
    await refreshByTouches();
    await expectEqualsLive();
  });

  test("a guest's first stay inserted before their other stays: they return in later buckets", async () => {
    const { rows: [g] } = await admin.query(
      `SELECT coalesce(gp.master_profile_id, gp.id) AS person, min(r.arrival_date) AS first, (array_agg(r.id ORDER BY r.arrival_date))[1] AS stay
       FROM reservations r JOIN guest_profiles gp ON gp.id = r.guest_profile_id
       WHERE r.property_group_id = $1 AND r.kind = 'stay' AND r.status NOT IN ('cancelled', 'no_show')
       GROUP BY 1 HAVING count(DISTINCT date_trunc('month', r.arrival_date)) = count(*) AND count(*) = 1 ORDER BY 1 LIMIT 1`, [A().id]);
    const returning = await monthTotals("returningGuests");
    // A stay a year before the guest's only one: in that month the guest now returns.
    await copyRow("reservations", g.stay, { arrival_date: "arrival_date - 366", departure_date: "departure_date - 366" });
    await refreshByTouches();
    expect(await monthTotals("returningGuests")).toBe(returning + 1);
    await expectEqualsLive();
  });

  test("a reservation deleted, and a stay moved to another guest", async () => {
    const { id } = await aStay(9);
    await admin.query("DELETE FROM transactions WHERE reservation_id = $1", [id]);
    await admin.query("DELETE FROM reservations WHERE id = $1", [id]);
    await refreshByTouches();
    await expectEqualsLive();
    // To another guest profile of the stay's property (a narrowed caller reads its property's guests only).
    const a = await aStay(10);
    await admin.query("UPDATE reservations SET guest_profile_id = $2 WHERE id = $1", [a.id, await anotherGuestAt(admin, a.property, a.guest, 3)]);
    await refreshByTouches();
    await expectEqualsLive();
  });

  test("re-applying touches changes nothing; a change without keys rebuilds whole", async () => {
    const { rows: before } = await admin.query("SELECT shape, period, bucket FROM metric_rollups WHERE property_group_id = $1 AND metric = 'stays' ORDER BY id", [A().id]);
    const { rows: keys } = await admin.query(
      `SELECT jsonb_agg(jsonb_build_object('r', id, 'g', guest_profile_id)) AS touched FROM reservations WHERE property_group_id = $1 AND kind = 'stay'`, [A().id]);
    await admin.query("INSERT INTO metric_rollup_changes (property_group_id, metric, touched) VALUES ($1, 'stays', $2)", [A().id, JSON.stringify(keys[0].touched)]);
    expect(await refreshByTouches()).toBeGreaterThan(10);
    const { rows: after } = await admin.query("SELECT shape, period, bucket FROM metric_rollups WHERE property_group_id = $1 AND metric = 'stays' ORDER BY id", [A().id]);
    expect(after).toEqual(before);
    await admin.query("INSERT INTO metric_rollup_changes (property_group_id, metric) VALUES ($1, 'stays')", [A().id]);
    const [whole] = (await refreshRollups(t.db, { groupId: A().id })).filter((x) => x.metric === "stays");
    expect(whole.path).toBe("whole");
    await expectEqualsLive();
  });

  test("stored buckets that disagree with the facts are repaired by a whole rebuild in the same pass", async () => {
    const { id } = await aStay(11);
    await admin.query("UPDATE metric_rollups SET bucket = jsonb_set(bucket, '{stays}', '0') WHERE property_group_id = $1 AND metric = 'stays' AND shape = 'year:'", [A().id]);
    await admin.query("UPDATE reservations SET status = 'cancelled' WHERE id = $1", [id]);
    const [report] = (await refreshRollups(t.db, { groupId: A().id })).filter((x) => x.metric === "stays");
    expect(report.path).toBe("whole");
    expect(report.repaired).toMatch(/stay bucket/);
    await expectEqualsLive();
  });
});

/**
 * Runs `write` in one transaction holding the stay's row lock, given the stay's property as locked.
 * Writers of one stay queue, so a write that keeps a stay's guest profile and folio lines at the
 * stay's property (what a narrowed caller's rollups assume: docs/aggregates.md) never acts on a
 * property another writer is changing.
 */
async function onLockedStay(c: Client, id: string, write: (property: string) => Promise<unknown>) {
  await c.query("BEGIN");
  try {
    const { rows: [stay] } = await c.query("SELECT property_id FROM reservations WHERE id = $1 FOR UPDATE", [id]);
    await write(stay.property_id);
    await c.query("COMMIT");
  } catch (err) {
    await c.query("ROLLBACK");
    throw err;
  }
}

/**
 * A stay re-homed at another property of the group: its folio lines and its guest go with it (a
 * guest profile is one property's record, and a narrowed caller reads the guests and folio lines of
 * its property only), to another guest profile of that property.
 */
async function moveStay(c: Client, n: number) {
  const { id } = await aStay(n, c);
  await onLockedStay(c, id, async (property) => {
    const other = A().properties.find((p) => p !== property)!;
    await c.query(
      `UPDATE reservations SET property_id = $2, guest_profile_id = (SELECT id FROM guest_profiles WHERE property_id = $2 ORDER BY id OFFSET $3 LIMIT 1) WHERE id = $1`,
      [id, other, n % 10],
    );
    await c.query("UPDATE transactions SET property_id = $2 WHERE reservation_id = $1", [id, other]);
  });
}

/** A random write to group A's stays, guests or folios, on the client given. */
const WRITES: ((c: Client, n: number) => Promise<unknown>)[] = [
  async (c, n) => copyRow("reservations", (await aStay(n, c)).id, { arrival_date: `arrival_date + ${(n % 61) - 30}`, departure_date: `departure_date + ${(n % 61) - 30}` }, c),
  async (c, n) => c.query("UPDATE reservations SET status = CASE WHEN status = 'cancelled' THEN 'checked_out'::\"ReservationStatus\" ELSE 'cancelled' END WHERE id = $1", [await anyStay(n, c)]),
  async (c, n) => c.query(`UPDATE reservations SET arrival_date = arrival_date + ${(n % 9) - 4}, departure_date = departure_date + ${(n % 5) - 2} WHERE id = $1`, [(await aStay(n, c)).id]),
  moveStay,
  async (c, n) => {
    // Under the stay's lock: the copy is at the stay's property, whatever a concurrent move did.
    const { id } = await aStay(n, c, true);
    await onLockedStay(c, id, async () => {
      const { rows: [line] } = await c.query("SELECT id FROM transactions WHERE reservation_id = $1 ORDER BY id LIMIT 1", [id]);
      if (line) await copyRow("transactions", line.id, { amount_minor: String(100 + n), category: n % 2 ? "'accommodation'" : "'minibar'" }, c);
    });
  },
  async (c, n) => c.query("DELETE FROM transactions WHERE id = (SELECT id FROM transactions WHERE reservation_id = $1 ORDER BY id DESC LIMIT 1)", [(await aStay(n, c, true)).id]),
  async (c, n) => {
    // Into the master profile of another stay's guest (or one of the group's masters).
    const [a, b] = [await aStay(n, c), await aStay(n + 7, c)];
    return c.query(
      `UPDATE guest_profiles SET master_profile_id = coalesce((SELECT master_profile_id FROM guest_profiles WHERE id = $2),
         (SELECT id FROM master_profiles WHERE property_group_id = $3 ORDER BY id OFFSET $4 LIMIT 1)) WHERE id = $1`,
      [a.guest, b.guest, A().id, n % 5]);
  },
  async (c, n) => c.query("UPDATE guest_profiles SET master_profile_id = NULL WHERE id = $1", [(await aStay(n, c)).guest]),
  async (c, n) => c.query("UPDATE guest_profiles SET country_code = $2 WHERE id = $1", [(await aStay(n, c)).guest, ["DE", "FR", "IS", null][n % 4]]),
  // A stay's guest removed, or another guest profile of its property given (under the stay's lock:
  // of the property it is at when written).
  async (c, n) => {
    const id = await anyStay(n, c);
    await onLockedStay(c, id, async (property) => {
      const { rows: [r] } = await c.query("SELECT guest_profile_id FROM reservations WHERE id = $1", [id]);
      await c.query("UPDATE reservations SET guest_profile_id = $2 WHERE id = $1", [id, n % 2 ? null : await anotherGuestAt(c, property, r.guest_profile_id, n)]);
    });
  },
  async (c, n) => c.query("UPDATE reservations SET booking_channel = $2 WHERE id = $1", [(await aStay(n, c)).id, ["direct", "ota", null][n % 3]]),
];

describe("refreshes racing writes", () => {
  test("two refreshers and concurrent writers end equal to live", async () => {
    let writing = true;
    const writer = async (seed: number) => {
      const c = new Client({ connectionString: t.databaseUrl });
      await c.connect();
      try {
        for (let i = 0; i < 25; i++) await WRITES[(seed + i * 7) % WRITES.length](c, (seed * 31 + i * 13) % 60);
      } finally {
        await c.end();
      }
    };
    const refresher = async () => {
      let passes = 0;
      while (writing) {
        const reports = await refreshRollups(t.db, { groupId: A().id });
        passes += reports.filter((x) => x.metric === "stays" && x.rebuilt).length;
        expect(reports.filter((x) => x.repaired)).toEqual([]);
      }
      return passes;
    };
    const refreshers = [refresher(), refresher()];
    try {
      await Promise.all([writer(1), writer(2), writer(3)]);
    } finally {
      writing = false;
    }
    const passes = await Promise.all(refreshers);
    expect(passes[0] + passes[1]).toBeGreaterThan(1);
    // The premise of a narrowed caller's rollups, which the writers keep under each stay's lock: a
    // stay's guest profile and folio lines are at the stay's property.
    const { rows: [apart] } = await admin.query(
      `SELECT (SELECT count(*) FROM reservations r JOIN guest_profiles g ON g.id = r.guest_profile_id WHERE r.property_group_id = $1 AND g.property_id <> r.property_id)::int AS guests,
         (SELECT count(*) FROM transactions x JOIN reservations r ON r.id = x.reservation_id WHERE r.property_group_id = $1 AND x.property_id <> r.property_id)::int AS lines`,
      [A().id],
    );
    expect(apart).toEqual({ guests: 0, lines: 0 });
    await refreshByTouches(false);
    await expectEqualsLive();
  }, 120_000);

  test("random interleavings of writes and refreshes (fast-check): equal to live after every refresh", async () => {
    await fc.assert(
      fc.asyncProperty(
        fc.array(fc.oneof(fc.record({ write: fc.nat(WRITES.length - 1), n: fc.nat(59) }), fc.constant("refresh" as const)), { minLength: 1, maxLength: 8 }),
        async (steps) => {
          for (const step of [...steps, "refresh" as const]) {
            if (step === "refresh") {
              await refreshByTouches(false);
              await expectGroupEqualsLive();
            } else {
              await WRITES[step.write](admin, step.n);
            }
          }
        },
      ),
      { numRuns: 12 },
    );
    await expectPinnedEqualsLive();
  }, 300_000);
});

describe("the whole rebuild", () => {
  test("rebuildFamily rebuilds the facts and the buckets whole, equal to live", async () => {
    await admin.query("DELETE FROM stay_rollup_facts WHERE property_group_id = $1", [A().id]);
    const report = await rebuildFamily(t.db, A().id, "stays");
    expect(report.path).toBe("whole");
    const { rows: [facts] } = await admin.query(
      `SELECT (SELECT count(*)::int FROM stay_rollup_facts WHERE property_group_id = $1) AS facts,
         (SELECT count(*)::int FROM reservations WHERE property_group_id = $1 AND kind = 'stay' AND status NOT IN ('cancelled', 'no_show')) AS stays`,
      [A().id]);
    expect(facts.facts).toBe(facts.stays);
    await expectEqualsLive();
  });
});
