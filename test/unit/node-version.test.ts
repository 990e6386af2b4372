// Production runs on the Node it was built for: `gcs` (and so `npm run start:production` and the
// image's CMD, which run dist/cli/main.js) refuses an older Node with one line and exit code 1.
import { spawnSync } from "node:child_process";
import { readFileSync } from "node:fs";
import path from "node:path";
import { requiredMajor, unsupportedNode } from "../../src/cli/node-version";

const ROOT = path.resolve(__dirname, "../..");
const engines = (JSON.parse(readFileSync(path.join(ROOT, "package.json"), "utf8")) as { engines: { node: string } }).engines.node;

describe("the supported Node.js", () => {
  it("is package.json's engines.node, and the Dockerfile's base images are that major version, pinned", () => {
    expect(requiredMajor(engines)).toBe(24);
    const froms = [...readFileSync(path.join(ROOT, "Dockerfile"), "utf8").matchAll(/^FROM (\S+)/gm)].map((m) => m[1]);
    expect(froms.length).toBe(2);
    // The same release as the `node` dev dependency that development and the tests run on.
    const lock = JSON.parse(readFileSync(path.join(ROOT, "package-lock.json"), "utf8")) as { packages: Record<string, { version: string }> };
    for (const from of froms) expect(from).toBe(`node:${lock.packages["node_modules/node"].version}-bookworm-slim`);
  });

  it("refuses an older Node with one line naming both versions, and accepts the required one and later", () => {
    expect(unsupportedNode("v24.0.0", ">=24")).toBeUndefined();
    expect(unsupportedNode("v25.1.0", ">=24")).toBeUndefined();
    const line = unsupportedNode("v20.20.2", ">=24")!;
    expect(line).toMatch(/^gcs: Node\.js 24 or later is required .*this is v20\.20\.2/);
    expect(line).not.toContain("\n");
    expect(unsupportedNode("v22.12.0", ">=24")).toBeDefined();
  });

  it("the command exits 1 with that line on the system's older Node, and runs on this one", () => {
    const ok = spawnSync(process.execPath, [path.join(ROOT, "bin/gcs.js"), "--version"], { encoding: "utf8" });
    expect({ status: ok.status, out: ok.stdout.trim() }).toEqual({ status: 0, out: expect.stringMatching(/^\d+\.\d+\.\d+$/) });
    // Debian's Node (20 on these machines) stands for a production host with the wrong Node.
    const system = spawnSync("/usr/bin/node", ["--version"], { encoding: "utf8" });
    const olderSystemNode = system.status === 0 && Number(/^v(\d+)/.exec(system.stdout)![1]) < 24;
    const run = olderSystemNode
      ? spawnSync("/usr/bin/node", [path.join(ROOT, "bin/gcs.js"), "serve"], { encoding: "utf8", env: { ...process.env, PORT: "0" }, timeout: 30_000 })
      : { status: 1, stderr: `${unsupportedNode("v20.0.0", engines)}\n` };
    expect(run.status).toBe(1);
    expect(run.stderr.trim().split("\n")).toEqual([expect.stringMatching(/^gcs: Node\.js 24 or later is required/)]);
  }, 60_000);
});
