// One executor for both doors: operations are compiled once with graphql-jit into functions that
// resolve exactly their selection (no generic field walking per request), then reused. REST compiles
// its fixed operations at start-up; /graphql compiles each distinct document on first use, and Apollo's
// document cache hands back the same parsed document for the same query text, so the compiled
// function lives as long as Apollo keeps the document (a WeakMap: nothing here grows unbounded).
// Each compiled function is observed where both doors run it: an operation span, the
// gcs_graphql_operations_total count and the request's `exec` time (observability/).
// /graphql runs a document on the JSON read path instead when it has a plan (graphql/json-plan.ts).
import { compileQuery, isCompiledQuery, type CompiledQuery } from "graphql-jit";
import { getVariableValues } from "graphql/execution/values";
import {
  GraphQLError,
  getOperationAST,
  printSchema,
  type DocumentNode,
  type ExecutionResult,
  type GraphQLSchema,
  type OperationDefinitionNode,
} from "graphql";
import type { GatewayExecutor, GatewayInterface } from "@apollo/server-gateway-interface";
import { invalidRequest, responseTooLarge, withHttpStatus } from "../errors";
import { jsonSize } from "./limits";
import { operationLabel, recordOperation, type Outcome } from "../observability/metrics";
import { timed } from "../observability/request";
import { traceOperation } from "../observability/tracing";
import type { RequestContext } from "../context";
import { jsonPlan, type JsonPlan } from "./json-plan";

const compiled = new WeakMap<DocumentNode, Map<string, CompiledQuery>>();

/** The compiled operation, or the errors that keep the document from compiling. */
export function compileOperation(schema: GraphQLSchema, document: DocumentNode, operationName?: string | null): CompiledQuery | ExecutionResult {
  let byName = compiled.get(document);
  if (!byName) compiled.set(document, (byName = new Map()));
  const key = operationName ?? "";
  let query = byName.get(key);
  if (!query) {
    const result = compileQuery(schema, document, operationName ?? undefined);
    if (!isCompiledQuery(result)) return result;
    query = observed(result, document, operationName);
    byName.set(key, query);
  }
  return query;
}

/** The compiled operation, its `query` counted, timed and traced on every run. */
function observed(compiledQuery: CompiledQuery, document: DocumentNode, operationName?: string | null): CompiledQuery {
  return Object.assign(compiledQuery, { query: observe(compiledQuery.query, document, operationName) });
}

function observe<A extends unknown[]>(
  run: (...args: A) => Promise<ExecutionResult> | ExecutionResult,
  document: DocumentNode,
  operationName?: string | null,
): (...args: A) => Promise<ExecutionResult> {
  const operation = getOperationAST(document, operationName);
  const type = operation?.operation ?? "query";
  const name = operation?.name?.value;
  const label = operationLabel(name);
  return async (...args) => {
    let outcome: Outcome = "error";
    try {
      const result = await timed("execMs", () => traceOperation(type, name, async () => run(...args)));
      outcome = !result.errors?.length ? "ok" : result.data ? "partial" : "error";
      return result;
    } finally {
      recordOperation(label, type, outcome);
    }
  };
}

const planned = new WeakMap<JsonPlan, CompiledQuery["query"]>();

/**
 * How /graphql and /v1 run a document: on the JSON read path when it has a plan that applies to this
 * request (graphql/json-plan.ts; its `data` is then RawJson), else compiled. Observed once either way.
 */
export function operationRunner(schema: GraphQLSchema, document: DocumentNode, operationName?: string | null): CompiledQuery["query"] | ExecutionResult {
  const compiledQuery = compileOperation(schema, document, operationName);
  if (!isCompiledQuery(compiledQuery)) return compiledQuery;
  const plan = jsonPlan(schema, document, operationName);
  if (!plan) return compiledQuery.query;
  let query = planned.get(plan);
  if (!query) {
    const fast = observe(plan.run, document, operationName);
    query = (root, context, variables) => {
      const args = plan.argumentsFor(context as RequestContext, variables ?? {});
      return args ? fast(context as RequestContext, args) : compiledQuery.query(root, context, variables);
    };
    planned.set(plan, query);
  }
  return query;
}

