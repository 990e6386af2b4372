// Building blocks shared by the list families: keyset pages bound to the caller, get-by-id with
// not_found, and argument checks. The rows come from the request's data handle (src/data).
import type { GraphQLResolveInfo } from "graphql";
import type { RequestContext } from "../../context";
import type { JsonObject } from "../../data/json-rows";
import type { RowShape } from "../../data/models";
import { apiError, notFound } from "../../errors";
import type { CursorKey } from "../../pagination/cursor";
import { keysetPage } from "../../pagination/keyset";
import { selectedShape, type RowType } from "../selection";

export interface PageArgs<F> {
  filter?: F | null;
  limit?: number | null;
  cursor?: string | null;
}

/** A keyset page whose cursor is bound to the family, the caller's group, the filter and the property. */
export function boundPage<F, Row>(
  family: string,
  args: PageArgs<F>,
  ctx: RequestContext,
  keyOf: (row: Row) => CursorKey,
  fetch: (filter: F, after: CursorKey | null, take: number) => Promise<Row[]>,
  query: (filter: F) => unknown = (filter) => ({ filter, propertyId: ctx.scope.propertyId }),
) {
  const filter = args.filter ?? ({} as F);
  return keysetPage({
    limit: args.limit,
    cursor: args.cursor,
    secret: ctx.cursorSecret,
    binding: { family, propertyGroupId: ctx.scope.propertyGroupId, query: query(filter) },
    keyOf,
    fetch: (after, take) => fetch(filter, after, take),
  });
}

/** A keyset list resolver over a data/ page function. */
export function keysetList<F extends object, Row>(
  family: string,
  keyOf: (row: Row) => CursorKey,
  page: (ctx: RequestContext) => (filter: F, after: CursorKey | null, take: number) => Promise<Row[]>,
  check?: (filter: F) => void,
) {
  return (_: unknown, args: PageArgs<F>, ctx: RequestContext) => {
    if (check) check(args.filter ?? ({} as F));
    return boundPage(family, args, ctx, keyOf, page(ctx));
  };
}

/** The same for a data/ page read in SQL with only the columns the selection's `nodes` need. */
export function selectedKeysetList<F extends object, Row>(
  family: string,
  type: RowType,
  keyOf: (row: Row) => CursorKey,
  page: (ctx: RequestContext) => (filter: F, after: CursorKey | null, take: number, shape: RowShape) => Promise<Row[]>,
  check?: (filter: F) => void,
) {
  return (_: unknown, args: PageArgs<F>, ctx: RequestContext, info: GraphQLResolveInfo) => {
    const shape = selectedShape(info, type, "nodes");
    if (check) check(args.filter ?? ({} as F));
    const fetch = page(ctx);
    return boundPage(family, args, ctx, keyOf, (filter: F, after, take) => fetch(filter, after, take, shape));
  };
}

/**
 * The same page for the JSON read path (graphql/json-plan.ts): the same checks and cursor binding,
 * each row read as the JSON text of `object`.
 */
export function jsonKeysetList<F extends object, Row>(
  family: string,
  keyOf: (row: Row) => CursorKey,
  page: (ctx: RequestContext) => (filter: F, after: CursorKey | null, take: number, object: JsonObject) => Promise<Row[]>,
  check?: (filter: F) => void,
) {
  return (args: PageArgs<F>, ctx: RequestContext, object: JsonObject) => {
    if (check) check(args.filter ?? ({} as F));
    const fetch = page(ctx);
    return boundPage(family, args, ctx, keyOf, (filter: F, after, take) => fetch(filter, after, take, object));
  };
}

/** A get-by-id resolver: the row in scope, or `not_found`. */
export function getById<Row>(what: string, find: (ctx: RequestContext, id: string, info: GraphQLResolveInfo) => Promise<Row | null | undefined>) {
  return async (_: unknown, args: { id: string }, ctx: RequestContext, info: GraphQLResolveInfo) => {
    const row = await find(ctx, args.id, info);
    if (!row) throw notFound(what, args.id);
    return row;
  };
}

/** source_id is unique only within one integration. */
export function requireIntegrationForSourceId(filter: { sourceId?: string | null; integrationId?: string | null }) {
  if (filter.sourceId != null && filter.integrationId == null) {
    throw apiError("source_id requires integration_id", "a source_id is only unique within one integration: send integration_id too");
  }
}

/**
 * A row's `guest`: its guest profile through the request's guest loader, so a page's guests are one
 * statement whatever its size (null when the row has none or it is outside the caller's scope).
 */
export const guestOfRow = (row: { guestProfileId: string | null }, _: unknown, ctx: RequestContext) =>
  row.guestProfileId ? ctx.loaders.guest.load(row.guestProfileId) : null;
