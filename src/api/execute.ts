// Runs a route's named operation in-process against the one schema, with the request's context:
// no HTTP hop, no second authentication. Operation documents are parsed and validated once.
import { existsSync, readdirSync, readFileSync } from "node:fs";
import path from "node:path";
import { isCompiledQuery, type CompiledQuery } from "graphql-jit";
import { compileOperation, operationRunner } from "../graphql/compiled";
import { RawJson } from "../graphql/raw-json";
import {
  GraphQLError,
  Kind,
  parse,
  validate,
  visit,
  type DocumentNode,
  type FragmentDefinitionNode,
  type GraphQLSchema,
  type OperationDefinitionNode,
} from "graphql";
import type { RequestContext } from "../context";
import { invalidRequest } from "../errors";
import { parseBody, parsePath, parseQuery } from "./params";
import type { RouteSpec } from "./routes";

const OPERATIONS_DIR = path.resolve(__dirname, "operations/routes");
/** The MCP task tools' own operations (tools/task-tools.ts names them). */
export const TOOL_OPERATIONS_DIR = path.resolve(__dirname, "operations/tools");

export type PreparedOperations = Map<string, DocumentNode>;

/**
 * One minimal document per named operation: the operation plus the fragments it spreads. The REST
 * routes' operations (operations/routes) by default; the MCP task tools keep theirs in operations/tools.
 */
export function prepareOperations(schema: GraphQLSchema, dir = OPERATIONS_DIR): PreparedOperations {
  const files = existsSync(dir) ? readdirSync(dir).filter((f) => f.endsWith(".graphql")).sort() : [];
  if (files.length === 0) return new Map();
  const source = files.map((f) => readFileSync(path.join(dir, f), "utf8")).join("\n");
  const all = parse(source);
  const errors = validate(schema, all);
  if (errors.length > 0) throw new Error(`operations in ${dir} do not match schema.graphql: ${errors.map((e) => e.message).join("; ")}`);

  const fragments = new Map<string, FragmentDefinitionNode>();
  for (const def of all.definitions) if (def.kind === Kind.FRAGMENT_DEFINITION) fragments.set(def.name.value, def);
  const prepared: PreparedOperations = new Map();
  for (const def of all.definitions) {
    if (def.kind !== Kind.OPERATION_DEFINITION || !def.name) continue;
    const document: DocumentNode = { kind: Kind.DOCUMENT, definitions: [def, ...fragmentsUsedBy(def, fragments)] };
    compile(schema, document);
    prepared.set(def.name.value, document);
  }
  return prepared;
}

function fragmentsUsedBy(op: OperationDefinitionNode, fragments: Map<string, FragmentDefinitionNode>) {
  const used = new Map<string, FragmentDefinitionNode>();
  const collect = (node: OperationDefinitionNode | FragmentDefinitionNode) =>
    visit(node, {
      FragmentSpread(spread) {
        const name = spread.name.value;
        if (used.has(name)) return;
        const fragment = fragments.get(name)!;
        used.set(name, fragment);
        collect(fragment);
      },
    });
  collect(op);
  return [...used.values()];
}

/** REST runs a fixed set of operations: each is compiled once, at start-up (graphql/compiled.ts). */
function compile(schema: GraphQLSchema, document: DocumentNode): CompiledQuery {
  const result = compileOperation(schema, document);
  if (!isCompiledQuery(result)) throw new Error(`cannot compile operation: ${result.errors?.map((e) => e.message).join("; ")}`);
  return result;
}

/**
 * Executes and returns `data`, or throws the first error (coded errors pass through unchanged). Runs
 * as /graphql does (graphql/compiled.ts operationRunner): a planned page reads rows, not the executor.
 */
export async function runOperation(
  schema: GraphQLSchema,
  document: DocumentNode,
  variables: Record<string, unknown>,
  context: RequestContext,
): Promise<Record<string, unknown>> {
  const run = operationRunner(schema, document);
  if (typeof run !== "function") throw new GraphQLError("operation does not compile");
  const result = await run(undefined, context, variables);
  const first = result.errors?.[0];
  if (first) {
    // No data at all means the request never ran: variables did not coerce (bad input).
    if (result.data === undefined && !first.extensions?.code) throw invalidRequest(first.message);
    throw first;
  }
  if (!result.data) throw new GraphQLError("operation returned no data");
  // JSON that PostgreSQL wrote (a page with relations): callers here work with values. None of the
  // fixed operations of /v1 or the MCP tools is such a page today.
  return result.data instanceof RawJson ? (result.data.toJSON() as Record<string, unknown>) : result.data;
}

/** A route's response body for raw path and query parameters: shared by /v1 and the MCP tools. */
export async function runRoute(
  schema: GraphQLSchema,
  operations: PreparedOperations,
  route: RouteSpec,
  context: RequestContext,
  raw: { path: Record<string, string>; query: Record<string, unknown>; body?: unknown },
): Promise<unknown> {
  const variables = {
    ...parsePath(raw.path, route.pathParams ?? {}),
    ...parseQuery(raw.query, route.query ?? {}),
    ...(route.body ? parseBody(raw.body ?? {}, route.body) : {}),
  };
  const data = await runOperation(schema, operations.get(route.operation)!, variables, context);
  const body = (route.envelope === "unwrap" ? Object.values(data)[0] : data) as Record<string, unknown>;
  for (const key of route.omitNull ?? []) if (body[key] === null) delete body[key];
  return body;
}
