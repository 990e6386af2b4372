// GET /v1/events/stream at scale (issue 29): the memory each open stream costs the server, its CPU
// while streams idle, and event-to-client latency while events are appended. One `gcs serve` and
// PostgreSQL 15 on this machine; the clients in this process. All traffic stays on 127.0.0.1.
//
//   npx tsx bench/stream-memory.ts                 # 1,000 streams, 20 events/s for 10 s
//   BENCH_STREAMS=200 BENCH_RATE=50 npx tsx bench/stream-memory.ts
//
// Memory per stream is the server's RSS growth over opening them, read after they settled; the
// server is warmed first (a few requests and streams opened and closed), so lazy loading is not
// counted. Prints one Markdown table.
import { request as httpRequest, type ClientRequest } from "node:http";
import { readFileSync } from "node:fs";
import path from "node:path";
import os from "node:os";
import { Client } from "pg";
import { startTestPostgres } from "../test/helpers/postgres";
import { serve } from "../test/helpers/serve";
import { cpuMs, fixtureDatabase } from "./process";

const env = (name: string, fallback: number) => Number(process.env[name] ?? fallback);
const STREAMS = env("BENCH_STREAMS", 1000);
const RATE = env("BENCH_RATE", 20);
const SECONDS = env("BENCH_SECONDS", 10);
const log = (line: string) => process.stderr.write(`[bench:streams] ${line}\n`);
const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));
const pct = (xs: number[], p: number) => (xs.length === 0 ? NaN : [...xs].sort((a, b) => a - b)[Math.min(xs.length - 1, Math.floor((p / 100) * xs.length))]);

export interface StreamClients {
  counts: number[];
  latencies: number[];
  close(): void;
}

/**
 * Opens `n` streams on `url` and parses their events. `committedAt` maps evt_<seq> to the time the
 * event's insert returned; every stream's latency is recorded when `sampleEvery` is 1.
 */
export async function openStreams(url: string, token: string, n: number, committedAt: Map<string, number>, sampleEvery = 1): Promise<StreamClients> {
  const counts: number[] = [];
  const latencies: number[] = [];
  const requests: ClientRequest[] = [];
  const opened: Promise<void>[] = [];
  for (let i = 0; i < n; i++) {
    counts.push(0);
    opened.push(new Promise<void>((resolve, reject) => {
      const req = httpRequest(`${url}/v1/events/stream`, { headers: { Authorization: `Bearer ${token}` }, agent: false }, (res) => {
        if (res.statusCode !== 200) reject(new Error(`stream ${i}: ${res.statusCode}`));
        res.setEncoding("utf8");
        let buffer = "";
        res.on("data", (chunk: string) => {
          buffer += chunk;
          let end: number;
          while ((end = buffer.indexOf("\n\n")) >= 0) {
            const block = buffer.slice(0, end);
            buffer = buffer.slice(end + 2);
            const at = block.indexOf("\ndata: ");
            if (at < 0) continue;
            counts[i]++;
            if (i % sampleEvery !== 0) continue;
            const seq = /"seq":"(\d+)"/.exec(block.slice(at))![1];
            const committed = committedAt.get(`evt_${seq}`);
            if (committed !== undefined) latencies.push(Date.now() - committed);
          }
        });
        res.on("error", () => undefined);
        resolve();
      });
      req.on("error", (err) => reject(new Error(`stream ${i}: ${err.message}`)));
      req.end();
      requests.push(req);
    }));
    // Opened in small waves, as clients connect: the accept queue stays short.
    if (i % 50 === 49) await Promise.all(opened.slice(-50));
  }
  await Promise.all(opened);
  return { counts, latencies, close: () => requests.forEach((r) => r.destroy()) };
}

