// Two real `gcs serve` processes with their senders on, one database, three endpoints on a slow
// receiver at 127.0.0.1, events appended throughout, and a SIGKILL of one instance mid-call.
// The sender's promise (src/webhooks/sender.ts): endpoints are leased, never held by a transaction,
// so while both run each (endpoint, event) is sent once; after the kill the survivor takes the dead
// instance's endpoints over when their lease runs out and re-sends only what was in flight or
// answered since its last checkpoint, with the same webhook-id. Every endpoint ends with every
// event, in log order, each signature valid.
import { createServer, type Server } from "node:http";
import type { AddressInfo } from "node:net";
import { Client } from "pg";
import { Webhook } from "standardwebhooks";
import { cloneTemplateDatabase, loadManifest } from "../helpers/app";
import { serve, type ServeProcess } from "../helpers/serve";
import type { FixtureManifest } from "../../src/fixtures";
import { CHECKPOINT_BATCH, DEFAULT_PIPELINE } from "../../src/webhooks/sender";
import { messageIdOf } from "../../src/webhooks/sign";

const LEASE_MS = 2_000;
const EVENTS_BEFORE = 30;
const EVENTS_AFTER = 10;
const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

interface Arrival {
  at: number;
  id: string;
  body: string;
  headers: Record<string, string>;
}

let clone: { url: string; drop(): Promise<void> };
let manifest: FixtureManifest;
let receiver: Server;
let port: number;
const arrivals = new Map<string, Arrival[]>();
let instances: ServeProcess[] = [];
let pg: Client;
/** The webhook-id of the event `seq`, under the key the instances share (service_secrets). */
let idOf: (seq: string) => string;

beforeAll(async () => {
  manifest = loadManifest();
  clone = await cloneTemplateDatabase();
  receiver = createServer((req, res) => {
    const chunks: Buffer[] = [];
    req.on("data", (c: Buffer) => chunks.push(c));
    req.on("end", () => {
      const list = arrivals.get(req.url!) ?? [];
      arrivals.set(req.url!, list);
      list.push({ at: Date.now(), id: String(req.headers["webhook-id"]), body: Buffer.concat(chunks).toString("utf8"), headers: req.headers as Record<string, string> });
      // A slow receiver: a kill lands while calls are in flight.
      setTimeout(() => !res.destroyed && res.writeHead(204).end(), 40);
    });
    res.on("error", () => undefined);
  });
  await new Promise<void>((r) => receiver.listen(0, "127.0.0.1", r));
  port = (receiver.address() as AddressInfo).port;
  pg = new Client({ connectionString: clone.url });
  await pg.connect();
  const started = await Promise.allSettled(
    [0, 1].map(() =>
      serve({
        DATABASE_URL: clone.url,
        GCS_DELIVERY_WORKER: "true",
        GCS_DELIVERY_LEASE_MS: String(LEASE_MS),
        GCS_WEBHOOKS_ALLOW_PRIVATE: "true",
        GCS_WEBHOOKS_INTERVAL_MS: "100",
        GCS_RATE_LIMIT: "0",
      }),
    ),
  );
  instances = started.flatMap((r) => (r.status === "fulfilled" ? [r.value] : []));
  for (const r of started) if (r.status === "rejected") throw r.reason;
  const { rows: [key] } = await pg.query<{ value: string }>("SELECT value FROM service_secrets WHERE name = 'webhook_message_id'");
  idOf = (seq) => messageIdOf(seq, key.value);
}, 120_000);

afterAll(async () => {
  for (const i of instances) if (i.child.exitCode === null && i.child.signalCode === null) i.child.kill("SIGKILL");
  await Promise.all(instances.map((i) => i.exited));
  await pg?.end();
  receiver?.closeAllConnections();
  await new Promise((r) => receiver?.close(r));
  await clone?.drop();
});

/** When each seq was committed (the INSERT returned), for the commit-to-receipt figures. */
const committedAt = new Map<string, number>();

async function append(n: number): Promise<string[]> {
  const A = manifest.groups.A;
  const seqs: string[] = [];
  for (let i = 0; i < n; i++) {
    const { rows } = await pg.query(
      `INSERT INTO events (property_group_id, entity_type, entity_id, guest_profile_id, operation, delta, occurred_at)
       VALUES ($1, 'guest_profile', $2, $2, 'update', $3, now()) RETURNING seq::text`,
      [A.id, A.guest_with_events, JSON.stringify({ n: i })],
    );
    seqs.push(rows[0].seq);
    committedAt.set(idOf(rows[0].seq), Date.now());
    await sleep(15);
  }
  return seqs;
}

