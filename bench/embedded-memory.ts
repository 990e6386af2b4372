// Memory and start time of the embedded demo as a newcomer runs it: `npm start` with no DATABASE_URL
// (PGlite in-process, demo data loaded on the first start). Resident memory is that of the whole
// process tree (npm, its shell, node and anything they spawn), sampled every 100 ms through:
//   1. a first start on an empty data directory, until the banner with the demo key is printed;
//   2. idle; 3. a light load (each connection alternating /v1/guests and the nested GraphQL query);
//   4. idle again; 5. a restart on the same data directory; 6. idle.
// Start times are until /readyz answers 200 and until the banner (the demo data is loaded); the
// tree's CPU time at the banner is the start figure to compare on a shared machine.
//
//   npx tsx bench/embedded-memory.ts [--json]
//
// EMBEDDED_BENCH_COMMAND (default "npm start"), EMBEDDED_BENCH_DURATION (s of load, default 20),
// EMBEDDED_BENCH_CONNECTIONS (default 32), EMBEDDED_BENCH_IDLE (s of each idle phase, default 10).
import { spawn, type ChildProcess } from "node:child_process";
import { mkdtempSync, readdirSync, readFileSync, rmSync } from "node:fs";
import net from "node:net";
import os from "node:os";
import path from "node:path";
import autocannon from "autocannon";

const ROOT = path.resolve(__dirname, "..");
const num = (name: string, fallback: number) => Number(process.env[name] ?? fallback);
const COMMAND = (process.env.EMBEDDED_BENCH_COMMAND ?? "npm start").split(/\s+/);
const LOAD_SECONDS = num("EMBEDDED_BENCH_DURATION", 20);
const CONNECTIONS = num("EMBEDDED_BENCH_CONNECTIONS", 32);
const IDLE_SECONDS = num("EMBEDDED_BENCH_IDLE", 10);
const log = (line: string) => process.stderr.write(`[embedded-memory] ${line}\n`);

const NESTED = `{ guests(limit: 100) { nodes { id givenName familyName email reservations { id confirmationNumber status arrivalDate departureDate totalAmountMinor currency } transactions { id kind category amountMinor currency occurredAt } } nextCursor hasMore } }`;

// ---------------------------------------------------------------------------------------------
// Process trees in /proc (exported for test/integration/embedded-memory.test.ts)
// ---------------------------------------------------------------------------------------------

/** `root` and its live descendants. */
export function processTree(root: number): number[] {
  const children = new Map<number, number[]>();
  for (const entry of readdirSync("/proc")) {
    if (!/^\d+$/.test(entry)) continue;
    const ppid = Number(statFields(Number(entry))?.[1]);
    if (ppid) children.set(ppid, [...(children.get(ppid) ?? []), Number(entry)]);
  }
  const tree: number[] = [];
  const visit = (pid: number) => {
    if (statFields(pid)?.[0] !== "Z") tree.push(pid);
    for (const child of children.get(pid) ?? []) visit(child);
  };
  visit(root);
  return tree;
}

/** Resident memory of a process tree in MB: each process's RSS (what `ps` shows), summed. */
export function treeRssMb(root: number): number {
  return processTree(root).reduce((sum, pid) => sum + Number(/VmRSS:\s+(\d+)/.exec(readProc(pid, "status") ?? "")?.[1] ?? 0) / 1024, 0);
}

/**
 * The resident part of the WebAssembly memories of a tree, in MB. V8 reserves 8 GB or more of
 * address space for each WebAssembly.Memory (bounds checks by guard pages): the accessible part is a
 * read-write mapping followed at once by an inaccessible one of gigabytes, which nothing else has.
 */
export function treeWasmMb(root: number): number {
  let kb = 0;
  for (const pid of processTree(root)) {
    let current: { end: bigint; writable: boolean; rssKb: number } | undefined;
    for (const line of (readProc(pid, "smaps") ?? "").split("\n")) {
      const vma = /^([0-9a-f]+)-([0-9a-f]+) (\S+)/.exec(line);
      if (vma) {
        const [start, end] = [BigInt(`0x${vma[1]}`), BigInt(`0x${vma[2]}`)];
        if (current?.writable && current.end === start && vma[3] === "---p" && end - start >= 4n << 30n) kb += current.rssKb;
        current = { end, writable: vma[3].startsWith("rw"), rssKb: 0 };
        continue;
      }
      const rss = /^Rss:\s+(\d+) kB/.exec(line);
      if (rss && current) current.rssKb = Number(rss[1]);
    }
  }
  return kb / 1024;
}

