// Issue 40: what an open stream costs the instance that serves it, on both doors.
// - A client that never reads holds at most STREAM_BUFFER_BYTES (plus one event) on the server, on
//   GET /v1/events/stream and /graphql/stream alike: measured as the resident memory of a `gcs serve`
//   process while never-reading streams start from an old cursor behind 20 MB of events.
// - Idle streams of one group share one timeline poll per instance, subscriptions included:
//   measured as the database's committed transactions per second.
// - A stream never repeats an event, while streams of its group close and reopen (the group's
//   reader stops and starts again), clients stall and resume, and writers commit out of order.
import { readFileSync } from "node:fs";
import http, { type IncomingMessage } from "node:http";
import { Client } from "pg";
import { createClient } from "graphql-sse";
import { listenTestApp, startTestApp, type TestApp } from "../helpers/app";
import { serve, stopProcess, type ServeProcess } from "../helpers/serve";
import { openStream, seqOf, type SseStream } from "../helpers/sse";
import { STREAM_BUFFER_BYTES } from "../../src/streams/event-hub";
import { createData } from "../../src/data";
import { eventLogEnd } from "../../src/data/webhooks";

let t: TestApp;
const A = () => t.manifest.groups.A;

beforeAll(async () => {
  t = await startTestApp({ GCS_STREAM_POLL_MS: "100", GCS_STREAM_MAX_PER_CREDENTIAL: "100", GCS_DELIVERY_WORKER: "false", GCS_ROLLUP_REFRESH_MS: "0" });
});
afterAll(() => t.close());

async function until(check: () => boolean, ms = 20_000) {
  const deadline = Date.now() + ms;
  while (!check()) {
    if (Date.now() > deadline) throw new Error("timed out");
    await new Promise((r) => setTimeout(r, 20));
  }
}
const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

/** Appends `n` events of group A with a delta of about `size` bytes; their seqs. */
async function append(n: number, size = 10, c?: Client): Promise<string[]> {
  const own = !c;
  if (!c) {
    c = new Client({ connectionString: t.databaseUrl });
    await c.connect();
  }
  try {
    const { rows } = await c.query(
      `INSERT INTO events (property_group_id, entity_type, entity_id, guest_profile_id, operation, delta, occurred_at)
       SELECT $1, 'guest_profile', $2, $2, 'update', jsonb_build_object('blob', repeat('x', $3::int)), now() FROM generate_series(1, $4::int)
       RETURNING seq::text`,
      [A().id, A().guest_with_events, size, n],
    );
    return rows.map((r: { seq: string }) => r.seq);
  } finally {
    if (own) await c.end();
  }
}

const SUBSCRIPTION = "subscription Live($after: String) { events(after: $after) { cursor node { seq delta } } }";

/** A client that sends its request and then never reads: the server's writes back up from the first byte. */
function neverReading(url: string, token: string, door: "rest" | "graphql", from?: string): Promise<IncomingMessage> {
  return new Promise((resolve, reject) => {
    const graphql = door === "graphql";
    const req = http.request(graphql ? `${url}/graphql/stream` : `${url}/v1/events/stream`, {
      method: graphql ? "POST" : "GET",
      headers: {
        Authorization: `Bearer ${token}`,
        Accept: "text/event-stream",
        ...(graphql ? { "Content-Type": "application/json" } : {}),
        ...(!graphql && from ? { "Last-Event-ID": from } : {}),
      },
    });
    req.on("error", reject);
    req.on("response", (res) => {
      res.pause();
      resolve(res);
    });
    req.end(graphql ? JSON.stringify({ query: SUBSCRIPTION, variables: { after: from } }) : undefined);
  });
}

/** The seqs a stream's text holds, REST or GraphQL. */
const seqsIn = (text: string) => [...text.matchAll(/"seq":"(\d+)"/g)].map((m) => m[1]);

const rssOf = (pid: number) => Number(/VmRSS:\s+(\d+) kB/.exec(readFileSync(`/proc/${pid}/status`, "utf8"))![1]) * 1024;
const MB = 1024 * 1024;

