// Credentials remembered between requests, so that a request with a known token skips the lookup
// statement that would otherwise be its first round trip (bench/results: a third of the fixed cost
// of a request). Remembering is no trust: the first statement of every request that uses a
// remembered credential proves it again, in the same round trip (db/tenant-pool.ts sends
// gcs_credential_check before the statement's own work): a credential revoked, expired or given other
// scopes since fails that statement, nothing of it runs, and the request is answered 401 as a fresh
// lookup would answer it. A request that runs no statement at all (a 400 for a bad parameter, a
// GraphQL introspection) may be answered on a remembered credential for at most REMEMBER_MS after its
// lookup. Kept per connection pool (a database's rows, never another's), only where the pool sends
// the tenant wall's settings: without them there is nothing to carry the proof.
// Opt-in (GCS_REMEMBER_CREDENTIALS=true) until every door proves the credential before it answers:
// an event stream's 200, MCP's tools/list and other answers with no statement would not.
import type { TokenRow } from "../data/stores/credentials";
import type { OpaqueTokenKind } from "../data/stores/credentials";

/** A remembered credential the current request has still to prove (observability/request.ts carries it). */
export interface CredentialProof {
  readonly kind: OpaqueTokenKind;
  readonly hash: string;
  /** The scopes as the lookup answered them (space-separated): the check compares them. */
  readonly scopeText: string;
  /** The check refused it: forget it, so the next request looks it up. */
  refused(): void;
}

/** How long a lookup is remembered for requests that run no statement to prove it. */
export const REMEMBER_MS = 5_000;
const MAX_REMEMBERED = 10_000;

export class RememberedCredentials {
  private readonly rows = new Map<string, { row: TokenRow; until: number }>();

  /** The row of a token hash looked up less than REMEMBER_MS ago, else undefined. */
  get(hash: string, now = Date.now()): TokenRow | undefined {
    const entry = this.rows.get(hash);
    if (!entry) return undefined;
    if (entry.until > now) return entry.row;
    this.rows.delete(hash);
    return undefined;
  }

  /** Remembers a row that grants access (a revoked or expired one is looked up again each time). */
  remember(hash: string, row: TokenRow, now = Date.now()): void {
    if (row.revoked || row.expired) return;
    if (this.rows.size >= MAX_REMEMBERED) this.rows.clear();
    this.rows.set(hash, { row, until: now + REMEMBER_MS });
  }

  forget(hash: string): void {
    this.rows.delete(hash);
  }
}
