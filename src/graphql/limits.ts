// Bounds on one /graphql operation, checked at validation time (before anything runs): how deeply it
// nests, how many fields and aliases it selects, and what it would cost; plus the size of its
// response, checked after it ran and before it is serialised (compiled.ts). REST operations run
// in-process and never pass through here.
//
// Depth: the number of fields on the longest path from the root to a leaf, so `{ viewer { kind } }`
// is 2 (introspection fields do not count: a type reference nests `ofType` eight deep).
// Selections: field selections after fragment expansion, so a fragment of 10 fields spread 3 times
// counts 30. Aliases: fields written with an alias, counted the same way. Both are counted with one
// measure per fragment, so a fragment bomb (fragments spreading each other twice, 30 deep) costs the
// checker 30 steps, not 2^30.
//
// Cost is in rows × fields: every selected field costs 1 per row it is read for.
// - A field with a `limit` argument counts its selection `limit` times (DEFAULT_LIMIT, 100, when
//   `limit` is absent or null, as the resolvers read it); the `nodes` of a page are already counted
//   by the page's limit.
// - Arguments are priced from their coerced values, variables included. A validation result is
//   cached per document, so the validation rule cannot see variable values: an operation whose cost
//   depends on a variable is priced per request instead, once its variables are known (costPlugin).
// - A list without a limit (a guest's reservations) counts its selection LIST_FANOUT times.
// - An aggregate scans rows it does not return, so it costs AGGREGATE_COST for every aggregate query
//   its resolver runs (see AGGREGATE_QUERIES): as much as reading MAX_LIMIT rows. The fields under it
//   cost 1 each.
// - Introspection (`__schema`, `__type`) costs what it returns: the fields of the answer, counted by
//   walking the schema with graphql's own introspection resolvers (the walk stops at the limit).
// - `__typename` is free (Apollo Client adds it to every selection set).
//
// Hand-written rather than graphql-depth-limit / graphql-query-complexity: as validation rules the
// first throws on an unknown fragment and the second rejects every query with a required variable.
import type { ApolloServerPlugin } from "@apollo/server";
import {
  GraphQLError,
  Kind,
  TypeInfo,
  TypeMetaFieldDef,
  ValidationContext,
  getVariableValues,
  parse,
  valueFromAST,
  __Schema,
  __Type,
  getNamedType,
  getNullableType,
  isInterfaceType,
  isListType,
  isObjectType,
  type FieldNode,
  type DocumentNode,
  type GraphQLField,
  type GraphQLNamedType,
  type GraphQLObjectType,
  type GraphQLResolveInfo,
  type GraphQLSchema,
  type OperationDefinitionNode,
  type SelectionNode,
  type SelectionSetNode,
  type ValidationRule,
} from "graphql";
import { DEFAULT_LIMIT, MAX_LIMIT } from "../pagination/keyset";
import { apiError, withHttpStatus } from "../errors";
import { RawJson } from "./raw-json";

/** How many items an unpaged list (a guest's reservations, a table's bindings) is assumed to hold. */
export const LIST_FANOUT = 5;

/** What one aggregate query (a count, an average, a GROUP BY) costs: as much as reading MAX_LIMIT rows. */
export const AGGREGATE_COST = MAX_LIMIT;

/** An argument given as a variable whose value is not known (validation): priced as the costliest value. */
const UNKNOWN = Symbol("a variable");

/** A field's argument value as the resolver gets it (UNKNOWN for a variable while validating). */
type Argument = (name: string) => unknown;