// Issue 40: a replay of an endpoint that is active, and so held by a lane on one of the two
// instances, asked of each instance in turn: the lane stops where it is and the endpoint is sent to
// again from the asked position, with the original webhook-ids, in order.
it("a replay asked of either instance re-sends an active endpoint's events from the asked position", async () => {
  const token = manifest.groups.A.credentials.api_key_admin;
  const api = (i: number, path: string, body?: unknown) =>
    fetch(`${instances[i].url}${path}`, {
      method: body === undefined ? "GET" : "POST",
      headers: { Authorization: `Bearer ${token}`, "Content-Type": "application/json" },
      ...(body === undefined ? {} : { body: JSON.stringify(body) }),
    });
  const made = await api(0, "/v1/webhook-endpoints", { url: `http://127.0.0.1:${port}/again`, topics: ["guest_profile"] });
  expect(made.status).toBe(201);
  const ep = ((await made.json()) as { data: { id: string } }).data;
  const got = () => (arrivals.get("/again") ?? []).map((a) => a.id);
  const waitFor = async (check: () => boolean | Promise<boolean>, what: string) => {
    const deadline = Date.now() + 30_000;
    while (!(await check())) {
      if (Date.now() > deadline) throw new Error(`${what}: not in 30 s`);
      await sleep(50);
    }
  };
  // Recorded progress (the lane records it within a quarter second of sending).
  const cursorAt = async (seq: string) => (await pg.query("SELECT cursor_seq::text AS seq FROM webhook_endpoints WHERE id = $1", [ep.id])).rows[0].seq === seq;
  const recordedAt = async (seq: string) => ((await pg.query("SELECT recorded_at FROM events WHERE seq = $1", [seq])).rows[0].recorded_at as Date).toISOString();

  const seqs = await append(7);
  const ids = seqs.map(idOf);
  await waitFor(() => got().length >= 7 && cursorAt(seqs[6]), "the 7 events");
  expect(got()).toEqual(ids);

  const first = await api(0, `/v1/webhook-endpoints/${ep.id}/replay`, { since: await recordedAt(seqs[0]) });
  expect(first.status).toBe(200);
  await waitFor(() => got().length >= 14 && cursorAt(seqs[6]), "the replay asked of instance 0");
  const second = await api(1, `/v1/webhook-endpoints/${ep.id}/replay`, { since: await recordedAt(seqs[4]) });
  expect(second.status).toBe(200);
  await waitFor(() => got().length >= 17, "the replay asked of instance 1");
  await sleep(500); // nothing more comes
  expect(got()).toEqual([...ids, ...ids, ...ids.slice(4)]);
  const deleted = await fetch(`${instances[0].url}/v1/webhook-endpoints/${ep.id}`, { method: "DELETE", headers: { Authorization: `Bearer ${token}` } });
  expect(deleted.status).toBe(204);
}, 90_000);

it("delivers each (endpoint, event) once with two instances, and at least once with the same webhook-id across a SIGKILL", async () => {
  const token = manifest.groups.A.credentials.api_key_admin;
  const endpoints: { id: string; secret: string; path: string }[] = [];
  for (const path of ["/e1", "/e2", "/e3"]) {
    const res = await fetch(`${instances[0].url}/v1/webhook-endpoints`, {
      method: "POST",
      headers: { Authorization: `Bearer ${token}`, "Content-Type": "application/json" },
      body: JSON.stringify({ url: `http://127.0.0.1:${port}${path}`, topics: ["guest_profile"] }),
    });
    expect(res.status).toBe(201);
    const body = (await res.json()) as { data: { id: string; secret: string } };
    endpoints.push({ ...body.data, path });
  }

  const before = await append(EVENTS_BEFORE);
  const ids = (path: string) => (arrivals.get(path) ?? []).map((a) => a.id);
  const received = () => endpoints.reduce((n, e) => n + new Set(ids(e.path)).size, 0);
  // Both instances deliver for a while: no (endpoint, event) twice.
  const deadline = Date.now() + 30_000;
  while (received() < (endpoints.length * EVENTS_BEFORE) / 2 && Date.now() < deadline) await sleep(20);
  for (const e of endpoints) expect(ids(e.path).length).toBe(new Set(ids(e.path)).size);

  // Kill one instance mid-call; keep appending.
  const killedAt = Date.now();
  instances[0].child.kill("SIGKILL");
  expect(await instances[0].exited).toBeNull();
  const after = await append(EVENTS_AFTER);
  const all = [...before, ...after].map(idOf);

  const end = Date.now() + 60_000;
  while (Date.now() < end && !endpoints.every((e) => all.every((id) => ids(e.path).includes(id)))) await sleep(50);
  await sleep(LEASE_MS); // anything still to come would arrive now
  let duplicates = 0;
  for (const e of endpoints) {
    const got = arrivals.get(e.path)!;
    // Every event, first arrivals in log order.
    const firsts = got.map((a) => a.id).filter((id, i, list) => list.indexOf(id) === i);
    expect(firsts).toEqual(all);
    // Re-sends only of what the killed instance had not checkpointed: the calls in flight (at most
    // the pipeline) and those answered since its last checkpoint (CHECKPOINT_MS of sending, and never
    // more than a batch: a busy machine can stretch the time), the same id, sent again after the lease.
    const repeated = got.filter((a, i) => got.findIndex((b) => b.id === a.id) !== i);
    for (const r of repeated) expect(r.at).toBeGreaterThan(killedAt);
    expect(repeated.length).toBeLessThanOrEqual(CHECKPOINT_BATCH + DEFAULT_PIPELINE);
    duplicates += repeated.length;
    const wh = new Webhook(e.secret);
    for (const a of got) expect(() => wh.verify(a.body, a.headers)).not.toThrow();
  }
  // Reported, not asserted: whether the kill caught a call in flight is a matter of timing, and
  // latency here includes the 40 ms receiver and the 100 ms poll (a smoke figure, not the bench).
  const latencies = endpoints
    .flatMap((e) => before.map((seq) => arrivals.get(e.path)!.find((a) => a.id === idOf(seq))!.at - committedAt.get(idOf(seq))!))
    .sort((x, y) => x - y);
  const pct = (p: number) => latencies[Math.min(latencies.length - 1, Math.floor((p / 100) * latencies.length))];
  console.log(`webhook instances: ${all.length} events × ${endpoints.length} endpoints, ${duplicates} re-sent after the SIGKILL; ` +
    `commit→receipt before the kill p50 ${pct(50)} ms, p99 ${pct(99)} ms, max ${latencies[latencies.length - 1]} ms`);
  // Every event was received (checked above); how fast is bench/webhooks.ts's to measure, not a test's.
  expect(latencies).toHaveLength(endpoints.length * before.length);
}, 120_000);
