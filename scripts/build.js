// `npm run build`: the compiled service in dist/, needing nothing at run time but the production
// dependencies, schema.graphql and prisma/migrations:
// - the Prisma client, generated from prisma/schema.prisma and compiled with the rest of src/, and the
//   three files of @prisma/client's runtime it loads on PostgreSQL (dist/generated/prisma-runtime):
//   @prisma/client is a dev dependency, so a production install is without its 75 MB of engines for
//   every database and without the Prisma CLI and TypeScript it pulls in as optional peers;
// - the REST and MCP operation documents (src/api/operations, read at run time), and the dashboard's
//   page and files (src/dashboard/static);
// - Redoc's standalone bundle beside dist/openapi (redoc is a dev dependency; src/openapi serves it);
// - dist/.built, written last: bin/gcs.js runs dist/ only when it exists and src/ is not newer.
"use strict";
const { spawnSync } = require("node:child_process");
const fs = require("node:fs");
const path = require("node:path");
const { prismaGenerate } = require("./postinstall");

const ROOT = path.resolve(__dirname, "..");
const DIST = path.join(ROOT, "dist");
const BUILT_STAMP = path.join(DIST, ".built");

function build() {
  fs.rmSync(DIST, { recursive: true, force: true }); // no output of a deleted source survives
  prismaGenerate();
  const tsc = spawnSync(process.execPath, [require.resolve("typescript/bin/tsc"), "-p", "tsconfig.build.json"], {
    cwd: ROOT,
    stdio: "inherit",
  });
  if (tsc.status !== 0) throw new Error(`tsc failed (exit ${tsc.status ?? tsc.signal})`);
  vendorPrismaRuntime();
  for (const dir of ["api/operations", "dashboard/static"]) {
    fs.cpSync(path.join(ROOT, "src", dir), path.join(DIST, dir), { recursive: true });
  }
  const bundles = path.dirname(require.resolve("redoc/bundles/redoc.standalone.js"));
  for (const file of ["redoc.standalone.js", "redoc.standalone.js.LICENSE.txt"]) {
    fs.copyFileSync(path.join(bundles, file), path.join(DIST, "openapi", file));
  }
  fs.writeFileSync(BUILT_STAMP, `${new Date().toISOString()}\n`);
}

/** @prisma/client/runtime/<file> → dist/generated/prisma-runtime/<file>, and the compiled client pointed at it. */
const PRISMA_RUNTIME = ["client.js", "query_compiler_bg.postgresql.js", "query_compiler_bg.postgresql.wasm-base64.js"];
function vendorPrismaRuntime() {
  const from = path.dirname(require.resolve("@prisma/client/runtime/client.js"));
  const to = path.join(DIST, "generated", "prisma-runtime");
  // The generated client's entry points for a browser (nothing in the service loads them) want
  // @prisma/client's browser runtime: not part of the build.
  for (const file of ["browser", "internal/prismaNamespaceBrowser"]) {
    for (const ext of [".js", ".d.ts"]) fs.rmSync(path.join(DIST, "generated", "prisma", `${file}${ext}`), { force: true });
  }
  fs.mkdirSync(to, { recursive: true });
  for (const file of PRISMA_RUNTIME) fs.copyFileSync(path.join(from, file), path.join(to, file));
  fs.copyFileSync(path.join(from, "..", "LICENSE"), path.join(to, "LICENSE"));
  const specifier = /(["'])@prisma\/client\/runtime\/([\w.-]+?)(\.js)?\1/g;
  let rewritten = 0;
  const walk = (dir) => {
    for (const entry of fs.readdirSync(dir, { withFileTypes: true })) {
      const full = path.join(dir, entry.name);
      if (entry.isDirectory()) walk(full);
      else if (entry.name.endsWith(".js") && dir !== to) {
        const text = fs.readFileSync(full, "utf8");
        const next = text.replace(specifier, (_, quote, name) => {
          const file = `${name}.js`;
          if (!PRISMA_RUNTIME.includes(file)) throw new Error(`${path.relative(ROOT, full)} loads @prisma/client/runtime/${name}, which the build does not carry`);
          rewritten += 1;
          const relative = path.relative(path.dirname(full), path.join(to, file)).split(path.sep).join("/");
          return `${quote}${relative.startsWith(".") ? relative : `./${relative}`}${quote}`;
        });
        if (next !== text) fs.writeFileSync(full, next);
      }
    }
  };
  walk(DIST);
  if (rewritten === 0) throw new Error("no @prisma/client/runtime import found in dist/: has the generator changed?");
}

if (require.main === module) {
  try {
    build();
    console.log(`build: ${path.relative(process.cwd(), DIST) || "."} ready`);
  } catch (err) {
    console.error(`build: ${err.message}`);
    process.exit(1);
  }
}
