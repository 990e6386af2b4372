// The "Make the demo move" walkthrough of docs/receive-changes.md (issue 41), run as the guide prints
// it: the real `npm start` on the embedded database, then the second terminal's lines in order in
// one bash, with receiver.mjs written as the guide shows it. It runs in a copy of the clone (its own
// data directory, nothing of the repo's .data touched). Only what a reader would type differently
// is changed: the `export KEY=…` line is the one the start printed, and ports 3000 and 4000 are free
// ones (PORT for npm start; the lines' localhost:3000 and 127.0.0.1:4000 rewritten), since other
// servers may hold 3000 and 4000 on this machine. Then a restart, `npm start` stopped by a SIGTERM to
// npm (not to node), and `npx gcs fixtures` against the running demo.
import { spawn, type ChildProcess } from "node:child_process";
import { cpSync, existsSync, mkdtempSync, readdirSync, readFileSync, rmSync, symlinkSync, writeFileSync } from "node:fs";
import os from "node:os";
import path from "node:path";
import { freePort } from "../../src/embedded/server";

const ROOT = path.resolve(__dirname, "../..");
const SECTION = "## Make the demo move";
// The node processes themselves (not the shells whose -c line names them).
const SERVER = /gcs\.js\0serve\0/;
const SIMULATE = /gcs\.js\0simulate\0/;
const RECEIVER = /^node\0receiver\.mjs\0/;

let copy: string;
let dataDir: string;
let port: number;
let receiverPort: number;
let demo: { npm: ChildProcess; output: () => string } | undefined;
let key: string;

/** The walkthrough's blocks: the first terminal's line, the second terminal's lines, receiver.mjs. */
function walkthrough(): { start: string; lines: string; receiver: string } {
  const text = readFileSync(path.join(ROOT, "docs/receive-changes.md"), "utf8");
  const from = text.indexOf(SECTION);
  const next = text.indexOf("\n## ", from + SECTION.length);
  const section = text.slice(from, next === -1 ? undefined : next);
  const blocks = [...section.matchAll(/```(sh|js)\n([\s\S]*?)```/g)].map((m) => ({ lang: m[1], body: m[2] }));
  expect(blocks.map((b) => b.lang)).toEqual(["sh", "sh", "js"]);
  return { start: blocks[0].body.trim(), lines: blocks[1].body, receiver: blocks[2].body };
}

/** The reader's environment: the clone's embedded default (no DATABASE_URL, no NODE_ENV), on this test's ports and data directory. */
function readerEnv(): NodeJS.ProcessEnv {
  const env: NodeJS.ProcessEnv = { ...process.env, GCS_DATA_DIR: dataDir, PORT: String(port), HOST: "127.0.0.1", LOG_LEVEL: "warn" };
  for (const name of ["DATABASE_URL", "NODE_ENV", "TEST_DATABASE_URL"]) delete env[name];
  return env;
}

/** The free ports instead of the guide's 3000 and 4000. */
const onOurPorts = (text: string) =>
  text.replaceAll("localhost:3000", `localhost:${port}`).replaceAll("127.0.0.1:4000", `127.0.0.1:${receiverPort}`).replace(".listen(4000,", `.listen(${receiverPort},`);

/** Runs a line in bash in the copy; its output so far, and its exit. */
function bash(script: string): { child: ChildProcess; output: () => string; stderr: () => string; exited: Promise<number | null> } {
  const child = spawn("bash", ["-c", script], { cwd: copy, env: readerEnv(), stdio: ["ignore", "pipe", "pipe"] });
  let out = "";
  let err = "";
  child.stdout!.on("data", (d) => (out += d));
  child.stderr!.on("data", (d) => (err += d));
  const exited = new Promise<number | null>((resolve) => child.once("close", (code) => resolve(code)));
  return { child, output: () => out, stderr: () => err, exited };
}

/** The first terminal: the guide's npm start line. Resolves with the key of the `export KEY=` line it printed. */
async function startDemo(line: string): Promise<string> {
  const run = bash(line);
  demo = { npm: run.child, output: run.output };
  const deadline = Date.now() + 240_000;
  for (;;) {
    const m = /^ {2}export KEY=(gcs_\S+)$/m.exec(run.output());
    if (m) return m[1];
    if (run.child.exitCode !== null || Date.now() > deadline) throw new Error(`npm start printed no export KEY= line: ${run.output()}${run.stderr()}`);
    await new Promise((r) => setTimeout(r, 200));
  }
}

/** Live processes this test started, found by the data directory in their environment, whose command line (arguments NUL-separated) matches. */
function ours(command: RegExp): number[] {
  const pids: number[] = [];
  for (const entry of readdirSync("/proc")) {
    if (!/^\d+$/.test(entry)) continue;
    try {
      const environ = readFileSync(`/proc/${entry}/environ`, "utf8");
      const cmdline = readFileSync(`/proc/${entry}/cmdline`, "utf8");
      if (environ.includes(`GCS_DATA_DIR=${dataDir}\0`) && command.test(cmdline)) pids.push(Number(entry));
    } catch {
      // gone, or not ours to read
    }
  }
  return pids;
}

async function until(check: () => boolean | Promise<boolean>, ms: number, what: string): Promise<void> {
  const deadline = Date.now() + ms;
  while (!(await check())) {
    if (Date.now() > deadline) throw new Error(`not in ${ms} ms: ${what}`);
    await new Promise((r) => setTimeout(r, 100));
  }
}

const get = (p: string, token: string) => fetch(`http://127.0.0.1:${port}${p}`, { headers: { Authorization: `Bearer ${token}` } });

