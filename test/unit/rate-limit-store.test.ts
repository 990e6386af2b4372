// The shared rate limit store's arithmetic: local hits + the last known cluster total, clock-aligned
// windows, hits taken during a sync, and a table that fails. The table here is a Map standing in for
// rate_limit_counters (its SQL is covered by test/integration/rate-limit.test.ts).
import { Writable } from "node:stream";
import pino from "pino";
import { SharedCounterStore, type CounterTable } from "../../src/http/rate-limit";
import { loadConfig } from "../../src/config";
import { createLogger } from "../../src/logger";

const WINDOW = 60_000;

/** rate_limit_counters as a Map: `${window}|${key}` → hits. */
function memoryTable() {
  const rows = new Map<string, number>();
  const calls = { add: 0, prune: [] as number[], written: [] as string[][] };
  const table: CounterTable = {
    async add(windowStart, keys, deltas, unchanged = []) {
      calls.add++;
      calls.written.push(keys);
      const totals = new Map<string, number>();
      keys.forEach((key, i) => {
        const id = `${windowStart.getTime()}|${key}`;
        rows.set(id, (rows.get(id) ?? 0) + deltas[i]);
        totals.set(key, rows.get(id)!);
      });
      for (const key of unchanged) {
        const hits = rows.get(`${windowStart.getTime()}|${key}`);
        if (hits !== undefined) totals.set(key, hits);
      }
      return totals;
    },
    async prune(windowStart) {
      calls.prune.push(windowStart.getTime());
      for (const id of rows.keys()) if (Number(id.split("|")[0]) < windowStart.getTime()) rows.delete(id);
    },
  };
  return { table, rows, calls };
}

function recordingLogger() {
  const lines: { level: string; msg: string }[] = [];
  const sink = new Writable({
    write(chunk, _enc, cb) {
      const line = JSON.parse(String(chunk));
      lines.push({ level: pino.levels.labels[line.level], msg: line.msg });
      cb();
    },
  });
  return { logger: pino({ level: "info" }, sink), lines };
}

const store = (table: CounterTable | undefined, clock: { now: number }, logger = createLogger("silent")) =>
  new SharedCounterStore({ windowMs: WINDOW, syncMs: 3_600_000, table, logger, now: () => clock.now });

