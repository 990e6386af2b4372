#!/usr/bin/env node
// npm runs this before `npm run start:production` (its prestart:production script), which runs the
// compiled dist/ directly, as the image's CMD does: without a finished `npm run build`, one line and
// exit code 1 instead of node's stack for a missing module.
"use strict";
const path = require("node:path");
const { builtAt } = require("./gcs.js");

if (builtAt(path.resolve(__dirname, "..")) === undefined) {
  console.error("gcs: no build in dist/: run `npm run build` first (npm run start:production runs the compiled service; npm start runs the source)");
  process.exit(1);
}
