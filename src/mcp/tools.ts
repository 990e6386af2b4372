// The MCP tools: one table keyed by REST route (name and a description written for a model), plus
// the task-shaped tools of task-tools.ts. A route tool takes the route's parameters as typed
// arguments (JSON Schema, prose and bounds from the OpenAPI description), turns them back into the
// strings the REST parsers read, and answers the REST body: one place for input rules, one for
// page shapes, and every error is the REST error body.
import type { DocumentNode, GraphQLSchema } from "graphql";
import { z } from "zod";
import type { ToolAnnotations } from "@modelcontextprotocol/sdk/types.js";
import type { RequestContext } from "../context";
import { invalidRequest } from "../errors";
import { routeArguments, routeKey, type ArgumentDoc } from "../openapi/generate";
import { ENVELOPE_MEMBERS, ROUTES } from "../openapi/descriptions";
import { MAX_LIMIT } from "../pagination/keyset";
import { runOperation, runRoute, type PreparedOperations } from "../rest/execute";
import { own, unknownParameterDetail } from "../rest/params";
import { routes, type RouteSpec } from "../rest/routes";
import type { TaskTool } from "./task-tools";

/** Page size when a tool call names none: a page a model can read (REST's default is 100). */
export const MCP_DEFAULT_LIMIT = 20;

const PAGING =
  `Pages hold ${MCP_DEFAULT_LIMIT} rows unless you pass limit (at most ${MAX_LIMIT}); while has_more is true, ` +
  "pass next_cursor back as cursor for the next page.";
const OFFSET_PAGING =
  `Pages hold ${MCP_DEFAULT_LIMIT} rows unless you pass limit (at most ${MAX_LIMIT}); while has_more is true, ` +
  "pass next_offset back as offset.";

/** Route (as `METHOD /path`) → tool. Routes not listed here have no tool. */
export const ROUTE_TOOLS: Record<string, { name: string; description: string }> = {
  "GET /v1/properties": {
    name: "list_properties",
    description:
      "Lists every property (hotel, resort, restaurant, bar, spa) of the group you are connected to, with its id, name, " +
      "kind and time zone. Call it first when a question names a property: other tools filter by its id (property_id).",
  },
  "GET /v1/properties/{id}": {
    name: "get_property",
    description: "Gets one property by its id (from list_properties or any row's property_id).",
  },
  "GET /v1/integrations": {
    name: "list_integrations",
    description:
      "Lists the source systems (PMS, POS, review and loyalty platforms) feeding the group, each mapped to one property. " +
      "A row's id is the integration_id that list_guests and list_reservations need for a source_id lookup.",
  },
  "GET /v1/guests": {
    name: "list_guests",
    description:
      "Lists guest profiles: one guest as one source system knows them (name, e-mail, phone, language, country). " +
      "Filter by email, property_id, master_profile_id, or source_id with integration_id. To find a person by name or " +
      "any contact point, use find_guests (it searches every identifier at once). Each row's master_profile_id is the person across sources: " +
      `pass it to get_master_profile or to the other list tools. ${PAGING}`,
  },
  "GET /v1/guests/{id}": {
    name: "get_guest",
    description: "Gets one guest profile by its id (a guest_profile_id from any row).",
  },
  "GET /v1/master-profiles": {
    name: "search_master_profiles",
    description:
      "Lists master profiles (one real person merged across source systems and properties) by filters: q is a " +
      "case-insensitive substring of given name, family name or e-mail (one field), email matches exactly, vip, " +
      "property_id. To find someone by full name, phone or any other identifier, use find_guests. Each row's id is the " +
      "master_profile_id that list_reservations, list_transactions, list_consent_observations, list_reviews, " +
      `list_loyalty_members, list_actions and guest_events filter by. ${PAGING}`,
  },
  "GET /v1/master-profiles/{id}": {
    name: "get_master_profile",
    description:
      "Gets one master profile by id with the ids of the guest profiles merged into it (get_guest takes them).",
  },
  "GET /v1/reservations": {
    name: "list_reservations",
    description:
      "Lists reservations (stays, dining, spa, events): dates, status, property, room or space, amounts. Filter by " +
      "master_profile_id or guest_profile_id for one person's stays, by confirmation_number, or by arrival and " +
      `departure dates. A row's id is the reservation_id list_transactions and list_reviews filter by. ${PAGING}`,
  },
  "GET /v1/reservations/{id}": {
    name: "get_reservation",
    description: "Gets one reservation by id (a reservation_id from any row).",
  },
  "GET /v1/transactions": {
    name: "list_transactions",
    description:
      "Lists folio transactions (charges, payments, refunds, adjustments): what a guest spent, by category, with amounts " +
      "as integers in the currency's minor unit (12050 EUR is 120.50). Filter by master_profile_id, reservation_id, " +
      `category or a time range. ${PAGING}`,
  },
  "GET /v1/consents": {
    name: "list_consent_observations",
    description:
      "Lists the stored consent observations (granted, withdrawn or denied, per contact point, purpose and channel, with " +
      "source and time): the evidence behind effective_consent. Use effective_consent to decide whether a contact may " +
      `be used. ${PAGING}`,
  },
  "GET /v1/consents/effective": {
    name: "effective_consent",
    description:
      "Answers whether a contact point may be used for a purpose: one row per contact and purpose with the effective " +
      "status and the observation that decided it. Withdrawn or denied beat granted whatever came last; a contact with " +
      "no row is unknown, which never means allowed. Filter by email (or contact_value), purpose (e.g. " +
      `email_marketing) or guest_profile_id. ${PAGING}`,
  },
  "GET /v1/actions": {
    name: "list_actions",
    description:
      "Lists guest actions (tasks, amenities, follow-ups, complaints) with status, priority and due time. Filter by " +
      `master_profile_id, reservation_id, status or priority. ${PAGING}`,
  },
  "GET /v1/reviews/summary": {
    name: "review_summary",
    description:
      "Summarises reviews in one small object: count, average rating (1 to 5), count per rating, and breakdowns by " +
      "source, property and responded. Takes the same filters as list_reviews; prefer it to paging through reviews.",
  },
  "GET /v1/reviews": {
    name: "list_reviews",
    description:
      "Lists guest reviews from every platform with the text, the platform's rating and the normalised 1 to 5 rating. " +
      `Filter by master_profile_id, property_id, source, rating or publication time. ${PAGING}`,
  },
  "GET /v1/loyalty/programs": {
    name: "list_loyalty_programs",
    description:
      "Lists the group's loyalty programs with their tiers (lowest first). A program's id is the program_id " +
      `list_loyalty_members filters by. ${PAGING}`,
  },
  "GET /v1/loyalty/members": {
    name: "list_loyalty_members",
    description:
      "Lists loyalty memberships: program, member number, tier, points and status. Filter by master_profile_id for one " +
      `person, by member_number, program_id or tier. ${PAGING}`,
  },
  "GET /v1/channels": {
    name: "list_channels",
    description:
      "Lists sales and communication channels (booking engine, OTA, e-mail, phone …); property_id null means group-wide. " +
      PAGING,
  },
  "GET /v1/spaces": {
    name: "list_spaces",
    description:
      "Lists bookable spaces (rooms, restaurant tables, meeting and treatment rooms) with kind and capacity. Filter by " +
      `property_id, kind or min_capacity. ${PAGING}`,
  },
  "GET /v1/events": {
    name: "guest_events",
    description:
      "Reads the guest event log: what changed, when, on which entity (guest, reservation, transaction …). " +
      "mode=timeline (default) is the full history in commit order; mode=latest is the newest event per entity in one " +
      `page. Filter by master_profile_id, guest_profile_id or entity. ${PAGING}`,
  },
  "GET /v1/tables": {
    name: "list_tables",
    description:
      "Lists tables: saved working lists of guests, curated or defined by a filter document, that can be delivered to " +
      "e-mail marketing destinations. A table's id is what get_table and list_table_members take. " +
      OFFSET_PAGING,
  },
  "POST /v1/tables/preview": {
    name: "preview_table",
    description:
      "Shows who a filter document selects right now, as pages of members, without saving anything. Give member_type " +
      "and filter_doc (an object); an invalid document is an error naming the offending part. " +
      OFFSET_PAGING,
  },
  "GET /v1/tables/{id}": {
    name: "get_table",
    description:
      "Gets one table by id with its member count and its destination bindings: per provider the delivery state " +
      "(active, paused, error), lag, last flush and last error. Use it to answer whether a list is being delivered.",
  },
  "GET /v1/tables/{id}/members": {
    name: "list_table_members",
    description: `Lists the members of a table (guest or master profiles, with the record itself). ${OFFSET_PAGING}`,
  },
  "POST /v1/tables/{id}/destinations/{provider}/pause": {
    name: "pause_table_destination",
    description:
      "Pauses delivery of a table to one destination provider (e.g. mailchimp), keeping its place: resume_table_destination " +
      "continues where it stopped. Pausing a paused binding changes nothing. Returns the binding; get_table shows them all.",
  },
  "POST /v1/tables/{id}/destinations/{provider}/resume": {
    name: "resume_table_destination",
    description:
      "Resumes delivery of a table to one destination provider from where it stopped (paused or error → active). " +
      "Resuming an active binding changes nothing. Returns the binding.",
  },
};

