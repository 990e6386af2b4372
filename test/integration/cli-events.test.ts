// `gcs events append` (NDJSON, every line validated before anything is appended) and `gcs simulate`.
import { Client } from "pg";
import { cloneTemplateDatabase, loadManifest } from "../helpers/app";
import { runGcs } from "../helpers/gcs-cli";
import { AppendTooLargeError, appendEvents, EventTooLargeError, MAX_APPEND_EVENTS, MAX_EVENT_DELTA_BYTES, type NewEvent } from "../../src/data/stores/event-append";
import { openDatabase } from "../../src/db/database";
import { acrossGroups } from "../../src/db/session";


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

const gcs = (args: string[], stdin = "") => runGcs(clone.url, args, stdin);

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

// Issue 40, finding 7: a line PostgreSQL would refuse used to fail mid-file, after the first 500
// lines were appended, with the client's raw error. Each kind now appends nothing and names the line.
describe("a file with one bad line among 600 good ones appends nothing", () => {
  const good = (i: number) =>
    JSON.stringify({ entity_type: "guest_profile", entity_id: A.guest_with_events, operation: "update", delta: { vip_code: `VIP${i}`, note: "x" }, guest_profile_id: A.guest_with_events, occurred_at: "2026-11-27T09:30:00Z" });
  const bad = (over: Record<string, unknown>) => JSON.stringify({ ...JSON.parse(good(0)), ...over });
  it.each([
    ["NUL in a nested string of delta", bad({ delta: { notes: ["ok", { text: "a\u0000b" }] } }), "delta.notes[1].text must be text without NUL characters"],
    ["NUL in a member name of delta", bad({ delta: { "a\u0000": 1 } }), "delta.a\\u0000 must be text without NUL characters"],
    ["a lone surrogate in delta", bad({ delta: { name: "\ud800" } }), "delta.name must be text without NUL characters (U+0000) or lone UTF-16 surrogates"],
    ["year 0000", bad({ occurred_at: "0000-01-01T00:00:00Z" }), "occurred_at must be an ISO 8601 instant with time zone between the years 0001 and 9999"],
    ["an offset past the last year", bad({ occurred_at: "9999-12-31T23:59:59-23:59" }), "occurred_at must be an ISO 8601 instant"],
    ["30 February", bad({ occurred_at: "2026-02-30T10:00:00Z" }), "occurred_at must be an ISO 8601 instant"],
    ["another group's guest", bad({ guest_profile_id: manifest.groups.B.guest_with_events }), "guest_profile_id is not a guest profile of the group"],
    ["another group's integration", bad({ integration_id: manifest.groups.B.integrations[0].id }), "integration_id is not an integration of the group"],
    ["a delta over 64 KiB", bad({ delta: { blob: "x".repeat(70_000) } }), "delta is 70011 bytes of JSON; at most 65536 (64 KiB) per event"],
    ["a delta nested 5,000 deep", bad({ delta: "DEEP" }).replace('"DEEP"', `{"a":${"[".repeat(5000)}${"]".repeat(5000)}}`), "delta nests deeper than 32 levels"],
  ])("%s", async (_, badLine, reason) => {
    const before = await count();
    const lines = Array.from({ length: 600 }, (_, i) => good(i + 1));
    lines.splice(550, 0, badLine); // line 551: after the first 500, where the old batches failed
    const r = await gcs(["events", "append", "--group", A.id], lines.join("\n") + "\n");
    expect(r.code).toBe(1);
    expect(r.stderr).toContain(`line 551: ${reason}`);
    expect(r.stderr).toContain("gcs: 1 invalid line(s): nothing appended");
    expect(r.stderr + r.stdout).not.toMatch(/prisma|invocation/i);
    expect(r.stderr).not.toMatch(/[\u0000\ud800]/);
    expect(await count()).toBe(before);
  }, 120_000);

  it("the same 600 lines without the bad one are appended, in one transaction, in order", async () => {
    const before = await count();
    const r = await gcs(["events", "append", "--group", A.id, "--json"], Array.from({ length: 600 }, (_, i) => good(i + 1)).join("\n"));
    expect(r.code).toBe(0);
    const out = JSON.parse(r.stdout);
    expect(out.appended).toBe(600);
    const { rows } = await pg.query("SELECT count(DISTINCT txid)::int AS txids, array_agg(delta->>'vip_code' ORDER BY seq) AS codes FROM events WHERE seq BETWEEN $1 AND $2", [out.first_seq, out.last_seq]);
    expect(rows[0].txids).toBe(1);
    expect(rows[0].codes).toEqual(Array.from({ length: 600 }, (_, i) => `VIP${i + 1}`));
    expect(await count()).toBe(before + 600);
  }, 120_000);
});