describe("what a stream costs its instance", () => {
  it("a never-reading stream holds at most STREAM_BUFFER_BYTES on the server, REST and GraphQL (RSS of a gcs serve process)", async () => {
    const server: ServeProcess = await serve({ DATABASE_URL: t.databaseUrl, GCS_STREAM_POLL_MS: "100", GCS_STREAM_MAX_PER_CREDENTIAL: "100" });
    const token = A().credentials.api_key;
    const clients: IncomingMessage[] = [];
    try {
      // The old cursor: an event's id, with 20 MB of events after it (160 of 128 KB).
      const marker = await openStream(server.url, token);
      await until(() => marker.retry !== undefined);
      await sleep(300);
      await append(1);
      await until(() => marker.events.length === 1);
      marker.close();
      const old = marker.events[0].id!;
      const backlog = await append(160, 128 * 1024);

      // Warm: one reading client of each door walks the whole backlog, so the baseline includes
      // whatever a read of it costs the process once.
      const reader = await openStream(server.url, token, { lastEventId: old });
      const gql = createClient({ url: `${server.url}/graphql/stream`, headers: { Authorization: `Bearer ${token}` }, retryAttempts: 0 });
      const got: string[] = [];
      const dispose = gql.subscribe<{ events: { node: { seq: string } } }>({ query: SUBSCRIPTION, variables: { after: old } }, { next: (r) => r.data && got.push(r.data.events.node.seq), error: () => {}, complete: () => {} });
      await until(() => reader.events.length >= backlog.length && got.length >= backlog.length, 60_000);
      reader.close();
      dispose();
      gql.dispose();
      expect(reader.events.map(seqOf)).toEqual(backlog);
      expect(got).toEqual(backlog);
      await sleep(1_000);
      const before = rssOf(server.child.pid!);

      // Ten never-reading clients on each door, from the old cursor.
      for (let i = 0; i < 10; i++) {
        clients.push(await neverReading(server.url, token, "rest", old));
        clients.push(await neverReading(server.url, token, "graphql", old));
      }
      let peak = before;
      for (let i = 0; i < 40; i++) {
        await sleep(250);
        peak = Math.max(peak, rssOf(server.child.pid!));
      }
      const after = rssOf(server.child.pid!);
      const growth = peak - before;
      console.log(
        `20 never-reading streams (10 REST, 10 GraphQL) from a cursor behind ${backlog.length} events of 128 KB: ` +
          `RSS ${(before / MB).toFixed(0)} MB before, peak ${(peak / MB).toFixed(0)} MB, ${(after / MB).toFixed(0)} MB after 10 s ` +
          `(+${(growth / MB).toFixed(1)} MB, ${(growth / 20 / MB).toFixed(2)} MB a stream; the backlog is ${((backlog.length * 128 * 1024) / MB).toFixed(0)} MB)`,
      );
      // Each holds at most STREAM_BUFFER_BYTES and one event (what the kernel's socket buffer takes
      // is not the process's), read in statements of at most as much; the rest is the garbage of those
      // reads before the heap is collected (3.4 to 5.7 MB a stream over four runs here; 38 MB when
      // every stream held the whole backlog).
      expect(STREAM_BUFFER_BYTES).toBe(1 * MB);
      expect(growth).toBeLessThan(20 * 12 * MB);

      // And each catches up once its client reads: everything after the old cursor, once, in order.
      const [rest, graphql] = clients;
      const texts = ["", ""];
      for (const [i, res] of [rest, graphql].entries()) {
        res.setEncoding("utf8");
        res.on("data", (chunk: string) => (texts[i] += chunk));
        res.resume();
      }
      await until(() => texts.every((text) => seqsIn(text).length >= backlog.length), 60_000);
      await sleep(300);
      expect(seqsIn(texts[0])).toEqual(backlog);
      expect(seqsIn(texts[1])).toEqual(backlog);
    } finally {
      for (const c of clients) c.destroy();
      await stopProcess(server.child);
    }
  }, 180_000);

  it("idle subscriptions and REST streams of a group share one timeline poll (transactions per second)", async () => {
    const listening = await listenTestApp(t);
    const c = new Client({ connectionString: t.databaseUrl });
    await c.connect();
    /** Committed transactions per second in the test's database over `ms`. */
    const rate = async (ms: number) => {
      const commits = async () => {
        await c.query("SELECT pg_stat_clear_snapshot()");
        const { rows } = await c.query("SELECT xact_commit::bigint AS n FROM pg_stat_database WHERE datname = current_database()");
        return Number(rows[0].n);
      };
      await sleep(1_100); // the server flushes its counts at most once a second
      const start = await commits();
      await sleep(ms);
      await sleep(1_100);
      return (await commits() - start - 2) / ((ms + 1_100) / 1000); // less this function's own two
    };
    const subscriptions: (() => void)[] = [];
    const streams: SseStream[] = [];
    try {
      const idle = await rate(5_000);
      const client = createClient({ url: `${listening.base}/graphql/stream`, headers: { Authorization: `Bearer ${A().credentials.api_key}` }, retryAttempts: 0 });
      const subscribe = () => subscriptions.push(client.subscribe({ query: SUBSCRIPTION, variables: {} }, { next: () => {}, error: () => {}, complete: () => {} }));
      // The baseline, measured in this run on this machine: what one idle stream costs.
      subscribe();
      await sleep(1_000);
      const withOne = await rate(5_000);
      for (let i = 1; i < 30; i++) subscribe();
      await sleep(1_000);
      const withSubscriptions = await rate(5_000);
      for (let i = 0; i < 40; i++) streams.push(await openStream(listening.base, A().credentials.api_key));
      await sleep(1_000);
      const withBoth = await rate(5_000);
      console.log(
        `transactions/s at GCS_STREAM_POLL_MS=100: ${idle.toFixed(1)} with no stream, ${withOne.toFixed(1)} with one idle subscription, ` +
          `${withSubscriptions.toFixed(1)} with 30, ${withBoth.toFixed(1)} with 40 REST streams besides (one poll per group and instance: 10/s, and the credentials' check)`,
      );
      // One poll every 100 ms for the group, whatever the number of streams: 70 streams cost what one
      // does (polling per stream, 30 subscriptions cost 30 times one: 264/s). Relative to the
      // baseline, so that a loaded machine, polling late, measures both alike.
      const one = withOne - idle;
      expect(withSubscriptions - idle).toBeLessThan(3 * one);
      expect(withBoth - idle).toBeLessThan(3 * one);
    } finally {
      for (const dispose of subscriptions) dispose();
      for (const s of streams) s.close();
      await c.end();
      await listening.close();
    }
  }, 60_000);
});