/** Aggregate queries a field's resolver runs, by `Type.field` (see resolvers/). */
const AGGREGATE_QUERIES: Record<string, (arg: Argument) => number> = {
  // count and average, by rating, by source, by property, responded.
  "Query.reviewSummary": () => 5,
  // includeTotal counts every match.
  "Query.masterProfiles": (arg) => (maybeTrue(arg("includeTotal")) ? 1 : 0),
  "Query.tables": (arg) => (maybeTrue(arg("includeTotal")) ? 1 : 0),
  "Query.tableMembers": (arg) => (maybeTrue(arg("includeTotal")) ? 1 : 0),
  "Query.tablePreview": (arg) => (maybeTrue(arg("includeTotal")) ? 1 : 0),
  // Groups the observations by contact point and purpose.
  "Query.effectiveConsents": () => 1,
  // mode latest (or its alias rollup) groups the whole log by entity.
  "Query.events": (arg) => {
    const mode = arg("mode");
    return mode === UNKNOWN || (mode != null && mode !== "timeline") ? 1 : 0;
  },
  // Ranks the matches of every search branch (resolvers/guest-search.ts).
  "Query.guestSearch": () => 1,
  // One person's reservations, transactions and reviews summarised (resolvers/guest-context.ts).
  "GuestContext.stays": () => 1,
  "GuestContext.spend": () => 1,
  "GuestContext.reviews": () => 1,
  // One grouped count per batch of tables: a page of DEFAULT_LIMIT tables costs one aggregate.
  "Table.memberCount": () => 1 / DEFAULT_LIMIT,
  // Dashboard aggregates (resolvers/metrics.ts): one grouped statement each, which scans every row
  // it counts; stayMetrics adds a second pass over the stays' folio lines for revenue.
  "Query.stayMetrics": () => 2,
  "Query.guestMetrics": () => 1,
  "Query.consentMetrics": () => 1,
  "Query.reviewMetrics": () => 1,
  // Counts every member of the table by the effective consent of its contact points (one table per
  // request: Table.reachability is refused inside a list).
  "Query.tableReachability": () => 1,
  "Table.reachability": () => 1,
};

const maybeTrue = (value: unknown) => value === true || value === UNKNOWN;

export interface GraphQLLimits {
  graphqlMaxDepth: number;
  graphqlMaxCost: number;
  graphqlMaxAliases: number;
  graphqlMaxSelections: number;
}

export interface OperationMeasure {
  depth: number;
  cost: number;
  selections: number;
  aliases: number;
}

const NOTHING: OperationMeasure = { depth: 0, cost: 0, selections: 0, aliases: 0 };

/** `subscriptions`: allowed (and measured per event) on /graphql/stream only (graphql/stream.ts). */
export function validationRules(config: GraphQLLimits, { subscriptions = false } = {}): ValidationRule[] {
  return [operationLimitsRule(config, subscriptions)];
}

const SUBSCRIPTIONS_ELSEWHERE = "subscriptions are served over Server-Sent Events at /graphql/stream, not here; use query";

/**
 * Whether a /graphql request's document holds a subscription, read before Apollo validates it:
 * graphql-js's own single-field subscription rule throws (instead of reporting) on a root
 * `@include(if: $v)`, which Apollo answers with a 500. Only a text that names "subscription" is
 * parsed again; one that does not parse is left to Apollo's syntax error.
 */
export function holdsSubscription(query: unknown, maxTokens: number): boolean {
  if (typeof query !== "string" || !query.includes("subscription")) return false;
  try {
    return parse(query, { maxTokens }).definitions.some((d) => d.kind === Kind.OPERATION_DEFINITION && d.operation === "subscription");
  } catch {
    return false;
  }
}

/** The refusal of a subscription on /graphql (here, by the rule below, or before Apollo: holdsSubscription). */
export const subscriptionsElsewhere = () => apiError("unsupported_operation", SUBSCRIPTIONS_ELSEWHERE);

/** The refusal of an operation over a bound: 400 `query_too_complex` with what was counted. */
function tooComplex(operation: OperationDefinitionNode, message: string, limit: string, maximum: number, actual: number) {
  const error = apiError("query_too_complex", message);
  return new GraphQLError(message, {
    nodes: [operation],
    extensions: { ...error.extensions, limit, maximum, actual: Math.min(actual, Number.MAX_SAFE_INTEGER) },
  });
}

