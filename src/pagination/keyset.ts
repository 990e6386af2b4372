// Keyset pages (spec section 8): fetch limit+1 rows after the cursor's key, in sort-key order with
// the id as tie-breaker; the extra row only says whether another page exists.
import { invalidRequest } from "../errors";
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
