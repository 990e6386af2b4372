// Runs the `gcs` command line as an operator would (`bin/gcs.js` under the repository's Node) against
// a test database, and collects its exit code and output; `stdin` is written to it and closed.
import { spawn } from "node:child_process";
import path from "node:path";

const ROOT = path.resolve(__dirname, "../..");
const NODE = path.join(ROOT, "node_modules/.bin/node");
const GCS = path.join(ROOT, "bin/gcs.js");

export interface GcsOutcome {
  code: number | null;
  stdout: string;
  stderr: string;
}

export function runGcs(databaseUrl: string, args: string[], stdin = ""): Promise<GcsOutcome> {
  return new Promise((resolve) => {
    const child = spawn(NODE, [GCS, ...args], { cwd: ROOT, env: { ...process.env, DATABASE_URL: databaseUrl, LOG_LEVEL: "silent" } });
    let stdout = "";
    let stderr = "";
    child.stdout.on("data", (d) => (stdout += d));
    child.stderr.on("data", (d) => (stderr += d));
    child.on("close", (code) => resolve({ code, stdout, stderr }));
    child.stdin.end(stdin);
  });
}
