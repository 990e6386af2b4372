// package.json for a lean production install (`npm ci --omit=dev`): everything src/ loads at run
// time is a production dependency, the tools that build it are not, and the versions that must
// agree do. Two run-time packages are dev dependencies on purpose: @prisma/client, whose three
// PostgreSQL runtime files the build carries in dist/ (scripts/build.js), and ruru, the GraphQL IDE,
// off in a production install (src/graphql/ide.ts). `npm run smoke:production` installs and runs it
// for real; `npm run size:production` measures it.
import { readdirSync, readFileSync } from "node:fs";
import { builtinModules } from "node:module";
import path from "node:path";

const ROOT = path.resolve(__dirname, "../..");
const read = (file: string) => readFileSync(path.join(ROOT, file), "utf8");
const pkg = JSON.parse(read("package.json")) as {
  engines: Record<string, string>;
  dependencies: Record<string, string>;
  devDependencies: Record<string, string>;
};
const lock = JSON.parse(read("package-lock.json")) as {
  packages: Record<string, { version: string; dependencies?: Record<string, string>; devDependencies?: Record<string, string>; dev?: boolean }>;
};

function sourceFiles(dir: string): string[] {
  return readdirSync(dir, { withFileTypes: true }).flatMap((e) =>
    e.isDirectory() ? sourceFiles(path.join(dir, e.name)) : e.name.endsWith(".ts") ? [path.join(dir, e.name)] : [],
  );
}

/** Packages a file loads at run time: imports and re-exports that are not type-only, require(), import(). */
function runtimePackages(source: string): string[] {
  const specifiers = [
    ...[...source.matchAll(/^\s*(?:import|export)\s+(?!type\s)[^;"'`()=]*?\bfrom\s+"([^"]+)"/gm)].map((m) => m[1]),
    ...[...source.matchAll(/^\s*import\s+"([^"]+)"/gm)].map((m) => m[1]),
    ...[...source.matchAll(/\b(?:require|import)\(\s*"([^"]+)"\s*\)/g)].map((m) => m[1]),
  ];
  return specifiers
    .filter((s) => !s.startsWith(".") && !s.startsWith("node:") && !builtinModules.includes(s.split("/")[0]))
    .map((s) => (s.startsWith("@") ? s.split("/").slice(0, 2).join("/") : s.split("/")[0]));
}

const major = (range: string) => /(\d+)/.exec(range)![1];

describe("dependencies of a production install", () => {
  it("declares every package src/ loads at run time as a production dependency", () => {
    const used = new Map<string, string>();
    for (const file of sourceFiles(path.join(ROOT, "src"))) {
      for (const name of runtimePackages(readFileSync(file, "utf8"))) used.set(name, path.relative(ROOT, file));
    }
    expect(used.get("@graphql-tools/utils")).toBeDefined(); // the scan sees a real import
    expect(used.get("@prisma/client")).toBeDefined(); // and the generated client's
    const devOnPurpose = new Set(["@prisma/client", "ruru"]); // see the next test
    const missing = [...used].filter(([name]) => !devOnPurpose.has(name)).filter(([name]) => !pkg.dependencies[name]).map(([name, file]) => `${name} (${file})`);
    expect(missing).toEqual([]);
  });

  it("leaves @prisma/client and ruru to development: the build carries Prisma's runtime, the IDE is optional", () => {
    for (const name of ["@prisma/client", "ruru"]) {
      expect({ name, production: name in pkg.dependencies, dev: name in pkg.devDependencies }).toEqual({ name, production: false, dev: true });
    }
    expect(read("scripts/build.js")).toContain('"client.js", "query_compiler_bg.postgresql.js", "query_compiler_bg.postgresql.wasm-base64.js"');
    expect(read("src/graphql/ide.ts")).toContain("export function graphqlIdeInstalled");
  });

  it("keeps build and development tools out of the production dependencies", () => {
    for (const tool of ["tsx", "prisma", "patch-package", "redoc", "typescript"]) {
      expect({ tool, production: tool in pkg.dependencies, dev: tool in pkg.devDependencies }).toEqual({ tool, production: false, dev: true });
    }
  });

  it("pins graphql-jit to the exact version its patch was made for", () => {
    const [patch] = readdirSync(path.join(ROOT, "patches")).filter((f) => f.startsWith("graphql-jit+"));
    const version = /^graphql-jit\+(.+)\.patch$/.exec(patch)![1];
    expect(pkg.dependencies["graphql-jit"]).toBe(version);
    expect(lock.packages["node_modules/graphql-jit"].version).toBe(version);
  });

  it("uses one Prisma major for the client, its driver adapter and the CLI", () => {
    const ranges = [pkg.devDependencies["@prisma/client"], pkg.dependencies["@prisma/adapter-pg"], pkg.devDependencies.prisma];
    expect(new Set(ranges.map(major)).size).toBe(1);
    const locked = ["@prisma/client", "@prisma/adapter-pg", "@prisma/driver-adapter-utils", "prisma"].map(
      (name) => lock.packages[`node_modules/${name}`].version,
    );
    expect(new Set(locked.map(major))).toEqual(new Set([major(ranges[0])]));
  });

  it("asks for Node 24, which the image and the development install use", () => {
    expect(pkg.engines.node).toBe(">=24");
    expect(major(pkg.devDependencies.node)).toBe("24");
    expect(read("Dockerfile")).toMatch(/^FROM node:24\.\d+\.\d+-bookworm-slim AS runtime$/m);
  });

  it("has a lock file that installs the tools as development dependencies only", () => {
    const root = lock.packages[""];
    expect({ dependencies: root.dependencies, devDependencies: root.devDependencies }).toEqual({
      dependencies: pkg.dependencies,
      devDependencies: pkg.devDependencies,
    });
    const devFlag = (name: string) => ({ name, dev: lock.packages[`node_modules/${name}`].dev ?? false });
    for (const name of Object.keys(pkg.dependencies)) expect(devFlag(name)).toEqual({ name, dev: false });
    for (const name of ["tsx", "patch-package", "redoc"]) expect(devFlag(name)).toEqual({ name, dev: true });
  });
});