// The append's transaction holds back every timeline while it is open: a file is bounded in events.
it("refuses a file of more events than the bound whole, before reading the database, saying to split the file", async () => {
  const before = await count();
  const line = JSON.stringify({ entity_type: "guest_profile", entity_id: A.guest_with_events, operation: "update", delta: { vip_code: "VIP" } });
  const r = await gcs(["events", "append", "--group", A.id], `${line}\n`.repeat(MAX_APPEND_EVENTS + 1));
  expect(r).toEqual({ code: 1, stdout: "", stderr: `gcs: the file holds ${MAX_APPEND_EVENTS + 1} events; at most ${MAX_APPEND_EVENTS} per append: split the file (nothing appended)\n` });
  expect(await count()).toBe(before);
}, 120_000);

// Every appender (gcs events append, gcs simulate) goes through appendEvents: the bound holds there.
it("appendEvents refuses a batch holding one delta over the bound, or more events than the bound, whole", async () => {
  const db = await openDatabase({ databaseUrl: clone.url, dataDir: "", poolSize: 1, migrate: false });
  try {
    const before = await count();
    const event = (delta: unknown): NewEvent => ({ entityType: "guest_profile", entityId: A.guest_with_events, operation: "update", delta, occurredAt: new Date(), guestProfileId: A.guest_with_events, propertyId: null, integrationId: null });
    const batch = [event({ ok: 1 }), event({ blob: "y".repeat(MAX_EVENT_DELTA_BYTES) })];
    await expect(acrossGroups("CLI", () => appendEvents(db.primary, A.id, batch))).rejects.toThrow(EventTooLargeError);
    await expect(acrossGroups("CLI", () => appendEvents(db.primary, A.id, batch))).rejects.toThrow(/event 2: delta is \d+ bytes of JSON; at most 65536/);
    expect(await count()).toBe(before);
    const tooMany = Array.from({ length: MAX_APPEND_EVENTS + 1 }, () => event({ ok: 1 }));
    await expect(acrossGroups("CLI", () => appendEvents(db.primary, A.id, tooMany))).rejects.toThrow(AppendTooLargeError);
    expect(await count()).toBe(before);
    expect(await acrossGroups("CLI", () => appendEvents(db.primary, A.id, [event({ blob: "y".repeat(MAX_EVENT_DELTA_BYTES - 20) })]))).toHaveLength(1);
    expect(await count()).toBe(before + 1);
  } finally {
    await db.close();
  }
}, 60_000);

it("appendEvents takes exactly the bound, over 32 MiB of JSON (two statements), in one transaction and in order", async () => {
  const db = await openDatabase({ databaseUrl: clone.url, dataDir: "", poolSize: 1, migrate: false });
  try {
    const before = await count();
    const events = Array.from({ length: MAX_APPEND_EVENTS }, (_, i): NewEvent => ({
      entityType: "guest_profile", entityId: A.guest_with_events, operation: "update", delta: { n: i, note: "x".repeat(300) }, occurredAt: new Date(), guestProfileId: null, propertyId: null, integrationId: null,
    }));
    const seqs = await acrossGroups("CLI", () => appendEvents(db.primary, A.id, events));
    expect(seqs).toHaveLength(MAX_APPEND_EVENTS);
    const { rows } = await pg.query(
      `SELECT count(DISTINCT txid)::int AS txids, count(*)::int AS n, bool_and((delta->>'n')::int = position - 1) AS in_order
       FROM (SELECT txid, delta, row_number() OVER (ORDER BY seq) AS position FROM events WHERE seq BETWEEN $1 AND $2 AND property_group_id = $3) e`,
      [seqs[0], seqs[seqs.length - 1], A.id],
    );
    expect(rows[0]).toEqual({ txids: 1, n: MAX_APPEND_EVENTS, in_order: true });
    expect(await count()).toBe(before + MAX_APPEND_EVENTS);
  } finally {
    await db.close();
  }
}, 120_000);

it("simulate appends activity at about the asked rate", async () => {
  const before = await count();
  const r = await gcs(["simulate", "--group", A.id, "--rate", "20", "--seconds", "2"]);
  expect(r.code).toBe(0);
  const added = (await count()) - before;
  expect(added).toBeGreaterThanOrEqual(20);
  expect(added).toBeLessThanOrEqual(60);
}, 120_000);
