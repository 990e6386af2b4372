// Where one request's time went, gathered through AsyncLocalStorage while it runs: the statements it
// issued and their time (db/sql-count.ts), authentication (auth/authenticate.ts) and GraphQL
// execution (graphql/compiled.ts). app.ts starts the record and sends it as X-Sql-Statements and
// Server-Timing; the request log and the metrics read it too.
import { AsyncLocalStorage } from "node:async_hooks";

/** A remembered credential a request has still to prove (auth/remembered-credentials.ts, db/tenant-pool.ts). */
export interface CredentialProof {
  readonly kind: string;
  readonly hash: string;
  /** The row the lookup answered, and its pinned property: the check compares them. */
  readonly id: string;
  readonly propertyId: string | null;
  /** The scopes as the lookup answered them (space-separated): the check compares them. */
  readonly scopeText: string;
  /** The check refused it: forget it, so the next request looks it up. */
  refused(): void;
  /** The settings statements' bytes with this credential's check, kept with the remembered credential (db/tenant-pool.ts). */
  readonly settingsBytes: Map<string, Buffer>;
}

export interface RequestRecord {
  /** The X-Request-Id: code that is handed no request (the OAuth provider) logs a fault with it. */
  requestId?: string;
  statements: number;
  /** Summed over statements; concurrent statements (a loader's batch) each count in full. */
  sqlMs: number;
  /** Undefined until the phase ran; a phase that ran twice (MCP batches) adds up. */
  authMs?: number;
  /** GraphQL execution, its SQL included. */
  execMs?: number;
  /**
   * A remembered credential this request authenticated with and has not yet proved: its next
   * statement carries the check (auth/remembered-credentials.ts, db/tenant-pool.ts). Carried here
   * because this record is the one thing every statement of the request can see.
   */
  credentialToProve?: CredentialProof;
}

const current = new AsyncLocalStorage<RequestRecord>();

/** Starts the record for the rest of the current async context (an Express request). */
export function startRecord(requestId?: string): RequestRecord {
  const record: RequestRecord = { requestId, statements: 0, sqlMs: 0 };
  current.enterWith(record);
  return record;
}

/** The record of the request whose async context this is; undefined outside a request. */
export function currentRecord(): RequestRecord | undefined {
  return current.getStore();
}

/** Runs `fn` as part of `record`'s request (or of none): for a callback another request's work runs. */
export function inRecord<T>(record: RequestRecord | undefined, fn: () => T): T {
  return record === current.getStore() ? fn() : record ? current.run(record, fn) : current.exit(fn);
}

export type Phase = "authMs" | "execMs";

/** Runs `work` and adds its duration to the current request's `phase`. */
export async function timed<T>(phase: Phase, work: () => Promise<T>): Promise<T> {
  const record = current.getStore();
  if (!record) return work();
  const started = performance.now();
  try {
    return await work();
  } finally {
    record[phase] = (record[phase] ?? 0) + (performance.now() - started);
  }
}

const ms = (value: number) => (Math.round(value * 10) / 10).toString();

/**
 * The Server-Timing header (W3C Server Timing): `auth;dur=0.8, exec;dur=4.1, sql;dur=2.9;desc="3
 * statements"`, in milliseconds. Phases that did not run are left out; sql is always there.
 */
export function serverTiming(record: RequestRecord): string {
  const parts: string[] = [];
  if (record.authMs !== undefined) parts.push(`auth;dur=${ms(record.authMs)}`);
  if (record.execMs !== undefined) parts.push(`exec;dur=${ms(record.execMs)}`);
  parts.push(`sql;dur=${ms(record.sqlMs)};desc="${record.statements} statement${record.statements === 1 ? "" : "s"}"`);
  return parts.join(", ");
}
