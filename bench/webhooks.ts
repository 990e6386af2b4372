// Issue 29's push scenarios, sized by the environment: one `gcs serve` with its webhook sender and
// PostgreSQL 15 on this machine; the receiver in a process of its own (bench/webhook-receiver.ts);
// the stream clients and the load generator in this process. All traffic stays on 127.0.0.1. Writes bench/results/<date>-webhooks[-<BENCH_LABEL>].md.
//
// 1. Webhooks: BENCH_RATE events/s appended for BENCH_SECONDS, BENCH_ENDPOINTS endpoints on a local
//    receiver subscribed to a mix of topics and properties, after BENCH_WARMUP_SECONDS of the same
//    load delivered in full. Commit-to-receipt p50/p99, exact counts
//    per endpoint (waiting up to BENCH_DRAIN_SECONDS after the load for the last ones), server CPU
//    per delivery.
// 2. Streams: BENCH_STREAMS open streams of GET /v1/events/stream while BENCH_STREAM_RATE events/s
//    are appended for 10 s. Memory per open stream (RSS growth, and RSS and heap after a full
//    collection through the inspector), event-to-client p50/p99, exact counts per stream.
//
//   npm run bench:webhooks                         # the issue's sizes: 1,000 events/s for 60 s, 50 endpoints, 1,000 streams
//   BENCH_RATE=100 BENCH_SECONDS=10 BENCH_ENDPOINTS=10 BENCH_STREAMS=50 BENCH_LABEL=smoke npx tsx bench/webhooks.ts
import { fork } from "node:child_process";
import { mkdirSync, writeFileSync } from "node:fs";
import path from "node:path";
import os from "node:os";
import { Client } from "pg";
import { startTestPostgres } from "../test/helpers/postgres";
import { serve } from "../test/helpers/serve";
import { cpuMs, fixtureDatabase } from "./process";
import { appendEvents, inspector, openStreams, rssOf } from "./stream-memory";
import { messageIdOf } from "../src/webhooks/sign";

async function serviceSecretOf(databaseUrl: string, name: string): Promise<string | undefined> {
  const client = new Client({ connectionString: databaseUrl });
  await client.connect();
  try {
    return (await client.query<{ value: string }>("SELECT value FROM service_secrets WHERE name = $1", [name])).rows[0]?.value;
  } finally {
    await client.end();
  }
}

const env = (name: string, fallback: number) => Number(process.env[name] ?? fallback);
const RATE = env("BENCH_RATE", 1000);
const SECONDS = env("BENCH_SECONDS", 60);
const ENDPOINTS = env("BENCH_ENDPOINTS", 50);
const DRAIN_SECONDS = env("BENCH_DRAIN_SECONDS", 120);
const WARMUP_SECONDS = env("BENCH_WARMUP_SECONDS", 5);
const STREAMS = env("BENCH_STREAMS", 1000);
const STREAM_RATE = env("BENCH_STREAM_RATE", 20);
const LABEL = process.env.BENCH_LABEL ?? "";
const log = (line: string) => process.stderr.write(`[bench:webhooks] ${line}\n`);
const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));
const pct = (xs: number[], p: number) => (xs.length === 0 ? NaN : [...xs].sort((a, b) => a - b)[Math.min(xs.length - 1, Math.floor((p / 100) * xs.length))]);
const kb = (bytes: number) => `${(bytes / 1024).toFixed(1)} KB`;

/**
 * The events appended: entity types and properties drawn (seeded, so every run appends the same
 * sequence) with these weights, a hotel group's activity: reservations, guest profiles and folio
 * transactions most, the rest rarely; the two hotels most, the restaurant less.
 */
const TYPE_WEIGHTS: [string, number][] = [
  ["reservation", 30], ["guest_profile", 25], ["transaction", 25], ["action", 8], ["review", 4], ["membership", 4],
  ["loyalty_program", 2], ["channel", 1], ["space", 1],
];
const PROPERTY_WEIGHTS = [45, 35, 20];
const EVENT_MIX_TEXT = `types ${TYPE_WEIGHTS.map(([t, w]) => `${t} ${w} %`).join(", ")}; properties ${PROPERTY_WEIGHTS.join(" / ")} %`;
const ENDPOINT_MIX_TEXT = "3 on all topics, 3 on all topics of one property, 12 on one topic, 16 on one topic of one property, 16 on two topics of one property";

