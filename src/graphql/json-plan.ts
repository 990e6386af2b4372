// The JSON read path for /graphql: a document that only reads a guests page, its guests' columns and
// their reservations and transactions (the nested page clients send most) is planned once into one
// statement that has PostgreSQL write each guest's JSON (data/json-rows.ts), and its response is
// that text joined (graphql/raw-json.ts); a flat selection (columns only) is read as row objects named
// by the response keys and serialised as they are, as cheap for PostgreSQL as any page. /v1 runs its
// fixed operations the same way (api/execute.ts). No executor walks the values.
//
// Only where the answer is provably what the general executor gives; everything else (any other
// field or type, directives, aliases that collide, a missing scope, variables that do not coerce)
// runs on the general executor (graphql/compiled.ts). What makes it equal:
// - columns only where the schema has no resolver for the field and the row type (row-types.ts) has
//   the column; leaves of scalars whose serialisers pass text, integers and booleans through and
//   enums whose values are their names (test/integration/json-plan.test.ts holds the enums to the
//   database's, and every non-null column field to a NOT NULL column);
// - relations only where the resolver module declares, on the field, what it reads (jsonRelation);
// - the page, its checks, its cursor and its errors from the same code as the resolver, which the
//   resolver module declares on the root field (jsonPage; resolvers/guests.ts);
// - a scope missing anywhere: the general executor answers, with its errors and partial data.
import {
  GraphQLObjectType,
  Kind,
  getArgumentValues,
  getNamedType,
  getNullableType,
  getOperationAST,
  isEnumType,
  isListType,
  isNonNullType,
  isObjectType,
  isScalarType,
  locatedError,
  type DocumentNode,
  type ExecutionResult,
  type FieldNode,
  type FragmentDefinitionNode,
  type GraphQLField,
  type GraphQLOutputType,
  type GraphQLSchema,
  type SelectionSetNode,
} from "graphql";
import { compileVariableParsing, failToParseVariables } from "graphql-jit/dist/variables";
import type { RequestContext } from "../context";
import { MAX_KEY_LENGTH, type JsonField, type JsonObject, type JsonRow } from "../data/json-rows";
import type { SqlModel } from "../data/models";
import type { Page } from "../pagination/keyset";
import type { CursorKey } from "../pagination/cursor";
import { pageOf, relationOf, type PageReader, type Row } from "./json-page";
import { RawJson } from "./raw-json";
import { GUEST, RESERVATION, TRANSACTION } from "./row-types";
import type { RowType } from "./selection";
import { requiredScope } from "./schema";

/** The object types the path reads: their table and columns (relations: a field's jsonRelation). */
const TYPES: Record<string, { model: SqlModel; row: RowType }> = {
  Guest: { model: "GuestProfile", row: GUEST },
  Reservation: { model: "Reservation", row: RESERVATION },
  Transaction: { model: "Transaction", row: TRANSACTION },
};

type PageMember = "nodes" | "nextCursor" | "hasMore" | "__typename";


/** Scalars the driver reads as the value their serialisers write (Long: pg reads bigint as a string). */
const ROW_SCALARS = new Set(["String", "ID", "Boolean", "Int", "UUID", "DateTime", "Date"]);

/** Scalars whose serialisers write what PostgreSQL's JSON does for the column (text, integers, booleans). */
const PASSING_SCALARS = new Set(["String", "ID", "Boolean", "Int", "UUID", "Long", "DateTime", "Date"]);

export interface JsonPlan {
  /** The root field's arguments, or undefined when the general executor must answer (a scope missing, variables that do not coerce). */
  argumentsFor(ctx: RequestContext, variables: Record<string, unknown>): Record<string, unknown> | undefined;
  run(ctx: RequestContext, args: Record<string, unknown>): Promise<ExecutionResult>;
}

const plans = new WeakMap<DocumentNode, Map<string, JsonPlan | null>>();

/** The document's plan, worked out once per document and operation; null when it cannot be read this way. */
export function jsonPlan(schema: GraphQLSchema, document: DocumentNode, operationName?: string | null): JsonPlan | null {
  let byName = plans.get(document);
  if (!byName) plans.set(document, (byName = new Map()));
  const key = operationName ?? "";
  let plan = byName.get(key);
  if (plan === undefined) {
    plan = planOf(schema, document, operationName) ?? null;
    byName.set(key, plan);
  }
  return plan;
}

