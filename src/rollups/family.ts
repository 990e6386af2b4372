import type { PoolClient } from "pg";
export interface IncrementalFamily {
  /** Whole-pair rebuild, same transaction and lock: rebuild the family's facts from the live tables (the stored buckets are rebuilt by refresh.ts as today, or by this when it says so). */
  rebuildFacts(client: PoolClient, groupId: string, variants: string[]): Promise<void>;
  /** Apply the given change rows' touches (same transaction, lock held, rows already deleted by the caller); returns the number of units re-applied. */
  applyTouches(client: PoolClient, groupId: string, variants: string[], touched: unknown[][]): Promise<number>;
}