/** A seeded draw in [0, 1) for event n (mulberry32). */
function draw(n: number, salt: number): number {
  let t = (n * 2654435761 + salt) >>> 0;
  t = Math.imul(t ^ (t >>> 15), t | 1);
  t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
  return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
}

function pick<T>(weighted: [T, number][], x: number): T {
  const total = weighted.reduce((a, [, w]) => a + w, 0);
  let at = x * total;
  for (const [v, w] of weighted) if ((at -= w) < 0) return v;
  return weighted[weighted.length - 1][0];
}

const eventKind = (properties: string[]) => (n: number) => ({
  type: pick(TYPE_WEIGHTS, draw(n, 1)),
  property: pick(PROPERTY_WEIGHTS.map((w, i): [string, number] => [properties[i], w]), draw(n, 2)),
});

/** The receiver process (bench/webhook-receiver.ts): its port, and questions over IPC. */
async function startReceiver() {
  const child = fork(path.join(__dirname, "webhook-receiver.ts"), [], { execPath: path.join(__dirname, "..", "node_modules/.bin/node"), execArgv: ["--require", "tsx/cjs"] });
  const next = <T>(key: string) => new Promise<T>((resolve) => {
    const on = (m: Record<string, unknown>) => {
      if (!(key in m)) return;
      child.off("message", on);
      resolve(m as T);
    };
    child.on("message", on);
  });
  const { port } = await next<{ port: number }>("port");
  return {
    child,
    port,
    ask<T>(what: "counts" | "arrivals"): Promise<T> {
      const answer = next<T>(what);
      child.send({ ask: what });
      return answer;
    },
  };
}