/** What one execution of a document needs: the gateway request's parts, or the /graphql fast path's. */
export interface DocumentRun {
  document: DocumentNode;
  operation: OperationDefinitionNode;
  /** The operation's own name (null when anonymous), as Apollo resolves it. */
  operationName: string | null;
  variables: Record<string, unknown>;
  context: RequestContext;
}

/**
 * One /graphql execution, whoever resolved the operation (Apollo's gateway below, or
 * app/graphql-fast.ts): compiled or planned (operationRunner), the variables' coercion errors in
 * graphql-js's words, the response cap. A result larger than `maxResponseBytes` as JSON is answered
 * with `response_too_large` instead, measured before it is serialised.
 */
export async function executeDocument(schema: GraphQLSchema, run: DocumentRun, maxResponseBytes = Infinity): Promise<ExecutionResult> {
  const query = operationRunner(schema, run.document, run.operationName);
  if (typeof query !== "function") return query;
  const { variables } = run;
  const result = await query(undefined, run.context, variables);
  if (result.data === undefined && result.errors?.length) {
    // The variables did not coerce; graphql-js says why in the scalar's own words ("expected a
    // uuid, e.g. ..."), where graphql-jit only names the type. At most 50 errors, as graphql-js's
    // execute allows: each quotes the whole variable, and an object of 50,000 unknown members made
    // one error each (the process ran out of memory).
    const coerced = getVariableValues(schema, run.operation.variableDefinitions ?? [], variables, { maxErrors: 50 });
    // Past the limit graphql-js adds an error of no code ("Too many errors …"): the client's input too.
    if (coerced.errors) return { errors: coerced.errors.map((e) => (e.nodes?.length ? e : (invalidRequest(e.message) as GraphQLError))) };
  }
  if (jsonSize(result, maxResponseBytes) > maxResponseBytes) {
    return { errors: [withHttpStatus(responseTooLarge(maxResponseBytes)) as GraphQLError] };
  }
  if (!result.errors?.some((e) => !e.extensions)) return result;
  // graphql-jit leaves `extensions` undefined on an error whose cause has none (a database error),
  // and Apollo's error formatting then fails before formatError sees it: give it graphql-js's `{}`.
  const errors = result.errors.map((e) => (e.extensions ? e : new GraphQLError(e.message, { path: e.path, originalError: e.originalError })));
  return { ...result, errors };
}

/**
 * Executions the /graphql fast path ran and hands to Apollo to answer, by the request's data handle:
 * Apollo gives its executor a shallow copy of the context it was handed (internalExecuteOperation
 * clones it per operation), and the copy shares the request's own `data`.
 */
const executed = new WeakMap<object, Promise<ExecutionResult>>();

/**
 * Apollo answers this request with `execution`, already run (app/graphql-fast.ts): its gateway
 * executor returns it (or its rejection) instead of executing again, and Apollo formats it as it
 * would its own.
 */
export function answerWith(context: RequestContext, execution: Promise<ExecutionResult>) {
  executed.set(context.data, execution);
}

/**
 * Apollo Server runs a gateway's executor in place of graphql-js `execute`; parsing, validation
 * (depth and cost limits included), the context and error formatting stay Apollo's.
 */
export function compiledExecutorGateway(schema: GraphQLSchema, maxResponseBytes = Infinity): GatewayInterface {
  const executor: GatewayExecutor = async (request) => {
    const context = request.context as RequestContext;
    const done = context && executed.get(context.data);
    if (done) {
      executed.delete(context.data);
      return done;
    }
    const { document, operation, operationName } = request;
    return executeDocument(schema, { document, operation, operationName: operationName ?? null, variables: request.request.variables ?? {}, context }, maxResponseBytes);
  };
  return {
    onSchemaLoadOrUpdate(callback) {
      callback({ apiSchema: schema, coreSupergraphSdl: printSchema(schema) });
      return () => {};
    },
    load: async () => ({ executor }),
    stop: async () => {},
  };
}
