// The dashboard rollups after random interleavings of writes and refresh passes (issue 44): whatever
// order writes to reservations, transactions, guest profiles (master merges among them), loyalty
// members, consent observations and reviews commit in, with refresh passes between them, two passes
// racing, and writes committing while a pass runs, every stored answer after a final pass equals
// what the live statement returns on the same rows: every stored shape of every family, every stored
// purpose, for the whole group, a caller narrowed to a property, and the other group.
//
// The runs share one database (the fixtures' 40 guests per group), each starting from where the last
// ended: a drift one run leaves would fail a later one. No shrinking (a replay starts elsewhere):
// on failure fast-check prints the seed and the run's writes; replay with ROLLUP_SEED=<seed>.
import fc from "fast-check";
import { Client } from "pg";
import { createReaders } from "../../src/data/readers";
import { liveMetrics, type ReviewDimension, type StayDimension } from "../../src/data/metrics";
import { CONSENT_SHAPES, GUEST_SHAPES, STAY_SHAPES, consentFromRollups, guestsFromRollups, reviewsFromRollups, staysFromRollups } from "../../src/data/metric-rollups";
import { FAMILIES, refreshRollups, type RebuildReport } from "../../src/rollups/refresh";
import type { Scope } from "../../src/data/scope";
import type { TestApp } from "../helpers/app";
import { closeRollupTestApp, startRollupTestApp } from "../helpers/rollups";

const SEED = Number(process.env.ROLLUP_SEED ?? 4404);
const RUNS = 6;

/** How each refreshed pair was refreshed, by family: the touches applied, or rebuilt whole. */
const paths = new Map<string, number>();
async function pass(): Promise<void> {
  for (const r of (await refreshRollups(t.db)) as (RebuildReport & { path?: string | null })[]) {
    if (r.rebuilt) paths.set(`${r.metric} ${r.path}`, (paths.get(`${r.metric} ${r.path}`) ?? 0) + 1);
  }
}

let t: TestApp;
let admin: Client;
beforeAll(async () => ({ t, admin } = await startRollupTestApp()));
afterAll(() => closeRollupTestApp(t, admin));

const plain = (rows: unknown) => JSON.parse(JSON.stringify(rows));
const year = () => Number(t.manifest.anchor_date.slice(0, 4));
const plusDays = (date: string, days: number) => new Date(Date.parse(`${date}T00:00:00Z`) + days * 86_400_000).toISOString().slice(0, 10);

// ---- writes ----------------------------------------------------------------------------------------

type Table = "reservations" | "transactions" | "guest_profiles" | "loyalty_members" | "consent_observations" | "reviews";

/** A pick among rows or values known at run time: an index taken modulo their number. */
const pick = fc.nat({ max: 1_000 });
const at = <T>(items: readonly T[], i: number): T => items[i % items.length];

type Write =
  | { table: Table; op: "insert"; group: "A" | "B"; from: number; values: Record<string, number> }
  | { table: Table; op: "update"; group: "A" | "B"; row: number; field: string; value: number }
  | { table: Table; op: "delete"; group: "A" | "B"; row: number };

/** The columns a write may set, each a value made from a pick at run time. */
const FIELDS: Record<Table, string[]> = {
  reservations: ["arrival", "nights", "status", "kind", "guest", "channel"],
  transactions: ["reservation", "kind", "category", "amount", "currency"],
  guest_profiles: ["master", "country", "email", "phone", "vip"],
  loyalty_members: ["guest", "tier", "status", "points"],
  consent_observations: ["point", "purpose", "status", "observed"],
  reviews: ["property", "source", "rating", "published"],
};

/** Set on a new row only: a stay is made at a property, and its guest is one of that property's. */
const INSERT_ONLY: Partial<Record<Table, string[]>> = { reservations: ["property"] };

const write: fc.Arbitrary<Write> = fc.oneof(
  ...(Object.keys(FIELDS) as Table[]).flatMap((table) => [
    fc.record({ table: fc.constant(table), op: fc.constant("insert" as const), group: fc.constantFrom("A" as const, "A" as const, "B" as const), from: pick,
      values: fc.record(Object.fromEntries([...FIELDS[table], ...(INSERT_ONLY[table] ?? [])].map((f) => [f, pick])) as Record<string, typeof pick>) }),
    fc.record({ table: fc.constant(table), op: fc.constant("update" as const), group: fc.constantFrom("A" as const, "B" as const), row: pick, field: fc.constantFrom(...FIELDS[table]), value: pick }),
    fc.record({ table: fc.constant(table), op: fc.constant("delete" as const), group: fc.constantFrom("A" as const, "B" as const), row: pick }),
  ]),
);