function operationLimitsRule(limits: GraphQLLimits, subscriptions: boolean): ValidationRule {
  return (context) => ({
    OperationDefinition(operation) {
      if (operation.operation === "subscription" && !subscriptions) {
        context.reportError(
          new GraphQLError(SUBSCRIPTIONS_ELSEWHERE, { nodes: [operation], extensions: subscriptionsElsewhere().extensions }),
        );
        return;
      }
      const m = measureOperation(context, operation, limits.graphqlMaxCost);
      const name = operation.name ? `operation ${operation.name.value}` : "the operation";
      const refuse = (message: string, limit: string, maximum: number, actual: number) =>
        context.reportError(tooComplex(operation, message, limit, maximum, actual));
      if (m.depth > limits.graphqlMaxDepth) {
        refuse(`${name} nests ${m.depth} fields deep; at most ${limits.graphqlMaxDepth} are allowed`, "depth", limits.graphqlMaxDepth, m.depth);
      }
      if (m.selections > limits.graphqlMaxSelections) {
        refuse(
          `${name} selects ${m.selections} fields (counted after expanding fragments); at most ${limits.graphqlMaxSelections} are allowed`,
          "selections",
          limits.graphqlMaxSelections,
          m.selections,
        );
      }
      if (m.aliases > limits.graphqlMaxAliases) {
        refuse(
          `${name} has ${m.aliases} aliased fields (counted after expanding fragments); at most ${limits.graphqlMaxAliases} are allowed`,
          "aliases",
          limits.graphqlMaxAliases,
          m.aliases,
        );
      }
      // A cost that depends on variables is checked once they are known (costPlugin).
      if (!m.variablePriced && m.cost > limits.graphqlMaxCost) context.reportError(costRefusal(operation, m, limits.graphqlMaxCost));
    },
  });
}

function costRefusal(operation: OperationDefinitionNode, m: OperationMeasure & { atLeast: boolean }, maxCost: number): GraphQLError {
  const name = operation.name ? `operation ${operation.name.value}` : "the operation";
  return tooComplex(
    operation,
    `${name} costs ${m.atLeast ? "at least " : ""}${Math.ceil(m.cost)}; at most ${maxCost} is allowed. ` +
      `Each field counts once per row (a limit counts as given, ${DEFAULT_LIMIT} when absent), ` +
      `an aggregate such as reviewSummary or includeTotal ${AGGREGATE_COST} per query it runs, ` +
      `introspection by the size of its answer: ask for fewer rows, fields or aggregates`,
    "cost",
    maxCost,
    Math.ceil(m.cost),
  );
}

/** The refusal of an operation over the cost bound once its variables are known, or undefined. */
export type VariableCostCheck = (
  schema: GraphQLSchema,
  document: DocumentNode,
  operation: OperationDefinitionNode | null | undefined,
  variables: Record<string, unknown> | undefined,
) => GraphQLError | undefined;

/**
 * Prices an operation whose cost depends on its variables from their coerced values, before it runs
 * (the validation rule, cached per document, could not): `guests(limit: $l)` with $l = 500 costs
 * what `guests(limit: 500)` does. Variables that do not coerce are left to execution to report.
 * One check serves Apollo (costPlugin) and the /graphql fast path (app/graphql-fast.ts).
 */
