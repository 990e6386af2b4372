// Scoped SQL on the reader's pool, for the read paths where Prisma's per-query and per-value cost
// would dominate the request (the guests page, nested pages, search, table filters): one
// parameterised statement, timestamps rendered by PostgreSQL as the API's ISO text. Every statement
// is ANDed with the caller's tenant predicate from data/tenant.ts, the same rules the scoped Prisma
// client applies, and column names come from data/models.ts.
import { createHash } from "node:crypto";
import type { Pool } from "pg";
import { Prisma } from "../generated/prisma/client";
import type { Sql } from "../generated/prisma/internal/prismaNamespace";
import type { Scope } from "./scope";
import { tenantSql, type TenantModel } from "./tenant";
import { columnOf, tableOf as tableNameOf, type ColumnKind, type RowShape, type SqlModel } from "./models";
import { runStatement } from "../db/sql-count";
import { asGroup } from "../db/session";

export type { ColumnKind, RowShape, Sql, SqlModel };
// Taken once: each `Prisma.x` is a getter of the generated namespace, on every statement's hot path.
export const sql = Prisma.sql;
export const join = Prisma.join;
export const empty = Prisma.empty;
export const raw = Prisma.raw;


const ALIAS = "t";
/** The columns of `model`'s table aliased `t` (or `alias`): `columns("GuestProfile")("email")` is `t.email`. */
export const columns = (model: SqlModel, alias = ALIAS) => (field: string) => raw(`${alias}.${columnOf(model, field)}`);

// PostgreSQL stores microseconds; every API timestamp column is timestamptz(3), so .MS is exact and
// the text equals what Date#toISOString gives for the same value.
const render: Record<ColumnKind, (column: string) => string> = {
  value: (c) => c,
  instant: (c) => `to_char(${c} AT TIME ZONE 'UTC', 'YYYY-MM-DD"T"HH24:MI:SS.MS"Z"')`,
  date: (c) => `to_char(${c}, 'YYYY-MM-DD')`,
};

// Weak: shapes made per selection (graphql/selection.ts) come and go.
const selectLists = new WeakMap<RowShape, Map<SqlModel, Sql>>();
/** The columns of `shape` on `model`'s table aliased `t`, each rendered and named as its field. */
export function selectList(model: SqlModel, shape: RowShape): Sql {
  let byModel = selectLists.get(shape);
  if (!byModel) selectLists.set(shape, (byModel = new Map()));
  let list = byModel.get(model);
  if (!list) {
    const fields = Object.entries(shape).map(([field, kind]) => `${render[kind](`${ALIAS}.${columnOf(model, field)}`)} AS "${field}"`);
    list = raw(fields.join(", "));
    byModel.set(model, list);
  }
  return list;
}

/** A column as the API renders it (`column` is qualified, e.g. `t.created_at`). */
export const renderColumn = (kind: ColumnKind, column: string) => render[kind](column);

export interface Select {
  from: SqlModel;
  shape: RowShape;
  /** Conditions ANDed with the tenant predicate; undefined entries are skipped. */
  where?: (Sql | undefined)[];
  orderBy?: Sql;
  limit?: number;
  offset?: number;
  /**
   * Prepared on each connection (see preparedName) and run on its generic plan (db/tenant-pool.ts):
   * only for a statement whose generic plan was checked at scale.
   */
  prepare?: boolean;
}

/** The caller's tenant predicate on the table aliased `alias` that holds rows of `model`. */
export type TenantPredicate = (model: TenantModel, alias: string) => Sql;

export interface ScopedSql {
  rows<Row>(select: Select): Promise<Row[]>;
  count(select: Pick<Select, "from" | "where">): Promise<number>;
  /**
   * A statement written whole (joins, unions, aggregates): `build` gets `scoped(model, alias)`, the
   * tenant predicate of each table it reads, and must AND it in for every one of them. A statement
   * that asks for no predicate at all is refused. `prepare`: see preparedName.
   */
  query<Row>(build: (scoped: TenantPredicate) => Sql, options?: { prepare?: boolean }): Promise<Row[]>;
}