type Step = { kind: "write"; write: Write } | { kind: "pass" } | { kind: "racing passes" } | { kind: "write during a pass"; write: Write };
const step: fc.Arbitrary<Step> = fc.oneof(
  { weight: 6, arbitrary: write.map((w) => ({ kind: "write" as const, write: w })) },
  { weight: 2, arbitrary: fc.constant({ kind: "pass" as const }) },
  { weight: 1, arbitrary: fc.constant({ kind: "racing passes" as const }) },
  { weight: 1, arbitrary: write.map((w) => ({ kind: "write during a pass" as const, write: w })) },
);

const columnsOf = new Map<Table, { name: string; type: string }[]>();
/** A table's columns and their types (to copy a row with some columns replaced, in one statement). */
async function columns(table: Table) {
  if (!columnsOf.has(table)) {
    const { rows } = await admin.query<{ name: string; type: string }>(
      `SELECT attname AS name, format_type(atttypid, atttypmod) AS type FROM pg_attribute
       WHERE attrelid = $1::regclass AND attnum > 0 AND NOT attisdropped AND attgenerated = '' ORDER BY attnum`, [table]);
    columnsOf.set(table, rows);
  }
  return columnsOf.get(table)!;
}

/** Inserts a copy of row `id` with a new id (and source id, member number) and the given columns replaced. */
async function copyRow(table: Table, id: string, set: Record<string, unknown>) {
  const cols = await columns(table);
  const params: unknown[] = [id];
  const expr = (c: { name: string; type: string }) => {
    if (c.name === "id") return "gen_random_uuid()";
    if (c.name in set) {
      params.push(set[c.name]);
      return `$${params.length}::${c.type}`;
    }
    if (c.name === "source_id" || c.name === "member_number") return `${c.name} || '-' || gen_random_uuid()`;
    return `"${c.name}"`;
  };
  await admin.query(`INSERT INTO ${table} (${cols.map((c) => `"${c.name}"`).join(", ")}) SELECT ${cols.map(expr).join(", ")} FROM ${table} WHERE id = $1`, params);
}

/** The rows and values a write picks among, read at run time (a group's first rows by id, and what the runs added). */
async function world(group: "A" | "B") {
  const g = t.manifest.groups[group];
  const ids = async (sql: string) => (await admin.query<{ id: string }>(sql, [g.id])).rows.map((r) => r.id);
  return {
    id: g.id,
    properties: g.properties,
    reservations: await ids("SELECT id::text FROM reservations WHERE property_group_id = $1 ORDER BY created_at DESC, id LIMIT 40"),
    transactions: await ids("SELECT id::text FROM transactions WHERE property_group_id = $1 ORDER BY created_at DESC, id LIMIT 40"),
    guests: await ids("SELECT id::text FROM guest_profiles WHERE property_group_id = $1 ORDER BY created_at DESC, id LIMIT 40"),
    // Guests this test added: only they are deleted (the fixtures' guests are referenced from elsewhere).
    ownGuests: await ids("SELECT id::text FROM guest_profiles WHERE property_group_id = $1 AND source_id LIKE 'interleavings-%' ORDER BY id"),
    masters: await ids("SELECT id::text FROM master_profiles WHERE property_group_id = $1 ORDER BY id LIMIT 20"),
    members: await ids("SELECT id::text FROM loyalty_members WHERE property_group_id = $1 ORDER BY created_at DESC, id LIMIT 40"),
    observations: await ids("SELECT id::text FROM consent_observations WHERE property_group_id = $1 ORDER BY created_at DESC, id LIMIT 40"),
    reviews: await ids("SELECT id::text FROM reviews WHERE property_group_id = $1 ORDER BY created_at DESC, id LIMIT 40"),
    tiers: (await admin.query<{ tier: string }>("SELECT DISTINCT tier FROM loyalty_members WHERE property_group_id = $1 ORDER BY 1", [g.id])).rows.map((r) => r.tier),
    emails: (await admin.query<{ v: string }>("SELECT DISTINCT lower(btrim(email)) AS v FROM guest_profiles WHERE property_group_id = $1 AND email IS NOT NULL ORDER BY 1 LIMIT 8", [g.id])).rows.map((r) => r.v),
    phones: (await admin.query<{ v: string }>("SELECT DISTINCT phone AS v FROM guest_profiles WHERE property_group_id = $1 AND phone IS NOT NULL ORDER BY 1 LIMIT 8", [g.id])).rows.map((r) => r.v),
  };
}
type World = Awaited<ReturnType<typeof world>>;

