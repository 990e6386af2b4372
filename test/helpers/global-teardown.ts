import type { TestPgBouncer } from "./pgbouncer";
import type { TestPostgres } from "./postgres";

export default async function globalTeardown() {
  (globalThis as { __gcsTestPgBouncer?: TestPgBouncer }).__gcsTestPgBouncer?.stop();
  (globalThis as { __gcsTestPostgres?: TestPostgres }).__gcsTestPostgres?.stop();
}
