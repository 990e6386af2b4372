// `gcs serve`'s first start on the embedded database when the child process that prepares the data
// directory (initdb, migrations, demo data) fails: a one-line error, exit code 1, and nothing left
// that a later start would take for a finished database. PGlite runs in child processes (see
// embedded.test.ts).
import { spawn, type ChildProcess } from "node:child_process";
import { existsSync, mkdirSync, mkdtempSync, readdirSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import os from "node:os";
import path from "node:path";
import { processTree } from "../../bench/embedded-memory";
import { demoBanner, stopProcess } from "../helpers/serve";

const ROOT = path.resolve(__dirname, "../..");
const NODE = path.join(ROOT, "node_modules/.bin/node");
const GCS = path.join(ROOT, "bin/gcs.js");

let dir: string;
let dataDir: string;
const started: ChildProcess[] = [];

function startServe(): { server: ChildProcess; exit: Promise<{ code: number | null; stderr: string }> } {
  const env: NodeJS.ProcessEnv = { ...process.env, GCS_DATA_DIR: dataDir, LOG_LEVEL: "warn", PORT: "0", HOST: "127.0.0.1" };
  delete env.DATABASE_URL;
  const server = spawn(NODE, [GCS, "serve"], { cwd: ROOT, env, stdio: ["ignore", "pipe", "pipe"] });
  started.push(server);
  let stderr = "";
  server.stderr!.on("data", (chunk) => (stderr += chunk));
  const exit = new Promise<{ code: number | null; stderr: string }>((resolve) => server.once("close", (code) => resolve({ code, stderr })));
  return { server, exit };
}

/** The pid of the server's preparing child, once it runs. */
async function preparingChild(server: ChildProcess): Promise<number> {
  for (let i = 0; i < 600; i++) {
    const child = processTree(server.pid!).find((pid) => pid !== server.pid && readFileSync(`/proc/${pid}/cmdline`, "utf8").includes("prepare-embedded"));
    if (child) return child;
    await new Promise((r) => setTimeout(r, 50));
  }
  throw new Error("serve started no preparing child");
}

beforeEach(() => {
  dir = mkdtempSync(path.join(os.tmpdir(), "gcs-first-start-"));
  dataDir = path.join(dir, "pglite");
});

afterEach(async () => {
  for (const server of started.splice(0)) await stopProcess(server);
  rmSync(dir, { recursive: true, force: true });
});

it("a preparing child that dies: one line, exit code 1, the directory emptied; the next start prepares it afresh", async () => {
  const first = startServe();
  process.kill(await preparingChild(first.server), "SIGKILL");
  const { code, stderr } = await first.exit;
  expect(code).toBe(1);
  expect(stderr).toBe(`gcs: could not prepare the embedded database in ${dataDir}: the preparing process was ended by SIGKILL\n`);
  expect(readdirSync(dataDir)).toEqual([]);

  const second = startServe();
  const { key, base } = await demoBanner(second.server, 180_000);
  const res = await fetch(`${base}/v1/guests?limit=2`, { headers: { Authorization: `Bearer ${key}` } });
  expect(res.status).toBe(200);
  expect(existsSync(path.join(dataDir, "gcs-ready"))).toBe(true);
}, 240_000);

it("a creation whose server was killed is started over, not served", async () => {
  // What a killed first start leaves: its creation marker and part of a database, no ready marker.
  mkdirSync(path.join(dataDir, "base"), { recursive: true });
  writeFileSync(path.join(dataDir, "PG_VERSION"), "17\n");
  writeFileSync(path.join(dataDir, "gcs-creating"), JSON.stringify({ pid: 1 }));
  const { server } = startServe();
  const { key, base } = await demoBanner(server, 180_000);
  expect((await fetch(`${base}/v1/guests?limit=2`, { headers: { Authorization: `Bearer ${key}` } })).status).toBe(200);
  expect(existsSync(path.join(dataDir, "gcs-creating"))).toBe(false);
}, 240_000);

it("refuses to create a database in a directory that holds other files, and leaves them alone", async () => {
  mkdirSync(dataDir);
  writeFileSync(path.join(dataDir, "notes.txt"), "mine");
  const { code, stderr } = await startServe().exit;
  expect(code).toBe(1);
  expect(stderr).toBe(`gcs: ${dataDir} holds files but no embedded database (notes.txt): empty it, or set GCS_DATA_DIR to another directory\n`);
  expect(readdirSync(dataDir)).toEqual(["notes.txt"]);
}, 60_000);
