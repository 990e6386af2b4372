#!/usr/bin/env node
// The `gcs` command. Runs the compiled dist/ (`npm run build`) when it is complete and current, else
// the TypeScript source through tsx (a dev dependency): a fresh clone works right after `npm ci` with
// no build step, and a developer who edits src/ after a build never runs the stale dist/.
// "Current": dist/.built, which the build writes last, is newer than every file under src/.
// GCS_USE_SOURCE=1 always runs the source, GCS_USE_SOURCE=0 always runs dist/.
"use strict";
const fs = require("node:fs");
const path = require("node:path");

/** Newest modification time under `dir` (0 when it does not exist). */
function newestChange(dir) {
  let newest = 0;
  let entries;
  try {
    entries = fs.readdirSync(dir, { withFileTypes: true });
  } catch {
    return 0;
  }
  for (const entry of entries) {
    const full = path.join(dir, entry.name);
    newest = Math.max(newest, entry.isDirectory() ? newestChange(full) : fs.statSync(full).mtimeMs);
  }
  return newest;
}

/** When the last `npm run build` finished (dist/.built, which it writes last), or undefined: never built, or a build that did not finish. */
function builtAt(root) {
  try {
    return fs.statSync(path.join(root, "dist", ".built")).mtimeMs;
  } catch {
    return undefined;
  }
}

/** "dist" or "source", with the reason when the choice is not the plain one. */
function chooseEntry(root, env = process.env) {
  if (env.GCS_USE_SOURCE === "1") return { run: "source" };
  if (env.GCS_USE_SOURCE === "0") return { run: "dist" };
  const built = builtAt(root);
  if (built === undefined) return { run: "source" };
  if (newestChange(path.join(root, "src")) <= built) return { run: "dist" };
  return { run: "source", reason: "src/ changed after the last `npm run build`" };
}

function main() {
  const root = path.resolve(__dirname, "..");
  const { run, reason } = chooseEntry(root);
  const tsx = run === "source" ? resolveFrom(root, "tsx/cjs/api") : undefined;
  if (tsx) {
    require(tsx).register();
    require(path.join(root, "src", "cli", "main.ts"));
    return;
  }
  const compiled = path.join(root, "dist", "cli", "main.js");
  if (!fs.existsSync(compiled)) {
    console.error("gcs: no build in dist/ and no tsx to run the source: run `npm run build` (after `npm ci`)");
    process.exit(1);
  }
  // A production install (no dev dependencies) of a checkout whose src/ moved on: dist/ is all there is.
  if (run === "source" && reason) console.error(`gcs: ${reason}, and tsx is not installed: running dist/ as built`);
  require(compiled);
}

function resolveFrom(root, request) {
  try {
    return require.resolve(request, { paths: [root] });
  } catch {
    return undefined;
  }
}

if (require.main === module) main();

module.exports = { builtAt, chooseEntry };