const tableOf = (model: SqlModel) => raw(`${tableNameOf(model)} ${ALIAS}`);

export function scopedSql(pool: Pool, scope: Scope): ScopedSql {
  const whereClause = (select: Pick<Select, "from" | "where">) => {
    const conditions = [tenantSql(select.from, scope, ALIAS), ...(select.where ?? []).filter((c): c is Sql => c !== undefined)];
    return join(conditions, " AND ");
  };
  // `text` is a getter that joins the statement's parts on every read: read once.
  const run = async <Row>(query: Sql, prepare = false): Promise<Row[]> => {
    const text = query.text;
    const result = await asGroup(scope.propertyGroupId, () => runStatement(pool, text, query.values as unknown[], prepare ? preparedName(text) : undefined));
    return result.rows as Row[];
  };
  return {
    rows: async <Row>(s: Select) =>
      run<Row>(
        sql`SELECT ${selectList(s.from, s.shape)} FROM ${tableOf(s.from)} WHERE ${whereClause(s)}${
          s.orderBy ? sql` ORDER BY ${s.orderBy}` : empty
        }${s.limit !== undefined ? sql` LIMIT ${s.limit}` : empty}${s.offset ? sql` OFFSET ${s.offset}` : empty}`,
        s.prepare,
      ),
    query: async <Row>(build: (scoped: TenantPredicate) => Sql, options?: { prepare?: boolean }) => {
      let scopedTables = 0;
      const statement = build((model, alias) => {
        scopedTables++;
        return tenantSql(model, scope, alias);
      });
      if (scopedTables === 0) throw new Error("a scoped SQL statement must carry the caller's tenant predicate");
      return run<Row>(statement, options?.prepare);
    },
    count: async (s) => {
      const [row] = await run<{ n: string }>(sql`SELECT count(*) AS n FROM ${tableOf(s.from)} WHERE ${whereClause(s)}`);
      return Number(row.n);
    },
  };
}

// A statement planned per request costs PostgreSQL its planning every time; a large one (the JSON
// read path's nested page) noticeably. Prepared and kept on its generic plan (db/tenant-pool.ts sends
// plan_cache_mode with it), each connection plans it once. The texts come from
// arbitrary /graphql documents, and every connection keeps every statement it prepared, so only the
// first MAX_PREPARED texts get a name; the rest run unnamed as before.
const MAX_PREPARED = 100;
const preparedNames = new Map<string, string>();
function preparedName(text: string): string | undefined {
  let name = preparedNames.get(text);
  if (name === undefined && preparedNames.size < MAX_PREPARED) {
    name = `gcs_${createHash("sha256").update(text).digest("hex").slice(0, 32)}`;
    preparedNames.set(text, name);
  }
  return name;
}

/**
 * `column = ANY($ids)`: one parameter, whatever the batch size. The ids are uuids (rows' keys or
 * UUID-scalar arguments), so the array literal needs no quoting, and pg's array encoder (which
 * quotes and escapes each element) is skipped on the nested pages' batches.
 */
export const anyOf = (column: Sql, ids: readonly string[]) => sql`${column} = ANY(${`{${ids.join(",")}}`}::uuid[])`;

/**
 * Case-insensitive equality as `lower(column) = lower(value)`: no LIKE pattern to escape, and an
 * index on `lower(column)` serves it (ILIKE cannot use a btree).
 */
export const equalsInsensitive = (column: Sql, value: string | null | undefined) =>
  value == null ? undefined : sql`lower(${column}) = lower(${value})`;

/** An e-mail address as people paste it: case and surrounding spaces do not matter (issue 42). */
export const equalsEmail = (column: Sql, value: string | null | undefined) => equalsInsensitive(column, value?.trim());

/** `column = value` when the value is given. */
export const equals = (column: Sql, value: unknown) => (value == null ? undefined : sql`${column} = ${value}`);

/** `column::text = value` when the value is given: an enum column compared as its label. */
export const equalsText = (column: Sql, value: string | null | undefined) => (value == null ? undefined : sql`${column}::text = ${value}`);
