#!/usr/bin/env node
// The `gcs` command, run straight from the TypeScript source so that it works right after
// `npm ci` with no build step. Production images can run the compiled `node dist/cli/main.js`.
require("tsx/cjs/api").register();
require("../src/cli/main.ts");
