// The hot read paths in SQL on the reader's pool: guests and master profiles (lists, get-by-id,
// totals) and the guests, reservations and transactions a nested GraphQL page loads. Prisma costs
// about 1.3 ms of CPU per 100-row page (it compiles every query in WebAssembly and maps every
// value), more than the rest of the request together; one parameterised statement with timestamps
// rendered by PostgreSQL as the API's ISO strings costs a fraction (bench/results). Every statement
// is built here, and every one is ANDed with the caller's tenant predicate from
// auth/tenant-scope.ts, the same rules the scoped Prisma client applies: a resolver cannot leave
// the scope out.
import type { Pool } from "pg";
import { Prisma } from "../generated/prisma/client";
import type { Sql } from "../generated/prisma/internal/prismaNamespace";
import type { Scope } from "../auth/scope";
import { snakeCase, tenantSql, type TenantModel } from "../auth/tenant-scope";
import { runStatement } from "./sql-count";

export type { Sql };
export const sql = Prisma.sql;
export const join = Prisma.join;

/** How a column reaches the API: as stored, or an instant or date rendered as its ISO string. */
export type ColumnKind = "value" | "instant" | "date";
/** A row's fields (Prisma names) and how each is rendered; the select list is derived from it. */
export type RowShape = Readonly<Record<string, ColumnKind>>;

/** Tables read in SQL, by model (the @@map of schema.prisma). */
const TABLES = {
  GuestProfile: "guest_profiles",
  MasterProfile: "master_profiles",
  MasterProfileCount: "master_profile_counts",
  Event: "events",
  Reservation: "reservations",
  Transaction: "transactions",
  TableMember: "table_members",
} as const;
export type SqlModel = keyof typeof TABLES;

const ALIAS = "t";
/** A column of the selected table: `t.<column>`. */
export const col = (field: string) => Prisma.raw(`${ALIAS}.${snakeCase(field)}`);

// PostgreSQL stores microseconds; every API timestamp column is timestamptz(3), so .MS is exact and
// the text equals what Date#toISOString gives for the same value.
const render: Record<ColumnKind, (column: string) => string> = {
  value: (c) => c,
  instant: (c) => `to_char(${c} AT TIME ZONE 'UTC', 'YYYY-MM-DD"T"HH24:MI:SS.MS"Z"')`,
  date: (c) => `to_char(${c}, 'YYYY-MM-DD')`,
};

// Weak: shapes made per selection (graphql/selection.ts) come and go.
const selectLists = new WeakMap<RowShape, Sql>();
function selectList(shape: RowShape): Sql {
  let list = selectLists.get(shape);
  if (!list) {
    const columns = Object.entries(shape).map(([field, kind]) => `${render[kind](`${ALIAS}.${snakeCase(field)}`)} AS "${field}"`);
    list = Prisma.raw(columns.join(", "));
    selectLists.set(shape, list);
  }
  return list;
}

export interface Select {
  from: SqlModel;
  shape: RowShape;
  /** Conditions ANDed with the tenant predicate; undefined entries are skipped. */
  where?: (Sql | undefined)[];
  orderBy?: Sql;
  limit?: number;
  offset?: number;
}

/** The caller's tenant predicate on the table aliased `alias` that holds rows of `model`. */
export type TenantPredicate = (model: TenantModel, alias: string) => Sql;

export interface ScopedSql {
  rows<Row>(select: Select): Promise<Row[]>;
  count(select: Pick<Select, "from" | "where">): Promise<number>;
  /**
   * A statement written whole (joins, unions, aggregates): `build` gets `scoped(model, alias)`, the
   * tenant predicate of each table it reads, and must AND it in for every one of them. A statement
   * that asks for no predicate at all is refused.
   */
  query<Row>(build: (scoped: TenantPredicate) => Sql): Promise<Row[]>;
}

export function scopedSql(pool: Pool, scope: Scope): ScopedSql {
  const whereClause = (select: Pick<Select, "from" | "where">) => {
    const conditions = [tenantSql(select.from, scope, ALIAS), ...(select.where ?? []).filter((c): c is Sql => c !== undefined)];
    return Prisma.join(conditions, " AND ");
  };
  const run = async <Row>(query: Sql): Promise<Row[]> => {
    return (await runStatement(pool, query.text, query.values as unknown[])).rows as Row[];
  };
  return {
    rows: async <Row>(s: Select) =>
      run<Row>(
        Prisma.sql`SELECT ${selectList(s.shape)} FROM ${Prisma.raw(TABLES[s.from])} ${Prisma.raw(ALIAS)} WHERE ${whereClause(s)}${
          s.orderBy ? Prisma.sql` ORDER BY ${s.orderBy}` : Prisma.empty
        }${s.limit !== undefined ? Prisma.sql` LIMIT ${s.limit}` : Prisma.empty}${s.offset ? Prisma.sql` OFFSET ${s.offset}` : Prisma.empty}`,
      ),
    query: async <Row>(build: (scoped: TenantPredicate) => Sql) => {
      let scopedTables = 0;
      const statement = build((model, alias) => {
        scopedTables++;
        return tenantSql(model, scope, alias);
      });
      if (scopedTables === 0) throw new Error("a scoped SQL statement must carry the caller's tenant predicate");
      return run<Row>(statement);
    },
    count: async (s) => {
      const [row] = await run<{ n: string }>(
        Prisma.sql`SELECT count(*) AS n FROM ${Prisma.raw(TABLES[s.from])} ${Prisma.raw(ALIAS)} WHERE ${whereClause(s)}`,
      );
      return Number(row.n);
    },
  };
}

/**
 * Case-insensitive equality as `lower(column) = lower(value)`: no LIKE pattern to escape, and an
 * index on `lower(column)` serves it (ILIKE cannot use a btree).
 */
export const equalsInsensitive = (field: string, value: string | null | undefined) =>
  value == null ? undefined : Prisma.sql`lower(${col(field)}) = lower(${value})`;

/** `column = value` when the value is given. */
export const equals = (field: string, value: unknown) => (value == null ? undefined : Prisma.sql`${col(field)} = ${value}`);
