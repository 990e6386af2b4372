// The error catalogue moved to src/errors.ts (every door uses it); test/integration/fuzz.test.ts
// still imports it from here.
export * from "../errors";