/** What the server registers for one tool; `run` answers the structured result or throws a coded error. */
export interface McpTool {
  name: string;
  title: string;
  description: string;
  /** The credential must hold this scope for the tool to be listed at all. */
  scope?: string;
  inputSchema: z.ZodType;
  outputSchema: z.ZodType | z.ZodRawShape;
  annotations: ToolAnnotations;
  run(args: Record<string, unknown>, context: RequestContext): Promise<Record<string, unknown>>;
}

const READ: ToolAnnotations = { readOnlyHint: true, openWorldHint: false };
const WRITE: ToolAnnotations = { readOnlyHint: false, destructiveHint: false, idempotentHint: true, openWorldHint: false };

/** Every tool: the task tools first (they answer whole questions), then one per route of ROUTE_TOOLS. */
export function buildTools(
  schema: GraphQLSchema,
  restOperations: PreparedOperations,
  /** The operations task tools may name: src/mcp/operations and the REST ones. */
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

/** A task tool runs its named operation (src/mcp/operations, or a REST one) with the caller's context. */
function taskTool(schema: GraphQLSchema, operations: PreparedOperations, task: TaskTool): McpTool {
  const document = operations.get(task.operation);
  if (!document) throw new Error(`MCP tool ${task.name} names unknown operation ${task.operation} (src/mcp/operations)`);
  const known = Object.keys(task.inputSchema);
  return {
    name: task.name,
    title: task.title,
    description: task.description,
    scope: task.scope,
    inputSchema: taskArgumentsSchema(task.inputSchema),
    outputSchema: task.outputSchema,
    annotations: task.annotations,
    async run(args, context) {
      rejectUnknown(args, known);
      const parsed = z.object(task.inputSchema).safeParse(args);
      if (!parsed.success) throw invalidRequest(argumentIssue(parsed.error.issues[0], args));
      task.check?.(parsed.data);
      const data = await runOperation(schema, document, task.toVariables(parsed.data), context);
      return task.toResult(data);
    },
  };
}
