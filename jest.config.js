/** Jest: TypeScript through ts-jest (transpile only; `tsc --noEmit` type-checks); a real PostgreSQL 15
 * started once per run (test/helpers). */
module.exports = {
  testEnvironment: "node",
  roots: ["<rootDir>/test"],
  testMatch: ["**/*.test.ts"],
  transform: { "^.+\\.[tj]s$": ["ts-jest", { tsconfig: "tsconfig.test.json", diagnostics: false }] },
  // jose is ESM-only; let ts-jest turn it into CommonJS for Jest's module system.
  transformIgnorePatterns: ["/node_modules/(?!(jose)/)"],
  globalSetup: "<rootDir>/test/helpers/global-setup.ts",
  globalTeardown: "<rootDir>/test/helpers/global-teardown.ts",
  testTimeout: 60000,
  maxWorkers: 2,
};
