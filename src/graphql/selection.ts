// The columns a GraphQL selection reads, so the SQL read paths fetch only those: a nested page
// usually asks for a few of a model's columns, and parsing, rendering and copying the rest would
// be much of what the request allocates. Worked out once per field node of a document (Apollo and
// the REST facade hand back the same parsed document each time) and kept in a WeakMap; the data
// layer gets the result as a plain RowShape.
import { Kind, type FieldNode, type FragmentDefinitionNode, type GraphQLResolveInfo, type SelectionSetNode } from "graphql";
import type { RowShape } from "../data/models";

/** A row read in SQL and the GraphQL type it feeds. */
export interface RowType {
  shape: RowShape;
  /** Columns every read needs: the key, the cursor's columns, the loaders' grouping keys. */
  always: readonly string[];
  /** Fields that are not columns, with the columns their resolvers read (relations: their key). */
  reads: Readonly<Record<string, readonly string[]>>;
}

const byFieldNode = new WeakMap<FieldNode, Map<RowType, RowShape>>();

/**
 * The part of `type.shape` the current field's selection reads (below `under`, e.g. a page's
 * `nodes`). A field this module cannot account for selects the whole shape, so a resolver
 * never meets a missing column.
 */
export function selectedShape(info: GraphQLResolveInfo, type: RowType, under?: string): RowShape {
  const node = info.fieldNodes[0];
  let byType = byFieldNode.get(node);
  if (!byType) byFieldNode.set(node, (byType = new Map()));
  let shape = byType.get(type);
  if (!shape) {
    shape = shapeFor(info, type, under);
    byType.set(type, shape);
  }
  return shape;
}

function shapeFor(info: GraphQLResolveInfo, type: RowType, under?: string): RowShape {
  let sets = info.fieldNodes.map((f) => f.selectionSet);
  if (under) sets = fieldNames(sets, info.fragments).nodes.get(under) ?? [];
  const { names } = fieldNames(sets, info.fragments);
  const wanted = new Set(type.always);
  for (const name of names) {
    if (name === "__typename") continue;
    const columns = Object.hasOwn(type.shape, name) ? [name] : Object.hasOwn(type.reads, name) ? type.reads[name] : undefined;
    if (!columns) return type.shape;
    for (const c of columns) wanted.add(c);
  }
  if (wanted.size === Object.keys(type.shape).length) return type.shape;
  return intern(type.shape, Object.keys(type.shape).filter((c) => wanted.has(c)));
}

/** The field names of selection sets (fragments followed) and, per name, their own selection sets. */
function fieldNames(sets: (SelectionSetNode | undefined)[], fragments: Record<string, FragmentDefinitionNode>) {
  const names = new Set<string>();
  const nodes = new Map<string, (SelectionSetNode | undefined)[]>();
  const visit = (set: SelectionSetNode | undefined) => {
    for (const selection of set?.selections ?? []) {
      if (selection.kind === Kind.FIELD) {
        names.add(selection.name.value);
        nodes.set(selection.name.value, [...(nodes.get(selection.name.value) ?? []), selection.selectionSet]);
      } else if (selection.kind === Kind.INLINE_FRAGMENT) visit(selection.selectionSet);
      else visit(fragments[selection.name.value]?.selectionSet);
    }
  };
  sets.forEach(visit);
  return { names, nodes };
}

// One object per column set, so the select lists built from shapes (data/sql.ts) are reused.
// Bounded: arbitrary /graphql documents could otherwise grow it without end.
const interned = new Map<RowShape, Map<string, RowShape>>();
function intern(full: RowShape, columns: string[]): RowShape {
  let ofShape = interned.get(full);
  if (!ofShape) interned.set(full, (ofShape = new Map()));
  const key = columns.join(",");
  let shape = ofShape.get(key);
  if (!shape) {
    if (ofShape.size >= 1000) ofShape.clear();
    shape = Object.freeze(Object.fromEntries(columns.map((c) => [c, full[c]])));
    ofShape.set(key, shape);
  }
  return shape;
}

/** The names of the fields the current field selects (fragments followed). */
export function selectedFields(info: GraphQLResolveInfo): ReadonlySet<string> {
  return fieldNames(info.fieldNodes.map((f) => f.selectionSet), info.fragments).names;
}

const underByFieldNode = new WeakMap<FieldNode, Map<string, ReadonlySet<string>>>();

/**
 * The names of the fields selected below the current field's `under` (a page's `nodes`), worked out
 * once per field node: a page resolver asks it on every request to decide what to read with the page.
 */
export function selectedUnder(info: GraphQLResolveInfo, under: string): ReadonlySet<string> {
  const node = info.fieldNodes[0];
  let byUnder = underByFieldNode.get(node);
  if (!byUnder) underByFieldNode.set(node, (byUnder = new Map()));
  let names = byUnder.get(under);
  if (!names) {
    const sets = fieldNames(info.fieldNodes.map((f) => f.selectionSet), info.fragments).nodes.get(under) ?? [];
    names = fieldNames(sets, info.fragments).names;
    byUnder.set(under, names);
  }
  return names;
}