export function variableCostCheck(maxCost: number): VariableCostCheck {
  /** Documents whose cost does not depend on variables: the validation rule priced them already. */
  const fixed = new WeakMap<DocumentNode, Set<string | undefined>>();
  /**
   * Per document and operation, the variables (as sent, short) already priced within the bound: a
   * dashboard sends the same few again and again, and coercing and measuring them cost a request
   * ~35 µs. The price is a function of the document and the variables alone.
   */
  const passed = new WeakMap<DocumentNode, Map<string, true>>();
  return (schema, document, operation, variables) => {
    if (!operation?.variableDefinitions?.length || fixed.get(document)?.has(operation.name?.value)) return undefined;
    const key = pricedKey(operation, variables);
    const known = passed.get(document);
    if (key !== undefined && known?.has(key)) return undefined;
    // maxErrors: a variable with 50,000 unknown fields would otherwise build an error per field, each
    // quoting the whole value (out of memory); execution reports the errors, bounded, anyway.
    const coerced = getVariableValues(schema, operation.variableDefinitions, variables ?? {}, { maxErrors: 1 });
    if (coerced.errors) return undefined;
    const context = new ValidationContext(schema, document, new TypeInfo(schema), () => {});
    const m = measureOperation(context, operation, maxCost, coerced.coerced);
    if (!m.variablePriced) {
      if (!fixed.has(document)) fixed.set(document, new Set());
      fixed.get(document)!.add(operation.name?.value);
      return undefined;
    }
    if (m.cost > maxCost) return withHttpStatus(costRefusal(operation, m, maxCost)) as GraphQLError;
    if (key !== undefined) {
      const priced = known ?? new Map<string, true>();
      if (!known) passed.set(document, priced);
      if (priced.size >= PRICED_PER_DOCUMENT) priced.clear();
      priced.set(key, true);
    }
    return undefined;
  };
}

/** Variable sets remembered per document, and the longest remembered (as JSON). */
const PRICED_PER_DOCUMENT = 256;
const PRICED_KEY_CHARS = 1024;

/** The operation's name and its variables as sent, as one key; undefined when too long to keep. */
function pricedKey(operation: OperationDefinitionNode, variables: Record<string, unknown> | undefined): string | undefined {
  let json: string;
  try {
    json = JSON.stringify(variables ?? {});
  } catch {
    return undefined; // not JSON (only a test sends that): priced every time
  }
  return json.length <= PRICED_KEY_CHARS ? `${operation.name?.value ?? ""}\u0000${json}` : undefined;
}

/** Apollo's side of variableCostCheck: refuses before execution, with the check's 400. */
export function costPlugin(check: VariableCostCheck): ApolloServerPlugin {
  return {
    async requestDidStart() {
      return {
        async didResolveOperation({ document, operation, request, schema }) {
          const refusal = check(schema, document, operation, request.variables);
          if (refusal) throw refusal;
        },
      };
    },
  };
}

/**
 * Depth, cost, selections and aliases of one operation. Introspection walks stop past `maxCost`;
 * `atLeast` then says the cost is a lower bound (already over the limit). With `variables` (coerced)
 * arguments given as variables are priced from their values; without, as their costliest value,
 * and `variablePriced` says the cost depends on them.
 */
export function measureOperation(
  context: ValidationContext,
  operation: OperationDefinitionNode,
  maxCost = Infinity,
  variables?: Record<string, unknown>,
): OperationMeasure & { atLeast: boolean; variablePriced: boolean } {
  const root = context.getSchema().getRootType(operation.operation) ?? undefined;
  const measurer = new Measurer(context, maxCost, variables);
  return { ...measurer.set(root, operation.selectionSet), atLeast: measurer.stopped, variablePriced: measurer.variablePriced };
}

class Measurer {
  /** One measure per fragment: it depends only on the fragment (its type condition is fixed). */
  private readonly fragments = new Map<string, OperationMeasure | "measuring">();
  /** Introspection fields already walked, with what they cost. */
  private readonly introspected = new Map<FieldNode, number>();
  /** Fields visited by introspection walks; past maxCost the operation is refused anyway. */
  private walked = 0;

  get stopped(): boolean {
    return this.walked > this.maxCost;
  }

  /** Some price was read from a variable's value (or, while validating, assumed for it). */
  variablePriced = false;

  constructor(
    private readonly context: ValidationContext,
    private readonly maxCost: number,
    private readonly variables?: Record<string, unknown>,
  ) {}

