// Credentials remembered between requests, so that a request with a known token skips the lookup
// statement that would otherwise be its first round trip (bench/results: a third of the fixed cost
// of a request). Remembering is no trust: the first statement of every request that uses a
// remembered credential proves it again, in the same round trip (db/tenant-pool.ts sends
// gcs_credential_check before the statement's own work): a credential revoked, expired or given other
// scopes since fails that statement, nothing of it runs, and the request is answered 401 as a fresh
// lookup would answer it. A request that runs no statement at all (a 400 for a bad parameter, a
// GraphQL introspection) is proved by one statement before its door answers
// (auth/authenticate.ts proveRememberedCredential): only doors that do so remember (REST, /graphql,
// a read tool's call on /mcp's fast path; not event streams or the MCP SDK's path, which answer
// before any statement). Kept per connection pool (a
// database's rows, never another's), only where the pool sends the tenant wall's settings: without
// them there is nothing to carry the proof.
import type { Pool } from "pg";
import type { TokenRow } from "../data/stores/credentials";
import { TenantPool } from "../db/tenant-pool";

/** How long a token is remembered after its last use (every use is proved: this bounds memory, not trust). */
export const REMEMBER_MS = 5_000;
const MAX_REMEMBERED = 10_000;

export interface Remembered {
  row: TokenRow;
  until: number;
  /** The settings statements' bytes that carry this credential's check (db/tenant-pool.ts), made once. */
  readonly settingsBytes: Map<string, Buffer>;
}

export class RememberedCredentials {
  private readonly rows = new Map<string, Remembered>();

  /**
   * The row of a token hash used in the last REMEMBER_MS, else undefined. Each use keeps it another
   * REMEMBER_MS: each use is proved, so the bound is on memory kept for tokens nobody sends.
   */
  get(hash: string, now = Date.now()): Remembered | undefined {
    const entry = this.rows.get(hash);
    if (!entry) return undefined;
    if (entry.until <= now) {
      this.rows.delete(hash);
      return undefined;
    }
    entry.until = now + REMEMBER_MS;
    return entry;
  }

  /** Remembers a row that grants access (a revoked or expired one is looked up again each time). */
  remember(hash: string, row: TokenRow, now = Date.now()): void {
    if (row.revoked || row.expired) return;
    if (this.rows.size >= MAX_REMEMBERED) this.rows.clear();
    this.rows.set(hash, { row, until: now + REMEMBER_MS, settingsBytes: new Map() });
  }

  forget(hash: string): void {
    this.rows.delete(hash);
  }
}

const memories = new WeakMap<Pool, RememberedCredentials>();

/** The credentials remembered for `pool`'s database, or undefined where its statements cannot prove them. */
export function rememberedCredentialsOf(pool: Pool): RememberedCredentials | undefined {
  if (!(pool instanceof TenantPool) || !pool.provesCredentials) return undefined;
  let memory = memories.get(pool);
  if (!memory) memories.set(pool, (memory = new RememberedCredentials()));
  return memory;
}