/**
 * User + system CPU time of a tree so far, in ms: its live processes' own and that of the children
 * they have waited for (the start's initdb and preparation, which have ended by the banner).
 */
function treeCpuMs(root: number): number {
  return processTree(root).reduce((sum, pid) => {
    const f = statFields(pid);
    return sum + (f ? (Number(f[11]) + Number(f[12]) + Number(f[13]) + Number(f[14])) * 10 : 0);
  }, 0);
}

/** /proc/<pid>/stat from the state field on (index 0 state, 1 ppid, 11 utime, 12 stime, 13 cutime, 14 cstime). */
function statFields(pid: number): string[] | undefined {
  const stat = readProc(pid, "stat");
  return stat?.slice(stat.lastIndexOf(") ") + 2).split(" ");
}

function readProc(pid: number, file: string): string | undefined {
  try {
    return readFileSync(`/proc/${pid}/${file}`, "utf8");
  } catch {
    return undefined; // the process ended meanwhile
  }
}

// ---------------------------------------------------------------------------------------------
// The demo under measurement
// ---------------------------------------------------------------------------------------------

interface Sample {
  ms: number;
  mb: number;
}

/** Samples a tree's RSS every 100 ms; `since(t)` gives the samples taken from time t on. */
function sampleTree(root: number) {
  const samples: Sample[] = [];
  const read = () => samples.push({ ms: Date.now(), mb: treeRssMb(root) });
  read();
  const timer = setInterval(read, 100);
  return {
    since: (t: number) => samples.filter((s) => s.ms >= t),
    stop: () => clearInterval(timer),
  };
}

const peak = (s: Sample[]) => Math.round(Math.max(...s.map((x) => x.mb)));
/** The median of a window: steady memory, robust to one collection's dip or spike. */
const median = (s: Sample[]) => Math.round([...s].sort((a, b) => a.mb - b.mb)[Math.floor(s.length / 2)].mb);
const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

interface Demo {
  child: ChildProcess;
  samples: ReturnType<typeof sampleTree>;
  base: string;
  key: string;
  /** From spawn to the first /readyz 200, to the banner, and the tree's CPU time at the banner. */
  readyMs: number;
  bannerMs: number;
  cpuMs: number;
  startPeakMb: number;
}

async function startDemo(dataDir: string): Promise<Demo> {
  const port = await freePort();
  const env: NodeJS.ProcessEnv = { ...process.env, GCS_DATA_DIR: dataDir, PORT: String(port), HOST: "127.0.0.1", LOG_LEVEL: "warn" };
  delete env.DATABASE_URL;
  const t0 = Date.now();
  // Its own process group, so that the whole tree can be signalled at the end.
  const child = spawn(COMMAND[0], COMMAND.slice(1), { cwd: ROOT, env, stdio: ["ignore", "pipe", "inherit"], detached: true });
  const samples = sampleTree(child.pid!);
  const base = `http://127.0.0.1:${port}`;
  let out = "";
  const exited = new Promise<never>((_, reject) => child.once("exit", (code) => reject(new Error(`${COMMAND.join(" ")} exited with ${code}: ${out}`))));
  const banner = new Promise<{ key: string; ms: number }>((resolve) => {
    child.stdout!.on("data", (chunk) => {
      out += chunk;
      const m = /Demo API key \([^)]*\): (gcs_\S+)/.exec(out);
      if (m) resolve({ key: m[1], ms: Date.now() - t0 });
    });
  });
  const ready = (async () => {
    for (;;) {
      const res = await fetch(`${base}/readyz`).catch(() => undefined);
      if (res?.status === 200) return Date.now() - t0;
      await sleep(50);
    }
  })();
  let timer: NodeJS.Timeout | undefined;
  const timeout = new Promise<never>((_, reject) => (timer = setTimeout(() => reject(new Error(`no banner after 5 minutes: ${out}`)), 300_000)));
  const shown = await Promise.race([banner, exited, timeout]).finally(() => clearTimeout(timer));
  const cpuMs = treeCpuMs(child.pid!);
  const readyMs = await Promise.race([ready, exited]);
  return { child, samples, base, key: shown.key, readyMs, bannerMs: shown.ms, cpuMs, startPeakMb: peak(samples.since(0)) };
}