  /** `node`'s argument `name` as the resolver gets it: coerced, variables and defaults applied. */
  private argument(node: FieldNode, field: GraphQLField<unknown, unknown> | undefined, name: string): unknown {
    const given = node.arguments?.find((a) => a.name.value === name)?.value;
    const def = field?.args.find((a) => a.name === name);
    if (!given) return def?.defaultValue;
    if (given.kind === Kind.VARIABLE) {
      this.variablePriced = true;
      if (!this.variables) return UNKNOWN;
    }
    // Undefined when it does not coerce: graphql's own rules (or execution) report it.
    return def ? valueFromAST(given, def.type, this.variables) : undefined;
  }

  set(parent: GraphQLNamedType | undefined, set: SelectionSetNode): OperationMeasure {
    const total = { ...NOTHING };
    for (const selection of set.selections) {
      const m = this.selection(parent, selection);
      total.depth = Math.max(total.depth, m.depth);
      total.cost += m.cost;
      total.selections += m.selections;
      total.aliases += m.aliases;
    }
    return total;
  }

  private selection(parent: GraphQLNamedType | undefined, selection: SelectionNode): OperationMeasure {
    const schema = this.context.getSchema();
    switch (selection.kind) {
      case Kind.FIELD:
        return this.field(parent, selection);
      case Kind.INLINE_FRAGMENT: {
        const type = selection.typeCondition ? schema.getType(selection.typeCondition.name.value) : parent;
        return this.set(type ?? undefined, selection.selectionSet);
      }
      case Kind.FRAGMENT_SPREAD: {
        const name = selection.name.value;
        const known = this.fragments.get(name);
        // Cycles are reported by graphql's own rules; a fragment inside itself counts as nothing.
        if (known) return known === "measuring" ? NOTHING : known;
        const fragment = this.context.getFragment(name);
        if (!fragment) return NOTHING; // unknown: graphql's own rules report it
        this.fragments.set(name, "measuring");
        const m = this.set(schema.getType(fragment.typeCondition.name.value) ?? undefined, fragment.selectionSet);
        this.fragments.set(name, m);
        return m;
      }
    }
  }

  private field(parent: GraphQLNamedType | undefined, node: FieldNode): OperationMeasure {
    const aliases = node.alias ? 1 : 0;
    const child = node.selectionSet;
    const name = node.name.value;
    if (name === "__typename") return { depth: 0, cost: 0, selections: 1, aliases };
    if (name === "__schema" || name === "__type") {
      const inner = child ? this.set(name === "__schema" ? __Schema : __Type, child) : NOTHING;
      return { depth: 0, cost: this.introspection(node), selections: 1 + inner.selections, aliases: aliases + inner.aliases };
    }
    const field = isObjectType(parent) || isInterfaceType(parent) ? parent.getFields()[name] : undefined;
    const aggregates = field ? (AGGREGATE_QUERIES[`${parent!.name}.${name}`]?.((arg) => this.argument(node, field, arg)) ?? 0) : 0;
    const own = 1 + aggregates * AGGREGATE_COST;
    if (!child) return { depth: 1, cost: own, selections: 1, aliases };
    const m = this.set(field ? getNamedType(field.type) : undefined, child);
    return {
      depth: 1 + m.depth,
      cost: own + this.multiplier(parent, field, node) * m.cost,
      selections: 1 + m.selections,
      aliases: aliases + m.aliases,
    };
  }

  /** What `__schema` or `__type` returns, in fields: the schema walked as the query asks. */
  private introspection(node: FieldNode): number {
    const known = this.introspected.get(node);
    if (known !== undefined) return known;
    const schema = this.context.getSchema();
    let roots: unknown[];
    if (node.name.value === "__schema") roots = [schema];
    else {
      const name = this.argument(node, TypeMetaFieldDef, "name");
      // A name not known yet may be any type: priced as all of them.
      roots = typeof name === "string" ? [schema.getType(name)].filter(Boolean) : Object.values(schema.getTypeMap());
    }
    const type = node.name.value === "__schema" ? __Schema : __Type;
    let cost = 1;
    if (node.selectionSet) for (const root of roots) cost += this.walk(type, root, node.selectionSet);
    this.introspected.set(node, cost);
    return cost;
  }

