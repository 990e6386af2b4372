// The embedded demo's memory: `npm start`'s command (its node flags included) on an empty data
// directory, so PGlite's initdb and the demo data load both run, then requests, then idle. The bound
// is generous (machines differ): it holds the start-up settings in place (shared_buffers, the first
// start's preparation in a child process, V8's flags), without which the process idles near 600 MB.
// bench/embedded-memory.ts measures the whole story (load, restart, start times).
import { spawn, type ChildProcess } from "node:child_process";
import { existsSync, mkdtempSync, readFileSync, rmSync } from "node:fs";
import os from "node:os";
import path from "node:path";
import { treeRssMb } from "../../bench/embedded-memory";
import { demoBanner, stopProcess } from "../helpers/serve";

const ROOT = path.resolve(__dirname, "../..");
const NODE = path.join(ROOT, "node_modules/.bin/node");
const STEADY_BOUND_MB = 300;

/** `npm start` as package.json has it: node, its flags, bin/gcs.js serve. */
function startCommand(): string[] {
  const script: string = JSON.parse(readFileSync(path.join(ROOT, "package.json"), "utf8")).scripts.start;
  const [node, ...args] = script.split(/\s+/);
  if (node !== "node") throw new Error(`start should run node, not ${node}`);
  return args.map((arg) => (arg.startsWith("bin/") ? path.join(ROOT, arg) : arg));
}

let dir: string;
let server: ChildProcess;
let base = "";
let key = "";
let stdout = "";

beforeAll(async () => {
  dir = mkdtempSync(path.join(os.tmpdir(), "gcs-embedded-memory-"));
  const env: NodeJS.ProcessEnv = { ...process.env, GCS_DATA_DIR: path.join(dir, "pglite"), LOG_LEVEL: "info", PORT: "0", HOST: "127.0.0.1" };
  delete env.DATABASE_URL;
  server = spawn(NODE, startCommand(), { cwd: ROOT, env, stdio: ["ignore", "pipe", "pipe"] });
  server.stdout!.on("data", (chunk) => (stdout += chunk));
  ({ key, base } = await demoBanner(server, 180_000));
}, 200_000);

afterAll(async () => {
  await stopProcess(server);
  rmSync(dir, { recursive: true, force: true });
});

it(`a first start with the demo data, then requests: the process tree idles under ${STEADY_BOUND_MB} MB`, async () => {
  const auth = { authorization: `Bearer ${key}` };
  const nested = "{ guests(limit: 100) { nodes { id reservations { id status } transactions { id amountMinor } } } }";
  for (let round = 0; round < 4; round++) {
    const answers = await Promise.all(
      Array.from({ length: 8 }, (_, i) =>
        i % 2
          ? fetch(`${base}/v1/guests?limit=100`, { headers: auth })
          : fetch(`${base}/graphql`, { method: "POST", headers: { ...auth, "content-type": "application/json" }, body: JSON.stringify({ query: nested }) }),
      ),
    );
    expect(answers.map((r) => r.status)).toEqual(Array(8).fill(200));
    await Promise.all(answers.map((r) => r.text()));
  }
  await new Promise((r) => setTimeout(r, 3000));
  expect(treeRssMb(server.pid!)).toBeLessThan(STEADY_BOUND_MB);
}, 60_000);

it("the first start's database and demo data are made by a child process; the server opens the finished directory", () => {
  const log = stdout.split("\n").filter((line) => line.startsWith("{")).map((line) => JSON.parse(line) as { pid: number; msg: string });
  const loading = log.find((l) => l.msg === "first start on the embedded database: loading demo data");
  const ready = log.find((l) => l.msg === "database ready");
  expect(ready?.pid).toBe(server.pid);
  expect(loading?.pid).toEqual(expect.any(Number));
  expect(loading!.pid).not.toBe(server.pid);
  // The child finished before the server opened the directory, and said so last.
  expect(log.indexOf(loading!)).toBeLessThan(log.indexOf(ready!));
  expect(existsSync(path.join(dir, "pglite", "gcs-ready"))).toBe(true);
  expect(existsSync(path.join(dir, "pglite", "gcs-creating"))).toBe(false);
});
