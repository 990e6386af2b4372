// Issue 29's push scenarios, sized by the environment: one `gcs serve` with its webhook sender and
// PostgreSQL 15 on this machine; the receiver, the stream clients and the load generator in this
// process. All traffic stays on 127.0.0.1. Writes bench/results/<date>-webhooks[-<BENCH_LABEL>].md.
//
// 1. Webhooks: BENCH_RATE events/s appended for BENCH_SECONDS, BENCH_ENDPOINTS endpoints on a local
//    receiver subscribed to a mix of topics and properties. Commit-to-receipt p50/p99, exact counts
//    per endpoint (waiting up to BENCH_DRAIN_SECONDS after the load for the last ones), server CPU
//    per delivery.
// 2. Streams: BENCH_STREAMS open streams of GET /v1/events/stream while BENCH_STREAM_RATE events/s
//    are appended for 10 s. Memory per open stream (RSS growth, and RSS and heap after a full
//    collection through the inspector), event-to-client p50/p99, exact counts per stream.
//
//   npm run bench:webhooks                         # the issue's sizes: 1,000 events/s for 60 s, 50 endpoints, 1,000 streams
//   BENCH_RATE=100 BENCH_SECONDS=10 BENCH_ENDPOINTS=10 BENCH_STREAMS=50 BENCH_LABEL=smoke npx tsx bench/webhooks.ts
import { createServer } from "node:http";
import type { AddressInfo } from "node:net";
import { mkdirSync, writeFileSync } from "node:fs";
import path from "node:path";
import os from "node:os";
import { startTestPostgres } from "../test/helpers/postgres";
import { serve } from "../test/helpers/serve";
import { cpuMs, fixtureDatabase } from "./process";
import { appendEvents, inspector, openStreams, rssOf } from "./stream-memory";

const env = (name: string, fallback: number) => Number(process.env[name] ?? fallback);
const RATE = env("BENCH_RATE", 1000);
const SECONDS = env("BENCH_SECONDS", 60);
const ENDPOINTS = env("BENCH_ENDPOINTS", 50);
const DRAIN_SECONDS = env("BENCH_DRAIN_SECONDS", 120);
const STREAMS = env("BENCH_STREAMS", 1000);
const STREAM_RATE = env("BENCH_STREAM_RATE", 20);
const LABEL = process.env.BENCH_LABEL ?? "";
const log = (line: string) => process.stderr.write(`[bench:webhooks] ${line}\n`);
const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));
const pct = (xs: number[], p: number) => (xs.length === 0 ? NaN : [...xs].sort((a, b) => a - b)[Math.min(xs.length - 1, Math.floor((p / 100) * xs.length))]);
const kb = (bytes: number) => `${(bytes / 1024).toFixed(1)} KB`;

async function main() {
  const pg = await startTestPostgres();
  const children: { kill(sig: string): void }[] = [];
  const lines = [
    `# Webhooks and streams${LABEL ? ` (${LABEL})` : ""}, ${new Date().toISOString()}`,
    "",
    `One \`gcs serve\` (webhook sender polling every 50 ms, streams every 500 ms) and PostgreSQL 15 on this machine (${os.cpus().length} cores, shared with other work), receiver, stream clients and load generator in the bench process. \`npm run bench:webhooks\` (bench/webhooks.ts).`,
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
      const arrivals = new Map<string, Set<string>>();
      const latencies: number[] = [];
      const receiver = createServer((req, res) => {
        req.resume();
        req.on("end", () => {
          const id = String(req.headers["webhook-id"]);
          let seen = arrivals.get(req.url!);
          if (!seen) arrivals.set(req.url!, (seen = new Set()));
          if (!seen.has(id)) {
            seen.add(id);
            const at = committedAt.get(id);
            if (at !== undefined) latencies.push(Date.now() - at);
          }
          res.writeHead(204).end();
        });
      });
      receiver.keepAliveTimeout = 60_000;
      await new Promise<void>((r) => receiver.listen(0, "127.0.0.1", r));
      const port = (receiver.address() as AddressInfo).port;
      const server = await serve({
        DATABASE_URL: databaseUrl, GCS_DELIVERY_WORKER: "true", GCS_WEBHOOKS_ALLOW_PRIVATE: "true", GCS_WEBHOOKS_INTERVAL_MS: "50", GCS_RATE_LIMIT: "0",
      });
      children.push(server.child as unknown as { kill(sig: string): void });

      const mixes = [
        { topics: ["*"], property_ids: [] as string[] },
        { topics: ["reservation"], property_ids: [] },
        { topics: ["guest_profile"], property_ids: [p1] },
        { topics: ["reservation", "guest_profile"], property_ids: [p2] },
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

      const cpuBefore = cpuMs(server.child.pid!);
      const appended = await appendEvents(databaseUrl, group, RATE, SECONDS, committedAt);
      const loadEnded = Date.now();
      log(`appended ${appended.length} events in ${SECONDS} s`);
      const expected = endpoints.map((e) => appended.filter((a) => (e.topics.includes("*") || e.topics.includes(a.type)) && (e.property_ids.length === 0 || e.property_ids.includes(a.property))).length);
      const got = () => endpoints.map((e) => [...(arrivals.get(e.path) ?? [])].filter((id) => committedAt.has(id)).length);
      const cpuAtLoadEnd = cpuMs(server.child.pid!);
      const deliveredAtLoadEnd = got().reduce((a, b) => a + b, 0);
      const deadline = Date.now() + DRAIN_SECONDS * 1000;
      while (Date.now() < deadline && got().some((g, i) => g < expected[i])) await sleep(200);
      const drainMs = Date.now() - loadEnded;
      const cpu = cpuMs(server.child.pid!) - cpuBefore;
      const counts = got();
      const deliveries = counts.reduce((a, b) => a + b, 0);
      const wanted = expected.reduce((a, b) => a + b, 0);
      server.child.kill("SIGTERM");
      await server.exited;
      receiver.closeAllConnections();
      receiver.close();

      const exact = counts.every((g, i) => g === expected[i]);
      const short = counts.map((g, i) => expected[i] - g).filter((d) => d !== 0);
      lines.push(
        `| Webhook load | ${RATE} events/s for ${SECONDS} s (${appended.length} events), ${ENDPOINTS} endpoints (all topics; reservations; guest profiles of one property; both of the other), ${wanted} deliveries due |`,
        `| Commit → receipt | p50 ${pct(latencies, 50)} ms, p99 ${pct(latencies, 99)} ms, max ${pct(latencies, 100)} ms (${latencies.length} deliveries) |`,
        `| Every endpoint got exactly its events | ${exact ? "yes" : `NO: ${deliveries} of ${wanted} within ${DRAIN_SECONDS} s after the load (${short.length} endpoints short, by ${Math.min(...short)}–${Math.max(...short)})`}; none twice (counted per webhook-id) |`,
        `| Delivery throughput | ${((deliveredAtLoadEnd * 1000) / (SECONDS * 1000)).toFixed(0)} deliveries/s during the load, ${((deliveries * 1000) / (SECONDS * 1000 + drainMs)).toFixed(0)}/s overall (${deliveries} in ${((SECONDS * 1000 + drainMs) / 1000).toFixed(1)} s) |`,
        `| Server CPU per delivery | ${deliveries > 0 ? ((cpu * 1000) / deliveries).toFixed(0) : "n/a"} µs (${cpu} ms for ${deliveries}; ${((cpuAtLoadEnd - cpuBefore) / SECONDS / 10).toFixed(0)}% of a core during the load) |`,
      );
      log(lines.slice(-5).join("\n"));
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
