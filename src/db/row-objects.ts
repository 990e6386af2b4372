// Rows as objects, built by a function made once per column list. pg's own object rows are filled
// key by key through one shared store for every shape the process reads, which V8 cannot specialise;
// a literal per shape is built like any object literal. Read in array mode, then turned into objects.
import type { FieldDef } from "pg";

type RowObject = (values: unknown[]) => Record<string, unknown>;

// Column lists come from the read paths and from GraphQL selections (data/json-rows.ts): bounded, so
// a process that sees more shapes builds the rest with the plain loop.
const MAX_SHAPES = 500;
const builders = new Map<string, RowObject>();

// A prepared statement's columns are its text's: its builder is found by its name, without a key
// made of the column names on every execution (checked by the column count, should a name be reused).
const byStatement = new Map<string, { columns: number; build: RowObject }>();

/**
 * The function that turns an array-mode row of these columns into an object, keys in column order.
 * `statement`: the prepared statement's name, when the columns are a named statement's.
 */
export function rowObjectBuilder(fields: readonly FieldDef[], statement?: string): RowObject {
  if (statement === undefined) return builderOf(fields);
  const known = byStatement.get(statement);
  if (known && known.columns === fields.length) return known.build;
  const build = builderOf(fields);
  if (byStatement.size < MAX_SHAPES) byStatement.set(statement, { columns: fields.length, build });
  return build;
}

function builderOf(fields: readonly FieldDef[]): RowObject {
  const key = JSON.stringify(fields.map((f) => f.name)); // unambiguous, whatever the names hold
  let build = builders.get(key);
  if (!build) {
    // Names become string literals (JSON.stringify escapes them); "__proto__" must be computed, or the
    // literal would set the prototype instead of a member.
    const members = fields.map((f, i) => `${f.name === "__proto__" ? '["__proto__"]' : JSON.stringify(f.name)}: values[${i}]`);
    build = builders.size < MAX_SHAPES ? (new Function("values", `return { ${members.join(", ")} };`) as RowObject) : plainRow(fields);
    if (builders.size < MAX_SHAPES) builders.set(key, build);
  }
  return build;
}

function plainRow(fields: readonly FieldDef[]): RowObject {
  const names = fields.map((f) => f.name);
  return (values) => {
    const row: Record<string, unknown> = {};
    for (let i = 0; i < names.length; i++) Object.defineProperty(row, names[i], { value: values[i], enumerable: true, writable: true, configurable: true });
    return row;
  };
}