/** Planning context: the fragments of the document and the scopes its fields need. */
interface Planning {
  schema: GraphQLSchema;
  fragments: Record<string, FragmentDefinitionNode>;
  scopes: Set<string>;
}

function planOf(schema: GraphQLSchema, document: DocumentNode, operationName?: string | null): JsonPlan | undefined {
  const operation = getOperationAST(document, operationName);
  const query = schema.getQueryType();
  if (!operation || operation.operation !== "query" || operation.directives?.length || !query) return;
  const fragments: Record<string, FragmentDefinitionNode> = {};
  for (const d of document.definitions) if (d.kind === Kind.FRAGMENT_DEFINITION) fragments[d.name.value] = d;
  const planning: Planning = { schema, fragments, scopes: new Set() };

  const roots = fieldsOf(operation.selectionSet, query, planning);
  if (!roots || roots.length !== 1) return;
  const [root] = roots;
  const rootField = query.getFields()[root.name.value];
  const page = pageOf(rootField);
  // Non-null, so a failed read nulls `data` (as run() answers it).
  if (!page || !rootField || !root.selectionSet || !isNonNullType(rootField.type)) return;
  needScope(rootField, planning);
  const pageType = getNullableType(rootField.type);
  if (!isObjectType(pageType)) return;
  const pageFields = fieldsOf(root.selectionSet, pageType, planning);
  if (!pageFields) return;

  // The page's members in selection order: the nodes (one `nodes` at most: a row has one JSON text).
  let nodes: JsonObject | undefined;
  const members: { key: string; member: PageMember }[] = [];
  for (const f of pageFields) {
    const name = f.name.value;
    const field = pageType.getFields()[name];
    if (f.arguments?.length || (name !== "__typename" && (!field || field.resolve))) return;
    if (name === "nodes") {
      if (nodes || !f.selectionSet || !isListOf(field.type, page.nodes)) return;
      nodes = objectOf(schema.getType(page.nodes) as GraphQLObjectType, f.selectionSet, planning);
      if (!nodes) return;
    } else if (name !== "nextCursor" && name !== "hasMore" && name !== "__typename") return;
    members.push({ key: keyOf(f), member: name });
  }

  if (!nodes) return;
  const object = nodes;
  const rootKey = keyOf(root);
  // The rows' path assigns the page's members to a plain object, where `__proto__` would set the prototype.
  const keyOfRow = members.some((m) => m.key === "__proto__") ? undefined : rowKeyOf(object, schema.getType(page.nodes) as GraphQLObjectType, page.key);
  const read: PageReader<JsonRow | Row> = keyOfRow ? page.readRows(keyOfRow) : page.read;
  const scopes = [...planning.scopes];
  // Compiled once, as the general executor compiles its own (graphql-jit), and coercing the same way.
  const coerceVariables = compileVariableParsing(schema, operation.variableDefinitions ?? []);
  const valueOf = (member: PageMember, result: Page<JsonRow | Row>) =>
    member === "nodes" ? result.nodes : member === "nextCursor" ? result.nextCursor : member === "hasMore" ? result.hasMore : pageType.name;
  return {
    argumentsFor(ctx, variables) {
      if (!scopes.every((s) => ctx.credential.scopes.has(s))) return undefined;
      try {
        const result = coerceVariables(variables);
        if (failToParseVariables(result)) return undefined;
        return getArgumentValues(rootField, root, result.coerced);
      } catch {
        return undefined;
      }
    },
    async run(ctx, args) {
      let result: Page<JsonRow | Row>;
      try {
        result = await read(args, ctx, object);
      } catch (err) {
        // As the executor reports a resolver's error: located at the root field, which is non-null.
        return { data: null, errors: [locatedError(err, [root], [keyOf(root)])] };
      }
      if (keyOfRow) {
        // Row objects: the whole answer is serialised once, in one flat string, by whoever sends it.
        const value: Row = {};
        for (const { key, member } of members) value[key] = valueOf(member, result);
        return { data: { [rootKey]: value } };
      }
      const text = members.map(({ key, member }) => {
        const value = member === "nodes" ? `[${result.nodes.map((n) => (n as JsonRow).json).join(",")}]` : JSON.stringify(valueOf(member, result));
        return `${JSON.stringify(key)}:${value}`;
      });
      return { data: new RawJson(`{${JSON.stringify(rootKey)}:{${text.join(",")}}}`) as unknown as Record<string, unknown> };
    },
  };
}

