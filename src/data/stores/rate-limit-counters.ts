// rate_limit_counters: the table the instances' rate limiters (src/http/rate-limit.ts) share. The
// counting rules stay there; this is the storage, one statement per sync for all keys.
import type { PrismaClient } from "../../generated/prisma/client";

/** The shared table: adds this instance's new hits and answers the cluster totals. */
export interface CounterTable {
  /**
   * Adds `deltas[i]` to `keys[i]` in the window starting at `windowStart`, and returns the totals of
   * those keys and of `unchanged` (read, not written: a row is written only when its count grows).
   */
  add(windowStart: Date, keys: string[], deltas: number[], unchanged?: string[]): Promise<Map<string, number>>;
  /** Deletes the counters of windows that started before `windowStart`. */
  prune(windowStart: Date): Promise<void>;
}

/** rate_limit_counters in PostgreSQL: one statement per sync for all keys. */
export function postgresCounterTable(prisma: PrismaClient): CounterTable {
  return {
    async add(windowStart, keys, deltas, unchanged = []) {
      // The unchanged keys are disjoint from the added ones, so the snapshot the SELECT reads is current for them.
      const rows = await prisma.$queryRaw<{ key: string; hits: number }[]>`
        WITH added AS (
          INSERT INTO rate_limit_counters AS c (key, window_start, hits)
          SELECT key, ${windowStart}::timestamptz, delta FROM unnest(${keys}::text[], ${deltas}::int[]) AS t(key, delta) ORDER BY key
          ON CONFLICT (key, window_start) DO UPDATE SET hits = c.hits + EXCLUDED.hits
          RETURNING key, hits
        )
        SELECT key, hits FROM added
        UNION ALL
        SELECT key, hits FROM rate_limit_counters WHERE window_start = ${windowStart}::timestamptz AND key = ANY(${unchanged}::text[])`;
      return new Map(rows.map((r) => [r.key, Number(r.hits)]));
    },
    async prune(windowStart) {
      await prisma.$executeRaw`DELETE FROM rate_limit_counters WHERE window_start < ${windowStart}::timestamptz`;
    },
  };
}
