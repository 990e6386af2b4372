// Bounds on one /graphql operation, checked at validation time (before anything runs): how deeply
// it nests and what it would cost. REST operations run in-process and never pass through here.
//
// Depth: the number of fields on the longest path from the root to a leaf, so `{ viewer { kind } }`
// is 2. Cost: every selected field costs 1; a field with a `limit` argument counts its selection
// `limit` times (100, the service's default page size, when `limit` is absent or a variable: a
// validation result is cached per document, so variable values are not known here); a list without
// a limit (a guest's reservations) counts its selection LIST_FANOUT times; the `nodes` of a page are
// already counted by the page's limit. Introspection fields are free: introspection has its own switch.
//
// Hand-written rather than graphql-depth-limit / graphql-query-complexity: as validation rules the
// first throws on an unknown fragment and the second rejects every query with a required variable.
import {
  GraphQLError,
  Kind,
  getNamedType,
  getNullableType,
  isInterfaceType,
  isListType,
  isObjectType,
  type FieldNode,
  type GraphQLField,
  type GraphQLNamedType,
  type OperationDefinitionNode,
  type SelectionNode,
  type SelectionSetNode,
  type ValidationContext,
  type ValidationRule,
} from "graphql";
import { DEFAULT_LIMIT, MAX_LIMIT } from "../pagination/keyset";

/** How many items an unpaged list (a guest's reservations, a table's bindings) is assumed to hold. */
export const LIST_FANOUT = 5;

export interface GraphQLLimits {
  graphqlMaxDepth: number;
  graphqlMaxCost: number;
}

export interface OperationMeasure {
  depth: number;
  cost: number;
}

export function validationRules(config: GraphQLLimits): ValidationRule[] {
  return [operationLimitsRule(config)];
}

function operationLimitsRule(limits: GraphQLLimits): ValidationRule {
  return (context) => ({
    OperationDefinition(operation) {
      const { depth, cost } = measureOperation(context, operation);
      const name = operation.name ? `operation ${operation.name.value}` : "the operation";
      if (depth > limits.graphqlMaxDepth) {
        context.reportError(
          new GraphQLError(`${name} nests ${depth} fields deep; at most ${limits.graphqlMaxDepth} are allowed`, {
            nodes: [operation],
            extensions: { limit: "depth", maximum: limits.graphqlMaxDepth, actual: depth },
          }),
        );
      }
      if (cost > limits.graphqlMaxCost) {
        context.reportError(
          new GraphQLError(
            `${name} costs ${cost}; at most ${limits.graphqlMaxCost} is allowed. ` +
              `Each field counts once per row: ask for a smaller limit (literal limits count as given, ` +
              `others as ${DEFAULT_LIMIT}) or fewer fields`,
            { nodes: [operation], extensions: { limit: "cost", maximum: limits.graphqlMaxCost, actual: cost } },
          ),
        );
      }
    },
  });
}

export function measureOperation(context: ValidationContext, operation: OperationDefinitionNode): OperationMeasure {
  const schema = context.getSchema();
  const root = schema.getRootType(operation.operation) ?? undefined;
  return measureSet(context, root, operation.selectionSet, new Set());
}

function measureSet(
  context: ValidationContext,
  parent: GraphQLNamedType | undefined,
  set: SelectionSetNode,
  fragmentsOnPath: ReadonlySet<string>,
): OperationMeasure {
  let depth = 0;
  let cost = 0;
  for (const selection of set.selections) {
    const m = measureSelection(context, parent, selection, fragmentsOnPath);
    depth = Math.max(depth, m.depth);
    cost += m.cost;
  }
  return { depth, cost };
}

function measureSelection(
  context: ValidationContext,
  parent: GraphQLNamedType | undefined,
  selection: SelectionNode,
  fragmentsOnPath: ReadonlySet<string>,
): OperationMeasure {
  const schema = context.getSchema();
  switch (selection.kind) {
    case Kind.FIELD:
      return measureField(context, parent, selection, fragmentsOnPath);
    case Kind.INLINE_FRAGMENT: {
      const type = selection.typeCondition ? schema.getType(selection.typeCondition.name.value) : parent;
      return measureSet(context, type, selection.selectionSet, fragmentsOnPath);
    }
    case Kind.FRAGMENT_SPREAD: {
      const name = selection.name.value;
      const fragment = context.getFragment(name);
      // Unknown fragments and cycles are reported by graphql's own rules; count them as nothing.
      if (!fragment || fragmentsOnPath.has(name)) return { depth: 0, cost: 0 };
      const type = schema.getType(fragment.typeCondition.name.value);
      return measureSet(context, type, fragment.selectionSet, new Set([...fragmentsOnPath, name]));
    }
  }
}

function measureField(
  context: ValidationContext,
  parent: GraphQLNamedType | undefined,
  node: FieldNode,
  fragmentsOnPath: ReadonlySet<string>,
): OperationMeasure {
  if (node.name.value.startsWith("__")) return { depth: 0, cost: 0 };
  const field = isObjectType(parent) || isInterfaceType(parent) ? parent.getFields()[node.name.value] : undefined;
  if (!node.selectionSet) return { depth: 1, cost: 1 };
  const child = measureSet(context, field ? getNamedType(field.type) : undefined, node.selectionSet, fragmentsOnPath);
  return { depth: 1 + child.depth, cost: 1 + multiplier(parent, field, node) * child.cost };
}

/** How many times a field's selection is counted. */
function multiplier(parent: GraphQLNamedType | undefined, field: GraphQLField<unknown, unknown> | undefined, node: FieldNode): number {
  if (!field) return 1;
  if (field.args.some((a) => a.name === "limit")) {
    const given = node.arguments?.find((a) => a.name.value === "limit")?.value;
    if (given?.kind === Kind.INT) return Math.min(Math.max(Number(given.value), 1), MAX_LIMIT);
    return DEFAULT_LIMIT;
  }
  if (!isListType(getNullableType(field.type))) return 1;
  return isPageNodes(parent, field) ? 1 : LIST_FANOUT;
}

/** The `nodes` of a page type: as many as the page's limit, which already multiplied. */
function isPageNodes(parent: GraphQLNamedType | undefined, field: GraphQLField<unknown, unknown>): boolean {
  return field.name === "nodes" && isObjectType(parent) && "hasMore" in parent.getFields();
}
