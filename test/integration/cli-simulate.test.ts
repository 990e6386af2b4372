// `gcs simulate` (issue 41): every change writes its row and its event together, so what an event
// says is what /v1 answers; stays only move forward; the rollups hear of the writes; bad options are
// usage errors with their bounds (issue 40).
import { execFile } from "node:child_process";
import path from "node:path";
import { promisify } from "node:util";
import { startTestApp, type TestApp } from "../helpers/app";

const ROOT = path.resolve(__dirname, "../..");
const NODE = path.join(ROOT, "node_modules/.bin/node");
const GCS = path.join(ROOT, "bin/gcs.js");

let t: TestApp;
beforeAll(async () => {
  t = await startTestApp();
});
afterAll(() => t.close());

function gcs(args: string[]): Promise<{ code: number; stdout: string; stderr: string }> {
  return promisify(execFile)(NODE, [GCS, ...args], { cwd: ROOT, env: { ...process.env, DATABASE_URL: t.databaseUrl, LOG_LEVEL: "silent" }, timeout: 120_000 }).then(
    ({ stdout, stderr }) => ({ code: 0, stdout, stderr }),
    (e: { code: number; stdout: string; stderr: string }) => ({ code: e.code, stdout: e.stdout, stderr: e.stderr }),
  );
}

const ORDER = ["tentative", "confirmed", "checked_in", "checked_out"];

/**
 * stderr without Node's own process warnings ("(node:123) [DEP0040] DeprecationWarning: …" and its
 * "(Use `node --trace-deprecation …`" hint), which a dependency may cause and which say nothing of the run.
 */
const withoutNodeWarnings = (stderr: string) =>
  stderr.split("\n").filter((line) => line !== "" && !/^\(node:\d+\) (\[\w+\] )?\w*Warning: /.test(line) && !/^\(Use `node --trace-/.test(line));

it("every row an event describes reads through /v1 as the event says; stays only move forward; the rollups are told", async () => {
  const A = t.manifest.groups.A;
  const key = `Bearer ${A.credentials.api_key}`;
  const { rows: [{ last }] } = await t.adminPool.query<{ last: string }>("SELECT COALESCE(max(seq), 0)::text AS last FROM events");
  await t.adminPool.query("DELETE FROM metric_rollup_changes");
  const before = new Map(
    (await t.adminPool.query<{ id: string; status: string }>("SELECT id::text, status::text FROM reservations WHERE property_group_id = $1", [A.id])).rows.map((r) => [r.id, r.status]),
  );

  const r = await gcs(["simulate", "--group", A.id, "--rate", "40", "--seconds", "3"]);
  expect(r.code).toBe(0);
  expect(withoutNodeWarnings(r.stderr)).toEqual([]);
  expect(r.stdout).toMatch(/^changed (\d+) reservations and (\d+) guests, each with its event$/m);

  const { rows: events } = await t.adminPool.query<{ entity_type: string; entity_id: string; delta: Record<string, unknown> }>(
    "SELECT entity_type::text, entity_id::text, delta FROM events WHERE seq > $1 ORDER BY seq",
    [last],
  );
  // 120 changes are scheduled; on a loaded 2-core CI machine fewer are made, and a sixth of them is
  // plenty for what follows (both kinds of row, read back, stays walked forward).
  expect(events.length).toBeGreaterThanOrEqual(20);
  expect(new Set(events.map((e) => e.entity_type))).toEqual(new Set(["reservation", "guest_profile"]));

  // The latest event of each row against the row, as a client reads it.
  const latest = new Map(events.map((e) => [`${e.entity_type}/${e.entity_id}`, e]));
  for (const e of latest.values()) {
    const res = await t.api.get(e.entity_type === "reservation" ? `/v1/reservations/${e.entity_id}` : `/v1/guests/${e.entity_id}`).set("Authorization", key);
    expect(res.status).toBe(200);
    expect({ id: e.entity_id, ...res.body.data }).toMatchObject({ id: e.entity_id, ...e.delta });
  }

  // Each stay's statuses, from before the run through its events, move forward one step at a time.
  const walked = new Map<string, string[]>();
  for (const e of events.filter((x) => x.entity_type === "reservation")) {
    const walk = walked.get(e.entity_id) ?? [before.get(e.entity_id)!];
    walked.set(e.entity_id, [...walk, e.delta.status as string]);
  }
  expect(walked.size).toBeGreaterThan(0);
  for (const [id, walk] of walked) {
    const steps = walk.map((s) => ORDER.indexOf(s));
    expect({ id, walk, forward: steps.every((s, i) => s >= 0 && (i === 0 || s === steps[i - 1] + 1)) }).toMatchObject({ forward: true });
  }

  // The statement triggers told the rollup refresher, as for any other write.
  const { rows: changes } = await t.adminPool.query<{ metric: string }>("SELECT DISTINCT metric FROM metric_rollup_changes WHERE property_group_id = $1 ORDER BY 1", [A.id]);
  expect(changes.map((c) => c.metric)).toEqual(expect.arrayContaining(["guests", "stays"]));
}, 120_000);

it("bad options are usage errors that name the option and its bounds (exit 2), before any database is opened", async () => {
  const cases: [string[], string][] = [
    [["--rate", "400000"], "gcs: --rate must be an integer from 1 to 100"],
    [["--rate", "0"], "gcs: --rate must be an integer from 1 to 100"],
    [["--rate", "2.5"], "gcs: --rate must be an integer from 1 to 100"],
    [["--seconds", "0"], "gcs: --seconds must be an integer from 1 to 86400"],
    [["--seconds", "1e9"], "gcs: --seconds must be an integer from 1 to 86400"],
    [["--group", "nope"], "gcs: --group must be a uuid"],
  ];
  for (const [args, line] of cases) expect({ args, ...(await gcs(["simulate", ...args])) }).toEqual({ args, code: 2, stdout: "", stderr: `${line}\n` });
});

it("an unknown group, or none named where there are several, is one line naming the groups (exit 1)", async () => {
  const unknown = await gcs(["simulate", "--group", "00000000-0000-4000-8000-000000000000", "--seconds", "1"]);
  expect(unknown).toEqual({ code: 1, stdout: "", stderr: "gcs: no property group 00000000-0000-4000-8000-000000000000 (see the start banner or gcs keys list)\n" });
  const none = await gcs(["simulate", "--seconds", "1"]);
  expect(none.code).toBe(1);
  expect(none.stderr.trim().split("\n")).toEqual([expect.stringMatching(/^gcs: --group is required when the database holds more than one property group: /)]);
  for (const g of [t.manifest.groups.A, t.manifest.groups.B]) expect(none.stderr).toContain(`${g.id} (${g.name})`);
});
