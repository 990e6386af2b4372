// The MCP tools: one per entry of the route tools table (api/tools/route-tools.ts), plus the
// task-shaped tools of api/tools/task-tools.ts, plus the merged tools (MERGED_TOOLS) listed in place
// of several route tools; toolListing makes what tools/list answers. A route tool takes the route's
// parameters as typed arguments (JSON Schema, prose and bounds from the OpenAPI description), turns
// them back into the strings the REST parsers read, and answers the REST body: one place for input
// rules, one for page shapes, and every error is the REST error body.
import { GraphQLError, type DocumentNode, type GraphQLSchema } from "graphql";
import { isDeepStrictEqual } from "node:util";
import { z } from "zod";
import type { Tool, ToolAnnotations } from "@modelcontextprotocol/sdk/types.js";
import { objectFromShape } from "@modelcontextprotocol/sdk/server/zod-compat.js";
import type { RequestContext } from "../context";
import { apiError, invalidRequest, missingScope } from "../errors";
import { routeArguments, routeKey, type ArgumentDoc } from "../api/openapi/generate";
import { ROUTES } from "../api/descriptions";
import { MAX_LIMIT } from "../pagination/keyset";
import { runOperation, runRoute, type PreparedOperations } from "../api/execute";
import { closest, own, unknownParameterDetail } from "../api/params";
import { routes, type RouteSpec } from "../api/routes";
import type { TaskTool } from "../api/tools/task-tools";
import { describedByConvention, MCP_DEFAULT_LIMIT, MERGED_TOOLS, ROUTE_TOOLS, type RouteToolEntry } from "../api/tools/route-tools";

/** What the server registers for one tool; `run` answers the structured result or throws a coded error. */
export interface McpTool {
  name: string;
  title: string;
  description: string;
  /** The credential must hold this scope for the tool to be listed at all. */
  scope?: string;
  inputSchema: z.ZodType;
  /**
   * A schema object, never a raw shape (the SDK would wrap a shape anew on every registration); none
   * for a route tool, whose result is the REST envelope the server's instructions describe once.
   */
  outputSchema?: z.ZodType;
  annotations: ToolAnnotations;
  /** False for a name kept for compatibility: it answers, but a merged tool is listed in its place. */
  listed: boolean;
  /** A merged tool's tools, by the `type` that picks each. */
  members?: ReadonlyMap<string, McpTool>;
  run(args: Record<string, unknown>, context: RequestContext): Promise<Record<string, unknown>>;
}

/** Whether a credential with these scopes may use the tool (a merged one: any of its tools). */
export function mayUse(tool: McpTool, scopes: ReadonlySet<string>): boolean {
  return tool.members ? [...tool.members.values()].some((m) => mayUse(m, scopes)) : !tool.scope || scopes.has(tool.scope);
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
  const byName = new Map<string, McpTool>();
  for (const route of routes) {
    const entry = ROUTE_TOOLS[routeKey(route)];
    if (entry) byName.set(entry.name, routeTool(schema, restOperations, route, entry));
  }
  // Listed in the table's order, each merged tool where the first tool it stands for was.
  const merged = MERGED_TOOLS.map((entry) => mergedTool(entry, byName));
  for (const tool of byName.values()) {
    const standsFor = merged.find((m) => [...m.members!.values()][0] === tool);
    if (standsFor) tools.push(standsFor);
    tools.push(tool);
  }
  const names = tools.map((t) => t.name);
  const duplicate = names.find((n, i) => names.indexOf(n) !== i);
  if (duplicate) throw new Error(`two MCP tools are named ${duplicate}`);
  return tools;
}

function routeTool(schema: GraphQLSchema, operations: PreparedOperations, route: RouteSpec, entry: RouteToolEntry): McpTool {
  const docs = routeArguments(route, schema, operations.get(route.operation) as DocumentNode);
  // Pages a model can read (MCP_DEFAULT_LIMIT, said in CONVENTIONS); the parser clamps above MAX_LIMIT.
  if (docs.limit) docs.limit = { ...docs.limit, schema: { ...docs.limit.schema, minimum: 1, maximum: MAX_LIMIT } };
  const known = Object.keys(docs);
  const required = known.filter((name) => docs[name].required);
  return {
    name: entry.name,
    title: ROUTES[routeKey(route)]?.summary ?? entry.name,
    description: entry.description,
    scope: route.scope,
    listed: true,
    inputSchema: argumentsSchema(docs),
    annotations: route.method === "POST" && route.scope.startsWith("write:") ? WRITE : READ,
    async run(args, context) {
      rejectUnknown(args, known);
      const missing = required.find((name) => args[name] === undefined || args[name] === null);
      if (missing) throw invalidRequest(`${missing} is required`);
      if (docs.limit && (args.limit === undefined || args.limit === null)) args = { ...args, limit: MCP_DEFAULT_LIMIT };
      try {
        return (await runRoute(schema, operations, route, context, routeInput(route, args))) as Record<string, unknown>;
      } catch (err) {
        throw await otherKindOfId(err, entry, args, async (other) => {
          if (!context.credential.scopes.has(other.scope)) throw missingScope(other.scope);
          return runRoute(schema, operations, other, context, { path: { id: String(args.id) }, query: {} });
        });
      }
    },
  };
}

