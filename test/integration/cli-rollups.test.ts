// `gcs rollups rebuild` (issue 44): the repair path rebuilds the named (group, aggregate) pairs whole
// from the live tables, and only those; bad arguments are usage errors, an unknown group a failure.
import { Client } from "pg";
import { cloneTemplateDatabase, loadManifest } from "../helpers/app";
import { runGcs } from "../helpers/gcs-cli";


let clone: { url: string; drop(): Promise<void> };
let pg: Client;
const manifest = loadManifest();
const A = manifest.groups.A;
const B = manifest.groups.B;

beforeAll(async () => {
  clone = await cloneTemplateDatabase();
  pg = new Client({ connectionString: clone.url });
  await pg.connect();
});
afterAll(async () => {
  await pg.end();
  await clone.drop();
});

const gcs = (args: string[]) => runGcs(clone.url, args);

/** Every stored row of a pair, in a stable order (what a rebuild must reproduce). */
async function stored(groupId: string, metric: string): Promise<unknown[]> {
  const { rows } = metric === "reviews"
    ? await pg.query("SELECT property_id, grain, period::text, source, reviews, rating_sum::text, r1, r2, r3, r4, r5 FROM review_rollups WHERE property_group_id = $1 ORDER BY 1, 2, 3, 4", [groupId])
    : await pg.query("SELECT shape, variant, period::text, bucket FROM metric_rollups WHERE property_group_id = $1 AND metric = $2 ORDER BY shape, variant, period, bucket::text", [groupId, metric]);
  return rows;
}

test("rebuilds only the named pair, then every pair; the stored rows are the live tables' again", async () => {
  expect((await gcs(["rollups", "rebuild", "--json"])).code).toBe(0);
  const good = { stays: await stored(A.id, "stays"), reviews: await stored(A.id, "reviews"), bStays: await stored(B.id, "stays") };
  expect(good.stays.length).toBeGreaterThan(0);
  expect(good.reviews.length).toBeGreaterThan(0);

  // Spoil A's stays and reviews and B's stays by hand (no change row: only a rebuild mends them).
  const spoil = async () => {
    await pg.query("UPDATE metric_rollups SET bucket = jsonb_set(bucket, '{stays}', '999999') WHERE property_group_id = ANY($1::uuid[]) AND metric = 'stays'", [[A.id, B.id]]);
    await pg.query("UPDATE review_rollups SET reviews = reviews + 7 WHERE property_group_id = $1", [A.id]);
  };
  await spoil();
  const one = await gcs(["rollups", "rebuild", "--group", A.id, "--aggregate", "stays", "--json"]);
  expect(one).toMatchObject({ code: 0, stderr: "" });
  expect(JSON.parse(one.stdout)).toEqual([{ group: A.id, aggregate: "stays", rows: good.stays.length, duration_ms: expect.any(Number) }]);
  expect(await stored(A.id, "stays")).toEqual(good.stays);
  // The pairs not named are left as they were.
  expect(await stored(A.id, "reviews")).not.toEqual(good.reviews);
  expect(await stored(B.id, "stays")).not.toEqual(good.bStays);

  const all = await gcs(["rollups", "rebuild"]);
  expect(all).toMatchObject({ code: 0, stderr: "" });
  expect(all.stdout.trim().split("\n")).toHaveLength(2 * 4);
  expect(all.stdout).toMatch(new RegExp(`^rebuilt reviews of group ${A.id}: \\d+ rows in \\d+ ms$`, "m"));
  expect(await stored(A.id, "reviews")).toEqual(good.reviews);
  expect(await stored(B.id, "stays")).toEqual(good.bStays);
  // Every pair is built and has no change left to apply.
  const { rows: [state] } = await pg.query("SELECT (SELECT count(*) FROM metric_rollup_state)::int AS built, (SELECT count(*) FROM metric_rollup_changes)::int AS pending");
  expect(state).toEqual({ built: 8, pending: 0 });
}, 120_000);

test("usage errors exit 2; an unknown group exits 1 and rebuilds nothing", async () => {
  const badAggregate = await gcs(["rollups", "rebuild", "--aggregate", "bookings"]);
  expect(badAggregate.code).toBe(2);
  expect(badAggregate.stderr).toMatch(/--aggregate.*stays, guests, consent, reviews/s);
  expect((await gcs(["rollups", "rebuild", "--group", "not-a-uuid"])).code).toBe(2);
  const unknown = await gcs(["rollups", "rebuild", "--group", "00000000-0000-4000-8000-000000000000"]);
  expect(unknown.code).toBe(1);
  expect(unknown.stderr).toMatch(/no property group 00000000-0000-4000-8000-000000000000/);
  const help = await gcs(["rollups", "rebuild", "--help"]);
  expect(help.code).toBe(0);
  expect(help.stdout).toMatch(/Examples:\n {2}\$ gcs rollups rebuild/);
});
