// Building blocks shared by the list families: keyset lists over (created_at, id), get-by-id with
// not_found, and small filter helpers. Every query goes through ctx.db, the request's scoped client.
import type { GraphQLContext } from "../../context";
import type { PrismaClient } from "../../generated/prisma/client";
import { byCreatedAt, keysetPage } from "../../pagination/keyset";
import type { CursorKey } from "../../pagination/cursor";
import { apiError, notFound } from "../errors";
import { escapeLike } from "../../db/like";
import type { GraphQLResolveInfo } from "graphql";
import type { Sql, SqlModel } from "../../db/scoped-sql";
import { selectedShape, type RowType } from "../selection";
import { GUEST_KEYS } from "../../db/rows";
import { col, sql } from "../../db/scoped-sql";

export interface PageArgs<F> {
  filter?: F | null;
  limit?: number | null;
  cursor?: string | null;
}

type Where = Record<string, unknown>;
type FindArgs = { where: Where; orderBy: typeof byCreatedAt.orderBy; take: number };

/** A keyset list resolver: `where` turns the filter into a Prisma where (ANDed with the scope). */
export function keysetList<F extends object, Row extends { createdAt: Date; id: string }>(
  family: string,
  findMany: (db: PrismaClient, args: FindArgs) => Promise<Row[]>,
  where: (filter: F, ctx: GraphQLContext) => Where | Promise<Where>,
) {
  return async (_: unknown, args: PageArgs<F>, ctx: GraphQLContext) => {
    const filter = args.filter ?? ({} as F);
    const base = await where(filter, ctx);
    return createdAtPage(family, filter, args, ctx, (after, take) =>
      findMany(ctx.db, { where: { AND: [base, byCreatedAt.after(after)] }, orderBy: byCreatedAt.orderBy, take }),
    );
  };
}

/** A (created_at, id) keyset page whose cursor is bound to the family, group, filter and property. */
function createdAtPage<F, Row extends { createdAt: Date | string; id: string }>(
  family: string,
  filter: F,
  args: PageArgs<F>,
  ctx: GraphQLContext,
  fetch: (after: CursorKey | null, take: number) => Promise<Row[]>,
) {
  return keysetPage({
    limit: args.limit,
    cursor: args.cursor,
    secret: ctx.cursorSecret,
    binding: { family, propertyGroupId: ctx.scope.propertyGroupId, query: { filter, propertyId: ctx.scope.propertyId } },
    keyOf: byCreatedAt.keyOf,
    fetch,
  });
}

/** A keyset list read in SQL (db/scoped-sql.ts): `where` turns the filter into SQL conditions. */
export function sqlKeysetList<F extends object>(
  family: string,
  from: SqlModel,
  type: RowType,
  where: (filter: F, ctx: GraphQLContext) => (Sql | undefined)[] | Promise<(Sql | undefined)[]>,
) {
  return async (_: unknown, args: PageArgs<F>, ctx: GraphQLContext, info: GraphQLResolveInfo) => {
    const shape = selectedShape(info, type, "nodes");
    const filter = args.filter ?? ({} as F);
    const conditions = await where(filter, ctx);
    return createdAtPage(family, filter, args, ctx, (after, take) =>
      ctx.sql.rows<{ createdAt: string; id: string }>({
        from,
        shape,
        where: [...conditions, byCreatedAt.afterSql(after)],
        orderBy: byCreatedAt.orderBySql,
        limit: take,
      }),
    );
  };
}

/** A get-by-id resolver read in SQL: the row in scope, or `not_found`. */
export function sqlGetById(what: string, from: SqlModel, type: RowType) {
  return async (_: unknown, args: { id: string }, ctx: GraphQLContext, info: GraphQLResolveInfo) => {
    const [row] = await ctx.sql.rows({ from, shape: selectedShape(info, type), where: [sql`${col("id")} = ${args.id}::uuid`], limit: 1 });
    if (!row) throw notFound(what, args.id);
    return row;
  };
}

/** A get-by-id resolver: the row in scope, or `not_found`. */
export function getById<Row>(what: string, findUnique: (db: PrismaClient, id: string) => Promise<Row | null>) {
  return async (_: unknown, args: { id: string }, ctx: GraphQLContext) => {
    const row = await findUnique(ctx.db, args.id);
    if (!row) throw notFound(what, args.id);
    return row;
  };
}

/** Keeps only the filter members that were given: `{ a: x, b: undefined }` → `{ a: x }`. */
export function given(where: Where): Where {
  return Object.fromEntries(Object.entries(where).filter(([, v]) => v !== undefined && v !== null));
}

/** `from ≤ x` and `x ≤ to` (dates) or `x < to` (instants, so adjacent windows do not overlap). */
export function range(from: Date | null | undefined, to: Date | null | undefined, toExclusive: boolean) {
  if (from == null && to == null) return undefined;
  return given({ gte: from, ...(toExclusive ? { lt: to } : { lte: to }) });
}

/** source_id is unique only within one integration. */
export function requireIntegrationForSourceId(filter: { sourceId?: string | null; integrationId?: string | null }) {
  if (filter.sourceId != null && filter.integrationId == null) {
    throw apiError("source_id requires integration_id", "a source_id is only unique within one integration: send integration_id too");
  }
}

/** Ids of the guest profiles (in scope) clustered into a master profile; `undefined` if no filter. */
export async function guestIdsOfMaster(ctx: GraphQLContext, masterProfileId: string | null | undefined) {
  if (masterProfileId == null) return undefined;
  const guests = await ctx.loaders.guestsByMasterProfile(GUEST_KEYS).load(masterProfileId);
  return { in: guests.map((g) => g.id) };
}

/** Case-insensitive equality, for e-mail addresses and other natural keys typed by people. */
export const insensitive = (value: string | null | undefined) =>
  value == null ? undefined : { equals: escapeLike(value), mode: "insensitive" as const };
