// Rows read as the JSON text of a GraphQL selection, written by PostgreSQL (graphql/json-plan.ts plans
// which documents can be read this way). A nested page then costs Node one string per row instead of
// a JavaScript value per column and an executor pass over every value. Keys come out in selection
// order and compact, columns rendered as data/sql.ts renders them for every other read (so the text
// is what the general executor writes), child lists as correlated subqueries that carry their own
// tenant predicate, in the order the loaders read them.
import { columnOf, tableOf, type ColumnKind, type SqlModel } from "./models";
import { join, raw, renderColumn, sql, type Sql, type TenantPredicate } from "./sql";

/** A list of child rows under each parent row: `child.foreignKey = parent.references`, in `orderBy` order. */
export interface JsonRelation {
  model: SqlModel;
  foreignKey: string;
  references: string;
  orderBy: readonly string[];
}

export type JsonField =
  /** A column, rendered as the API renders it. */
  | { key: string; field: string; kind: ColumnKind }
  /** A fixed string (`__typename`). */
  | { key: string; constant: string }
  /** The rows of a relation as a JSON array, `[]` when there are none. */
  | { key: string; relation: JsonRelation; object: JsonObject };

/** A row of `model` as a JSON object with these members, in this order. */
export interface JsonObject {
  model: SqlModel;
  /** At least one. */
  fields: readonly JsonField[];
}

/** A row of a page read as JSON: its cursor key and its selection's text. */
export interface JsonRow {
  createdAt: string;
  id: string;
  json: string;
}

/** Keys are column names of a lateral row: PostgreSQL cuts identifiers at 63 bytes. */
export const MAX_KEY_LENGTH = 63;

// Keys and constants are GraphQL names, written into the statement as identifiers and literals.
const NAME = /^[_A-Za-z][_0-9A-Za-z]*$/;
const checked = (name: string) => {
  if (!NAME.test(name) || name.length > MAX_KEY_LENGTH) throw new Error(`not a GraphQL name of at most ${MAX_KEY_LENGTH} characters: ${JSON.stringify(name)}`);
  return name;
};

/**
 * The JSON text of `object` for the row aliased `alias`: `row_to_json` over a lateral row of its
 * members (compact, keys in order, a json member embedded as it is). `from` joins that row in;
 * `json` is its text. Child lists read through `scoped`, so each carries its tenant predicate.
 */
export function jsonRowSql(object: JsonObject, alias: string, scoped: TenantPredicate): { from: Sql; json: Sql } {
  const column = (field: string, on = alias, model = object.model) => raw(`${on}.${columnOf(model, field)}`);
  const members = object.fields.map((f, i) => {
    const as = raw(`"${checked(f.key)}"`);
    if ("kind" in f) return sql`${raw(renderColumn(f.kind, `${alias}.${columnOf(object.model, f.field)}`))} AS ${as}`;
    if ("constant" in f) return sql`${raw(`'${checked(f.constant)}'`)}::text AS ${as}`;
    const child = `${alias}_${i}`;
    const { model, foreignKey, references, orderBy } = f.relation;
    const row = jsonRowSql(f.object, child, scoped);
    const order = join(orderBy.map((o) => column(o, child, model)), ", ");
    return sql`coalesce((SELECT '[' || string_agg(${row.json}, ',' ORDER BY ${order}) || ']'
      FROM ${raw(`${tableOf(model)} ${child}`)} ${row.from}
      WHERE ${column(foreignKey, child, model)} = ${column(references)} AND ${scoped(model, child)}), '[]')::json AS ${as}`;
  });
  const row = raw(`${alias}_j`);
  return { from: sql`CROSS JOIN LATERAL (SELECT ${join(members, ", ")}) ${row}`, json: sql`row_to_json(${row})::text` };
}

/**
 * The members of a flat `object` (columns and constants, no relation) as the select list of the row
 * aliased `alias`, each column named by its key: the driver's row object is then the member object
 * itself, keys in selection order, for Node to serialise (graphql/json-plan.ts decides when).
 */
export function flatRowSql(object: JsonObject, alias: string): Sql {
  // Planned once per document (graphql/json-plan.ts), read on every request of it: built once.
  let byAlias = flatRowLists.get(object);
  if (!byAlias) flatRowLists.set(object, (byAlias = new Map()));
  let list = byAlias.get(alias);
  if (!list) byAlias.set(alias, (list = buildFlatRowSql(object, alias)));
  return list;
}

const flatRowLists = new WeakMap<JsonObject, Map<string, Sql>>();

function buildFlatRowSql(object: JsonObject, alias: string): Sql {
  return join(
    object.fields.map((f) => {
      const as = raw(`"${checked(f.key)}"`);
      if ("kind" in f) return sql`${raw(renderColumn(f.kind, `${alias}.${columnOf(object.model, f.field)}`))} AS ${as}`;
      if ("constant" in f) return sql`${raw(`'${checked(f.constant)}'`)}::text AS ${as}`;
      throw new Error(`a relation is no column: ${f.key}`);
    }),
    ", ",
  );
}
