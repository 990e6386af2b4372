// GET /llms.txt and the Markdown documents it links to (the llms.txt convention): served without a
// credential, linked to each other with every link and anchor resolving, naming every route of the
// OpenAPI document and every tool (and argument) that /mcp really lists, and carrying no secret.
import { DOC_PAGES } from "../../src/docs";
import { API_PAGE, LLMS_TXT, MARKDOWN_PAGES, MCP_PAGE, AUTH_PAGE } from "../../src/api/doc-pages";
import { slug } from "../../src/docs/pages";
import { generateOpenApi, routeKey } from "../../src/api/openapi";
import { routes } from "../../src/api/routes";
import { startTestApp, type TestApp } from "../helpers/app";

// Secrets the service holds, set here so the test knows them.
const CONFIGURED_SECRETS = {
  GCS_CURSOR_SECRET: "llms-test-cursor-secret-0123456789abcdef",
  GCS_SESSION_JWT_SECRET: "llms-test-session-secret-0123456789abcdef",
};

let t: TestApp;
const text = new Map<string, string>();

beforeAll(async () => {
  t = await startTestApp(CONFIGURED_SECRETS);
  for (const page of DOC_PAGES) {
    const res = await t.api.get(page.path); // no Authorization header
    expect(res.status).toBe(200);
    expect(res.headers["content-type"]).toBe(`${page.contentType}; charset=utf-8`);
    text.set(page.path, res.text);
  }
});
afterAll(() => t.close());

const page = (p: { path: string }) => text.get(p.path)!;

/** Every Markdown link target of a text: `[label](target)`. */
const links = (markdown: string) => [...markdown.matchAll(/\]\(([^)\s]+)\)/g)].map((m) => m[1]);

