// Offset pages (spec section 8: table list, member and preview routes). limit as for keyset pages;
// offset defaults to 0 and is clamped to 50,000. A walk ends there: has_more turns false at the
// clamp, so a client following next_offset can never loop on the same page.
import { invalidRequest } from "../errors";
import { pageSize } from "./keyset";

export const MAX_OFFSET = 50_000;

export interface OffsetPage<T> {
  nodes: T[];
  hasMore: boolean;
  nextOffset: number;
  totalCount: number | null;
}

export interface OffsetRequest<T> {
  limit?: number | null;
  offset?: number | null;
  includeTotal?: boolean | null;
  fetch: (skip: number, take: number) => Promise<T[]>;
  count: () => Promise<number>;
}

export async function offsetPage<T>(req: OffsetRequest<T>): Promise<OffsetPage<T>> {
  const size = pageSize(req.limit);
  if (req.offset != null && (!Number.isInteger(req.offset) || req.offset < 0)) {
    throw invalidRequest(`offset must be an integer ≥ 0 (values above ${MAX_OFFSET} are clamped), e.g. offset=100`);
  }
  const offset = Math.min(req.offset ?? 0, MAX_OFFSET);
  const [rows, totalCount] = await Promise.all([req.fetch(offset, size + 1), req.includeTotal ? req.count() : Promise.resolve(null)]);
  const nodes = rows.slice(0, size);
  const nextOffset = offset + nodes.length;
  return { nodes, hasMore: rows.length > size && offset < MAX_OFFSET, nextOffset, totalCount };
}
