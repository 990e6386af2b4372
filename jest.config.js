/** Jest: TypeScript through ts-jest (transpile only; `tsc --noEmit` type-checks). Two projects: `unit`
 * (test/unit: no database, runs in seconds: `npm run test:unit`) and `integration` (the rest, on a
 * real PostgreSQL 15 started once per run by test/helpers/global-setup.ts, from the system or from
 * npm: test/helpers/binaries.ts). */
const shared = {
  rootDir: __dirname,
  testEnvironment: "node",
  testMatch: ["**/*.test.ts"],
  transform: { "^.+\\.[tj]s$": ["ts-jest", { tsconfig: "tsconfig.test.json", diagnostics: false }] },
  // jose is ESM-only; let ts-jest turn it into CommonJS for Jest's module system.
  transformIgnorePatterns: ["/node_modules/(?!(jose)/)"],
};

module.exports = {
  testTimeout: 60000,
  maxWorkers: 2,
  projects: [
    { ...shared, displayName: "unit", roots: ["<rootDir>/test/unit"] },
    {
      ...shared,
      displayName: "integration",
      roots: ["<rootDir>/test"],
      // PgBouncer is not on npm: pgbouncer.test.ts runs in `npm run test:pgbouncer` (scripts/test-pgbouncer.js,
      // which replaces this list), so `npm test` needs nothing but Node and npm.
      testPathIgnorePatterns: ["/node_modules/", "<rootDir>/test/unit/", "<rootDir>/test/integration/pgbouncer\\.test\\.ts$"],
      // A project's global setup runs only when one of its tests is selected.
      globalSetup: "<rootDir>/test/helpers/global-setup.ts",
      globalTeardown: "<rootDir>/test/helpers/global-teardown.ts",
    },
  ],
};