/** A column's value made from a pick: dates around the anchor, a few shared contact points, ties of instants. */
function valueOf(w: World, table: Table, field: string, n: number): [string, unknown][] {
  const y = year();
  const day = plusDays(`${y - 1}-01-01`, n % 800);
  const instant = new Date(Date.parse(`${day}T00:00:00Z`) + ((n * 7) % 48) * 1_800_000 - 3_600_000).toISOString(); // half hours, around local midnights
  const email = n % 5 === 0 ? `new-${n % 13}@interleavings.example` : at(w.emails, n);
  const phone = n % 5 === 0 ? `+4470000${String(n % 17).padStart(5, "0")}` : at(w.phones, n);
  switch (`${table}.${field}`) {
    case "reservations.arrival": return [["arrival_date", day], ["departure_date", plusDays(day, 1 + (n % 4))]];
    case "reservations.nights": return [["departure_date", null]]; // set from arrival below
    case "reservations.status": return [["status", at(["checked_out", "confirmed", "checked_in", "cancelled", "no_show"], n)]];
    case "reservations.kind": return [["kind", at(["stay", "stay", "stay", "dining"], n)]];
    case "reservations.guest": return [["guest_profile_id", n % 6 === 0 ? null : { guestAt: n }]];
    case "reservations.channel": return [["booking_channel", at(["direct", "booking_com", "expedia", null], n)]];
    case "reservations.property": return [["property_id", at(w.properties, n)]];
    case "transactions.reservation": return [["reservation_id", n % 7 === 0 ? null : at(w.reservations, n)]];
    case "transactions.kind": return [["kind", at(["charge", "charge", "refund", "adjustment", "payment"], n)]];
    case "transactions.category": return [["category", at(["accommodation", "accommodation", "food", "goodwill"], n)]];
    case "transactions.amount": return [["amount_minor", String((n % 40) * 1250 - 5000)]];
    case "transactions.currency": return [["currency", at(["GBP", "EUR", "CHF"], n)]];
    case "guest_profiles.master": return [["master_profile_id", n % 4 === 0 ? null : at(w.masters, n)]];
    case "guest_profiles.country": return [["country_code", at(["GB", "DE", "CH", "FR", null], n)]];
    case "guest_profiles.email": return [["email", n % 9 === 0 ? null : n % 4 === 0 ? ` ${email.toUpperCase()} ` : email]];
    case "guest_profiles.phone": return [["phone", n % 9 === 0 ? null : phone]];
    case "guest_profiles.vip": return [["vip_code", n % 3 === 0 ? "VIP1" : null]];
    case "loyalty_members.guest": return [["guest_profile_id", at(w.guests, n)]];
    case "loyalty_members.tier": return [["tier", at(w.tiers.length ? w.tiers : ["silver"], n)]];
    case "loyalty_members.status": return [["status", at(["active", "active", "suspended", "closed"], n)]];
    case "loyalty_members.points": return [["lifetime_points", (n % 5) * 1000]];
    case "consent_observations.point": return n % 2 ? [["contact_type", "email"], ["contact_value", email]] : [["contact_type", "phone"], ["contact_value", phone]];
    case "consent_observations.purpose": return [["purpose", at(["email_marketing", "sms_marketing", "email_marketing", "sms_marketing", "postal_offers"], n)]];
    case "consent_observations.status": return [["status", at(["granted", "withdrawn", "denied"], n)]];
    case "consent_observations.observed": return [["observed_at", new Date(Date.parse(`${y - 1}-06-01T12:00:00Z`) + (n % 6) * 86_400_000 * 30).toISOString()]];
    case "reviews.property": return [["property_id", at(w.properties, n)]];
    case "reviews.source": return [["source", at(["google", "tripadvisor", "booking_com"], n)]];
    case "reviews.rating": return [["rating", 1 + (n % 5)]];
    case "reviews.published": return [["published_at", instant]];
  }
  throw new Error(`no value for ${table}.${field}`);
}

const propertyOf = async (table: Table, id: string) => (await admin.query<{ v: string }>(`SELECT property_id::text AS v FROM ${table} WHERE id = $1`, [id])).rows[0].v;

const ROWS: Record<Table, keyof World> = {
  reservations: "reservations", transactions: "transactions", guest_profiles: "guests",
  loyalty_members: "members", consent_observations: "observations", reviews: "reviews",
};