/**
 * A merged tool (MERGED_TOOLS): `type` picks the tool it stands for, which runs with the other
 * arguments, so every rule and error is that tool's. Its listing is made per credential (toolListing):
 * `type` offers only what the credential may read.
 */
function mergedTool(entry: (typeof MERGED_TOOLS)[number], byName: ReadonlyMap<string, McpTool>): McpTool {
  const members = new Map<string, McpTool>();
  for (const [type, name] of Object.entries(entry.types)) {
    const tool = byName.get(name);
    if (!tool) throw new Error(`merged MCP tool ${entry.name} names unknown tool ${name}`);
    tool.listed = false;
    members.set(type, tool);
  }
  const types = [...members.keys()];
  return {
    name: entry.name,
    title: entry.title,
    description: entry.description,
    listed: true,
    members,
    // Parsed by the SDK as loose: run() checks type, the chosen tool its own arguments.
    inputSchema: z.looseObject({}),
    annotations: READ,
    async run(args, context) {
      const { type, ...rest } = args;
      if (type === undefined || type === null) throw invalidRequest("type is required");
      const member = typeof type === "string" ? members.get(type) : undefined;
      if (!member) {
        const near = typeof type === "string" ? closest(type, types) : undefined;
        throw invalidRequest(`type must be one of ${types.join(", ")}${near ? `; did you mean ${near}?` : ""}`);
      }
      if (member.scope && !context.credential.scopes.has(member.scope)) throw missingScope(member.scope);
      return member.run(rest, context);
    },
  };
}

/**
 * A merged tool's arguments as listed: `type` (the types the credential may read), then each chosen
 * tool's arguments once, typed, without their prose. An argument several tools take with other types
 * is listed with what they share (enums joined); each tool's parser still checks its own.
 */
function mergedInputSchema(tool: McpTool, scopes: ReadonlySet<string>): Record<string, unknown> {
  const allowed = [...tool.members!].filter(([, member]) => mayUse(member, scopes));
  const variants = new Map<string, Record<string, unknown>[]>();
  for (const [, member] of allowed) {
    const { properties } = jsonSchema(member.inputSchema, "input") as { properties?: Record<string, Record<string, unknown>> };
    for (const [name, schema] of Object.entries(properties ?? {})) variants.set(name, [...(variants.get(name) ?? []), schema]);
  }
  const properties: Record<string, unknown> = { type: { type: "string", enum: allowed.map(([type]) => type) } };
  for (const [name, schemas] of variants) properties[name] = sharedSchema(schemas);
  return { type: "object", properties, additionalProperties: false, required: ["type"] };
}

function sharedSchema(variants: Record<string, unknown>[]): Record<string, unknown> {
  // The prose stays with each tool: the merged tool's description names what matters per type.
  const schemas = variants.map(({ description: _prose, ...schema }) => schema);
  const [first] = schemas;
  if (schemas.every((s) => isDeepStrictEqual(s, first))) return first;
  if (schemas.every((s) => Array.isArray(s.enum))) return { type: "string", enum: [...new Set(schemas.flatMap((s) => s.enum as unknown[]))] };
  const types = [...new Set(schemas.map((s) => s.type))];
  const format = schemas.every((s) => s.format === first.format) ? first.format : undefined;
  return { type: types.length === 1 ? types[0] : types, ...(format ? { format } : {}) };
}

/**
 * The error a route tool answers: a not_found for an id that is another kind's (entry.otherId) says
 * which kind it is and what takes it; anything else as it was.
 */
