// The MCP tools: one per entry of the route tools table (api/tools/route-tools.ts), plus
// the task-shaped tools of api/tools/task-tools.ts. A route tool takes the route's parameters as typed
// arguments (JSON Schema, prose and bounds from the OpenAPI description), turns them back into the
// strings the REST parsers read, and answers the REST body: one place for input rules, one for
// page shapes, and every error is the REST error body.
import type { DocumentNode, GraphQLSchema } from "graphql";
import { z } from "zod";
import type { ToolAnnotations } from "@modelcontextprotocol/sdk/types.js";
import { objectFromShape } from "@modelcontextprotocol/sdk/server/zod-compat.js";
import type { RequestContext } from "../context";
import { invalidRequest } from "../errors";
import { routeArguments, routeKey, type ArgumentDoc } from "../api/openapi/generate";
import { ENVELOPE_MEMBERS, ROUTES } from "../api/descriptions";
import { MAX_LIMIT } from "../pagination/keyset";
import { runOperation, runRoute, type PreparedOperations } from "../api/execute";
import { own, unknownParameterDetail } from "../api/params";
import { routes, type RouteSpec } from "../api/routes";
import type { TaskTool } from "../api/tools/task-tools";
import { MCP_DEFAULT_LIMIT, ROUTE_TOOLS } from "../api/tools/route-tools";

/** What the server registers for one tool; `run` answers the structured result or throws a coded error. */
export interface McpTool {
  name: string;
  title: string;
  description: string;
  /** The credential must hold this scope for the tool to be listed at all. */
  scope?: string;
  inputSchema: z.ZodType;
  /** A schema object, never a raw shape: the SDK would wrap a shape anew on every registration. */
  outputSchema: z.ZodType;
  annotations: ToolAnnotations;
  run(args: Record<string, unknown>, context: RequestContext): Promise<Record<string, unknown>>;
}

const READ: ToolAnnotations = { readOnlyHint: true, openWorldHint: false };
const WRITE: ToolAnnotations = { readOnlyHint: false, destructiveHint: false, idempotentHint: true, openWorldHint: false };

/** Every tool: the task tools first (they answer whole questions), then one per route of ROUTE_TOOLS. */
export function buildTools(
  schema: GraphQLSchema,
  restOperations: PreparedOperations,
  /** The operations task tools may name: src/api/operations/tools and the REST ones. */
  taskOperations: PreparedOperations,
  tasks: readonly TaskTool[],
): McpTool[] {
  const tools = tasks.map((task) => taskTool(schema, taskOperations, task));
  for (const route of routes) {
    const entry = ROUTE_TOOLS[routeKey(route)];
    if (entry) tools.push(routeTool(schema, restOperations, route, entry));
  }
  const names = tools.map((t) => t.name);
  const duplicate = names.find((n, i) => names.indexOf(n) !== i);
  if (duplicate) throw new Error(`two MCP tools are named ${duplicate}`);
  return tools;
}

function routeTool(schema: GraphQLSchema, operations: PreparedOperations, route: RouteSpec, entry: { name: string; description: string }): McpTool {
  const docs = routeArguments(route, schema, operations.get(route.operation) as DocumentNode);
  if (docs.limit) {
    docs.limit = {
      ...docs.limit,
      description: `Page size, default ${MCP_DEFAULT_LIMIT}; values above ${MAX_LIMIT} are clamped to ${MAX_LIMIT}.`,
      schema: { ...docs.limit.schema, minimum: 1, maximum: MAX_LIMIT, default: MCP_DEFAULT_LIMIT },
    };
  }
  const known = Object.keys(docs);
  return {
    name: entry.name,
    title: ROUTES[routeKey(route)]?.summary ?? entry.name,
    description: entry.description,
    scope: route.scope,
    inputSchema: argumentsSchema(docs),
    outputSchema: outputSchema(route),
    annotations: route.method === "POST" && route.scope.startsWith("write:") ? WRITE : READ,
    async run(args, context) {
      rejectUnknown(args, known);
      if (docs.limit && (args.limit === undefined || args.limit === null)) args = { ...args, limit: MCP_DEFAULT_LIMIT };
      const body = await runRoute(schema, operations, route, context, routeInput(route, args));
      return body as Record<string, unknown>;
    },
  };
}

/**
 * The zod object the SDK lists and parses. Each argument is a carrier of the JSON Schema above: the
 * SDK lists it as typed, but lets any value through to the REST parsers, so a wrong value is answered
 * with the REST error body a model can act on, not with a zod message. Unknown arguments also pass
 * the SDK (a loose object) so that rejectUnknown can name the argument that was probably meant.
 */
function argumentsSchema(docs: Record<string, ArgumentDoc>): z.ZodType {
  const shape: Record<string, z.ZodType> = {};
  for (const [name, doc] of Object.entries(docs)) shape[name] = z.unknown().optional().meta({ ...doc.schema, description: doc.description });
  // Required is listed, not enforced here: a missing id is the REST parser's "id must be a uuid".
  const required = Object.keys(docs).filter((name) => docs[name].required);
  return z.looseObject(shape).meta({ additionalProperties: false, ...(required.length ? { required } : {}) });
}