beforeAll(async () => {
  copy = mkdtempSync(path.join(os.tmpdir(), "gcs-walkthrough-"));
  // A clone after `npm ci`: the tracked files (and the generated Prisma client), node_modules shared.
  const skip = new Set(["node_modules", ".git", ".data", "dist", "coverage", "test", "bench"].map((d) => path.join(ROOT, d)));
  cpSync(ROOT, copy, { recursive: true, filter: (src) => !skip.has(src) });
  symlinkSync(path.join(ROOT, "node_modules"), path.join(copy, "node_modules"));
  dataDir = path.join(copy, ".data", "pglite");
  [port, receiverPort] = [await freePort(), await freePort()];
});

afterAll(async () => {
  for (const pid of ours(/./)) process.kill(pid, "SIGKILL");
  rmSync(copy, { recursive: true, force: true });
});

it("runs as printed: npm start, the key exported, the endpoint made, the receiver verifies what gcs simulate changes, the stream shows it", async () => {
  const { start, lines, receiver } = walkthrough();
  expect(start).toBe("GCS_WEBHOOKS_ALLOW_PRIVATE=true npm start");
  key = await startDemo(start);

  writeFileSync(path.join(copy, "receiver.mjs"), onOurPorts(receiver));
  const exportLine = /^export KEY=gcs_….*$/m.exec(lines);
  expect(exportLine).not.toBeNull();
  const script = onOurPorts(lines.replace(exportLine![0], `export KEY=${key}`));
  const second = bash(script);
  // The curl -N stream runs until Ctrl-C: pressed once the receiver verified events and the stream showed them.
  await until(() => /^verified /m.test(second.output()) && /^data: \{/m.test(second.output()), 120_000, `events at the receiver and on the stream: ${second.output()}${second.stderr()}`);
  const [curl] = ours(/^curl\0.*events\/stream/);
  expect(curl).toBeDefined();
  process.kill(curl, "SIGINT");
  expect(await second.exited).toBe(0); // kill %1 %2 found both jobs

  const verified = second.output().split("\n").filter((l) => l.startsWith("verified "));
  for (const line of verified) expect(line).toMatch(/^verified (reservation|guest_profile)\.updated [0-9a-f-]{36} \{"(status|city|vip_code)":"[^"]+"\}$/);
  expect(second.stderr()).not.toMatch(/MODULE_TYPELESS_PACKAGE_JSON|Expected secret|Error/);
  // The receiver and the simulator stopped with kill %1 %2 (the simulator through npx: it follows its npm parent).
  await until(() => ours(RECEIVER).length === 0 && ours(SIMULATE).length === 0, 10_000, "receiver and simulator stopped");

  // What the receiver verified is what /v1 answers (the latest event of each row, read from the log).
  const [, type, id] = /^verified (\w+)\.updated (\S+)/.exec(verified[verified.length - 1])!;
  const events = (await (await get(`/v1/events?entity_type=${type}&entity_id=${id}&limit=100`, key)).json()) as { data: { delta: Record<string, unknown> }[] };
  const row = (await (await get(type === "reservation" ? `/v1/reservations/${id}` : `/v1/guests/${id}`, key)).json()) as { data: Record<string, unknown> };
  expect(row.data).toMatchObject(events.data[events.data.length - 1].delta);
}, 420_000);

it("npm start stopped by a SIGTERM to npm stops the server; the next start prints the same key, and the reader's own key works", async () => {
  const group = /npx gcs keys create --group ([0-9a-f-]{36}) /.exec(demo!.output())![1];
  const made = bash(`npx gcs keys create --group ${group} --name "my key" --scopes read:guests --json`);
  expect(await made.exited).toBe(0);
  const mine = JSON.parse(made.output()).key as string;

  const npm = demo!.npm;
  expect(readFileSync(`/proc/${npm.pid}/cmdline`, "utf8")).toMatch(/npm/); // bash ran npm in its place
  expect(ours(SERVER)).toHaveLength(1);
  npm.kill("SIGTERM");
  await until(() => ours(SERVER).length === 0, 30_000, "the server exited after npm");
  expect(existsSync(path.join(dataDir, "gcs.lock"))).toBe(false);
  await expect(fetch(`http://127.0.0.1:${port}/healthz`)).rejects.toThrow();

  expect(await startDemo(walkthrough().start)).toBe(key);
  expect((await get("/v1/guests?limit=1", key)).status).toBe(200);
  expect((await get("/v1/guests?limit=1", mine)).status).toBe(200);
  const endpoints = (await (await get("/v1/webhook-endpoints", key)).json()) as { data: { url: string }[] };
  expect(endpoints.data.map((e) => e.url)).toEqual([`http://127.0.0.1:${receiverPort}/hooks/gcs`]);
}, 300_000);

it("npx gcs fixtures, as the README suggests, against the running demo: the demo key, the reader's keys and endpoint keep working, and it says so", async () => {
  const fixtures = bash("npx gcs fixtures --out manifest.json");
  expect(await fixtures.exited).toBe(0);
  expect(fixtures.stderr()).toContain("kept 2 API keys and 1 webhook endpoint made outside the fixtures (they work as before)\n");
  expect((await get("/v1/guests?limit=1", key)).status).toBe(200);
  const endpoints = (await (await get("/v1/webhook-endpoints", key)).json()) as { data: unknown[] };
  expect(endpoints.data).toHaveLength(1);

  demo!.npm.kill("SIGTERM");
  await until(() => ours(SERVER).length === 0, 30_000, "the server exited after npm");
}, 300_000);
