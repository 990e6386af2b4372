// Issue 29's push scenarios, sized by the environment (defaults are a smoke run, not the issue's
// full figures): one `gcs serve` with its webhook sender, endpoints on a local receiver subscribed to
// a mix of topics and properties, events appended at a fixed rate, and open SSE streams.
// Reports commit-to-receipt p50/p99 and exact counts per endpoint, server CPU per delivery, and
// per-stream memory with event-to-client latency. Writes bench/results/<date>-webhooks-<label>.md.
//
//   npx tsx bench/webhooks.ts                      # smoke: 100 events/s for 10 s, 10 endpoints, 50 streams
//   BENCH_RATE=1000 BENCH_SECONDS=60 BENCH_ENDPOINTS=50 BENCH_STREAMS=1000 BENCH_LABEL=full npx tsx bench/webhooks.ts
//
// All traffic stays on 127.0.0.1.
import { createServer, request as httpRequest } from "node:http";
import type { AddressInfo } from "node:net";
import { mkdirSync, readFileSync, writeFileSync } from "node:fs";
import path from "node:path";
import os from "node:os";
import { Client } from "pg";
import { startTestPostgres } from "../test/helpers/postgres";
import { serve } from "../test/helpers/serve";
import { cpuMs, fixtureDatabase } from "./process";

const env = (name: string, fallback: number) => Number(process.env[name] ?? fallback);
const RATE = env("BENCH_RATE", 100);
const SECONDS = env("BENCH_SECONDS", 10);
const ENDPOINTS = env("BENCH_ENDPOINTS", 10);
const STREAMS = env("BENCH_STREAMS", 50);
const LABEL = process.env.BENCH_LABEL ?? "smoke";
const log = (line: string) => process.stderr.write(`[bench:webhooks] ${line}\n`);
const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));
const pct = (xs: number[], p: number) => (xs.length === 0 ? NaN : [...xs].sort((a, b) => a - b)[Math.min(xs.length - 1, Math.floor((p / 100) * xs.length))]);