/** Appends `rate` events per second for `seconds` to the group, half reservations, half guest updates; returns what was appended. */
export async function appendEvents(
  databaseUrl: string,
  group: { id: string; guest: string; properties: string[] },
  rate: number,
  seconds: number,
  committedAt: Map<string, number>,
): Promise<{ id: string; type: string; property: string }[]> {
  const writer = new Client({ connectionString: databaseUrl });
  await writer.connect();
  const appended: { id: string; type: string; property: string }[] = [];
  const started = Date.now();
  let n = 0;
  try {
    while (Date.now() - started < seconds * 1000) {
      const due = Math.floor(((Date.now() - started) / 1000) * rate) - n;
      if (due > 0) {
        const values: string[] = [];
        const params: unknown[] = [];
        for (let i = 0; i < due; i++, n++) {
          const type = n % 2 === 0 ? "reservation" : "guest_profile";
          const property = group.properties[n % 3 === 0 ? 1 : 0];
          params.push(group.id, type, group.guest, property);
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
  } finally {
    await writer.end();
  }
  return appended;
}

/**
 * The server's own view of its memory through the inspector (BENCH_INSPECT=1 starts it with
 * --inspect on a loopback port): a full collection first, then process.memoryUsage().
 */
export async function inspector(output: () => string) {
  const url = /ws:\/\/127\.0\.0\.1:\d+\/[\w-]+/.exec(output())?.[0];
  if (!url) throw new Error("no inspector URL in the server's output");
  const ws = new WebSocket(url);
  await new Promise((resolve, reject) => ((ws.onopen = resolve), (ws.onerror = reject)));
  let id = 0;
  const waiting = new Map<number, (result: unknown) => void>();
  ws.onmessage = (m) => {
    const msg = JSON.parse(String(m.data)) as { id?: number; result?: unknown };
    if (msg.id !== undefined) waiting.get(msg.id)?.(msg.result);
  };
  const call = (method: string, params: object = {}) =>
    new Promise<any>((resolve) => {
      waiting.set(++id, resolve);
      ws.send(JSON.stringify({ id, method, params }));
    });
  return {
    async memory(): Promise<{ rss: number; heapUsed: number; external: number; arrayBuffers: number }> {
      await call("HeapProfiler.collectGarbage");
      const r = await call("Runtime.evaluate", { expression: "JSON.stringify(process.memoryUsage())", returnByValue: true });
      return JSON.parse(r.result.value);
    },
    call,
    close: () => ws.close(),
  };
}

export const rssOf = (pid: number) => Number(readFileSync(`/proc/${pid}/status`, "utf8").match(/VmRSS:\s+(\d+)/)![1]) * 1024;

async function main() {
  const pg = await startTestPostgres();
  let server: Awaited<ReturnType<typeof serve>> | undefined;
  try {
    const { databaseUrl, manifest } = await fixtureDatabase(pg, "bench_streams", 200, path.join(os.tmpdir(), `bench-streams-${process.pid}.json`));
    const A = manifest.groups.A;
    server = await serve({ ...(process.env.BENCH_INSPECT === "1" ? { NODE_OPTIONS: "--inspect=127.0.0.1:0" } : {}), DATABASE_URL: databaseUrl, GCS_RATE_LIMIT: "0", GCS_STREAM_MAX_PER_CREDENTIAL: String(STREAMS + 100), GCS_MAX_CONNECTIONS_PER_ADDRESS: String(STREAMS + 100) });
    const pid = server.child.pid!;
    const inspect = process.env.BENCH_INSPECT === "1" ? await inspector(server.output) : undefined;
    const mem = async (label: string) => {
      if (!inspect) return;
      const m = await inspect.memory();
      log(`${label}: ${Object.entries(m).map(([k, v]) => `${k} ${(v / 1048576).toFixed(1)} MB`).join(", ")}`);
    };
    const token = A.credentials.api_key;
    const committedAt = new Map<string, number>();

    // Warm-up: lazy modules, JIT, pools.
    for (let i = 0; i < 20; i++) await fetch(`${server.url}/v1/events?limit=5`, { headers: { Authorization: `Bearer ${token}` } });
    const warm = await openStreams(server.url, token, 50, committedAt);
    await sleep(1_500);
    warm.close();
    await sleep(3_000);

    await mem("before");
    if (process.env.BENCH_PROFILE === "1") await inspect!.call("HeapProfiler.startSampling", { samplingInterval: 1024, includeObjectsCollectedByMajorGC: process.env.BENCH_GARBAGE === "1", includeObjectsCollectedByMinorGC: process.env.BENCH_GARBAGE === "1" });
    const rssBefore = rssOf(pid);
    const clients = await openStreams(server.url, token, STREAMS, committedAt);
    await sleep(5_000);
    if (process.env.BENCH_PROFILE === "1") {
      // What the open streams keep alive, by the stack that allocated it (live objects only).
      await inspect!.call("HeapProfiler.collectGarbage");
      const { profile } = await inspect!.call("HeapProfiler.getSamplingProfile");
      await inspect!.call("HeapProfiler.stopSampling");
      type Node = { callFrame: { functionName: string; url: string; lineNumber: number }; selfSize: number; children: Node[] };
      const bySite = new Map<string, number>();
      const walk = (n: Node, stack: string[]) => {
        const here = [...stack, `${n.callFrame.functionName || "(anon)"}@${n.callFrame.url.split("/").slice(-2).join("/")}:${n.callFrame.lineNumber + 1}`];
        if (n.selfSize > 0) {
          const key = here.slice(-4).join(" < ");
          bySite.set(key, (bySite.get(key) ?? 0) + n.selfSize);
        }
        for (const c of n.children) walk(c, here);
      };
      walk(profile.head as Node, []);
      const total = [...bySite.values()].reduce((a, b) => a + b, 0);
      log(`live since opening: ${(total / 1048576).toFixed(1)} MB`);
      for (const [site, bytes] of [...bySite].sort((a, b) => b[1] - a[1]).slice(0, 40)) log(`${(bytes / STREAMS).toFixed(0).padStart(6)} B/stream  ${site}`);
    }
    const rssOpen = rssOf(pid);
    const idleCpu0 = cpuMs(pid);
    await sleep(5_000);
    const idleCpuPerS = (cpuMs(pid) - idleCpu0) / 5;
    const rssIdle = rssOf(pid);
    await mem(`${STREAMS} streams open`);
    log(`${STREAMS} streams open: RSS +${((rssOpen - rssBefore) / 1024 / 1024).toFixed(1)} MB; idle CPU ${idleCpuPerS} ms/s`);

    const cpu0 = cpuMs(pid);
    const appended = await appendEvents(databaseUrl, { id: A.id, guest: A.guest_with_events, properties: A.properties }, RATE, SECONDS, committedAt);
    const deadline = Date.now() + 30_000;
    while (Date.now() < deadline && clients.counts.some((c) => c < appended.length)) await sleep(100);
    const cpu = cpuMs(pid) - cpu0;
    const rssAfter = rssOf(pid);
    await mem("after streaming");
    clients.close();

    const perStream = (bytes: number) => `${(bytes / STREAMS / 1024).toFixed(1)} KB`;
    const lines = [
      `| ${STREAMS} open streams | Figure |`,
      `|---|---|`,
      `| RSS growth per stream, opened and settled (5 s) | ${perStream(rssOpen - rssBefore)} (RSS ${(rssBefore / 1048576).toFixed(0)} → ${(rssOpen / 1048576).toFixed(0)} MB) |`,
      `| … after 5 s idle | ${perStream(rssIdle - rssBefore)} |`,
      `| … after ${appended.length} events streamed to each | ${perStream(rssAfter - rssBefore)} |`,
      `| Server CPU, streams idle | ${idleCpuPerS} ms per second |`,
      `| Server CPU, streaming ${RATE} events/s | ${cpu} ms for ${appended.length * STREAMS} event writes (${((cpu * 1000) / (appended.length * STREAMS)).toFixed(1)} µs each) |`,
      `| Event → client | p50 ${pct(clients.latencies, 50)} ms, p99 ${pct(clients.latencies, 99)} ms, max ${pct(clients.latencies, 100)} ms (${clients.latencies.length} samples) |`,
      `| Events per stream | min ${pct(clients.counts, 0)}, max ${pct(clients.counts, 100)} of ${appended.length} |`,
    ];
    process.stdout.write(`${lines.join("\n")}\n`);
  } finally {
    server?.child.kill("SIGTERM");
    await sleep(500);
    pg.stop();
  }
}

if (require.main === module) {
  main().then(
    () => process.exit(0),
    (err) => {
      console.error(err);
      process.exit(1);
    },
  );
}
