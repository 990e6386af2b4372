// Where PgBouncer is: GCS_PGBOUNCER, else Debian's /usr/sbin/pgbouncer, else `pgbouncer` on PATH.
// PgBouncer is not on npm, so it is the one program `npm run test:pgbouncer` needs from the system.
// Plain CommonJS: scripts/test-pgbouncer.js asks before starting Jest.
"use strict";
const fs = require("node:fs");
const path = require("node:path");

function executable(file) {
  try {
    fs.accessSync(file, fs.constants.X_OK);
    return fs.statSync(file).isFile();
  } catch {
    return false;
  }
}

/** The PgBouncer executable, or undefined. */
function findPgBouncer(env = process.env) {
  if (env.GCS_PGBOUNCER) return executable(env.GCS_PGBOUNCER) ? env.GCS_PGBOUNCER : undefined;
  const onPath = (env.PATH || "").split(path.delimiter).filter(Boolean).map((dir) => path.join(dir, "pgbouncer"));
  return ["/usr/sbin/pgbouncer", ...onPath].find(executable);
}

module.exports = { findPgBouncer };
