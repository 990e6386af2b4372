#!/usr/bin/env node
// `npm run test:pgbouncer`: the integration tests with every test database reached through PgBouncer
// in transaction pooling mode (GCS_TEST_PGBOUNCER=1, read by test/helpers/global-setup.ts), and
// test/integration/pgbouncer.test.ts, which `npm test` leaves out. Needs PgBouncer (1.18 or later;
// not on npm: `apt-get install pgbouncer`, which .ci/run does) besides what `npm test` needs. Extra
// arguments go to Jest (a file name runs that file only). What is left out, and why:
"use strict";
const { spawnSync } = require("node:child_process");
const path = require("node:path");

/** Test files that never reach PgBouncer here: leaving them out keeps the run short. */
const EXEMPT_FILES = [
  // Each starts a PostgreSQL of its own (a server stopped and restarted, SIGTERM with locks held):
  // they connect to it directly, so through PgBouncer they repeat `npm test`. (The statement
  // isolation test starts a PgBouncer in front of its own server here: both tenant walls are
  // checked through the pooler.)
  "database-outage.test.ts",
  "shutdown.test.ts",
  // Embedded PGlite: no server, no pooler.
  "embedded.test.ts",
];

/**
 * Tests whose premise a pooler in transaction mode does not offer.
 * - A per-instance statement timeout travels as a startup parameter, which PgBouncer drops: behind
 *   it the timeout is the role's or database's (test/integration/pgbouncer.test.ts shows a blocked
 *   statement cancelled by the database's timeout through PgBouncer).
 * - Prepared statements per connection: PgBouncer 1.18 cannot keep them, so the first failure turns
 *   statement naming off for the process (db/sql-count.ts; pgbouncer.test.ts runs concurrent pages
 *   through it), and which server connection holds one is luck.
 */
const EXEMPT_TESTS = [
  "statement_timeout answers 504 query_timeout",
  "the JSON read path prepares the page statement on the connection",
  "GET /v1/events: which timelines keep their plan",
  "which pages keep their plan",
  "the guest context's statements are prepared",
];

const ROOT = path.resolve(__dirname, "..");
const { findPgBouncer } = require("../test/helpers/pgbouncer-binary");
if (!findPgBouncer()) {
  console.error("test:pgbouncer: PgBouncer is not installed (it is not on npm): apt-get install pgbouncer, or set GCS_PGBOUNCER to its path");
  process.exit(1);
}
const escape = (s) => s.replace(/[.*+?^${}()|[\]\\]/g, "\\$&");
const args = [
  "--selectProjects",
  "integration",
  // Replaces the project's own ignore list (which leaves out pgbouncer.test.ts): repeat the rest of it.
  "--testPathIgnorePatterns",
  "/node_modules/",
  "/test/unit/",
  ...EXEMPT_FILES.map((f) => `/${escape(f)}$`),
  "--testNamePattern",
  `^(?!(${EXEMPT_TESTS.map(escape).join("|")}))`,
  ...process.argv.slice(2),
];
const result = spawnSync(path.join(ROOT, "node_modules/.bin/jest"), args, {
  cwd: ROOT,
  stdio: "inherit",
  env: { ...process.env, GCS_TEST_PGBOUNCER: "1" },
});
process.exit(result.status ?? 1);
