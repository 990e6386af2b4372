// Response schemas from the REST operations: each selection set is walked against schema.graphql,
// so the document says exactly what the code sends. Aliases are the wire names; GraphQL nullability
// decides `null`. Every selected field is sent (GraphQL sends nulls too), so every one is required,
// except a field under @include or @skip (expand=guest's `guest`), sent only when its variable says so.
import { isDeepStrictEqual } from "node:util";
import {
  Kind,
  getNamedType,
  isEnumType,
  isListType,
  isNonNullType,
  isObjectType,
  isScalarType,
  type FieldNode,
  type FragmentDefinitionNode,
  type GraphQLObjectType,
  type GraphQLOutputType,
  type SelectionSetNode,
} from "graphql";

export type JsonSchema = Record<string, unknown>;

/** GraphQL scalar → JSON Schema, for a non-null value (JSON: any value but null). */
const SCALARS: Record<string, JsonSchema> = {
  String: { type: "string" },
  ID: { type: "string" },
  Boolean: { type: "boolean" },
  Int: { type: "integer", format: "int32" },
  Float: { type: "number" },
  UUID: { type: "string", format: "uuid" },
  Long: { type: "integer", format: "int64" },
  DateTime: { type: "string", format: "date-time" },
  Date: { type: "string", format: "date" },
  JSON: { type: ["object", "array", "string", "number", "boolean"] },
};

/** Named record schemas (components), shared by every route that selects the same shape. */
export class Components {
  readonly schemas = new Map<string, JsonSchema>();
  /** Shapes that wanted a name already taken by another shape: a test reports them. */
  readonly clashes: string[] = [];

  constructor(private readonly describe: (name: string, schema: JsonSchema) => string | undefined) {}

  ref(name: string, schema: JsonSchema): JsonSchema {
    const described = this.withRecordDescription(name, schema);
    let unique = name;
    for (let n = 2; this.schemas.has(unique) && !isDeepStrictEqual(this.schemas.get(unique), described); n++) unique = `${name}${n}`;
    if (unique !== name) this.clashes.push(`${name}: two different selections of the same type; give one its own fragment`);
    this.schemas.set(unique, described);
    return { $ref: `#/components/schemas/${unique}` };
  }

  private withRecordDescription(name: string, schema: JsonSchema): JsonSchema {
    const description = this.describe(name, schema) ?? schema.description;
    const { description: _drop, ...rest } = schema;
    return description ? { description, ...rest } : rest;
  }
}

export interface WalkContext {
  fragments: Map<string, FragmentDefinitionNode>;
  components: Components;
  /** Prose for a member of a page envelope (next_cursor …), which GraphQL leaves undescribed. */
  envelopeMember: (wireName: string) => string | undefined;
}

/** The fields a selection set sends, fragments spread in place, in the order they are written. */
export function fieldsOf(set: SelectionSetNode, fragments: Map<string, FragmentDefinitionNode>): FieldNode[] {
  return set.selections.flatMap((s) => {
    if (s.kind === Kind.FIELD) return [s];
    if (s.kind === Kind.INLINE_FRAGMENT) return fieldsOf(s.selectionSet, fragments);
    const fragment = fragments.get(s.name.value);
    if (!fragment) throw new Error(`unknown fragment ${s.name.value}`);
    return fieldsOf(fragment.selectionSet, fragments);
  });
}

export const wireName = (field: FieldNode) => field.alias?.value ?? field.name.value;

/**
 * A record's component name: its GraphQL type's, or `<Type>With<Extra>` when a fragment is extended
 * with more fields (a table with its bindings), so each distinct shape gets its own name.
 */
export function componentName(type: GraphQLObjectType, set: SelectionSetNode): string {
  // A shape of its own, named by its fragment: `...GuestSummaryFields` alone is GuestSummary.
  const [only] = set.selections;
  if (set.selections.length === 1 && only.kind === Kind.FRAGMENT_SPREAD) {
    const fragment = only.name.value.replace(/Fields$/, "");
    if (fragment !== type.name && fragment.startsWith(type.name)) return fragment;
  }
  const spreads = set.selections.some((s) => s.kind === Kind.FRAGMENT_SPREAD);
  const extras = set.selections.filter((s): s is FieldNode => s.kind === Kind.FIELD).map(wireName);
  if (!spreads || extras.length === 0) return type.name;
  return `${type.name}With${extras.map(pascal).join("And")}`;
}