async function stopDemo(demo: Demo): Promise<void> {
  demo.samples.stop();
  const tree = processTree(demo.child.pid!);
  process.kill(-demo.child.pid!, "SIGTERM");
  // The data directory is free once every process of the tree has ended.
  for (let i = 0; i < 300 && tree.some((pid) => statFields(pid) && statFields(pid)![0] !== "Z"); i++) await sleep(100);
}

/** Waits `IDLE_SECONDS`; the median RSS of the second half. */
async function idle(demo: Demo): Promise<number> {
  const half = Date.now() + (IDLE_SECONDS * 1000) / 2;
  await sleep(IDLE_SECONDS * 1000);
  return median(demo.samples.since(half));
}

function load(demo: Demo): Promise<autocannon.Result> {
  const auth = { authorization: `Bearer ${demo.key}` };
  return autocannon({
    url: demo.base,
    connections: CONNECTIONS,
    duration: LOAD_SECONDS,
    // Each connection alternates between the two.
    requests: [
      { method: "GET", path: "/v1/guests?limit=100", headers: auth },
      { method: "POST", path: "/graphql", headers: { ...auth, "content-type": "application/json" }, body: JSON.stringify({ query: NESTED }) },
    ],
  });
}

function freePort(): Promise<number> {
  return new Promise((resolve, reject) => {
    const probe = net.createServer().once("error", reject);
    probe.listen(0, "127.0.0.1", () => {
      const { port } = probe.address() as net.AddressInfo;
      probe.close(() => resolve(port));
    });
  });
}

const seconds = (ms: number) => Math.round(ms / 100) / 10;

async function main() {
  const dir = mkdtempSync(path.join(os.tmpdir(), "gcs-embedded-memory-"));
  const dataDir = path.join(dir, "pglite");
  try {
    log(`first start of \`${COMMAND.join(" ")}\` on an empty data directory`);
    const first = await startDemo(dataDir);
    const idleFirst = await idle(first);
    log(`${CONNECTIONS} connections for ${LOAD_SECONDS} s`);
    const loadStart = Date.now();
    const result = await load(first);
    const loadPeak = peak(first.samples.since(loadStart));
    const idleLoad = await idle(first);
    await stopDemo(first);

    log("restart on the same data directory");
    const second = await startDemo(dataDir);
    const idleRestart = await idle(second);
    const wasm = Math.round(treeWasmMb(second.child.pid!));
    await stopDemo(second);

    const report = {
      command: COMMAND.join(" "),
      first_start: { ready_s: seconds(first.readyMs), banner_s: seconds(first.bannerMs), cpu_s: seconds(first.cpuMs), peak_mb: first.startPeakMb },
      idle_after_first_start_mb: idleFirst,
      load: {
        seconds: LOAD_SECONDS,
        connections: CONNECTIONS,
        requests_per_s: Math.round(result.requests.average),
        non_2xx: result.non2xx,
        errors: result.errors + result.timeouts,
        peak_mb: loadPeak,
      },
      idle_after_load_mb: idleLoad,
      restart: { ready_s: seconds(second.readyMs), banner_s: seconds(second.bannerMs), cpu_s: seconds(second.cpuMs), peak_mb: second.startPeakMb },
      idle_after_restart_mb: idleRestart,
      idle_after_restart_pglite_heap_mb: wasm,
    };
    if (process.argv.includes("--json")) {
      console.log(JSON.stringify(report));
      return;
    }
    console.log(
      [
        `| embedded demo (\`${report.command}\`), process tree RSS | MB |`,
        `|---|---|`,
        `| first start: peak (ready ${report.first_start.ready_s} s, banner ${report.first_start.banner_s} s, CPU ${report.first_start.cpu_s} s) | ${report.first_start.peak_mb} |`,
        `| idle after the first start | ${idleFirst} |`,
        `| load: peak (${CONNECTIONS} connections, ${LOAD_SECONDS} s, ${report.load.requests_per_s} req/s, non-2xx ${result.non2xx}) | ${loadPeak} |`,
        `| idle after the load | ${idleLoad} |`,
        `| restart: peak (ready ${report.restart.ready_s} s, banner ${report.restart.banner_s} s, CPU ${report.restart.cpu_s} s) | ${report.restart.peak_mb} |`,
        `| idle after the restart (PGlite's WebAssembly heap: ${wasm} MB) | ${idleRestart} |`,
      ].join("\n"),
    );
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
}

if (require.main === module) {
  main().catch((err: Error) => {
    log(err.message);
    process.exit(1);
  });
}
