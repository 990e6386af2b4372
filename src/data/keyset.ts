// The (created_at, id) keyset most families page by, in both dialects a data/ module may read in.
// Written as `created_at >= t AND (created_at > t OR id > x)` so the index range starts at the
// cursor (the plain OR form makes PostgreSQL scan from the start).
// created_at columns are timestamptz(3), so the millisecond ISO string in the key is exact.
import type { CursorKey } from "../pagination/cursor";
import { isUuid } from "../validate";
import { columns, sql, type RowShape, type ScopedSql, type Sql, type SqlModel } from "./sql";

/** The cursor key's instant, or undefined for a key of the wrong shape (which cannot come from us). */
function instantOf(key: CursorKey): Date | undefined {
  const [iso, id] = key;
  const at = new Date(String(iso));
  return key.length !== 2 || Number.isNaN(at.getTime()) || typeof id !== "string" || !isUuid(id) ? undefined : at;
}

/** Rows read in SQL carry created_at as the API's ISO text. */
export const createdAtKey = (row: { createdAt: string; id: string }): CursorKey => [row.createdAt, row.id];

/** Position and order for statements over `model`'s table (data/sql.ts). */
export function createdAtSql(model: SqlModel) {
  const c = columns(model);
  const keyset = {
    after(key: CursorKey | null) {
      if (!key) return undefined;
      const at = instantOf(key);
      if (!at) return sql`FALSE`;
      // As ISO text, which PostgreSQL reads as the column's timestamptz: pg would format a Date in
      // the process's local time zone on every request.
      const iso = at.toISOString();
      return sql`${c("createdAt")} >= ${iso} AND (${c("createdAt")} > ${iso} OR ${c("id")} > ${key[1]}::uuid)`;
    },
    orderBy: sql`${c("createdAt")}, ${c("id")}`,
    /**
     * Rows matching `conditions` after `key`, oldest first, at most `take`, with the columns of `shape`.
     * The group's whole page (no condition) is prepared and keeps its generic plan (data/sql.ts
     * `prepare`): the (group, created_at, id) index from the key on, checked at 1M on the first and a
     * 90 % deep page. A filter is planned afresh: a range or a rare value may want another index.
     */
    page: <Row>(reader: ScopedSql, conditions: (Sql | undefined)[], key: CursorKey | null, take: number, shape: RowShape) =>
      reader.rows<Row>({
        from: model,
        shape,
        where: [...conditions, keyset.after(key)],
        orderBy: keyset.orderBy,
        limit: take,
        prepare: conditions.every((c) => c === undefined),
      }),
    /** The row with this id in scope, with the columns of `shape`. Prepared: a primary-key lookup's kept plan is the one it would get afresh. */
    async byId<Row>(reader: ScopedSql, id: string, shape: RowShape): Promise<Row | undefined> {
      const [row] = await reader.rows<Row>({ from: model, shape, where: [sql`${c("id")} = ${id}::uuid`], limit: 1, prepare: true });
      return row;
    },
  };
  return keyset;
}

// A signed key of the wrong shape cannot come from us; match nothing rather than fail.
const IMPOSSIBLE = { id: { in: [] as string[] } };

/** The same position and order as a Prisma where and orderBy. */
export const createdAtPrisma = {
  after(key: CursorKey | null): Record<string, unknown> {
    if (!key) return {};
    const at = instantOf(key);
    if (!at) return IMPOSSIBLE;
    const id = key[1] as string;
    return { AND: [{ createdAt: { gte: at } }, { OR: [{ createdAt: { gt: at } }, { id: { gt: id } }] }] };
  },
  orderBy: [{ createdAt: "asc" as const }, { id: "asc" as const }],
  /** findMany arguments for a page: `where`, after `key`, oldest first, at most `take`. */
  page<W extends object>(where: W, key: CursorKey | null, take: number) {
    return { where: { AND: [where, createdAtPrisma.after(key)] }, orderBy: createdAtPrisma.orderBy, take };
  },
  /** findMany arguments for every row `where` selects, oldest first (the batch loads). */
  all<W extends object>(where: W) {
    return { where, orderBy: createdAtPrisma.orderBy };
  },
};
