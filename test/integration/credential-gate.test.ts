// The per-credential cap on concurrent database work: with the cap at 2 and two requests of a key
// stuck on a table lock, the key's third request waits, then gets 429 at every door, while another
// group's key is served at once; slots come back after errors and aborted requests.
import { Client } from "pg";
import { startTestApp, type TestApp } from "../helpers/app";

const QUEUE_MS = 400;
let t: TestApp;
let locker: Client;
/** A second connection: pg_stat_activity is a snapshot per transaction, so the locker cannot watch. */
let watcher: Client;
beforeAll(async () => {
  // Each read on its own connection: the tests count the calls that reached the database by the
  // queries blocked there, and an MCP batch's concurrent calls would otherwise share one round trip.
  t = await startTestApp({ GCS_CREDENTIAL_MAX_CONCURRENCY: "2", GCS_CREDENTIAL_QUEUE_MS: String(QUEUE_MS), GCS_PIPELINE_READS: "false" });
  locker = new Client({ connectionString: t.databaseUrl });
  await locker.connect();
  watcher = new Client({ connectionString: t.databaseUrl });
  await watcher.connect();
});
afterAll(async () => {
  await locker.end();
  await watcher.end();
  await t.close();
});

const keyA = () => t.manifest.groups.A.credentials.api_key;
const keyB = () => t.manifest.groups.B.credentials.api_key;
const guests = (key: string) => t.api.get("/v1/guests?limit=1").set("Authorization", `Bearer ${key}`);

/** Holds an exclusive lock on guest_profiles: every guest read blocks until unlock(). */
async function lockGuests() {
  await locker.query("BEGIN");
  await locker.query("LOCK TABLE guest_profiles IN ACCESS EXCLUSIVE MODE");
  return () => locker.query("ROLLBACK");
}

/** Waits until `n` queries of the app wait on the lock: n requests hold slots and are stuck. */
async function blockedQueries(n: number) {
  for (let i = 0; i < 200; i++) {
    const { rows } = await watcher.query(
      "SELECT count(*)::int AS n FROM pg_stat_activity WHERE datname = current_database() AND wait_event_type = 'Lock'",
    );
    if (rows[0].n === n) return;
    await new Promise((r) => setTimeout(r, 25));
  }
  throw new Error(`never saw ${n} blocked queries`);
}

it("refuses the third concurrent request of a key after the wait, at every door, and serves another key at once", async () => {
  const unlock = await lockGuests();
  const held = [guests(keyA()).then((r) => r), guests(keyA()).then((r) => r)];
  await blockedQueries(2);

  let started = Date.now();
  const third = await guests(keyA());
  expect(Date.now() - started).toBeGreaterThanOrEqual(QUEUE_MS - 20);
  expect(third.status).toBe(429);
  expect(third.headers["retry-after"]).toBe("1");
  expect(third.body).toEqual({ error: "rate_limited", detail: expect.stringContaining("2 requests in progress") });

  const graphql = await t.api.post("/graphql").set("Authorization", `Bearer ${keyA()}`).send({ query: "{ __typename }" });
  expect(graphql.status).toBe(429);
  expect(graphql.headers["retry-after"]).toBe("1");
  expect(graphql.body.errors[0].extensions.code).toBe("rate_limited");
  const mcp = await t.api
    .post("/mcp")
    .set("Authorization", `Bearer ${keyA()}`)
    .set("Accept", "application/json, text/event-stream")
    .send({ jsonrpc: "2.0", id: 1, method: "tools/list" });
  expect(mcp.status).toBe(429);
  expect(mcp.body.error).toBe("rate_limited");

  // Another group's key has slots of its own (on a table that is not locked).
  started = Date.now();
  const other = await t.api.get("/v1/properties").set("Authorization", `Bearer ${keyB()}`);
  expect(other.status).toBe(200);
  expect(Date.now() - started).toBeLessThan(QUEUE_MS);

  await unlock();
  expect((await Promise.all(held)).map((r) => r.status)).toEqual([200, 200]);
});

it("gives slots back after errors and aborted requests", async () => {
  // Errors after the slot is taken (a bad parameter), more of them at once than the cap.
  const bad = await Promise.all(Array.from({ length: 6 }, () => t.api.get("/v1/guests?limit=nope").set("Authorization", `Bearer ${keyA()}`)));
  expect(bad.map((r) => r.status)).toEqual([400, 400, 400, 400, 400, 400]);

  // Two requests stuck in the database whose clients give up: their slots are free again at once,
  // though their queries still wait on the lock.
  const unlock = await lockGuests();
  const aborted = [guests(keyA()).timeout(300), guests(keyA()).timeout(300)].map((r) => r.then(() => "answered", () => "aborted"));
  await blockedQueries(2);
  expect(await Promise.all(aborted)).toEqual(["aborted", "aborted"]);
  const meanwhile = await t.api.get("/v1/properties").set("Authorization", `Bearer ${keyA()}`);
  expect(meanwhile.status).toBe(200);

  // Both slots are free: two more requests reach the database together (four blocked queries).
  const again = [guests(keyA()).then((r) => r), guests(keyA()).then((r) => r)];
  await blockedQueries(4);
  await unlock();
  expect((await Promise.all(again)).map((r) => r.status)).toEqual([200, 200]);
});

it("takes a slot per tool call of an MCP batch: a batch of 6 runs 2 at a time and leaves the key no slot", async () => {
  const unlock = await lockGuests();
  const messages = Array.from({ length: 6 }, (_, i) => ({ jsonrpc: "2.0", id: i + 1, method: "tools/call", params: { name: "list_guests", arguments: { limit: 1 } } }));
  const pending = t.api
    .post("/mcp")
    .set("Authorization", `Bearer ${keyA()}`)
    .set("Accept", "application/json, text/event-stream")
    .send(messages)
    .then((r) => r);
  await blockedQueries(2);
  await new Promise((r) => setTimeout(r, 200));
  const { rows } = await watcher.query("SELECT count(*)::int AS n FROM pg_stat_activity WHERE datname = current_database() AND wait_event_type = 'Lock'");
  expect(rows[0].n).toBe(2); // the other four calls wait for the batch's own slots, not in the database
  const meanwhile = await t.api.get("/v1/properties").set("Authorization", `Bearer ${keyA()}`);
  expect(meanwhile.status).toBe(429); // both of the key's slots are the batch's
  await unlock();
  const res = await pending;
  expect(res.status).toBe(200);
  expect(res.body.map((r: { result: { isError?: boolean } }) => Boolean(r.result.isError))).toEqual([false, false, false, false, false, false]);
});
