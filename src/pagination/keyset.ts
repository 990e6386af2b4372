// Keyset pages (spec section 8): fetch limit+1 rows after the cursor's key, in sort-key order with
// the id as tie-breaker; the extra row only says whether another page exists.
import { invalidRequest } from "../graphql/errors";
import { col, sql } from "../db/scoped-sql";
import { isUuid } from "../auth/scope";
import { decodeCursor, encodeCursor, type CursorBinding, type CursorKey } from "./cursor";

export const DEFAULT_LIMIT = 100;
export const MAX_LIMIT = 500;

export interface Page<T> {
  nodes: T[];
  nextCursor: string | null;
  hasMore: boolean;
}

/** Page size: default 100, larger values clamp to 500, below 1 is a 400. */
export function pageSize(limit: number | null | undefined): number {
  if (limit === null || limit === undefined) return DEFAULT_LIMIT;
  if (!Number.isInteger(limit) || limit < 1) {
    throw invalidRequest(`limit must be an integer from 1 to ${MAX_LIMIT} (larger values are clamped), e.g. limit=50`);
  }
  return Math.min(limit, MAX_LIMIT);
}

export interface KeysetRequest<T> {
  limit: number | null | undefined;
  cursor: string | null | undefined;
  binding: CursorBinding;
  secret: string;
  keyOf: (row: T) => CursorKey;
  /** Rows strictly after `after` (or from the start), in key order, at most `take`. */
  fetch: (after: CursorKey | null, take: number) => Promise<T[]>;
}

export async function keysetPage<T>(req: KeysetRequest<T>): Promise<Page<T>> {
  const size = pageSize(req.limit);
  const after = req.cursor ? decodeCursor(req.cursor, req.binding, req.secret) : null;
  const rows = await req.fetch(after, size + 1);
  const hasMore = rows.length > size;
  const nodes = hasMore ? rows.slice(0, size) : rows;
  const last = nodes[nodes.length - 1];
  return {
    nodes,
    hasMore,
    nextCursor: hasMore && last ? encodeCursor(req.keyOf(last), req.binding, req.secret) : null,
  };
}

/**
 * The (created_at, id) keyset used by most families. Written as
 * `created_at >= t AND (created_at > t OR id > x)` so the index range starts at the cursor
 * (the plain OR form makes PostgreSQL scan from the start: see shared/notes/performance.md).
 * created_at columns are timestamptz(3), so the millisecond ISO string in the key is exact.
 */
export const byCreatedAt = {
  /** Rows read in SQL carry created_at as its ISO text already (db/scoped-sql.ts). */
  keyOf: (row: { createdAt: Date | string; id: string }): CursorKey => [
    typeof row.createdAt === "string" ? row.createdAt : row.createdAt.toISOString(),
    row.id,
  ],
  after(key: CursorKey | null) {
    if (!key) return {};
    const at = instantOf(key);
    if (!at) return IMPOSSIBLE;
    const id = key[1];
    return { AND: [{ createdAt: { gte: at } }, { OR: [{ createdAt: { gt: at } }, { id: { gt: id } }] }] };
  },
  orderBy: [{ createdAt: "asc" as const }, { id: "asc" as const }],
  /** The same position and order for the SQL read paths. */
  afterSql(key: CursorKey | null) {
    if (!key) return undefined;
    const at = instantOf(key);
    if (!at) return sql`FALSE`;
    return sql`${col("createdAt")} >= ${at} AND (${col("createdAt")} > ${at} OR ${col("id")} > ${key[1]}::uuid)`;
  },
  orderBySql: sql`${col("createdAt")}, ${col("id")}`,
};

/** The cursor key's instant, or undefined for a key of the wrong shape (which cannot come from us). */
function instantOf(key: CursorKey): Date | undefined {
  const [iso, id] = key;
  const at = new Date(String(iso));
  return key.length !== 2 || Number.isNaN(at.getTime()) || typeof id !== "string" || !isUuid(id) ? undefined : at;
}

// A signed key of the wrong shape cannot come from us; match nothing rather than fail.
const IMPOSSIBLE = { id: { in: [] as string[] } };
