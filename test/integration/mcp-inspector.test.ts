// The MCP Inspector CLI (@modelcontextprotocol/inspector, a devDependency) against a real `gcs serve`
// process, as an operator or a CI job would check a deployment: it connects over streamable HTTP with
// an API key, lists the tools and calls one. Both run on the project's Node 24.
import { execFile } from "node:child_process";
import { mkdtempSync, readFileSync, rmSync } from "node:fs";
import os from "node:os";
import path from "node:path";
import { documentedMcpTools } from "../../src/docs/mcp-tools";
import type { FixtureManifest } from "../../src/fixtures";
import { cloneTemplateDatabase, loadManifest } from "../helpers/app";
import { serve, type ServeProcess } from "../helpers/serve";

const ROOT = path.resolve(__dirname, "../..");
const NODE = path.join(ROOT, "node_modules/.bin/node");
const PACKAGE = path.join(ROOT, "node_modules/@modelcontextprotocol/inspector");
const CLI = path.join(PACKAGE, JSON.parse(readFileSync(path.join(PACKAGE, "package.json"), "utf8")).bin["mcp-inspector"]);

let server: ServeProcess;
let clone: Awaited<ReturnType<typeof cloneTemplateDatabase>>;
let manifest: FixtureManifest;
let home: string;

beforeAll(async () => {
  clone = await cloneTemplateDatabase();
  manifest = loadManifest();
  server = await serve({ DATABASE_URL: clone.url, LOG_LEVEL: "warn" });
  // The Inspector keeps a catalog and client settings under the home directory: a throwaway one.
  home = mkdtempSync(path.join(os.tmpdir(), "gcs-inspector-"));
});
afterAll(async () => {
  server?.child.kill("SIGTERM");
  await server?.exited;
  await clone?.drop();
  if (home) rmSync(home, { recursive: true, force: true });
});

interface CliResult {
  code: number | null;
  stdout: string;
  stderr: string;
}

/** `mcp-inspector --cli <server>/mcp --method …` with the bearer header, JSON output. */
function inspector(token: string, ...args: string[]): Promise<CliResult> {
  const argv = [CLI, "--cli", `${server.url}/mcp`, "--transport", "http", "--header", `Authorization: Bearer ${token}`, "--format", "json", ...args];
  const env = { PATH: process.env.PATH, HOME: home, MCP_CATALOG_PATH: path.join(home, "mcp.json"), MCP_CLIENT_CONFIG_PATH: path.join(home, "client.json") };
  return new Promise((resolve) => {
    execFile(NODE, argv, { env, timeout: 30_000 }, (err, stdout, stderr) =>
      resolve({ code: err ? ((err as { code?: number }).code ?? null) : 0, stdout, stderr }),
    );
  });
}

describe("the MCP Inspector CLI against gcs serve", () => {
  it("lists every tool, each with a description and an object input schema", async () => {
    const run = await inspector(manifest.groups.A.credentials.api_key, "--method", "tools/list");
    expect({ code: run.code, stderr: run.stderr }).toEqual({ code: 0, stderr: expect.any(String) });
    const { tools } = JSON.parse(run.stdout) as { tools: { name: string; description?: string; inputSchema: { type: string } }[] };
    expect(tools.map((t) => t.name).sort()).toEqual(documentedMcpTools().map((t) => t.name).sort());
    for (const tool of tools) {
      expect(tool.description).toEqual(expect.any(String));
      expect(tool.inputSchema.type).toBe("object");
    }
  });

  it("calls a tool and gets the REST body back", async () => {
    const run = await inspector(manifest.groups.A.credentials.api_key, "--method", "tools/call", "--tool-name", "list_properties");
    expect(run.code).toBe(0);
    const result = JSON.parse(run.stdout) as { isError?: boolean; content: { type: string; text: string }[] };
    expect(result.isError).not.toBe(true);
    const body = JSON.parse(result.content[0].text) as { data: { id: string }[] };
    expect(body.data.map((p) => p.id).sort()).toEqual([...manifest.groups.A.properties].sort());
  });

  it("fails with exit code 1 and the 401 when the key is unknown", async () => {
    const run = await inspector("gcs_not-a-real-key", "--method", "tools/list");
    expect(run.code).not.toBe(0);
    expect(run.stdout + run.stderr).toMatch(/401|unauthorized/i);
  });
});
