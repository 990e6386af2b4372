/** Jest: TypeScript through SWC; a real PostgreSQL 15 started once per run (test/helpers). */
module.exports = {
  testEnvironment: "node",
  roots: ["<rootDir>/test"],
  testMatch: ["**/*.test.ts"],
  transform: { "^.+\\.(t|j)sx?$": ["@swc/jest", { jsc: { target: "es2023" } }] },
  // jose is ESM-only; let SWC turn it into CommonJS for Jest's module system.
  transformIgnorePatterns: ["/node_modules/(?!(jose)/)"],
  globalSetup: "<rootDir>/test/helpers/global-setup.ts",
  globalTeardown: "<rootDir>/test/helpers/global-teardown.ts",
  testTimeout: 60000,
  maxWorkers: 2,
};
