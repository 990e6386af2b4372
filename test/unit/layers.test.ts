// Issue 30: the layers of src/, top to bottom, as one table. A module may import its own layer or a
// lower one, never a higher one; the doors sit side by side and never import each other. Every
// folder and top-level file of src/ is in the table. docs/architecture.md shows the table and the
// exceptions below, rendered from here: `UPDATE_ARCHITECTURE_DOC=1 npx jest test/unit/layers.test.ts`
// writes them into the doc. Type-only imports count: a type is a dependency too.
import { readdirSync, readFileSync, writeFileSync } from "node:fs";
import path from "node:path";

interface Layer {
  name: string;
  /** Folders (`rest/`) and top-level files (`app.ts`) of src/. */
  units: string[];
  what: string;
  /** Units of this layer must not import one another (the doors). */
  siblings?: true;
}

const LAYERS: Layer[] = [
  { name: "entry", units: ["server.ts", "cli/"], what: "the process: listen and drain, the gcs command" },
  { name: "app", units: ["app.ts", "app/"], what: "createApp(): one named mount per door on Express" },
  {
    name: "doors",
    units: ["rest/", "mcp/", "oauth/", "openapi/", "docs/", "dashboard/"],
    what: "HTTP or JSON-RPC onto the catalogue; side by side, none imports another",
    siblings: true,
  },
  {
    name: "catalogue",
    units: ["api/"],
    what: "the route table, parameters, named operations, executor, descriptions, examples, MCP tool tables, the OpenAPI document",
  },
  { name: "graphql", units: ["graphql/"], what: "schema, resolvers, limits, the executors (graphql-jit, the JSON read path), /graphql/stream" },
  { name: "streams", units: ["streams/"], what: "the live event timeline for /v1/events/stream and /graphql/stream" },
  { name: "services", units: ["services.ts"], what: "the process's long-lived handles: database, config, logger, secrets, gates" },
  {
    name: "request and work",
    units: ["context.ts", "loaders/", "webhooks/", "delivery/", "rollups/", "fixtures/"],
    what: "the per-request context and loaders; webhooks, delivery and rollups (leases, never a held transaction); the fixture loader",
  },
  { name: "http", units: ["http/"], what: "what the doors share on HTTP: error responses, rate limits, the credential gate, headers" },
  { name: "auth", units: ["auth/"], what: "token → credential, X-Property-Id → scope, token material" },
  { name: "data", units: ["data/"], what: "one module per model: tenant rule, columns, row types, pages, batches; the unscoped stores" },
  { name: "db", units: ["db/"], what: "pools and Prisma clients, migrations, statement counting, database faults" },
  { name: "embedded", units: ["embedded/"], what: "the embedded PGlite server behind the demo (no DATABASE_URL); imports nothing of src/" },
  { name: "observability", units: ["observability/"], what: "request records, metrics, tracing" },
  {
    name: "shared",
    units: ["errors.ts", "validate.ts", "config.ts", "logger.ts", "redact-url.ts", "pagination/", "consent/", "generated/"],
    what: "the error catalogue, input checks, configuration, logging, cursors and pages, consent precedence, the Prisma client",
  },
];

/**
 * Imports that still run back up, each with its reason. The test fails when one is gone, so the
 * list shrinks as they are fixed.
 */
const EXCEPTIONS: Record<string, string> = {
};

const SRC = path.resolve(__dirname, "../../src");
const DOC = path.resolve(__dirname, "../../docs/architecture.md");

function sourceFiles(dir: string): string[] {
  return readdirSync(dir, { withFileTypes: true }).flatMap((e) =>
    e.isDirectory() ? sourceFiles(path.join(dir, e.name)) : e.name.endsWith(".ts") ? [path.join(dir, e.name)] : [],
  );
}

