// The reviews family's applyTouches (issue 44): after random review writes (new reviews, moves to
// another property, source, rating or instant, around local midnights and DST changes; deletes that
// empty a day), applying the change rows' touches leaves review_rollups exactly as a whole rebuild
// makes them, and applying the same touches again changes nothing.
import fc from "fast-check";
import { Client } from "pg";
import { openDatabase, type Database } from "../../src/db/database";
import { asGroup } from "../../src/db/session";
import { TENANT_ROLE } from "../../src/db/tenant-pool";
import { reviewsFamily } from "../../src/rollups/reviews-family";
import { rebuildFamily, refreshRollups } from "../../src/rollups/refresh";
import { cloneTemplateDatabase, loadManifest } from "../helpers/app";

const SEED = Number(process.env.ROLLUP_SEED ?? 4405);
const manifest = loadManifest();
const A = manifest.groups.A;

let clone: { url: string; drop(): Promise<void> };
let db: Database;
let admin: Client;
beforeAll(async () => {
  clone = await cloneTemplateDatabase();
  db = await openDatabase({ databaseUrl: clone.url, dataDir: "", poolSize: 3 });
  admin = new Client({ connectionString: clone.url });
  await admin.connect();
  await refreshRollups(db);
});
afterAll(async () => {
  await admin.end();
  await db.close();
  await clone.drop();
});

const stored = async () =>
  (await admin.query("SELECT property_id, grain, period::text, source, reviews, rating_sum::text, r1, r2, r3, r4, r5 FROM review_rollups WHERE property_group_id = $1 ORDER BY 1, 2, 3, 4", [A.id])).rows;

/** Applies the group's pending reviews change rows as the refresher does: consumed, then applied, one transaction. */
async function applyPending(): Promise<unknown[][]> {
  return asGroup(A.id, async () => {
    const client = await db.primaryPool.connect();
    try {
      await client.query("BEGIN");
      const { rows } = await client.query<{ touched: unknown[] }>(
        "DELETE FROM metric_rollup_changes WHERE property_group_id = $1 AND metric = 'reviews' RETURNING touched", [A.id]);
      const touched = rows.map((r) => r.touched);
      expect(touched.every((x) => Array.isArray(x))).toBe(true);
      await reviewsFamily.applyTouches(client, A.id, [], touched);
      await client.query("COMMIT");
      return touched;
    } catch (err) {
      await client.query("ROLLBACK");
      throw err;
    } finally {
      client.release();
    }
  });
}

type Op = { op: "insert" | "move" | "delete"; row: number; property: number; source: number; rating: number; month: number; day: number; halfHour: number };
const op: fc.Arbitrary<Op> = fc.record({
  op: fc.constantFrom("insert", "move", "move", "delete"),
  row: fc.nat(500), property: fc.nat(5), source: fc.nat(3), rating: fc.nat(4),
  // The first and last days of months, and the days the clocks change in Europe (the last Sundays of March and October).
  month: fc.nat(11), day: fc.constantFrom(1, 1, 28, 31, 15, 0), halfHour: fc.integer({ min: -6, max: 6 }),
});

async function write(o: Op) {
  const { rows } = await admin.query<{ id: string }>("SELECT id::text FROM reviews WHERE property_group_id = $1 ORDER BY published_at DESC, id LIMIT 30", [A.id]);
  const id = rows[o.row % rows.length].id;
  // Instants every half hour within 3 hours of a UTC midnight: local midnights in London and Zurich,
  // in winter and summer time. Day 0 is the month's last Sunday.
  const y = Number(manifest.anchor_date.slice(0, 4)) - 1;
  const monthEnd = new Date(Date.UTC(y, o.month + 1, 0));
  const date = o.day === 0 ? new Date(monthEnd.getTime() - monthEnd.getUTCDay() * 86_400_000) : new Date(Date.UTC(y, o.month, Math.min(o.day, monthEnd.getUTCDate())));
  const published = new Date(date.getTime() + o.halfHour * 1_800_000);
  const values = [A.properties[o.property % A.properties.length], ["google", "tripadvisor", "booking_com", "survey"][o.source], 1 + o.rating, published.toISOString()];
  if (o.op === "insert") {
    await admin.query(
      `INSERT INTO reviews (id, property_group_id, property_id, integration_id, source_id, guest_profile_id, reservation_id, source, rating, source_rating, source_scale, published_at)
       SELECT gen_random_uuid(), property_group_id, $2, integration_id, source_id || '-' || gen_random_uuid(), guest_profile_id, reservation_id, $3, $4, source_rating, source_scale, $5
       FROM reviews WHERE id = $1`, [id, ...values]);
  } else if (o.op === "move") {
    await admin.query("UPDATE reviews SET property_id = $2, source = $3, rating = $4, published_at = $5 WHERE id = $1", [id, ...values]);
  } else {
    await admin.query("DELETE FROM reviews WHERE id = $1", [id]);
  }
}

