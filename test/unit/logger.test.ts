// The log format: pretty at a terminal, JSON anywhere else, LOG_FORMAT overriding both; JSON lines
// batched on standard output.
import { spawn } from "node:child_process";
import path from "node:path";
import { loadConfig } from "../../src/config";
import { chooseLogFormat, createLogger } from "../../src/logger";

describe("chooseLogFormat", () => {
  it("is pretty at a terminal and JSON in files, pipes and collectors", () => {
    expect(chooseLogFormat(undefined, true)).toBe("pretty");
    expect(chooseLogFormat(undefined, false)).toBe("json");
    expect(chooseLogFormat(undefined, undefined)).toBe("json"); // process.stdout.isTTY is undefined when piped
  });

  it("follows LOG_FORMAT either way", () => {
    expect(chooseLogFormat("json", true)).toBe("json");
    expect(chooseLogFormat("pretty", false)).toBe("pretty");
    expect(chooseLogFormat(loadConfig({ LOG_FORMAT: "json" }).logFormat, true)).toBe("json");
    expect(loadConfig({}).logFormat).toBeUndefined();
    expect(() => loadConfig({ LOG_FORMAT: "yaml" })).toThrow(/LOG_FORMAT/);
  });
});

describe("createLogger", () => {
  it("redacts fields named like a secret, at the top level and one level down", () => {
    const lines: string[] = [];
    const logger = createLogger("info", "json", { write: (line: string) => lines.push(line) });
    logger.info({ token: "gcs_top", secret: "s1", password: "p1", authorization: "Bearer x", key: { token: "gcs_nested" }, headers: { authorization: "Bearer y" } }, "hello");
    const entry = JSON.parse(lines[0]);
    expect(lines[0]).not.toMatch(/gcs_top|gcs_nested|s1|p1|Bearer/);
    expect(entry).toMatchObject({ token: "[redacted]", secret: "[redacted]", password: "[redacted]", key: { token: "[redacted]" }, msg: "hello" });
  });
});

describe("JSON lines on standard output", () => {
  /** A process that logs `before`, waits, logs one more line and exits at once; its stdout as lines, with when each chunk came. */
  function logInChild(waitMs: number): Promise<{ chunks: { at: number; text: string }[]; exitedAt: number }> {
    const script = `require("tsx/cjs/api").register();
      const { createLogger } = require("./src/logger.ts");
      const log = createLogger("info", "json");
      for (let i = 0; i < 3; i++) log.info({ i }, "before");
      setTimeout(() => { log.info("last"); process.exit(0); }, ${waitMs});`;
    return new Promise((resolve, reject) => {
      const started = Date.now();
      const child = spawn(process.execPath, ["-e", script], { cwd: path.resolve(__dirname, "../.."), stdio: ["ignore", "pipe", "inherit"] });
      const chunks: { at: number; text: string }[] = [];
      child.stdout.on("data", (d: Buffer) => chunks.push({ at: Date.now() - started, text: d.toString() }));
      child.on("error", reject);
      child.on("close", () => resolve({ chunks, exitedAt: Date.now() - started }));
    });
  }

  it("are written in batches within a quarter second, and the buffered rest when the process exits", async () => {
    const { chunks } = await logInChild(1500);
    const lines = chunks.flatMap((c) => c.text.split("\n").filter(Boolean).map((l) => ({ at: c.at, ...JSON.parse(l) })));
    expect(lines.map((l) => l.msg)).toEqual(["before", "before", "before", "last"]);
    // The three lines came together, long before the last (they did not wait for the exit).
    expect(new Set(lines.slice(0, 3).map((l) => l.at)).size).toBe(1);
    expect(lines[3].at - lines[0].at).toBeGreaterThan(800);
  }, 30_000);
});