async function main() {
  const pg = await startTestPostgres();
  const children: { kill(sig: string): void }[] = [];
  try {
    const { databaseUrl, manifest } = await fixtureDatabase(pg, "bench_hooks", 200, path.join(os.tmpdir(), `bench-hooks-${process.pid}.json`));
    const A = manifest.groups.A;
    const [p1, p2] = A.properties;

    // The receiver: first arrival per (endpoint, webhook-id).
    const committedAt = new Map<string, number>();
    const arrivals = new Map<string, Map<string, number>>();
    const latencies: number[] = [];
    const receiver = createServer((req, res) => {
      req.resume();
      req.on("end", () => {
        const id = String(req.headers["webhook-id"]);
        const seen = arrivals.get(req.url!) ?? new Map<string, number>();
        arrivals.set(req.url!, seen);
        if (!seen.has(id)) {
          seen.set(id, Date.now());
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
      DATABASE_URL: databaseUrl, GCS_DELIVERY_WORKER: "true", GCS_WEBHOOKS_ALLOW_PRIVATE: "true", GCS_WEBHOOKS_INTERVAL_MS: "50",
      GCS_RATE_LIMIT: "0", GCS_STREAM_MAX_PER_CREDENTIAL: String(STREAMS + 10), GCS_STREAM_POLL_MS: "250",
    });
    children.push(server.child as unknown as { kill(sig: string): void });
    const token = A.credentials.api_key;

    // Endpoints: a mix of topics and properties; what each should get is counted from what is appended.
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

    // Streams: count events and their latency; memory is the server's RSS before and after opening.
    const rss = () => Number(readFileSync(`/proc/${server.child.pid}/status`, "utf8").match(/VmRSS:\s+(\d+)/)![1]) * 1024;
    const rssBefore = rss();
    const streamLatencies: number[] = [];
    const streamCounts: number[] = [];
    const requests: { destroy(): void }[] = [];
    for (let i = 0; i < STREAMS; i++) {
      const n = i;
      streamCounts.push(0);
      const req = httpRequest(`${server.url}/v1/events/stream`, { headers: { Authorization: `Bearer ${token}` }, agent: false }, (res) => {
        res.setEncoding("utf8");
        let buffer = "";
        res.on("data", (chunk: string) => {
          buffer += chunk;
          let end: number;
          while ((end = buffer.indexOf("\n\n")) >= 0) {
            const block = buffer.slice(0, end);
            buffer = buffer.slice(end + 2);
            const data = block.split("\n").find((l) => l.startsWith("data: "));
            if (!data) continue;
            streamCounts[n]++;
            const at = committedAt.get(`evt_${(JSON.parse(data.slice(6)) as { seq: string }).seq}`);
            if (at !== undefined && n % 10 === 0) streamLatencies.push(Date.now() - at);
          }
        });
      });
      req.on("error", () => undefined);
      req.end();
      requests.push(req);
    }
    await sleep(2_000);
    const rssStreams = rss();

    // The load: RATE events/s for SECONDS, in 10 ms batches; half reservations, half guest updates.
    const writer = new Client({ connectionString: databaseUrl });
    await writer.connect();
    const appended: { id: string; type: string; property: string }[] = [];
    const cpuBefore = cpuMs(server.child.pid!);
    const started = Date.now();
    let n = 0;
    while (Date.now() - started < SECONDS * 1000) {
      const due = Math.floor(((Date.now() - started) / 1000) * RATE) - n;
      if (due > 0) {
        const values: string[] = [];
        const params: unknown[] = [];
        for (let i = 0; i < due; i++, n++) {
          const type = n % 2 === 0 ? "reservation" : "guest_profile";
          const property = n % 3 === 0 ? p2 : p1;
          params.push(A.id, type, A.guest_with_events, property);
          const k = params.length;
          values.push(`($${k - 3}::uuid, $${k - 2}::"EntityType", $${k - 1}::uuid, $${k - 1}::uuid, $${k}::uuid, 'update', '{}', now())`);
        }
        const { rows } = await writer.query(
          `INSERT INTO events (property_group_id, entity_type, entity_id, guest_profile_id, property_id, operation, delta, occurred_at) VALUES ${values.join(",")} RETURNING seq::text, entity_type::text, property_id::text`,
          params,
        );
        const now = Date.now();
        for (const r of rows) {
          committedAt.set(`evt_${r.seq}`, now);
          appended.push({ id: `evt_${r.seq}`, type: r.entity_type, property: r.property_id });
        }
      }
      await sleep(10);
    }
    log(`appended ${appended.length} events in ${SECONDS} s`);
    const expected = endpoints.map((e) => appended.filter((a) => (e.topics.includes("*") || e.topics.includes(a.type)) && (e.property_ids.length === 0 || e.property_ids.includes(a.property))).length);
    const deadline = Date.now() + 120_000;
    const got = () => endpoints.map((e) => [...(arrivals.get(e.path)?.keys() ?? [])].filter((id) => committedAt.has(id)).length);
    while (Date.now() < deadline && got().some((g, i) => g < expected[i])) await sleep(200);
    const cpu = cpuMs(server.child.pid!) - cpuBefore;
    const deliveries = got().reduce((a, b) => a + b, 0);
    for (const r of requests) r.destroy();
    await writer.end();
    receiver.closeAllConnections();
    receiver.close();

    const exact = got().every((g, i) => g === expected[i]);
    const lines = [
      `# Webhooks and streams (${LABEL}), ${new Date().toISOString()}`,
      "",
      `One \`gcs serve\` (sender polling every 50 ms) and PostgreSQL 15 on this machine (${os.cpus().length} cores, shared), receiver and load generator in the same process.`,
      "",
      `| Scenario | Figure |`,
      `|---|---|`,
      `| Load | ${RATE} events/s for ${SECONDS} s (${appended.length} events), ${ENDPOINTS} endpoints (topics/properties mixed) |`,
      `| Commit → receipt (webhooks) | p50 ${pct(latencies, 50)} ms, p99 ${pct(latencies, 99)} ms, max ${Math.max(...latencies)} ms |`,
      `| Every endpoint got exactly its events | ${exact ? "yes" : "NO"} (expected ${expected.join("/")}, got ${got().join("/")}) |`,
      `| Server CPU per delivery | ${deliveries > 0 ? ((cpu * 1000) / deliveries).toFixed(0) : "n/a"} µs (${cpu} ms for ${deliveries} deliveries, the streams' polls included) |`,
      `| ${STREAMS} open streams | ${(((rssStreams - rssBefore) / STREAMS) / 1024).toFixed(1)} KB RSS each; event → client p50 ${pct(streamLatencies, 50)} ms, p99 ${pct(streamLatencies, 99)} ms (every 10th stream sampled) |`,
      `| Stream counts | min ${Math.min(...streamCounts)}, max ${Math.max(...streamCounts)} of ${appended.length} |`,
      "",
    ];
    const out = path.join(__dirname, "results", `${new Date().toISOString().slice(0, 10)}-webhooks-${LABEL}.md`);
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