// `import … from "x"`, `export … from "x"`, `import "x"`, `require("x")`, `import("x")`.
const IMPORT = /^\s*(?:import|export)\b[^;]*?\bfrom\s+"([^"]+)"|^\s*import\s+"([^"]+)"|\brequire\("([^"]+)"\)|\bimport\("([^"]+)"\)/gm;

/** `src/`-relative path (no extension) of every relative import of a file (`src/`-relative too). */
function importsOf(file: string): string[] {
  const text = readFileSync(path.join(SRC, file), "utf8");
  return [...text.matchAll(IMPORT)]
    .map((m) => m[1] ?? m[2] ?? m[3] ?? m[4])
    .filter((spec) => spec.startsWith("."))
    .map((spec) => path.posix.normalize(path.posix.join(path.posix.dirname(file), spec)))
    .filter((target) => !target.startsWith("../")); // package.json and other files outside src/
}

/** The unit a src/ path belongs to: its top folder (`rest/`) or, at the top, its file (`app.ts`). */
function unitOf(target: string): string {
  const [first, ...rest] = target.split("/");
  return rest.length > 0 ? `${first}/` : first.endsWith(".ts") ? first : `${first}.ts`;
}

const layerOf = new Map(LAYERS.flatMap((layer, index) => layer.units.map((unit) => [unit, { layer, index }] as const)));

const files = sourceFiles(SRC)
  .map((f) => path.relative(SRC, f).split(path.sep).join("/"))
  .filter((f) => !f.startsWith("generated/"));

/** Every import that runs up a layer or across to a sibling door, as `file → target`. */
function violations(): string[] {
  const found: string[] = [];
  for (const file of files) {
    const from = layerOf.get(unitOf(file));
    if (!from) continue; // reported by the coverage test
    for (const target of importsOf(file)) {
      const unit = unitOf(target);
      const to = layerOf.get(unit);
      if (!to || unit === unitOf(file)) continue;
      if (to.index < from.index || (to.index === from.index && from.layer.siblings)) found.push(`${file} → ${target}`);
    }
  }
  return found;
}

/** The doc's section, rendered from the tables above. */
function renderLayers(): string {
  const rows = LAYERS.map((l) => `| ${l.name} | ${l.units.map((u) => `\`${u}\``).join(" ")} | ${l.what} |`);
  const exceptions = Object.entries(EXCEPTIONS).map(([edge, why]) => `- \`${edge}\`: ${why}`);
  const back = exceptions.length > 0 ? ["Imports that still run back up:", "", ...exceptions] : ["No import runs back up."];
  return ["| layer (top to bottom) | src/ | what |", "|---|---|---|", ...rows, "", ...back].join("\n");
}

const BLOCK = /(<!-- BEGIN layers[^>]*-->\n)([\s\S]*?)\n?(<!-- END layers -->)/;

describe("the layers of src/", () => {
  it("place every folder and top-level file of src/", () => {
    const units = new Set(readdirSync(SRC, { withFileTypes: true }).map((e) => (e.isDirectory() ? `${e.name}/` : e.name)));
    const present = [...units].filter((u) => u.endsWith("/") || u.endsWith(".ts"));
    expect(present.filter((u) => !layerOf.has(u))).toEqual([]);
    // A row for a folder that is gone (app/ may come and go with the mounts) would drift quietly.
    expect([...layerOf.keys()].filter((u) => !units.has(u) && u !== "app/")).toEqual([]);
  });

  it("have no import running up a layer or across the doors, but the listed exceptions", () => {
    const found = violations();
    const unexpected = found.filter((edge) => !(edge in EXCEPTIONS));
    expect(unexpected).toEqual([]);
  });

  it("list only exceptions that still occur", () => {
    const found = new Set(violations());
    expect(Object.keys(EXCEPTIONS).filter((edge) => !found.has(edge))).toEqual([]);
  });

  it("are the table docs/architecture.md shows", () => {
    const rendered = renderLayers();
    if (process.env.UPDATE_ARCHITECTURE_DOC) writeFileSync(DOC, readFileSync(DOC, "utf8").replace(BLOCK, (_m, begin, _old, end) => `${begin}${rendered}\n${end}`));
    expect(BLOCK.exec(readFileSync(DOC, "utf8"))?.[2]).toBe(rendered);
  });

  it("parse imports, require() included", () => {
    expect(importsOf("rest/router.ts")).toContain("api/routes");
    expect(importsOf("app.ts")).toEqual(expect.arrayContaining(["rest/router", "mcp/server"]));
  });
});
