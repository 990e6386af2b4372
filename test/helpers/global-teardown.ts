import type { TestPostgres } from "./postgres";

export default async function globalTeardown() {
  (globalThis as { __gcsTestPostgres?: TestPostgres }).__gcsTestPostgres?.stop();
}