test(`applied touches equal a whole rebuild, and applying them again changes nothing (seed ${SEED})`, async () => {
  let changed = 0;
  await fc.assert(
    fc.asyncProperty(fc.array(op, { minLength: 1, maxLength: 12 }), async (ops) => {
      const before = await stored();
      for (const o of ops) await write(o);
      const touched = await applyPending();
      expect(touched.length).toBe(ops.length);
      const applied = await stored();
      if (JSON.stringify(applied) !== JSON.stringify(before)) changed++;
      // Again, the same touches (a racing refresher, or a repeat after a whole rebuild).
      await asGroup(A.id, async () => {
        const client = await db.primaryPool.connect();
        try {
          await reviewsFamily.applyTouches(client, A.id, [], touched);
        } finally {
          client.release();
        }
      });
      expect(await stored()).toEqual(applied);
      expect((await rebuildFamily(db, A.id, "reviews")).rebuilt).toBe(true);
      expect(applied).toEqual(await stored());
    }),
    { seed: SEED, numRuns: 25, endOnFailure: true },
  );
  // The writes moved the counts (the property could not pass on rows that never changed).
  expect(changed).toBeGreaterThan(20);
}, 60_000);

test("the refresher applies review touches; with incremental off (GCS_ROLLUP_INCREMENTAL=false) it rebuilds the pair whole", async () => {
  await refreshRollups(db);
  const touch = () => admin.query("UPDATE reviews SET rating = 6 - rating WHERE id = (SELECT id FROM reviews WHERE property_group_id = $1 ORDER BY id LIMIT 1)", [A.id]);
  const reviewsPath = async (incremental: boolean) =>
    ((await refreshRollups(db, { groupId: A.id, incremental })).find((r) => r.metric === "reviews") as { path?: string } | undefined)?.path;
  await touch();
  expect(await reviewsPath(true)).toBe("touches");
  await touch();
  expect(await reviewsPath(false)).toBe("whole");
  const applied = await stored();
  expect((await rebuildFamily(db, A.id, "reviews")).rebuilt).toBe(true);
  expect(await stored()).toEqual(applied);
});

// The refresher applies touches as the review's group, under the tenant wall's policy, where only a
// condition free of non-LEAKPROOF functions may be an index condition: the day's instant range must
// reach the index as one, or each pass reads every review of the group (migration
// 20261129002000_reviews_rollup_day_idx). The fixtures hold few reviews, so the transaction first
// gives the review's property and source 3,000 more, an hour apart, and the planner statistics: a
// seek is then the only cheap plan, if the wall allows it. All of it is rolled back.
test("under the tenant wall, a touched day is one index range of its property, source and instants", async () => {
  const { rows: [review] } = await admin.query<{ id: string; p: string; d: string; s: string }>(
    "SELECT id, property_id::text AS p, published_at::text AS d, source AS s FROM reviews WHERE property_group_id = $1 ORDER BY id LIMIT 1", [A.id]);
  const plans: string[] = [];
  const explaining = {
    query: async (text: string, values?: unknown[]) => {
      if (text.includes("JOIN reviews rv")) plans.push((await admin.query<{ "QUERY PLAN": string }>(`EXPLAIN ${text}`, values)).rows.map((r) => r["QUERY PLAN"]).join("\n"));
      return admin.query(text, values);
    },
  };
  await admin.query("BEGIN");
  try {
    const { rows: cols } = await admin.query<{ c: string }>(
      "SELECT quote_ident(column_name) AS c FROM information_schema.columns WHERE table_name = 'reviews' AND column_name NOT IN ('id', 'source_id', 'published_at')");
    const copied = cols.map((x) => x.c).join(", ");
    await admin.query(
      `INSERT INTO reviews (id, source_id, published_at, ${copied}) SELECT gen_random_uuid(), NULL, r.published_at - g * interval '1 hour', ${copied.split(", ").map((c) => `r.${c}`).join(", ")}
       FROM reviews r CROSS JOIN generate_series(1, 3000) g WHERE r.id = $1`, [review.id]);
    await admin.query("ANALYZE reviews");
    await admin.query(`SET LOCAL ROLE ${TENANT_ROLE}`);
    await admin.query("SELECT set_config('gcs.group_id', $1, true)", [A.id]);
    for (const off of ["enable_seqscan", "enable_hashjoin", "enable_mergejoin"]) await admin.query(`SET LOCAL ${off} = off`);
    await reviewsFamily.applyTouches(explaining as never, A.id, [], [[{ p: review.p, d: review.d, s: review.s }]]);
  } finally {
    await admin.query("ROLLBACK");
  }
  expect(plans).toHaveLength(1);
  expect(plans[0]).not.toMatch(/Seq Scan on reviews/);
  expect(plans[0]).toMatch(/Index (Only )?Scan using reviews_rollup_day_idx on reviews rv/);
  expect(plans[0]).toMatch(/Index Cond: \(\(property_group_id = [^\n]*\(property_id = t\.property_id\) AND \(source = t\.source\) AND \(published_at >= t\.lo\) AND \(published_at < t\.hi\)\)/);
});