describe("the hub's timeline reads", () => {
  it("stop at STREAM_BUFFER_BYTES of deltas (the first event always), and say when more follow", async () => {
    const end = await eventLogEnd(t.db.reader, A().id);
    const seqs = await append(20, 128 * 1024);
    const data = createData(t.db, { propertyGroupId: A().id, propertyId: null });
    // The timeline shows only transactions older than the cluster's snapshot xmin: a transaction left
    // open by another suite on this server holds the appended rows back for a moment. Wait for them.
    const untilVisible = async (from: [string, string], want: string[]) => {
      for (const deadline = Date.now() + 30_000; ; await sleep(50)) {
        const { rows } = await data.events.timelineWithin({}, from, 500, Number.MAX_SAFE_INTEGER);
        const shown = new Set(rows.map((r) => r.seq));
        if (want.every((s) => shown.has(s))) return;
        if (Date.now() > deadline) throw new Error(`events ${want.join(",")} not visible after 30 s`);
      }
    };
    await untilVisible([end.txid, end.seq], seqs);
    const pages: { seqs: string[]; more: boolean }[] = [];
    let after: [string, string] = [end.txid, end.seq];
    for (let more = true; more; ) {
      const page = await data.events.timelineWithin({}, after, 500, STREAM_BUFFER_BYTES);
      pages.push({ seqs: page.rows.map((r) => r.seq), more: page.more });
      if (page.rows.length) after = [page.rows[page.rows.length - 1].txid, page.rows[page.rows.length - 1].seq];
      more = page.more;
    }
    // A delta of 128 KB is 131,085 bytes as text: eight fit under 1 MiB before the ninth starts.
    expect(pages.map((p) => [p.seqs.length, p.more])).toEqual([[8, true], [8, true], [4, false]]);
    expect(pages.flatMap((p) => p.seqs)).toEqual(seqs);
    // One large event alone is read whole; a full page of small ones says more may follow.
    const [big] = await append(1, 3 * 1024 * 1024);
    await untilVisible(after, [big]);
    const alone = await data.events.timelineWithin({}, after, 500, STREAM_BUFFER_BYTES);
    expect([alone.rows.map((r) => r.seq), alone.more]).toEqual([[big], false]);
    const small = await append(3);
    await untilVisible([alone.rows[0].txid, alone.rows[0].seq], small);
    const full = await data.events.timelineWithin({}, [alone.rows[0].txid, alone.rows[0].seq], 2, STREAM_BUFFER_BYTES);
    expect([full.rows.map((r) => r.seq), full.more]).toEqual([small.slice(0, 2), true]);
  });
});

