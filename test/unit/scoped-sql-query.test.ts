// ScopedSql.query: statements written whole still carry the caller's tenant predicate.
import type { Pool } from "pg";
import { scopedSql, sql } from "../../src/data/sql";

const GROUP = "3f1c2a9e-7d4b-4c1a-9e2f-5b6a7c8d9e0f";

/** A pool that records what reaches it: the refused statement must never get there. */
function recordingPool() {
  const statements: unknown[] = [];
  const pool = { query: async (q: unknown) => (statements.push(q), { rows: [] }) } as unknown as Pool;
  return { pool, statements };
}

describe("ScopedSql.query", () => {
  it("refuses a statement that asks for no tenant predicate, before it reaches the database", async () => {
    const { pool, statements } = recordingPool();
    await expect(scopedSql(pool, { propertyGroupId: GROUP, propertyId: null }).query(() => sql`SELECT id FROM guest_profiles`)).rejects.toThrow(
      /tenant predicate/,
    );
    expect(statements).toEqual([]);
  });
});
