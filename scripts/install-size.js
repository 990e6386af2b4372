#!/usr/bin/env node
// `npm run size:production`: what a production install weighs, measured, for the figures in docs/operations.md ("Production").
// Copies what `npm ci` reads (package.json, package-lock.json, the install script and patches/) into a
// scratch directory, runs `npm ci` there with the given omissions (default: --omit=dev, and again
// with --omit=dev --omit=optional as the Dockerfile installs), and prints for each the size of
// node_modules on disk (as `du -sk`), and the number of packages installed (node_modules/.package-lock.json).
// Needs the npm registry (or npm's cache); about a minute. `--json` prints one JSON line per install.
"use strict";
const { spawnSync } = require("node:child_process");
const fs = require("node:fs");
const os = require("node:os");
const path = require("node:path");

const ROOT = path.resolve(__dirname, "..");
const INSTALLS = [["--omit=dev"], ["--omit=dev", "--omit=optional"]];

/** Disk usage of `dir` in KiB, as `du -sk` counts it (blocks, hard links once). */
function diskKiB(dir) {
  const du = spawnSync("du", ["-sk", dir], { encoding: "utf8" });
  if (du.status === 0) return Number(du.stdout.split(/\s/)[0]);
  // No du (Windows): the files' own sizes.
  let bytes = 0;
  const walk = (d) => {
    for (const e of fs.readdirSync(d, { withFileTypes: true })) {
      const full = path.join(d, e.name);
      if (e.isDirectory()) walk(full);
      else if (e.isFile()) bytes += fs.statSync(full).size;
    }
  };
  walk(dir);
  return Math.round(bytes / 1024);
}

/** Packages npm installed: the entries of its hidden lock file, nested copies included. */
function packageCount(nodeModules) {
  const lock = JSON.parse(fs.readFileSync(path.join(nodeModules, ".package-lock.json"), "utf8"));
  return Object.keys(lock.packages).filter((p) => p.startsWith("node_modules/") && !lock.packages[p].link).length;
}

function measure(omit) {
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), "gcs-install-size-"));
  try {
    for (const file of ["package.json", "package-lock.json", "scripts/postinstall.js", "scripts/patches.js", "patches"]) {
      fs.cpSync(path.join(ROOT, file), path.join(dir, file), { recursive: true });
    }
    const npm = process.env.npm_execpath ? [process.execPath, [process.env.npm_execpath]] : ["npm", []];
    const result = spawnSync(npm[0], [...npm[1], "ci", ...omit, "--no-audit", "--no-fund", "--loglevel=error"], { cwd: dir, encoding: "utf8" });
    if (result.status !== 0) throw new Error(`npm ci ${omit.join(" ")} failed:\n${result.stderr}`);
    const nodeModules = path.join(dir, "node_modules");
    return { install: `npm ci ${omit.join(" ")}`, mb: Math.round(diskKiB(nodeModules) / 1024), packages: packageCount(nodeModules) };
  } finally {
    fs.rmSync(dir, { recursive: true, force: true });
  }
}

if (require.main === module) {
  const json = process.argv.includes("--json");
  try {
    for (const omit of INSTALLS) {
      const m = measure(omit);
      console.log(json ? JSON.stringify(m) : `${m.install}: ${m.mb} MB in ${m.packages} packages`);
    }
  } catch (err) {
    console.error(`size: ${err.message}`);
    process.exit(1);
  }
}

module.exports = { measure, packageCount };