describe("a stream never repeats an event", () => {
  it("on both doors, while streams of the group close and reopen, clients stall and writers commit out of order", async () => {
    const listening = await listenTestApp(t);
    const base = listening.base;
    const token = A().credentials.api_key;
    const writers = await Promise.all([0, 1, 2].map(async () => {
      const c = new Client({ connectionString: t.databaseUrl });
      await c.connect();
      return c;
    }));
    const appended: string[] = [];
    let writing = true;
    const work = writers.map(async (c, i) => {
      while (writing) {
        if (i === 0) {
          // Takes its seqs early, commits late.
          await c.query("BEGIN");
          appended.push(...(await append(3, 10, c)));
          await sleep(120);
          await c.query("COMMIT");
        } else appended.push(...(await append(i === 1 ? 2 : 1, i === 1 ? 10 : 200_000, c))); // some events of 200 KB: stalled clients fill up
        await sleep(15);
      }
    });

    /** A logical reader: one REST stream or GraphQL subscription, reconnected from its last id or cursor. */
    interface Reader {
      seqs: string[];
      reopen(): Promise<void>;
      close(): void;
    }
    function restReader(): Reader {
      const r: Reader & { s?: SseStream; taken: number; last?: string } = {
        seqs: [],
        taken: 0,
        async reopen() {
          // The last id of any connection so far: one that closed before its first event has none.
          r.last = r.s?.events[r.s.events.length - 1]?.id ?? r.last;
          r.close();
          r.s = await openStream(base, token, r.last ? { lastEventId: r.last } : {});
          expect(r.s.status).toBe(200);
          r.taken = 0;
        },
        close() {
          if (!r.s) return;
          r.s.close();
          r.seqs.push(...r.s.events.slice(r.taken).map(seqOf));
          r.taken = r.s.events.length;
        },
      };
      return r;
    }
    function graphqlReader(): Reader {
      let dispose: (() => void) | undefined;
      let last: string | undefined;
      const r: Reader = {
        seqs: [],
        async reopen() {
          r.close();
          const client = createClient({ url: `${base}/graphql/stream`, headers: { Authorization: `Bearer ${token}` }, retryAttempts: 0 });
          const stop = client.subscribe<{ events: { cursor: string; node: { seq: string } } }>(
            { query: SUBSCRIPTION, variables: { after: last } },
            {
              next: (result) => {
                if (!result.data) return;
                last = result.data.events.cursor;
                r.seqs.push(result.data.events.node.seq);
              },
              error: () => {},
              complete: () => {},
            },
          );
          dispose = () => {
            stop();
            client.dispose();
          };
          await sleep(50);
        },
        close() {
          dispose?.();
          dispose = undefined;
        },
      };
      return r;
    }

    const readers = [...Array.from({ length: 4 }, restReader), ...Array.from({ length: 4 }, graphqlReader)];
    for (const r of readers) await r.reopen();
    await sleep(500);
    // A stalled client on each door: reads nothing for a while, then everything.
    const stalled = [await neverReading(base, token, "rest"), await neverReading(base, token, "graphql")];
    const stalledText = ["", ""];

    for (let round = 0; round < 12; round++) {
      await sleep(250);
      // One reader at a time reconnects; every third round all close at once (the group's reader
      // stops with its last stream) and reopen.
      if (round % 3 === 2) {
        for (const r of readers) r.close();
        await sleep(150);
        for (const r of readers) await r.reopen();
      } else await readers[round % readers.length].reopen();
    }
    for (const [i, res] of stalled.entries()) {
      res.setEncoding("utf8");
      res.on("data", (chunk: string) => (stalledText[i] += chunk));
      res.resume();
    }
    writing = false;
    await Promise.all(work);
    // The group's timeline, in its order: each stream shows a stretch of it, from its first event to
    // the last, each event once and in this order.
    // events.seq, not the text column of the select list that ORDER BY would otherwise take ("1000" < "999").
    const { rows } = await t.adminPool.query(`SELECT seq::text FROM events WHERE property_group_id = $1 ORDER BY events.txid, events.seq`, [A().id]);
    const timeline = rows.map((row: { seq: string }) => row.seq);
    const last = timeline[timeline.length - 1];
    expect(appended).toContain(last);
    await until(() => readers.every((r) => (r as { s?: SseStream }).s?.events.some((e) => seqOf(e) === last) ?? r.seqs.includes(last)), 45_000);
    await until(() => stalledText.every((text) => seqsIn(text).includes(last)), 45_000);
    await sleep(300);
    for (const r of readers) r.close();
    for (const res of stalled) res.destroy();
    await Promise.all(writers.map((c) => c.end()));
    await listening.close();

    const shown = [...readers.map((r) => r.seqs), ...stalledText.map(seqsIn)];
    for (const [i, seqs] of shown.entries()) {
      const from = timeline.indexOf(seqs[0]);
      expect([i, seqs.length > 20]).toEqual([i, true]);
      expect([i, seqs]).toEqual([i, timeline.slice(from, from + seqs.length)]);
      expect([i, seqs[seqs.length - 1]]).toEqual([i, timeline[timeline.length - 1]]);
    }
  }, 120_000);
});