describe("SharedCounterStore", () => {
  it("counts per key in windows aligned to the clock, resetting at the boundary", () => {
    const clock = { now: 10 * WINDOW + 59_000 }; // one second before a boundary
    const s = store(undefined, clock);
    expect(s.increment("a")).toEqual({ totalHits: 1, resetTime: new Date(11 * WINDOW) });
    expect(s.increment("a").totalHits).toBe(2);
    expect(s.increment("b").totalHits).toBe(1);
    clock.now = 11 * WINDOW; // the next window: a fresh count, whatever the instance
    expect(s.increment("a")).toEqual({ totalHits: 1, resetTime: new Date(12 * WINDOW) });
    expect(s.get("a").totalHits).toBe(1);
  });

  it("decides on the other instances' hits learnt at the last sync plus its own since", async () => {
    const clock = { now: 5 * WINDOW + 1000 };
    const { table, rows } = memoryTable();
    const a = store(table, clock);
    const b = store(table, clock);
    for (let i = 0; i < 3; i++) a.increment("k");
    for (let i = 0; i < 2; i++) b.increment("k");
    // Before any sync each instance knows only its own hits: the documented lag.
    expect(a.get("k").totalHits).toBe(3);
    expect(b.get("k").totalHits).toBe(2);
    await a.sync();
    await b.sync();
    expect(rows.get(`${5 * WINDOW}|k`)).toBe(5);
    expect(b.get("k").totalHits).toBe(5);
    expect(a.get("k").totalHits).toBe(3); // a has not synced since b added its hits
    await a.sync();
    expect(a.increment("k").totalHits).toBe(6);
    // A sync sends only what is new: nothing is counted twice.
    await a.sync();
    await b.sync();
    expect(rows.get(`${5 * WINDOW}|k`)).toBe(6);
    expect(b.get("k").totalHits).toBe(6);
  });

  it("writes only keys with new hits, and still learns the others' totals", async () => {
    const clock = { now: 6 * WINDOW };
    const { table, calls } = memoryTable();
    const a = store(table, clock);
    const b = store(table, clock);
    a.increment("busy");
    a.increment("quiet");
    b.increment("quiet");
    await a.sync();
    await b.sync();
    for (let i = 0; i < 3; i++) {
      a.increment("busy");
      await a.sync();
    }
    // a wrote "quiet" once, when it had a hit; afterwards it only reads it, and learns b's hit.
    expect(calls.written.slice(0, 1)).toEqual([["busy", "quiet"]]);
    expect(calls.written.slice(2)).toEqual([["busy"], ["busy"], ["busy"]]);
    expect(a.get("quiet").totalHits).toBe(2);
    // Nothing new: no row written at all.
    await a.sync();
    expect(calls.written.at(-1)).toEqual([]);
  });

  it("keeps hits taken while an upsert is in flight for the next sync", async () => {
    const clock = { now: 7 * WINDOW };
    const { table, rows } = memoryTable();
    let s!: SharedCounterStore;
    const slow: CounterTable = {
      prune: table.prune,
      async add(windowStart, keys, deltas, unchanged) {
        s.increment("k"); // a request served during the round trip
        return table.add(windowStart, keys, deltas, unchanged);
      },
    };
    s = store(slow, clock);
    s.increment("k");
    await s.sync();
    expect(rows.get(`${7 * WINDOW}|k`)).toBe(1);
    expect(s.get("k").totalHits).toBe(2);
    await s.sync();
    // The in-flight hit was sent; the one taken during the second upsert waits for the third.
    expect(rows.get(`${7 * WINDOW}|k`)).toBe(2);
    expect(s.get("k").totalHits).toBe(3);
  });

  it("prunes ended windows once per window and stops sending their keys", async () => {
    const clock = { now: 3 * WINDOW + 5 };
    const { table, rows, calls } = memoryTable();
    const s = store(table, clock);
    s.increment("old");
    await s.sync();
    await s.sync();
    expect(calls.prune).toEqual([3 * WINDOW]);
    clock.now = 4 * WINDOW + 5;
    s.increment("new");
    await s.sync();
    expect(calls.prune).toEqual([3 * WINDOW, 4 * WINDOW]);
    expect([...rows.keys()]).toEqual([`${4 * WINDOW}|new`]);
  });

  it("goes on counting locally while the table fails, warns once, and sends the hits on recovery", async () => {
    const clock = { now: 9 * WINDOW };
    const { table, rows } = memoryTable();
    let down = true;
    const flaky: CounterTable = {
      add: (...args) => (down ? Promise.reject(new Error("connect ECONNREFUSED")) : table.add(...args)),
      prune: (w) => (down ? Promise.reject(new Error("connect ECONNREFUSED")) : table.prune(w)),
    };
    const { logger, lines } = recordingLogger();
    const s = store(flaky, clock, logger);
    for (let i = 0; i < 4; i++) {
      s.increment("k");
      await s.sync();
    }
    expect(s.get("k").totalHits).toBe(4);
    expect(lines).toEqual([{ level: "warn", msg: "rate limit sync failed; counting locally until the database answers" }]);
    down = false;
    await s.sync();
    expect(rows.get(`${9 * WINDOW}|k`)).toBe(4);
    expect(s.get("k").totalHits).toBe(4);
    expect(lines.map((l) => l.level)).toEqual(["warn", "info"]);
  });
});

describe("rate limit configuration", () => {
  it("is off for the embedded demo and generous with a database, unless set", () => {
    expect(loadConfig({}).rateLimit).toEqual({ limit: 0, windowS: 60, syncMs: 1000 });
    expect(loadConfig({}).credentialConcurrency).toEqual({ max: 0, queueMs: 1000 });
    const withDb = loadConfig({ DATABASE_URL: "postgresql://db.example/gcs" });
    expect(withDb.rateLimit).toEqual({ limit: 12000, windowS: 60, syncMs: 1000 });
    expect(withDb.credentialConcurrency.max).toBeUndefined(); // half the pool, resolved in createServices
    expect(loadConfig({ GCS_RATE_LIMIT: "0", DATABASE_URL: "postgresql://db.example/gcs" }).rateLimit.limit).toBe(0);
    expect(loadConfig({ GCS_RATE_LIMIT: "50" }).rateLimit.limit).toBe(50);
  });
});