async function otherKindOfId(err: unknown, entry: RouteToolEntry, args: Record<string, unknown>, lookUp: (route: RouteSpec) => Promise<unknown>): Promise<unknown> {
  const other = entry.otherId && routes.find((r) => routeKey(r) === entry.otherId!.route);
  if (!other || !(err instanceof GraphQLError) || err.extensions.code !== "not_found" || typeof args.id !== "string") return err;
  try {
    await lookUp(other); // the caller's own scope and tenant: an id it may not see stays not_found
  } catch {
    return err;
  }
  return apiError("not_found", `${args.id} ${entry.otherId!.detail}`);
}

/**
 * The zod object the SDK lists and parses. Each argument is a carrier of the JSON Schema above: the
 * SDK lists it as typed, but lets any value through to the REST parsers, so a wrong value is answered
 * with the REST error body a model can act on, not with a zod message. Unknown arguments also pass
 * the SDK (a loose object) so that rejectUnknown can name the argument that was probably meant.
 */
function argumentsSchema(docs: Record<string, ArgumentDoc>): z.ZodType {
  const shape: Record<string, z.ZodType> = {};
  const described = new Map<string, string>();
  for (const [name, doc] of Object.entries(docs)) {
    // The string bounds every parameter has (1 to 512 characters) tell a model nothing; the parsers keep them.
    const { minLength: _min, maxLength: _max, ...listed } = doc.schema as Record<string, unknown>;
    // A range bound's two forms (a date or an instant) are said once, in CONVENTIONS.
    const schema = listed.anyOf && describedByConvention(name) ? { type: "string" } : listed;
    // An alias (email for contact_value) is described by the name it stands for.
    const same = described.get(doc.description);
    if (!same) described.set(doc.description, name);
    const description = same ? `As ${same}.` : doc.description;
    if (describedByConvention(name)) delete schema.default; // the conventions give the defaults too
    shape[name] = z.unknown().optional().meta(describedByConvention(name) ? schema : { ...schema, description });
  }
  // Required is listed, not enforced here: run() says "id is required" in the tool's own words.
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
    // A list (expand) as an array of strings, the form models most often send, or comma-separated.
    if (Array.isArray(value) && route.query && own(route.query, name)?.list && value.every((v) => typeof v === "string")) {
      query[name] = value.join(",");
      continue;
    }
    if (typeof value === "object") throw invalidRequest(`${name} must be a string, number or boolean, not an object or array`);
    if (route.pathParams && own(route.pathParams, name)) path[name] = String(value);
    else query[name] = String(value);
  }
  return { path, query, body: route.body ? body : undefined };
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

/**
 * An invalid_request from the operation in the tool's argument names: the resolvers name their
 * GraphQL variables (`filter.arrivalTo is before filter.arrivalFrom`, `groupBy names week twice`),
 * which a model never sent. Each such name, snake-cased, is the argument of that name, or the one
 * it ends with (arrival_to → to); a name that is neither stays. A variable's value a scalar refused
 * (its detail names no argument) is prefixed with the argument's name.
 */
function inToolWords(err: unknown, args: string[]): unknown {
  if (!(err instanceof GraphQLError) || err.extensions.code !== "invalid_request" || typeof err.extensions.detail !== "string") return err;
  const rename = (name: string) => {
    const snake = name.replace(/^\$?(?:filter\.)?/, "").replace(/[A-Z]/g, (c) => `_${c.toLowerCase()}`);
    if (snake === name) return name; // one lower-case word: prose, or already an argument's name
    if (args.includes(snake)) return snake;
    const ending = args.filter((arg) => snake.endsWith(`_${arg}`));
    return ending.length === 1 ? ending[0] : name;
  };
  // Outside quotes only: a quoted value is the caller's own, echoed.
  let detail = err.extensions.detail
    .split(/("(?:[^"\\]|\\.)*")/)
    .map((part, i) => (i % 2 ? part : part.replace(/\$?\b(?:filter\.)?[a-z]+(?:[A-Z][a-z]*)*\b/g, rename)))
    .join("");
  // A value the operation's variable did not take (a scalar's detail names none): which argument.
  const variable = /^Variable "\$(\w+)" got invalid value/.exec(err.message)?.[1];
  if (variable && args.includes(rename(variable))) detail = `${rename(variable)}: ${detail}`;
  return detail === err.extensions.detail ? err : invalidRequest(detail);
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
    listed: true,
    inputSchema: taskArgumentsSchema(task.inputSchema),
    // What the SDK itself makes of a raw shape (listed and checked the same), made once.
    outputSchema: objectFromShape(task.outputSchema) as unknown as z.ZodType,
    annotations: task.annotations,
    async run(args, context) {
      rejectUnknown(args, known);
      const parsed = input.safeParse(args);
      if (!parsed.success) throw invalidRequest(argumentIssue(parsed.error.issues[0], args));
      task.check?.(parsed.data);
      try {
        return task.toResult(await runOperation(schema, document, task.toVariables(parsed.data), context));
      } catch (err) {
        throw inToolWords(err, known);
      }
    },
  };
}

