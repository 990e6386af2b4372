// `npm run build`: the compiled service in dist/, needing nothing at run time but the production
// dependencies, schema.graphql and prisma/migrations:
// - the Prisma client, generated from prisma/schema.prisma and compiled with the rest of src/;
// - the REST and MCP operation documents (src/*/operations, read at run time), and the dashboard's
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
  for (const dir of ["rest/operations", "mcp/operations", "dashboard/static"]) {
    fs.cpSync(path.join(ROOT, "src", dir), path.join(DIST, dir), { recursive: true });
  }
  const bundles = path.dirname(require.resolve("redoc/bundles/redoc.standalone.js"));
  for (const file of ["redoc.standalone.js", "redoc.standalone.js.LICENSE.txt"]) {
    fs.copyFileSync(path.join(bundles, file), path.join(DIST, "openapi", file));
  }
  fs.writeFileSync(BUILT_STAMP, `${new Date().toISOString()}\n`);
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