const headings = (markdown: string) => new Set([...markdown.matchAll(/^#{1,6} (.+)$/gm)].map((m) => slug(m[1])));

const documentedRoutes = Object.entries(generateOpenApi().document.paths).flatMap(([path, ops]) =>
  Object.keys(ops).map((method) => `${method.toUpperCase()} ${path}`),
);

async function servedTools() {
  const res = await t.api
    .post("/mcp")
    .set("Authorization", `Bearer ${t.manifest.groups.A.credentials.api_key}`)
    .set("Accept", "application/json, text/event-stream")
    .send({ jsonrpc: "2.0", id: 1, method: "tools/list" });
  expect(res.status).toBe(200);
  return res.body.result.tools as { name: string; inputSchema: { properties?: Record<string, unknown> } }[];
}

describe("GET /llms.txt", () => {
  it("follows the llms.txt format: a title, a summary, prose, then sections of link lists", () => {
    const lines = page(LLMS_TXT).split("\n");
    expect(lines[0]).toBe("# Guest Context Service");
    expect(lines[2]).toMatch(/^> \S/);
    const sections = lines.filter((l) => l.startsWith("## "));
    expect(sections).toEqual(["## Docs", "## MCP tools", "## REST routes", "## Optional"]);
    const afterFirstSection = lines.slice(lines.indexOf("## Docs"));
    for (const line of afterFirstSection.filter((l) => l && !l.startsWith("## "))) expect(line).toMatch(/^- \[[^\]]+\]\([^)\s]+\): \S/);
    expect(page(LLMS_TXT)).toContain("Authorization: Bearer <token>");
  });

  it("links to every Markdown document, and each links to llms.txt and to the others", () => {
    expect(links(page(LLMS_TXT))).toEqual(expect.arrayContaining(MARKDOWN_PAGES.map((p) => p.path)));
    for (const doc of MARKDOWN_PAGES) {
      const targets = links(page(doc));
      expect(targets).toEqual(expect.arrayContaining(DOC_PAGES.filter((p) => p !== doc).map((p) => p.path)));
      expect(page(doc)).toMatch(/^# \S.*\n\n> \S/);
    }
  });

  it("every link of every document resolves, anchors included, without a credential", async () => {
    const checked: string[] = [];
    for (const doc of DOC_PAGES) {
      for (const target of new Set(links(page(doc)))) {
        const [path, anchor] = target.split("#");
        const resolved = path || doc.path;
        expect(resolved.startsWith("/")).toBe(true); // relative to this service, never elsewhere
        const res = await t.api.get(resolved);
        expect({ target, status: res.status }).toEqual({ target, status: 200 });
        if (anchor !== undefined) {
          expect(text.has(resolved)).toBe(true);
          expect({ target, anchor: headings(text.get(resolved)!).has(anchor) }).toEqual({ target, anchor: true });
        }
        checked.push(target);
      }
    }
    expect(checked.length).toBeGreaterThan(documentedRoutes.length);
  });
});

describe("the documents name everything", () => {
  it("every route of the route table and the OpenAPI document, in llms.txt, api.md and auth.md", () => {
    const keys = new Set([...routes.map(routeKey), ...documentedRoutes]);
    expect(keys.size).toBe(documentedRoutes.length);
    for (const key of keys) {
      expect({ key, llms: page(LLMS_TXT).includes(`- [${key}](${API_PAGE.path}#${slug(key)}): `) }).toEqual({ key, llms: true });
      expect({ key, api: page(API_PAGE).includes(`\n#### ${key}\n`) }).toEqual({ key, api: true });
      expect({ key, auth: page(AUTH_PAGE).includes(`[${key}](`) }).toEqual({ key, auth: true });
    }
  });

  it("the scope of every route, in api.md", () => {
    for (const route of routes) {
      const section = page(API_PAGE).split(`\n#### ${routeKey(route)}\n`)[1].split("\n#### ")[0];
      expect(section).toContain(`Scope \`${route.scope}\`.`);
      for (const name of [...Object.keys(route.pathParams ?? {}), ...Object.keys(route.query ?? {}), ...Object.keys(route.body ?? {})]) {
        expect(section).toContain(`| \`${name}\` |`);
      }
    }
  });

  it("every tool /mcp lists, with each of its arguments, in llms.txt and mcp.md", async () => {
    const tools = await servedTools();
    expect(tools.length).toBeGreaterThan(0);
    for (const tool of tools) {
      expect({ tool: tool.name, llms: page(LLMS_TXT).includes(`- [${tool.name}](${MCP_PAGE.path}#${slug(tool.name)}): `) }).toEqual({ tool: tool.name, llms: true });
      const section = page(MCP_PAGE).split(`\n### ${tool.name}\n`)[1]?.split("\n### ")[0];
      expect({ tool: tool.name, documented: section !== undefined }).toEqual({ tool: tool.name, documented: true });
      for (const argument of Object.keys(tool.inputSchema.properties ?? {})) expect(section).toContain(`| \`${argument}\` |`);
    }
    // And no tool that the server does not have.
    const documented = [...page(MCP_PAGE).matchAll(/^### (\S+)$/gm)].map((m) => m[1]);
    expect(documented.sort()).toEqual(tools.map((x) => x.name).sort());
  });
});

describe("the MCP OAuth connector flow", () => {
  it("auth.md walks through it, and llms.txt and mcp.md link there", () => {
    const auth = page(AUTH_PAGE);
    for (const step of [
      'WWW-Authenticate: Bearer resource_metadata="',
      "/.well-known/oauth-protected-resource",
      "/.well-known/oauth-authorization-server",
      "POST /register",
      "GET /authorize",
      "`S256` only",
      "pasting an API key of the group",
      "POST /token",
      "valid 1 hour",
      "POST /revoke",
      "gcs connectors revoke",
      "GCS_PUBLIC_URL",
    ]) {
      expect({ step, described: auth.includes(step) }).toEqual({ step, described: true });
    }
    for (const doc of [LLMS_TXT, MCP_PAGE]) expect(links(page(doc))).toContain(`${AUTH_PAGE.path}#${slug("MCP connectors (OAuth)")}`);
  });
});

describe("no secret", () => {
  it("no credential of the fixtures, no configured secret, no database URL, nothing shaped like a token", () => {
    const secrets: string[] = [...Object.values(CONFIGURED_SECRETS), t.databaseUrl];
    const collect = (value: unknown): void => {
      if (typeof value === "string") secrets.push(value);
      else if (value && typeof value === "object") Object.values(value).forEach(collect);
    };
    for (const group of Object.values(t.manifest.groups)) collect(group.credentials);
    expect(secrets.length).toBeGreaterThan(5);
    for (const doc of DOC_PAGES) {
      const body = page(doc);
      expect(secrets.filter((s) => s.length >= 12 && body.includes(s))).toEqual([]);
      expect(body).not.toMatch(/\bgcs(p|ps|m|t)?_[A-Za-z0-9_-]{12,}/);
      expect(body).not.toMatch(/eyJ[A-Za-z0-9_-]{10,}\./); // a JWT
    }
  });
});