/**
 * A tool as tools/list lists it, made once per app (a merged tool: once per set of scopes). The SDK's
 * own listing converts the zod schemas on every request with fixed options: a `$schema` in every
 * schema, ±2^53 bounds on every integer and an `execution` member per tool, the bulk of a list a
 * model reads before its first question. Here the same conversion (zod's toJSONSchema) keeping what
 * a model reads: types, formats, enums, bounds of its own, descriptions; as JSON Schema 2020-12,
 * MCP's default dialect, so no `$schema` is needed.
 */
export function toolListing(tool: McpTool, scopes: ReadonlySet<string>): Tool {
  const input = tool.members ? mergedInputSchema(tool, scopes) : jsonSchema(tool.inputSchema, "input");
  return {
    name: tool.name,
    title: tool.title,
    description: tool.description,
    inputSchema: input as Tool["inputSchema"],
    ...(tool.outputSchema ? { outputSchema: jsonSchema(tool.outputSchema, "output") as Tool["outputSchema"] } : {}),
    annotations: tool.annotations,
  };
}

/** The listings of a set of tools, each made on first use and kept (a merged tool's per set of scopes). */
export function listings(): (tool: McpTool, scopes: ReadonlySet<string>) => Tool {
  const made = new Map<string, Tool>();
  return (tool, scopes) => {
    const key = tool.members ? `${tool.name} ${[...tool.members.values()].filter((m) => mayUse(m, scopes)).map((m) => m.name).join()}` : tool.name;
    let listing = made.get(key);
    if (!listing) made.set(key, (listing = toolListing(tool, scopes)));
    return listing;
  };
}

function jsonSchema(schema: z.ZodType, io: "input" | "output"): Record<string, unknown> {
  const json = z.toJSONSchema(schema, {
    io,
    unrepresentable: "any",
    override: ({ jsonSchema: node }) => {
      // A deprecated value (guest_events' mode rollup) still parses, but is not offered.
      const choices = node.oneOf as Record<string, unknown>[] | undefined;
      if (choices?.some((c) => c.deprecated)) {
        const kept = choices.filter((c) => !c.deprecated);
        if (kept.length === 1 && Object.keys(kept[0]).join() === "enum") {
          node.enum = kept[0].enum as typeof node.enum;
          delete node.oneOf;
        } else node.oneOf = kept;
      }
      // An integer's own bounds (Number.MIN/MAX_SAFE_INTEGER) hold for any number a model writes.
      if (node.minimum === Number.MIN_SAFE_INTEGER) delete node.minimum;
      if (node.maximum === Number.MAX_SAFE_INTEGER) delete node.maximum;
      // zod's uuid pattern (200 characters) says what the format says.
      if (node.format === "uuid") delete node.pattern;
      // A string argument's length bounds tell a model nothing (as for route tools); the zod schema keeps them.
      if (io === "input" && node.type === "string") {
        delete node.minLength;
        delete node.maxLength;
      }
    },
  }) as Record<string, unknown>;
  delete json.$schema;
  if (io === "output") outline(json, 0);
  return json;
}

/**
 * A result's outline as listed: its members with their types (tools/list has a budget, issue 42); a
 * row's fields, a nested object's shape and the prose are in the result itself and the tool's
 * description. Which members are always present, and that no other appears, is for a validator,
 * which checks against the zod schema (the SDK, the fast path).
 */
function outline(node: Record<string, unknown>, depth: number): void {
  for (const key of ["description", "required", "additionalProperties", "propertyNames"]) delete node[key];
  const branches = node.anyOf as Record<string, unknown>[] | undefined;
  for (const branch of branches ?? []) outline(branch, depth);
  // [{type: "string"}, {type: "null"}], bare once their prose is gone: {type: ["string", "null"]}.
  if (branches?.every((b) => Object.keys(b).length === 1 && typeof b.type === "string")) {
    node.type = branches.map((b) => b.type);
    delete node.anyOf;
  }
  if (node.items) outline(node.items as Record<string, unknown>, depth);
  if (!node.properties) return;
  if (depth > 0) delete node.properties;
  else for (const member of Object.values(node.properties as Record<string, Record<string, unknown>>)) outline(member, depth + 1);
}
