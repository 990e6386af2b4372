// Keyset pages (spec section 8): fetch limit+1 rows after the cursor's key, in sort-key order with
// the id as tie-breaker; the extra row only says whether another page exists.
import { invalidRequest } from "../graphql/errors";
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
  keyOf: (row: { createdAt: Date; id: string }): CursorKey => [row.createdAt.toISOString(), row.id],
  after(key: CursorKey | null) {
    if (!key) return {};
    const [iso, id] = key;
    const at = new Date(String(iso));
    if (key.length !== 2 || Number.isNaN(at.getTime()) || typeof id !== "string") return IMPOSSIBLE;
    return { AND: [{ createdAt: { gte: at } }, { OR: [{ createdAt: { gt: at } }, { id: { gt: id } }] }] };
  },
  orderBy: [{ createdAt: "asc" as const }, { id: "asc" as const }],
};

// A signed key of the wrong shape cannot come from us; match nothing rather than fail.
const IMPOSSIBLE = { id: { in: [] as string[] } };