const pascal = (name: string) => name.replace(/(^|_)([a-z])/g, (_m, _u, c: string) => c.toUpperCase());

/** The object a selection set sends on `type`, members in selection order. */
export function objectSchema(type: GraphQLObjectType, set: SelectionSetNode, ctx: WalkContext): JsonSchema {
  const properties: Record<string, JsonSchema> = {};
  const optional = new Set<string>();
  const isPage = "nodes" in type.getFields() && "hasMore" in type.getFields();
  for (const node of fieldsOf(set, ctx.fragments)) {
    const name = wireName(node);
    if (node.directives?.some((d) => d.name.value === "include" || d.name.value === "skip")) optional.add(name);
    if (node.name.value === "__typename") {
      properties[name] = { type: "string", const: type.name };
      continue;
    }
    const field = type.getFields()[node.name.value];
    const schema = outputSchema(field.type, node.selectionSet, ctx);
    const description = (isPage ? ctx.envelopeMember(name) : undefined) ?? field.description ?? undefined;
    properties[name] = description ? withDescription(schema, description) : schema;
  }
  const required = Object.keys(properties).filter((name) => !optional.has(name));
  const schema: JsonSchema = { type: "object", required, properties, additionalProperties: false };
  return type.description ? { description: type.description, ...schema } : schema;
}

/** A field's value: a component $ref for records, inline schemas for scalars, enums and lists. */
export function outputSchema(type: GraphQLOutputType, set: SelectionSetNode | undefined, ctx: WalkContext): JsonSchema {
  return isNonNullType(type) ? valueSchema(type.ofType, set, ctx) : nullable(valueSchema(type, set, ctx));
}

/** The schema of a value that is never null. */
function valueSchema(type: GraphQLOutputType, set: SelectionSetNode | undefined, ctx: WalkContext): JsonSchema {
  if (isListType(type)) return { type: "array", items: outputSchema(type.ofType, set, ctx) };
  if (isScalarType(type)) {
    const scalar = SCALARS[type.name];
    if (!scalar) throw new Error(`no JSON Schema for the scalar ${type.name}`);
    return structuredClone(scalar);
  }
  if (isEnumType(type)) {
    // A deprecated value is an input alias only (mode=rollup): answers never carry it.
    return { type: "string", enum: type.getValues().filter((v) => !v.deprecationReason).map((v) => v.name) };
  }
  if (isObjectType(type)) {
    if (!set) throw new Error(`${type.name} selected without fields`);
    return ctx.components.ref(componentName(type, set), objectSchema(type, set, ctx));
  }
  throw new Error(`unsupported output type ${getNamedType(type).name}`);
}

/** The same schema, null allowed: `type: [T, "null"]`, or oneOf [$ref, null] for records. */
function nullable(schema: JsonSchema): JsonSchema {
  if (schema.$ref) return { oneOf: [schema, { type: "null" }] };
  const types = Array.isArray(schema.type) ? schema.type : [schema.type];
  const out: JsonSchema = { ...schema, type: [...types, "null"] };
  if (Array.isArray(schema.enum)) out.enum = [...schema.enum, null];
  return out;
}

/** A description beside the schema; on a nullable $ref it goes on the wrapper. */
export function withDescription(schema: JsonSchema, description: string): JsonSchema {
  return { description, ...schema };
}

/**
 * Members that the route deletes when null (total_count without include_total) become optional and
 * never null.
 */
export function omitNullMembers(object: JsonSchema, members: readonly string[] = []): JsonSchema {
  const properties = { ...(object.properties as Record<string, JsonSchema>) };
  const present = members.filter((m) => m in properties);
  if (present.length === 0) return object;
  for (const m of present) properties[m] = nonNullable(properties[m]);
  const required = (object.required as string[]).filter((r) => !present.includes(r));
  return { ...object, required, properties };
}

function nonNullable(schema: JsonSchema): JsonSchema {
  const { oneOf, type, enum: values, ...rest } = schema;
  if (Array.isArray(oneOf)) {
    const kept = oneOf.filter((s: JsonSchema) => s.type !== "null");
    return kept.length === 1 ? { ...rest, ...kept[0] } : { ...rest, oneOf: kept };
  }
  const out: JsonSchema = { ...rest };
  if (Array.isArray(type)) {
    const kept = type.filter((t) => t !== "null");
    out.type = kept.length === 1 ? kept[0] : kept;
  } else if (type !== undefined) out.type = type;
  if (Array.isArray(values)) out.enum = values.filter((v) => v !== null);
  return out;
}
