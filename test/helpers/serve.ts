// The real server process, as an operator starts it: `node bin/gcs.js serve` with its configuration
// in the environment. Its log (pino JSON on stdout) is collected line by line for assertions.
import { spawn, type ChildProcess } from "node:child_process";
import path from "node:path";

const ROOT = path.resolve(__dirname, "../..");
const NODE = path.join(ROOT, "node_modules/.bin/node");

export interface LogLine {
  level: number;
  msg: string;
  [field: string]: unknown;
}

export interface ServeProcess {
  child: ChildProcess;
  url: string;
  /** Every log line so far. */
  log: LogLine[];
  /** Everything written to stdout and stderr so far, as written. */
  output(): string;
  /** The exit code (null when ended by a signal). */
  exited: Promise<number | null>;
}

export async function serve(env: Record<string, string>): Promise<ServeProcess> {
  const child = spawn(NODE, [path.join(ROOT, "bin/gcs.js"), "serve"], {
    cwd: ROOT,
    env: { ...process.env, NODE_ENV: "test", HOST: "127.0.0.1", PORT: "0", LOG_LEVEL: "info", GCS_DELIVERY_WORKER: "false", GCS_ROLLUP_REFRESH_MS: "0", ...env },
    stdio: ["ignore", "pipe", "pipe"],
  });
  const log: LogLine[] = [];
  let stderr = "";
  const exited = new Promise<number | null>((resolve) => child.once("exit", (code) => resolve(code)));
  child.stderr!.on("data", (d) => (stderr += d));
  let stdout = "";
  let buffered = "";
  const port = new Promise<number>((resolve, reject) => {
    child.stdout!.on("data", (d: Buffer) => {
      stdout += d.toString();
      buffered += d.toString();
      const lines = buffered.split("\n");
      buffered = lines.pop()!;
      for (const line of lines) {
        if (!line.startsWith("{")) continue;
        const entry = JSON.parse(line) as LogLine;
        log.push(entry);
        if (entry.msg === "listening") resolve(entry.port as number);
      }
    });
    void exited.then((code) => reject(new Error(`gcs serve exited with ${code} before listening: ${stderr}`)));
  });
  return { child, url: `http://127.0.0.1:${await port}`, log, output: () => stdout + stderr, exited };
}

/**
 * Waits for an embedded `gcs serve` (stdout piped) to print its demo banner; gives its demo key and
 * base URL. Rejects with what it printed when it exits first or prints nothing within `timeoutMs`.
 */
export function demoBanner(server: ChildProcess, timeoutMs: number): Promise<{ key: string; base: string }> {
  let out = "";
  return new Promise((resolve, reject) => {
    const timer = setTimeout(() => reject(new Error(`serve did not print its demo banner: ${out}`)), timeoutMs);
    server.stdout!.on("data", (chunk) => {
      out += chunk;
      const m = /curl -s -H "Authorization: Bearer (gcs_\S+)" "(http:\/\/localhost:\d+)/.exec(out);
      if (m) {
        clearTimeout(timer);
        resolve({ key: m[1], base: m[2] });
      }
    });
    server.once("exit", (code) => reject(new Error(`serve exited with ${code}: ${out}`)));
  });
}

/** Stops a spawned server with SIGTERM (its drain) and waits for it to exit; nothing when it has exited already. */
export async function stopProcess(server: ChildProcess | undefined): Promise<void> {
  if (!server || server.exitCode !== null || server.signalCode !== null) return;
  const exited = new Promise((r) => server.once("exit", r));
  server.kill("SIGTERM");
  await exited;
}