async function main() {
  const pg = await startTestPostgres();
  const children: { kill(sig: string): void }[] = [];
  const lines = [
    `# Webhooks and streams${LABEL ? ` (${LABEL})` : ""}, ${new Date().toISOString()}`,
    "",
    `One \`gcs serve\` (webhook sender and streams at their default intervals: 100 ms and 500 ms) and PostgreSQL 15 on this machine (${os.cpus().length} cores, shared with other work), the receiver in its own process, stream clients and load generator in the bench process. \`npm run bench:webhooks\` (bench/webhooks.ts).`,
    "",
    `| Scenario | Figure |`,
    `|---|---|`,
  ];
  try {
    const { databaseUrl, manifest } = await fixtureDatabase(pg, "bench_hooks", 200, path.join(os.tmpdir(), `bench-hooks-${process.pid}.json`));
    const A = manifest.groups.A;
    const group = { id: A.id, guest: A.guest_with_events, properties: A.properties };
    const [p1, p2] = A.properties;
    const token = A.credentials.api_key;

    // ---------------------------------------------------------------- 1. webhooks
    if (ENDPOINTS > 0) {
      const committedAt = new Map<string, number>();
      const receiver = await startReceiver();
      children.push(receiver.child as unknown as { kill(sig: string): void });
      const port = receiver.port;
      const server = await serve({
        DATABASE_URL: databaseUrl, GCS_DELIVERY_WORKER: "true", GCS_WEBHOOKS_ALLOW_PRIVATE: "true", GCS_RATE_LIMIT: "0",
        // BENCH_CPU_PROF=<dir>: the server writes a V8 CPU profile there when it exits.
        ...(process.env.BENCH_CPU_PROF ? { NODE_OPTIONS: `--cpu-prof --cpu-prof-dir=${process.env.BENCH_CPU_PROF}` } : {}),
      });
      children.push(server.child as unknown as { kill(sig: string): void });

      // The endpoints: a realistic mix of topics and properties (not every integration wants
      // everything). ENDPOINTS are taken from this list in turn; at 50:
      //   3 on all topics of all properties (a CDP or data warehouse sync),
      //   3 on all topics of one property (a property's own CRM or guest messaging),
      //   12 on one topic of all properties,
      //   16 on one topic of one property,
      //   16 on two topics of one property.
      // With the event mix below that is about 11 deliveries due per event (counted exactly below).
      const all = A.properties;
      const topicsOne = ["reservation", "guest_profile", "transaction", "reservation", "guest_profile", "transaction", "reservation", "guest_profile", "transaction", "action", "review", "membership"];
      const topicsPairs = [["reservation", "guest_profile"], ["reservation", "transaction"], ["guest_profile", "membership"], ["review", "action"]];
      const mixes: { topics: string[]; property_ids: string[] }[] = [
        ...[0, 1, 2].map(() => ({ topics: ["*"], property_ids: [] as string[] })),
        ...[0, 1, 2].map((i) => ({ topics: ["*"], property_ids: [all[i]] })),
        ...topicsOne.map((t) => ({ topics: [t], property_ids: [] as string[] })),
        ...Array.from({ length: 16 }, (_, i) => ({ topics: [["reservation", "guest_profile", "transaction", "action"][i % 4]], property_ids: [all[i % 3]] })),
        ...Array.from({ length: 16 }, (_, i) => ({ topics: topicsPairs[i % 4], property_ids: [all[(i + 1) % 3]] })),
      ];
      const endpoints: { path: string; topics: string[]; property_ids: string[] }[] = [];
      for (let i = 0; i < ENDPOINTS; i++) {
        const mix = mixes[i % mixes.length];
        const res = await fetch(`${server.url}/v1/webhook-endpoints`, {
          method: "POST",
          headers: { Authorization: `Bearer ${token}`, "Content-Type": "application/json" },
          body: JSON.stringify({ url: `http://127.0.0.1:${port}/e${i}`, ...mix }),
        });
        if (res.status !== 201) throw new Error(`create endpoint: ${res.status} ${await res.text()}`);
        endpoints.push({ path: `/e${i}`, ...mix });
      }

      const selected = (e: (typeof endpoints)[number], events: { type: string; property: string }[]) =>
        events.filter((a) => (e.topics.includes("*") || e.topics.includes(a.type)) && (e.property_ids.length === 0 || e.property_ids.includes(a.property))).length;
      // Arrivals so far per endpoint, warm-up included (measured: minus `baseline`).
      const arrived = async () => {
        const { counts } = await receiver.ask<{ counts: Record<string, number> }>("counts");
        return endpoints.map((e) => counts[e.path] ?? 0);
      };
      // Warm-up: the same load for WARMUP_SECONDS, delivered in full before the measured run. A new
      // process compiles the sender's paths in its first seconds; a serving instance did long before.
      if (WARMUP_SECONDS > 0) {
        const warm = await appendEvents(databaseUrl, group, RATE, WARMUP_SECONDS, new Map(), eventKind(A.properties));
        const due = endpoints.map((e) => selected(e, warm));
        const until = Date.now() + 60_000;
        while (Date.now() < until && (await arrived()).some((g, i) => g < due[i])) await sleep(200);
        log(`warmed up with ${warm.length} events`);
      }
      const baseline = await arrived();
      const measured = async () => (await arrived()).map((g, i) => g - baseline[i]);

      // Statements the database ran (transactions committed: the sender's, and the load's inserts).
      const stats = new Client({ connectionString: databaseUrl });
      await stats.connect();
      const statements = async () => Number((await stats.query(`SELECT xact_commit::text AS n FROM pg_stat_database WHERE datname = current_database()`)).rows[0].n);
      const statementsBefore = await statements();
      const cpuBefore = cpuMs(server.child.pid!);
      const appended = await appendEvents(databaseUrl, group, RATE, SECONDS, committedAt, eventKind(A.properties));
      const loadEnded = Date.now();
      log(`appended ${appended.length} events in ${SECONDS} s`);
      const expected = endpoints.map((e) => selected(e, appended));
      const cpuAtLoadEnd = cpuMs(server.child.pid!);
      const deliveredAtLoadEnd = (await measured()).reduce((a, b) => a + b, 0);
      const deadline = Date.now() + DRAIN_SECONDS * 1000;
      while (Date.now() < deadline && (await measured()).some((g, i) => g < expected[i])) await sleep(200);
      const drainMs = Date.now() - loadEnded;
      const cpu = cpuMs(server.child.pid!) - cpuBefore;
      // pg_stat_database lags by up to half a second (PGSTAT_MIN_INTERVAL).
      await sleep(1_000);
      const statementCount = (await statements()) - statementsBefore;
      await stats.end();
      server.child.kill("SIGTERM");
      await server.exited;
      // Each endpoint's events of the load, by first arrival; commit → receipt for each.
      const { arrivals, duplicates } = await receiver.ask<{ arrivals: Record<string, [string, number][]>; duplicates: number }>("arrivals");
      receiver.child.kill("SIGTERM");
      const latencies: number[] = [];
      // Commit → receipt by 10 s of the load (when the event was committed): where the tail is.
      const loadStarted = Math.min(...committedAt.values());
      const byWindow = new Map<number, number[]>();
      // committedAt names events evt_<seq>; a webhook-id is a keyed hash of the seq (webhooks/sign.ts).
      const idKey = await serviceSecretOf(databaseUrl, "webhook_message_id");
      const labelOf = new Map([...committedAt.keys()].map((label) => [idKey ? messageIdOf(label.slice(4), idKey) : label, label]));
      const counts = endpoints.map((e) => {
        let n = 0;
        for (const [id, at] of arrivals[e.path] ?? []) {
          const committed = committedAt.get(labelOf.get(id) ?? id);
          if (committed === undefined) continue;
          n++;
          latencies.push(at - committed);
          const w = Math.floor((committed - loadStarted) / 10_000);
          if (!byWindow.has(w)) byWindow.set(w, []);
          byWindow.get(w)!.push(at - committed);
        }
        return n;
      });
      const deliveries = counts.reduce((a, b) => a + b, 0);
      const wanted = expected.reduce((a, b) => a + b, 0);

      const exact = counts.every((g, i) => g === expected[i]);
      const short = counts.map((g, i) => expected[i] - g).filter((d) => d !== 0);
      lines.push(
        `| Webhook load | ${RATE} events/s for ${SECONDS} s (${appended.length} events: ${EVENT_MIX_TEXT}), ${ENDPOINTS} endpoints (${ENDPOINT_MIX_TEXT}), ${wanted} deliveries due (${(wanted / appended.length).toFixed(2)} per event, ${(wanted / SECONDS).toFixed(0)}/s) |`,
        `| Commit → receipt | p50 ${pct(latencies, 50)} ms, p99 ${pct(latencies, 99)} ms, max ${pct(latencies, 100)} ms (${latencies.length} deliveries) |`,
        `| Commit → receipt by 10 s of the load | ${[...byWindow].sort(([a], [b]) => a - b).map(([w, xs]) => `${w * 10}–${w * 10 + 10} s: p50 ${pct(xs, 50)} ms, p99 ${pct(xs, 99)} ms`).join("; ")} |`,
        `| Every endpoint got exactly its events | ${exact ? "yes" : `NO: ${deliveries} of ${wanted} within ${DRAIN_SECONDS} s after the load (${short.length} endpoints short, by ${Math.min(...short)}–${Math.max(...short)})`}; ${duplicates === 0 ? "none twice" : `${duplicates} arrived more than once`} (counted per webhook-id) |`,
        `| Delivery throughput | ${((deliveredAtLoadEnd * 1000) / (SECONDS * 1000)).toFixed(0)} deliveries/s during the load, ${((deliveries * 1000) / (SECONDS * 1000 + drainMs)).toFixed(0)}/s overall (${deliveries} in ${((SECONDS * 1000 + drainMs) / 1000).toFixed(1)} s) |`,
        `| Database transactions | ${statementCount} (${(statementCount / (SECONDS + drainMs / 1000)).toFixed(0)}/s, ${((statementCount - Math.ceil(appended.length / Math.max(1, RATE / 100))) / Math.max(1, deliveries)).toFixed(3)} per delivery besides the load's inserts) |`,
        `| Server CPU per delivery | ${deliveries > 0 ? ((cpu * 1000) / deliveries).toFixed(0) : "n/a"} µs (${cpu} ms for ${deliveries}; ${((cpuAtLoadEnd - cpuBefore) / SECONDS / 10).toFixed(0)}% of a core during the load) |`,
      );
      log(lines.slice(-6).join("\n"));
    }

    // ---------------------------------------------------------------- 2. streams
    if (STREAMS > 0) {
      const server = await serve({
        NODE_OPTIONS: "--inspect=127.0.0.1:0", DATABASE_URL: databaseUrl, GCS_RATE_LIMIT: "0",
        GCS_STREAM_MAX_PER_CREDENTIAL: String(STREAMS + 100), GCS_MAX_CONNECTIONS_PER_ADDRESS: String(STREAMS + 100),
      });
      children.push(server.child as unknown as { kill(sig: string): void });
      const pid = server.child.pid!;
      const inspect = await inspector(server.output);
      const committedAt = new Map<string, number>();
      // Warm-up: lazy modules, JIT and pools are no stream's cost.
      for (let i = 0; i < 20; i++) await fetch(`${server.url}/v1/events?limit=5`, { headers: { Authorization: `Bearer ${token}` } });
      const warm = await openStreams(server.url, token, 50, committedAt);
      await sleep(1_500);
      warm.close();
      await sleep(3_000);

      const before = await inspect.memory();
      const rssBefore = rssOf(pid);
      const clients = await openStreams(server.url, token, STREAMS, committedAt, 10);
      await sleep(5_000);
      const rssOpen = rssOf(pid);
      const open = await inspect.memory();
      const cpu0 = cpuMs(pid);
      const appended = await appendEvents(databaseUrl, group, STREAM_RATE, 10, committedAt);
      const deadline = Date.now() + 30_000;
      while (Date.now() < deadline && clients.counts.some((c) => c < appended.length)) await sleep(100);
      const cpu = cpuMs(pid) - cpu0;
      const rssStreamed = rssOf(pid);
      const streamed = await inspect.memory();
      clients.close();
      inspect.close();

      const per = (a: number, b: number) => kb((b - a) / STREAMS);
      const exact = clients.counts.every((c) => c === appended.length);
      lines.push(
        `| ${STREAMS} open streams: memory per stream | RSS growth ${per(rssBefore, rssOpen)} opened, ${per(rssBefore, rssStreamed)} after streaming; after a full collection: RSS ${per(before.rss, open.rss)}, V8 heap ${per(before.heapUsed, open.heapUsed)} opened, RSS ${per(before.rss, streamed.rss)} and heap ${per(before.heapUsed, streamed.heapUsed)} after streaming |`,
        `| Event → client (${STREAM_RATE} events/s for 10 s to each stream) | p50 ${pct(clients.latencies, 50)} ms, p99 ${pct(clients.latencies, 99)} ms, max ${pct(clients.latencies, 100)} ms (every 10th stream sampled: ${clients.latencies.length} events) |`,
        `| Every stream got exactly the events | ${exact ? "yes" : "NO"} (min ${pct(clients.counts, 0)}, max ${pct(clients.counts, 100)} of ${appended.length}) |`,
        `| Server CPU while streaming | ${cpu} ms for ${appended.length * STREAMS} event writes (${((cpu * 1000) / (appended.length * STREAMS)).toFixed(1)} µs each) |`,
      );
      log(lines.slice(-4).join("\n"));
    }

    lines.push("");
    const out = path.join(__dirname, "results", `${new Date().toISOString().slice(0, 10)}-webhooks${LABEL ? `-${LABEL}` : ""}.md`);
    mkdirSync(path.dirname(out), { recursive: true });
    writeFileSync(out, lines.join("\n"));
    process.stdout.write(lines.join("\n") + "\n");
  } finally {
    for (const c of children) c.kill("SIGTERM");
    await sleep(500);
    pg.stop();
  }
}

main().then(
  () => process.exit(0),
  (err) => {
    console.error(err);
    process.exit(1);
  },
);