/** A type's JSON object for a selection, or undefined when some field is not a known column or relation. */
function objectOf(type: GraphQLObjectType, set: SelectionSetNode, planning: Planning): JsonObject | undefined {
  const known = Object.hasOwn(TYPES, type.name) ? TYPES[type.name] : undefined;
  const selected = known && fieldsOf(set, type, planning);
  if (!known || !selected) return;
  const fields: JsonField[] = [];
  for (const node of selected) {
    const name = node.name.value;
    const key = keyOf(node);
    if (name === "__typename") {
      fields.push({ key, constant: type.name });
      continue;
    }
    const field = type.getFields()[name];
    if (!field || node.arguments?.length) return;
    needScope(field, planning);
    const relation = relationOf(field);
    if (relation) {
      const childType = getNamedType(field.type);
      if (!node.selectionSet || !isListOf(field.type, childType.name) || !isNonNullType(field.type)) return;
      const object = objectOf(childType as GraphQLObjectType, node.selectionSet, planning);
      if (!object || object.model !== relation.model) return;
      fields.push({ key, relation, object });
    } else if (Object.hasOwn(known.row.shape, name) && !field.resolve && passesThrough(field.type) && !node.selectionSet) {
      fields.push({ key, field: name, kind: known.row.shape[name] });
    } else return;
  }
  return { model: known.model, fields };
}

/**
 * How to read the cursor key from a row of a flat `object`, or undefined when it must be read as JSON
 * text: a relation, a column the driver reads otherwise than it is serialised, a key field not
 * selected. (Rows keep a `__proto__` column as a member: db/row-objects.ts.)
 */
function rowKeyOf(object: JsonObject, type: GraphQLObjectType, key: readonly string[]): ((row: Row) => CursorKey) | undefined {
  const keyOf = new Map<string, string>();
  for (const f of object.fields) {
    if ("relation" in f) return;
    if ("constant" in f) continue;
    const leaf = getNamedType(type.getFields()[f.field].type);
    if (!ROW_SCALARS.has(leaf.name) && !isEnumType(leaf)) return;
    if (!keyOf.has(f.field)) keyOf.set(f.field, f.key);
  }
  const keys = key.map((field) => keyOf.get(field));
  if (keys.some((k) => k === undefined)) return;
  return (row) => keys.map((k) => row[k!] as string);
}

/** `[T!]` or `[T!]!` of the named type. */
function isListOf(type: GraphQLOutputType, name: string): boolean {
  const list = getNullableType(type);
  return isListType(list) && isNonNullType(list.ofType) && getNamedType(list.ofType).name === name;
}

function passesThrough(type: GraphQLOutputType): boolean {
  const leaf = getNullableType(type);
  if (isScalarType(leaf)) return PASSING_SCALARS.has(leaf.name);
  return isEnumType(leaf) && leaf.getValues().every((v) => v.value === v.name);
}

function needScope(field: GraphQLField<unknown, unknown>, planning: Planning) {
  const scope = requiredScope(planning.schema, field);
  if (scope) planning.scopes.add(scope);
}

const keyOf = (node: FieldNode) => node.alias?.value ?? node.name.value;

/**
 * The fields of a selection set on `type`, fragments spread in document order; undefined when a
 * directive, a fragment on another type, two fields under one response key or a key too long for a
 * column name make it more than a plain list of fields.
 */
function fieldsOf(set: SelectionSetNode, type: GraphQLObjectType, planning: Planning): FieldNode[] | undefined {
  const fields: FieldNode[] = [];
  const keys = new Set<string>();
  const visit = (s: SelectionSetNode): boolean => {
    for (const selection of s.selections) {
      if (selection.directives?.length) return false;
      if (selection.kind === Kind.FIELD) {
        const key = keyOf(selection);
        if (keys.has(key) || key.length > MAX_KEY_LENGTH) return false;
        keys.add(key);
        fields.push(selection);
        continue;
      }
      const fragment = selection.kind === Kind.INLINE_FRAGMENT ? selection : planning.fragments[selection.name.value];
      if (!fragment || fragment.directives?.length || (fragment.typeCondition && fragment.typeCondition.name.value !== type.name)) return false;
      if (!visit(fragment.selectionSet)) return false;
    }
    return true;
  };
  return visit(set) ? fields : undefined;
}
