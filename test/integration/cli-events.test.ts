// `gcs events append` (NDJSON, every line validated before anything is appended) and `gcs simulate`.
import { spawn } from "node:child_process";
import path from "node:path";
import { Client } from "pg";
import { cloneTemplateDatabase, loadManifest } from "../helpers/app";

const ROOT = path.resolve(__dirname, "../..");
const NODE = path.join(ROOT, "node_modules/.bin/node");
const GCS = path.join(ROOT, "bin/gcs.js");

let clone: { url: string; drop(): Promise<void> };
let pg: Client;
const manifest = loadManifest();
const A = manifest.groups.A;

beforeAll(async () => {
  clone = await cloneTemplateDatabase();
  pg = new Client({ connectionString: clone.url });
  await pg.connect();
});
afterAll(async () => {
  await pg.end();
  await clone.drop();
});

function gcs(args: string[], stdin = ""): Promise<{ code: number | null; stdout: string; stderr: string }> {
  return new Promise((resolve) => {
    const child = spawn(NODE, [GCS, ...args], { cwd: ROOT, env: { ...process.env, DATABASE_URL: clone.url, LOG_LEVEL: "silent" } });
    let stdout = "";
    let stderr = "";
    child.stdout.on("data", (d) => (stdout += d));
    child.stderr.on("data", (d) => (stderr += d));
    child.on("close", (code) => resolve({ code, stdout, stderr }));
    child.stdin.end(stdin);
  });
}

const count = async () => Number((await pg.query("SELECT count(*) FROM events WHERE property_group_id = $1", [A.id])).rows[0].count);

it("appends valid NDJSON in order and refuses a file with a bad line whole", async () => {
  const before = await count();
  const lines = [
    { entity_type: "guest_profile", entity_id: A.guest_with_events, operation: "update", delta: { vip_code: "VIP1" }, guest_profile_id: A.guest_with_events },
    { entity_type: "reservation", entity_id: A.guest_with_events, operation: "create", occurred_at: "2026-11-27T09:30:00Z", property_id: A.properties[0] },
  ];
  const ok = await gcs(["events", "append", "--group", A.id, "--json"], lines.map((l) => JSON.stringify(l)).join("\n") + "\n");
  expect(ok.code).toBe(0);
  const r = JSON.parse(ok.stdout);
  expect(r.appended).toBe(2);
  const { rows } = await pg.query("SELECT entity_type::text, delta, occurred_at FROM events WHERE seq BETWEEN $1 AND $2 ORDER BY seq", [r.first_seq, r.last_seq]);
  expect(rows.map((x) => x.entity_type)).toEqual(["guest_profile", "reservation"]);
  expect(rows[0].delta).toEqual({ vip_code: "VIP1" });
  expect(rows[1].occurred_at.toISOString()).toBe("2026-11-27T09:30:00.000Z");
  expect(await count()).toBe(before + 2);

  const bad = [
    JSON.stringify(lines[0]),
    "{not json",
    JSON.stringify({ ...lines[0], entity_type: "booking" }),
    JSON.stringify({ ...lines[0], property_id: manifest.groups.B.properties[0] }),
    JSON.stringify({ ...lines[0], occurred_at: "yesterday" }),
  ].join("\n");
  const refused = await gcs(["events", "append", "--group", A.id], bad);
  expect(refused.code).toBe(1);
  expect(refused.stderr).toContain("line 2: not JSON");
  expect(refused.stderr).toContain("line 3: entity_type must be one of");
  expect(refused.stderr).toContain("line 4: property_id is not a property of the group");
  expect(refused.stderr).toContain("line 5: occurred_at must be");
  expect(refused.stderr).toContain("4 invalid line(s): nothing appended");
  expect(await count()).toBe(before + 2);
}, 120_000);

it("simulate appends activity at about the asked rate", async () => {
  const before = await count();
  const r = await gcs(["simulate", "--group", A.id, "--rate", "20", "--seconds", "2"]);
  expect(r.code).toBe(0);
  const added = (await count()) - before;
  expect(added).toBeGreaterThanOrEqual(20);
  expect(added).toBeLessThanOrEqual(60);
}, 120_000);
