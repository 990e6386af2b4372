/** One family of rollups that follows the writes (issue 44): its facts table, as last applied, and the
 * delta a change row's touches make to its stored buckets. src/rollups/refresh.ts picks, per due pair,
 * applyTouches (the daily path) or the whole-pair rebuild (the repair path), which calls rebuildFacts. */
import type { PoolClient } from "pg";
export interface IncrementalFamily {
  /** Whole-pair rebuild, same transaction and lock: rebuild the family's facts from the live tables (the stored buckets are rebuilt by refresh.ts as today, or by this when it says so). */
  rebuildFacts(client: PoolClient, groupId: string, variants: string[]): Promise<void>;
  /** Apply the given change rows' touches (same transaction, lock held, rows already deleted by the caller); returns the number of units re-applied. */
  applyTouches(client: PoolClient, groupId: string, variants: string[], touched: unknown[][]): Promise<number>;
  /** True when rebuildFacts also rebuilds the family's stored buckets (from its facts): refresh.ts then computes none live. */
  readonly rebuildsBuckets?: boolean;
}
