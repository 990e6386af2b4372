// The MCP Inspector CLI (@modelcontextprotocol/inspector 2.x, a devDependency) against a real
// `gcs serve` process, as an operator or a CI job would check a deployment: it connects over
// streamable HTTP with an API key, lists the tools and calls one. Both run on the project's Node 24.
import { execFile } from "node:child_process";
import { existsSync, mkdtempSync, readFileSync, rmSync } from "node:fs";
import os from "node:os";
import path from "node:path";
import { documentedMcpTools } from "../../src/docs/mcp-tools";
import type { FixtureManifest } from "../../src/fixtures";
import { cloneTemplateDatabase, loadManifest } from "../helpers/app";
import { serve, type ServeProcess } from "../helpers/serve";

const ROOT = path.resolve(__dirname, "../..");
const NODE = path.join(ROOT, "node_modules/.bin/node");
const PACKAGE = path.join(ROOT, "node_modules/@modelcontextprotocol/inspector");
if (!existsSync(PACKAGE)) throw new Error("@modelcontextprotocol/inspector is missing: it is a devDependency, run npm ci");
const CLI = path.join(PACKAGE, JSON.parse(readFileSync(path.join(PACKAGE, "package.json"), "utf8")).bin["mcp-inspector"]);

let server: ServeProcess;
let clone: Awaited<ReturnType<typeof cloneTemplateDatabase>>;
let manifest: FixtureManifest;
let home: string;

beforeAll(async () => {
  clone = await cloneTemplateDatabase();
  manifest = loadManifest();
  server = await serve({ DATABASE_URL: clone.url });
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

/**
 * `mcp-inspector --cli <server>/mcp --method …` with the bearer header. `--format json` prints
 * `{"result": …}` on stdout or `{"error": {code, message}}` on stderr; `--stored-auth-only` makes a
 * refused credential exit 3 instead of starting the interactive OAuth flow.
 */
function inspector(token: string, ...args: string[]): Promise<CliResult> {
  const argv = [
    CLI, "--cli", `${server.url}/mcp`, "--transport", "http", "--header", `Authorization: Bearer ${token}`,
    "--format", "json", "--stored-auth-only", ...args,
  ];
  const env = { PATH: process.env.PATH, HOME: home, MCP_CATALOG_PATH: path.join(home, "mcp.json"), MCP_CLIENT_CONFIG_PATH: path.join(home, "client.json") };
  return new Promise((resolve) => {
    execFile(NODE, argv, { env, timeout: 30_000 }, (err, stdout, stderr) =>
      resolve({ code: err ? ((err as { code?: number }).code ?? null) : 0, stdout, stderr }),
    );
  });
}

const key = () => manifest.groups.A.credentials.api_key;

describe("the MCP Inspector CLI against gcs serve", () => {
  it("lists every tool, each with a description, an object input schema and the read-only hint; --strict finds no unportable schema", async () => {
    // --strict exits 6 when a tool schema has an error-severity portability problem.
    const run = await inspector(key(), "--method", "tools/list", "--strict");
    expect({ code: run.code, stderr: run.stderr }).toEqual({ code: 0, stderr: expect.any(String) });
    type Tool = { name: string; description?: string; inputSchema: { type: string }; annotations?: { readOnlyHint?: boolean } };
    const { tools } = (JSON.parse(run.stdout) as { result: { tools: Tool[] } }).result;
    expect(tools.map((t) => t.name).sort()).toEqual(documentedMcpTools().map((t) => t.name).sort());
    for (const tool of tools) {
      expect(tool.description).toEqual(expect.any(String));
      expect(tool.inputSchema.type).toBe("object");
    }
    expect(tools.filter((t) => t.annotations?.readOnlyHint === true).map((t) => t.name).sort()).toEqual(
      documentedMcpTools().filter((t) => t.readOnly).map((t) => t.name).sort(),
    );
  });

  it("calls a tool and gets the REST body back", async () => {
    // list_records stands for list_properties (which answers too, unlisted; the Inspector calls only listed tools).
    const run = await inspector(key(), "--method", "tools/call", "--tool-name", "list_records", "--tool-args-json", JSON.stringify({ type: "properties" }));
    expect({ code: run.code, stderr: run.stderr }).toEqual({ code: 0, stderr: expect.any(String) });
    const { result } = JSON.parse(run.stdout) as { result: { isError?: boolean; content: { type: string; text: string }[] } };
    expect(result.isError).not.toBe(true);
    const body = JSON.parse(result.content[0].text) as { data: { id: string }[] };
    expect(body.data.map((p) => p.id).sort()).toEqual([...manifest.groups.A.properties].sort());
  });

  it("a tool error (the REST error body) exits 5, tool_error", async () => {
    const run = await inspector(key(), "--method", "tools/call", "--tool-name", "list_records", "--tool-args-json", JSON.stringify({ type: "guests", source_id: "x" }));
    expect(run.code).toBe(5);
    expect(run.stdout + run.stderr).toContain("source_id requires integration_id");
  });

  it("an unknown key exits 3, auth_required, with the service's 401 body", async () => {
    const run = await inspector("gcs_not-a-real-key", "--method", "tools/list");
    expect(run.code).toBe(3);
    expect(JSON.parse(run.stderr).error).toMatchObject({ code: "auth_required", message: expect.stringContaining('"error":"unauthorized"') });
  });
});