/**
 * Rows stay as a property system writes them: a stay's guest is a profile of the stay's property, a
 * folio line is at its reservation's property, a membership is enrolled at its guest's property or
 * group-wide. (A caller narrowed to a property reads only that property's rows; a stay whose guest
 * is another property's would count no guest for it but one for the group.)
 */
async function resolve(w: World, table: Table, id: string | undefined, set: Record<string, unknown>, n: number) {
  const one = async (sql: string, params: unknown[]) => (await admin.query<{ v: string | null }>(sql, params)).rows[0]?.v ?? null;
  const guestAt = set.guest_profile_id as { guestAt: number } | null | undefined;
  if (table === "reservations" && guestAt && typeof guestAt === "object") {
    const property = (set.property_id as string | undefined) ?? (await one("SELECT property_id::text AS v FROM reservations WHERE id = $1", [id]));
    const guests = (await admin.query<{ id: string }>("SELECT id::text FROM guest_profiles WHERE property_group_id = $1 AND property_id = $2 ORDER BY created_at DESC, id LIMIT 40", [w.id, property])).rows;
    set.guest_profile_id = guests.length ? at(guests, guestAt.guestAt).id : null;
  }
  if (table === "transactions" && set.reservation_id) set.property_id = await one("SELECT property_id::text AS v FROM reservations WHERE id = $1", [set.reservation_id]);
  if (table === "loyalty_members" && set.guest_profile_id) {
    set.enrolment_property_id = n % 2 ? null : await one("SELECT property_id::text AS v FROM guest_profiles WHERE id = $1", [set.guest_profile_id]);
  }
}

async function apply(wr: Write): Promise<void> {
  const w = await world(wr.group);
  const rows = w[ROWS[wr.table]] as string[];
  if (wr.op === "insert") {
    const set = Object.fromEntries(Object.entries(wr.values).flatMap(([field, n]) => valueOf(w, wr.table, field, n)));
    if (wr.table === "reservations") set.departure_date = plusDays(set.arrival_date as string, 1 + (wr.values.nights % 5));
    if (wr.table === "guest_profiles") set.source_id = `interleavings-${wr.from}-${Date.now()}`; // marks the test's own guests
    const from = at(rows, wr.from);
    if (wr.table === "reservations") set.property_id = at(w.properties, wr.values.property);
    if (wr.table === "transactions" && !set.reservation_id) set.property_id = await propertyOf("transactions", from);
    await resolve(w, wr.table, undefined, set, wr.from);
    await copyRow(wr.table, from, set);
  } else if (wr.op === "update") {
    const id = at(rows, wr.row);
    const set = Object.fromEntries(valueOf(w, wr.table, wr.field, wr.value));
    if (wr.table === "reservations" && "departure_date" in set && set.departure_date === null) {
      await admin.query("UPDATE reservations SET departure_date = arrival_date + $2::int WHERE id = $1", [id, 1 + (wr.value % 5)]);
      return;
    }
    await resolve(w, wr.table, id, set, wr.value);
    const names = Object.keys(set);
    await admin.query(`UPDATE ${wr.table} SET ${names.map((c, i) => `"${c}" = $${i + 2}`).join(", ")} WHERE id = $1`, [id, ...names.map((c) => set[c])]);
  } else {
    const pool = wr.table === "guest_profiles" ? w.ownGuests : rows;
    if (!pool.length) return;
    await admin.query(`DELETE FROM ${wr.table} WHERE id = $1`, [at(pool, wr.row)]);
  }
}

// ---- the check ---------------------------------------------------------------------------------------

const variantsOf = async (groupId: string, metric: string) =>
  (await admin.query<{ variants: string[] }>("SELECT variants FROM metric_rollup_state WHERE property_group_id = $1 AND metric = $2", [groupId, metric])).rows[0]?.variants ?? [];

