// Runs after every `npm ci` / `npm install`, production installs included.
// - Applies patches/ to node_modules (scripts/patches.js: no dev dependency needed).
// - In a checkout (src/ is there) with the Prisma CLI installed (a dev dependency), generates the
//   Prisma client into src/generated, so that `npx gcs` runs from source right after `npm ci` with no
//   build step. The Docker image has no src/: it runs the compiled dist/, which carries the client.
"use strict";
const { spawnSync } = require("node:child_process");
const fs = require("node:fs");
const path = require("node:path");
const { applyPatches } = require("./patches");

const ROOT = path.resolve(__dirname, "..");
const PRISMA_CLI = path.join(ROOT, "node_modules", ".bin", "prisma");

/** `prisma generate` offline: the CLI reads DATABASE_URL from the schema but never connects. */
function prismaGenerate() {
  if (!fs.existsSync(PRISMA_CLI)) throw new Error("the Prisma CLI is not installed (a dev dependency: npm ci)");
  const result = spawnSync(PRISMA_CLI, ["generate"], {
    cwd: ROOT,
    stdio: "inherit",
    env: { ...process.env, DATABASE_URL: process.env.DATABASE_URL || "postgresql://offline.invalid/unused" },
  });
  if (result.status !== 0) throw new Error(`prisma generate failed (exit ${result.status ?? result.signal})`);
}

function main() {
  for (const line of applyPatches(ROOT)) console.log(`postinstall: ${line}`);
  if (fs.existsSync(path.join(ROOT, "src")) && fs.existsSync(PRISMA_CLI)) prismaGenerate();
  else console.log("postinstall: no src/ or no Prisma CLI: not generating the Prisma client (dist/ carries it)");
}

if (require.main === module) {
  try {
    main();
  } catch (err) {
    console.error(`postinstall: ${err.message}`);
    process.exit(1);
  }
}

module.exports = { prismaGenerate };