  /** Fragments being walked (the walk is depth-first): a fragment inside itself adds nothing. */
  private readonly walking = new Set<string>();

  private walk(type: GraphQLObjectType, value: unknown, set: SelectionSetNode): number {
    let cost = 0;
    for (const selection of set.selections) {
      if (this.stopped) return cost; // over the limit already: no need to know by how much
      if (selection.kind === Kind.FIELD) {
        this.walked++;
        cost++;
        const field = type.getFields()[selection.name.value];
        const named = field && getNamedType(field.type);
        if (!selection.selectionSet || !isObjectType(named)) continue;
        const args = { includeDeprecated: maybeTrue(this.argument(selection, field, "includeDeprecated")) };
        const info = { schema: this.context.getSchema() } as GraphQLResolveInfo;
        const result: unknown = field.resolve ? field.resolve(value, args, undefined, info) : (value as Record<string, unknown>)[field.name];
        const items = result == null ? [] : Array.isArray(result) ? result : [result];
        for (const item of items) cost += this.walk(named, item, selection.selectionSet);
        continue;
      }
      const condition = selection.kind === Kind.INLINE_FRAGMENT ? selection.typeCondition : this.context.getFragment(selection.name.value)?.typeCondition;
      if (condition && condition.name.value !== type.name) continue; // introspection types are object types
      if (selection.kind === Kind.INLINE_FRAGMENT) cost += this.walk(type, value, selection.selectionSet);
      else {
        const name = selection.name.value;
        const fragment = this.context.getFragment(name);
        if (!fragment || this.walking.has(name)) continue;
        this.walking.add(name);
        cost += this.walk(type, value, fragment.selectionSet);
        this.walking.delete(name);
      }
    }
    return cost;
  }

  /** How many times a field's selection is counted. */
  private multiplier(parent: GraphQLNamedType | undefined, field: GraphQLField<unknown, unknown> | undefined, node: FieldNode): number {
    if (!field) return 1;
    if (field.args.some((a) => a.name === "limit")) {
      const limit = this.argument(node, field, "limit");
      // Absent or null: the resolvers' default. A variable not known yet: the default too, as the
      // rule then leaves the cost to costPlugin.
      return typeof limit === "number" ? Math.min(Math.max(limit, 1), MAX_LIMIT) : DEFAULT_LIMIT;
    }
    if (!isListType(getNullableType(field.type))) return 1;
    return isPageNodes(parent, field) ? 1 : LIST_FANOUT;
  }
}

/** The `nodes` of a page type: as many as the page's limit, which already multiplied. */
function isPageNodes(parent: GraphQLNamedType | undefined, field: GraphQLField<unknown, unknown>): boolean {
  return field.name === "nodes" && isObjectType(parent) && "hasMore" in parent.getFields();
}

/**
 * How many bytes `value` takes as JSON, counted only until it passes `max`, without serialising it.
 * Exact for ASCII text; a string counts its length plus quotes, so escapes and multi-byte
 * characters make the real body somewhat larger. Data already written as JSON (RawJson, the JSON
 * read path) counts its text, escapes included.
 */
export function jsonSize(value: unknown, max: number): number {
  let size = 0;
  const visit = (v: unknown): void => {
    if (size > max) return;
    if (v instanceof RawJson) size += v.text.length;
    else if (typeof v === "string") size += v.length + 2;
    else if (typeof v === "number" || typeof v === "boolean") size += String(v).length;
    else if (Array.isArray(v)) {
      size += 2 + Math.max(v.length - 1, 0); // brackets and commas
      for (const item of v) visit(item);
    } else if (v !== null && typeof v === "object") {
      let members = 0;
      for (const key in v) {
        const member = (v as Record<string, unknown>)[key];
        if (member === undefined) continue; // JSON leaves it out
        members++;
        size += key.length + 3; // "key":
        visit(member);
      }
      size += 2 + Math.max(members - 1, 0); // braces and commas
    } else size += 4; // null
  };
  visit(value);
  return size;
}