/** Every stored answer of every family equals the live statement's, for this scope. */
async function expectStoredEqualsLive(scope: Scope, timezone: string) {
  const r = createReaders(t.db, scope);
  const live = liveMetrics(r);
  const y = year();
  const served = async (what: unknown, stored: unknown, want: unknown) => {
    expect({ what, served: stored !== undefined }).toEqual({ what, served: true });
    expect({ what, rows: plain(stored) }).toEqual({ what, rows: plain(want) });
  };
  const liveStays = async (filter: { arrivalFrom: string; arrivalTo: string }, groupBy: StayDimension[]) =>
    (await live.stays(filter, groupBy, true, "caller")).map(({ bucket: _b, ...row }) => row);
  // Stays: each stored shape. Days, weeks and months over whole years (the part weeks at the ends
  // come from the week-in-month shape); years one at a time.
  const years = { arrivalFrom: `${y - 2}-01-01`, arrivalTo: `${y + 1}-12-31` };
  for (const { grain, dims } of STAY_SHAPES) {
    const others = dims.filter((d) => d !== "in_month") as StayDimension[];
    if (grain === "year") {
      for (const yy of [y - 1, y, y + 1]) {
        const filter = { arrivalFrom: `${yy}-01-01`, arrivalTo: `${yy}-12-31` };
        await served({ filter, others }, await staysFromRollups(r, filter, others, true, true), await liveStays(filter, others));
      }
    } else {
      const groupBy = [grain, ...others] as StayDimension[];
      await served({ years, groupBy }, await staysFromRollups(r, years, groupBy, true, true), await liveStays(years, groupBy));
    }
  }
  const stored = (metric: string) => variantsOf(scope.propertyGroupId, metric);
  for (const dims of GUEST_SHAPES) {
    const groupBy = scope.propertyId ? dims.filter((d) => d !== "property") : dims;
    for (const purposes of [null, ...(await stored("guests")).map((p) => ({ email: p, sms: p }))]) {
      await served({ groupBy, purposes }, await guestsFromRollups(r, groupBy, purposes), await live.guests(groupBy, purposes));
    }
  }
  for (const { contactType, dims } of CONSENT_SHAPES) {
    for (const purpose of await stored("consent")) {
      await served({ purpose, contactType, dims }, await consentFromRollups(r, purpose, contactType, dims), await live.consent(purpose, contactType, dims));
    }
  }
  const localMidnight = async (date: string) => (await admin.query<{ at: Date }>("SELECT ($1::timestamp AT TIME ZONE $2) AS at", [date, timezone])).rows[0].at;
  const reviewFilters = [
    {},
    { publishedFrom: await localMidnight(`${y - 1}-01-01`), publishedTo: await localMidnight(`${y}-01-01`) },
    { publishedFrom: new Date((await localMidnight(`${y - 1}-03-10`)).getTime() + 5_400_000), publishedTo: await localMidnight(`${y}-02-01`) },
  ];
  for (const filter of reviewFilters) {
    for (const groupBy of [[], ["month", "source"], ["property"], ["source", "property"]] as ReviewDimension[][]) {
      await served({ filter, groupBy }, await reviewsFromRollups(r, filter, groupBy), await live.reviews(filter, groupBy));
    }
  }
}

async function runStep(s: Step): Promise<void> {
  switch (s.kind) {
    case "write":
      return apply(s.write);
    case "pass":
      return pass();
    case "racing passes":
      await Promise.all([pass(), pass()]);
      return;
    case "write during a pass":
      await Promise.all([pass(), new Promise((resolve) => setTimeout(resolve, 5)).then(() => apply(s.write))]);
  }
}

test(`stored answers equal the live statements after random writes and refreshes (seed ${SEED}; replay with ROLLUP_SEED=${SEED})`, async () => {
  const started = Date.now();
  let checks = 0;
  await fc.assert(
    fc.asyncProperty(fc.array(step, { minLength: 4, maxLength: 24 }), async (steps) => {
      for (const s of steps) await runStep(s);
      // The final pass: nothing is written after it, so every change is applied.
      await pass();
      expect(Number((await admin.query("SELECT count(*) AS n FROM metric_rollup_changes")).rows[0].n)).toBe(0);
      for (const [scope, timezone] of [
        [{ propertyGroupId: t.manifest.groups.A.id, propertyId: null }, "Europe/London"],
        [{ propertyGroupId: t.manifest.groups.A.id, propertyId: t.manifest.groups.A.credentials.api_key_pinned.property_id }, "Europe/London"],
        [{ propertyGroupId: t.manifest.groups.B.id, propertyId: null }, "Europe/Zurich"],
      ] as [Scope, string][]) await expectStoredEqualsLive(scope, timezone);
      checks++;
    }),
    { seed: SEED, numRuns: RUNS, endOnFailure: true },
  );
  console.log(`rollup interleavings: ${checks} runs checked in ${Date.now() - started} ms (seed ${SEED}); pairs refreshed: ${JSON.stringify(Object.fromEntries(paths))}`);
  expect(checks).toBe(RUNS);
  // Every family that follows the writes applied touches (the daily path was what the runs checked).
  for (const [metric, family] of Object.entries(FAMILIES)) if (family) expect({ metric, touches: (paths.get(`${metric} touches`) ?? 0) > 0 }).toEqual({ metric, touches: true });
}, 120_000);
