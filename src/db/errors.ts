// The one place that tells a database that is not there (down, restarting, unreachable, out of
// connections) or a statement stopped by statement_timeout apart from a fault of ours. Errors come
// from pg directly (the SQL read paths and credential lookups) or wrapped by Prisma's pg adapter
// (PrismaClientKnownRequestError with meta.driverAdapterError.cause), and a resolver's error is
// wrapped once more in a GraphQLError (originalError); this walks all of those.

export type DatabaseFault =
  /** The database cannot serve right now: 503 `unavailable` with Retry-After. */
  | { kind: "unavailable"; reason: string }
  /** A statement ran past statement_timeout and was cancelled: 504 `query_timeout`. */
  | { kind: "timeout"; reason: string };

/**
 * SQLSTATEs: admin_shutdown, crash_shutdown, cannot_connect_now, too_many_connections; and the
 * transient refusals a retry clears: serialization_failure (a hot standby cancels a read that
 * conflicts with replay with it) and deadlock_detected.
 */
const UNAVAILABLE_SQLSTATES = new Set(["57P01", "57P02", "57P03", "53300", "40001", "40P01"]);
/** query_canceled: statement_timeout (or a cancel request). */
const TIMEOUT_SQLSTATE = "57014";
const SOCKET_CODES = new Set(["ECONNREFUSED", "ECONNRESET", "ETIMEDOUT", "ENOTFOUND", "EPIPE", "EHOSTUNREACH", "ENETUNREACH", "EAI_AGAIN"]);
/** Prisma: can't reach server, connect timed out, operations timed out, server closed the connection, pool timeout. */
const PRISMA_CODES = new Set(["P1001", "P1002", "P1008", "P1017", "P2024"]);
/** @prisma/adapter-pg's error kinds for the same conditions. */
const ADAPTER_KINDS = new Set(["DatabaseNotReachable", "ConnectionClosed", "SocketTimeout", "TooManyConnections"]);
/** pg errors with no code: the socket closed mid-query, or no pooled connection within connectionTimeoutMillis. */
const PG_MESSAGES = [
  /^Connection terminated/m,
  /^timeout exceeded when trying to connect/m,
  /Client has encountered a connection error and is not queryable/,
  /Can't reach database server/,
];

/**
 * The first answer `test` gives for `err` or an error it wraps, breadth first: a resolver's
 * GraphQLError (originalError), an Error's cause, Prisma's adapter error (meta.driverAdapterError).
 */
function inCauses<T>(err: unknown, test: (e: Record<string, unknown>) => T | undefined): T | undefined {
  const seen = new Set<unknown>();
  const queue: unknown[] = [err];
  while (queue.length > 0) {
    const e = queue.shift();
    if (!e || typeof e !== "object" || seen.has(e) || seen.size > 8) continue;
    seen.add(e);
    const found = test(e as Record<string, unknown>);
    if (found !== undefined) return found;
    const o = e as { originalError?: unknown; cause?: unknown; meta?: { driverAdapterError?: unknown } };
    queue.push(o.originalError, o.cause, o.meta?.driverAdapterError);
  }
  return undefined;
}

export function databaseFault(err: unknown): DatabaseFault | undefined {
  return inCauses(err, classify);
}

function classify(e: Record<string, unknown>): DatabaseFault | undefined {
  const code = typeof e.code === "string" ? e.code : typeof e.originalCode === "string" ? e.originalCode : undefined;
  if (code === TIMEOUT_SQLSTATE) return { kind: "timeout", reason: code };
  if (code && (UNAVAILABLE_SQLSTATES.has(code) || /^08...$/.test(code) || SOCKET_CODES.has(code) || PRISMA_CODES.has(code))) {
    return { kind: "unavailable", reason: code };
  }
  if (typeof e.kind === "string" && ADAPTER_KINDS.has(e.kind)) return { kind: "unavailable", reason: e.kind };
  const message = typeof e.message === "string" ? e.message : "";
  const known = PG_MESSAGES.find((m) => m.test(message));
  if (known) return { kind: "unavailable", reason: message.split("\n").find((l) => known.test(l))!.slice(0, 120) };
  return undefined;
}

/**
 * Behind a pooler in transaction mode (PgBouncer before 1.21), a prepared statement lives on the server
 * connection that parsed it, and the next use may land on another: "does not exist" (26000), or a
 * parse where it already exists (42P05). Either fails before anything runs.
 */
const POOLER_PREPARED_SQLSTATES = new Set(["26000", "42P05"]);
export const isPoolerPreparedRefusal = (err: unknown): boolean => POOLER_PREPARED_SQLSTATES.has((err as { code?: string } | null)?.code ?? "");

/** SQLSTATE and message of gcs_credential_check's refusal (prisma/migrations/20261129100000_credential_check). */
const CREDENTIAL_REFUSED = { code: "28000", message: "gcs: the credential no longer grants this request" };

/**
 * The check of a remembered credential refused it (auth/remembered-credentials.ts): revoked, expired
 * or given other scopes since it was looked up. From pg, or wrapped by Prisma's adapter.
 */
export function isCredentialRefusal(err: unknown): boolean {
  return inCauses(err, (e) => {
    const code = e.code ?? e.originalCode;
    const message = typeof e.message === "string" ? e.message : e.originalMessage;
    return code === CREDENTIAL_REFUSED.code && typeof message === "string" && message.includes(CREDENTIAL_REFUSED.message) ? true : undefined;
  }) === true;
}

/**
 * A statement on a cross-group path ran on a login that is not a member of gcs_system (the runtime
 * login of the documented layout, docs/security.md): the process was not given DATABASE_SYSTEM_URL.
 */
export function isCrossGroupRoleRefusal(err: unknown): boolean {
  return inCauses(err, (e) =>
    [e.message, e.originalMessage].some((m) => typeof m === "string" && m.includes('permission denied to set role "gcs_system"')) ? true : undefined,
  ) === true;
}