function rejectUnknown(args: Record<string, unknown>, known: string[]) {
  for (const name of Object.keys(args)) {
    if (!known.includes(name)) throw invalidRequest(unknownParameterDetail(name, known, "argument"));
  }
}

/** Tool arguments → what the REST handler would have received: strings in the path and query, JSON in a body. */
function routeInput(route: RouteSpec, args: Record<string, unknown>) {
  const path: Record<string, string> = {};
  const query: Record<string, unknown> = {};
  const body: Record<string, unknown> = {};
  for (const [name, value] of Object.entries(args)) {
    if (value === undefined || value === null) continue; // a model's way of leaving an argument out
    if (route.body && own(route.body, name)) {
      body[name] = value; // parseBody takes JSON values (filter_doc is an object)
      continue;
    }
    if (typeof value === "object") throw invalidRequest(`${name} must be a string, number or boolean, not an object or array`);
    if (route.pathParams && own(route.pathParams, name)) path[name] = String(value);
    else query[name] = String(value);
  }
  return { path, query, body: route.body ? body : undefined };
}

const rows = z.array(z.looseObject({})).describe(ENVELOPE_MEMBERS.data);
const totalCount = z.number().int().optional().describe(ENVELOPE_MEMBERS.total_count);

/** The REST body's envelope; the rows themselves are described in the OpenAPI document (GET /openapi.json). */
function outputSchema(route: RouteSpec): z.ZodObject {
  const params = { ...route.query, ...route.body };
  if (own(params, "cursor")) {
    return z.looseObject({
      data: rows,
      next_cursor: z.string().nullable().describe(ENVELOPE_MEMBERS.next_cursor),
      has_more: z.boolean().describe(ENVELOPE_MEMBERS.has_more),
      total_count: totalCount,
    });
  }
  if (own(params, "offset")) {
    return z.looseObject({
      data: rows,
      has_more: z.boolean().describe(ENVELOPE_MEMBERS.has_more),
      next_offset: z.number().int().describe(ENVELOPE_MEMBERS.next_offset),
      total_count: totalCount,
    });
  }
  if (route.envelope === "body") return z.looseObject({ data: z.unknown().describe("The record, or the rows of an unpaged list.") });
  return z.looseObject({}); // an aggregate object (review_summary)
}

/**
 * What the SDK lists and parses for a task tool: each argument listed with its JSON Schema (from its
 * zod schema) but carried as unknown, so a wrong-typed value reaches run(), which checks it against
 * the task's own schema and answers the JSON tool error naming the argument, like every other
 * argument error, instead of the SDK's plain-text protocol error. Loose, so that an unknown argument
 * reaches rejectUnknown (the SDK would drop it silently).
 */
function taskArgumentsSchema(shape: z.ZodRawShape): z.ZodType {
  const carriers: Record<string, z.ZodType> = {};
  const required: string[] = [];
  for (const [name, field] of Object.entries(shape)) {
    const { $schema: _ignored, ...json } = z.toJSONSchema(field as z.ZodType, { io: "input", unrepresentable: "any" }) as Record<string, unknown>;
    carriers[name] = z.unknown().optional().meta(json);
    if (!(field as z.ZodType).safeParse(undefined).success) required.push(name);
  }
  return z.looseObject(carriers).meta({ additionalProperties: false, ...(required.length ? { required } : {}) });
}

/** A zod issue on a tool's arguments → a detail naming the argument and what it must be. */
function argumentIssue(issue: z.core.$ZodIssue, args: Record<string, unknown>): string {
  const name = String(issue.path[0] ?? "arguments");
  if (issue.code === "invalid_type") {
    const value = args[name];
    return value === undefined ? `${name} is required` : `${name} must be a ${issue.expected}, not ${value === null ? "null" : Array.isArray(value) ? "an array" : `a ${typeof value}`}`;
  }
  return `${name}: ${issue.message}`;
}

/** A task tool runs its named operation (src/api/operations/tools, or a REST one) with the caller's context. */
function taskTool(schema: GraphQLSchema, operations: PreparedOperations, task: TaskTool): McpTool {
  const document = operations.get(task.operation);
  if (!document) throw new Error(`MCP tool ${task.name} names unknown operation ${task.operation} (src/api/operations/tools)`);
  const known = Object.keys(task.inputSchema);
  // Built once: zod compiles an object schema's parser on its first parse, per schema object.
  const input = z.object(task.inputSchema);
  return {
    name: task.name,
    title: task.title,
    description: task.description,
    scope: task.scope,
    inputSchema: taskArgumentsSchema(task.inputSchema),
    // What the SDK itself makes of a raw shape (listed and checked the same), made once.
    outputSchema: objectFromShape(task.outputSchema) as unknown as z.ZodType,
    annotations: task.annotations,
    async run(args, context) {
      rejectUnknown(args, known);
      const parsed = input.safeParse(args);
      if (!parsed.success) throw invalidRequest(argumentIssue(parsed.error.issues[0], args));
      task.check?.(parsed.data);
      const data = await runOperation(schema, document, task.toVariables(parsed.data), context);
      return task.toResult(data);
    },
  };
}
