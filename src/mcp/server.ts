// The MCP server at /mcp (streamable HTTP, stateless). The tools (tools.ts) are built once; each
// request gets a server holding the tools its credential may use (a tools/call request: only those
// it names, see toolsFor), run with the request's context, so tenant scoping and scopes are
// enforced exactly as on /v1. A tool answers its result as structured
// content and as JSON text; a failure is a tool result with isError and the REST error body as text.
// One request's tool calls (a batch) share the credential's slots and one byte budget for their results.
// A request that is a single tools/call of a read tool takes the fast path (fast-path.ts): the same
// tool call (callTool), answered with the SDK's bytes without building its server and transport.
import type { Request, Response } from "express";
import type { GraphQLError, GraphQLSchema } from "graphql";
import { z } from "zod";
import { McpServer } from "@modelcontextprotocol/sdk/server/mcp.js";
import { StreamableHTTPServerTransport } from "@modelcontextprotocol/sdk/server/streamableHttp.js";
import { type CallToolResult, ListToolsRequestSchema, type Tool } from "@modelcontextprotocol/sdk/types.js";
import { AjvJsonSchemaValidator } from "@modelcontextprotocol/sdk/validation/ajv";
import { createContext, type RequestContext } from "../context";
import { provedError, proveRememberedCredential } from "../auth/authenticate";
import { isCredentialRefusal } from "../db/errors";
import { prepareOperations, TOOL_OPERATIONS_DIR, type PreparedOperations } from "../api/execute";
import { sendError } from "../http/respond";
import { toHttpError } from "../http/http-errors";
import type { Services } from "../services";
import { jsonSize } from "../graphql/limits";
import { taskTools, type TaskTool } from "../api/tools/task-tools";
import { CONVENTIONS } from "../api/tools/route-tools";
import { apiError, missingScope } from "../errors";
import { closest } from "../api/params";
import { buildTools, listings, mayUse, type McpTool } from "./tools";
import { checkOutput, fastArguments, fastCall, fastTool, sendResult, type FastTool } from "./fast-path";

/** What a model reads once on connecting: how the tools fit together, and what every tool shares. */
function instructions(tasks: readonly TaskTool[]): string {
  const start = tasks.length
    ? `Start with ${tasks.map((t) => t.name).join(", ")}: they answer whole questions in one call. `
    : "To answer about a person, find them with list_records type master_profiles, then filter by that master_profile_id. ";
  return (
    "Guest data of one hotel or restaurant group, read-only but for pausing table deliveries (the credential decides the " +
    `group and what you may see). ${start}${CONVENTIONS} Consent: no observation means unknown, never allowed. ` +
    "Amounts are integers in the currency's minor unit (12050 EUR is 120.50). An error result is JSON {error, detail}: the detail says what to change."
  );
}

/** What one /mcp request may run and answer: a batch's calls share both. */
interface CallBudget {
  /** Tool calls running at once: the credential's slots this request holds. */
  parallel: number;
  /** Bytes left for tool results (GCS_GRAPHQL_MAX_RESPONSE_BYTES per request, as /graphql's answers). */
  bytes: number;
  maxBytes: number;
}

/** Runs at most `n` calls at once, in order of arrival. */
function atMost(n: number) {
  let running = 0;
  const queue: (() => void)[] = [];
  return async <T>(run: () => Promise<T>): Promise<T> => {
    if (running < n) running++;
    else await new Promise<void>((resolve) => queue.push(resolve)); // the slot passes on in release
    try {
      return await run();
    } finally {
      const next = queue.shift();
      if (next) next();
      else running--;
    }
  };
}

/** The tool error a result over the request's byte budget becomes: what to ask for instead. */
function tooLarge(budget: CallBudget): CallToolResult {
  const detail =
    `this result would take the answer past ${budget.maxBytes} bytes (the results of one /mcp request together); ` +
    "ask for less: a smaller limit, fewer fields (e.g. get_guest for one row), or fewer calls per batch";
  return { isError: true, content: [{ type: "text", text: JSON.stringify({ error: "response_too_large", detail }) }] };
}

/**
 * The tools a request's server registers, of those the credential may use: for a request of
 * tools/call messages only, the ones they name (registering costs per tool, and the answers are the
 * same), with a stand-in for a name none has; else all of them.
 */
function toolsFor(tools: McpTool[], context: RequestContext, messages: unknown[]): McpTool[] {
  // Not listed at all without the scope: a model is not offered what it may not do (write:tables).
  const allowed = tools.filter((tool) => mayUse(tool, context.credential.scopes));
  const names = new Set<unknown>();
  for (const m of messages as { method?: unknown; params?: { name?: unknown } }[]) {
    if (m?.method !== "tools/call") return allowed;
    names.add(m.params?.name);
  }
  const named = allowed.filter((t) => names.has(t.name));
  // A name that is none of them gets a stand-in that says why: the scope it lacks, or the tool
  // probably meant. Only a name the SDK registers without a warning, and no Object.prototype key.
  for (const name of names) {
    if (typeof name !== "string" || !STAND_IN_NAME.test(name) || name in Object.prototype || named.some((t) => t.name === name)) continue;
    const tool = tools.find((t) => t.name === name);
    named.push(standIn(name, tool?.scope ? missingScope(tool.scope) : unknownTool(name, allowed)));
  }
  return named.length ? named : allowed;
}

const STAND_IN_NAME = /^[A-Za-z0-9_](?:[A-Za-z0-9._-]{0,126}[A-Za-z0-9_])?$/;

/** The not_found error of a tool name no tool has: the closest one (did you mean …?, as REST does for a parameter) and the list. */
function unknownTool(name: string, allowed: McpTool[]): GraphQLError {
  const near = closest(name, allowed.map((t) => t.name));
  const listed = allowed.filter((t) => t.listed).map((t) => t.name);
  return apiError("not_found", `unknown tool ${name}${near ? `; did you mean ${near}?` : "."} Tools: ${listed.join(", ")}.`);
}

/** A tool that exists only in the server of the request naming it, never listed, answering `error`. */
function standIn(name: string, error: GraphQLError): McpTool {
  return { name, title: name, description: "", listed: false, inputSchema: z.looseObject({}), annotations: {}, run: () => Promise.reject(error) };
}

/**
 * One tool call as both paths answer it: run in a slot, the result measured against the request's
 * byte budget, a failure turned into a tool error with the REST error body.
 */
async function callTool(
  tool: McpTool,
  args: unknown,
  context: RequestContext,
  req: Request,
  budget: CallBudget,
  turn: ReturnType<typeof atMost>,
): Promise<CallToolResult> {
  try {
    // Always an object: every input schema is a (loose) zod object.
    const result = await turn(() => tool.run(args as Record<string, unknown>, context));
    // Sent twice, as structured content and as text; measured without serialising.
    const size = 2 * jsonSize(result, budget.bytes);
    if (size > budget.bytes) return tooLarge(budget);
    budget.bytes -= size;
    return { content: [{ type: "text", text: JSON.stringify(result) }], structuredContent: result };
  } catch (err) {
    // A remembered credential refused by the statement that proved it: the request's 401, as a lookup gives.
    if (isCredentialRefusal(err)) throw err;
    // Text only: the SDK client checks any structuredContent against the tool's outputSchema.
    const { body, unexpected } = toHttpError(req.faults.errorFor(err, "/mcp") ?? err);
    // A fault of ours: the cause goes to the log (X-Request-Id finds it), never into the result.
    if (unexpected) req.log.error({ err, requestId: req.id, tool: tool.name }, "unhandled error");
    return { isError: true, content: [{ type: "text", text: JSON.stringify(body) }] };
  }
}

function buildMcpServer(
  tools: McpTool[],
  listing: (tool: McpTool, scopes: ReadonlySet<string>) => Tool,
  guide: string,
  validator: AjvJsonSchemaValidator,
  context: RequestContext,
  req: Request,
  budget: CallBudget,
): McpServer {
  // The server's JSON Schema validator (it checks elicitation answers, which this server never asks
  // for) is shared: the SDK would otherwise build an Ajv instance, with its formats, per request.
  const server = new McpServer({ name: "guest-context-service", version: "1.0.0" }, { instructions: guide, jsonSchemaValidator: validator });
  const turn = atMost(budget.parallel);
  for (const tool of tools) {
    server.registerTool(
      tool.name,
      { title: tool.title, description: tool.description, inputSchema: tool.inputSchema, outputSchema: tool.outputSchema, annotations: tool.annotations },
      (args: unknown) => callTool(tool, args, context, req, budget, turn),
    );
  }
  // tools/list answers the listings made once (toolListing) in place of the SDK's, made per request.
  const scopes = context.credential.scopes;
  if (tools.length) server.server.setRequestHandler(ListToolsRequestSchema, () => ({ tools: tools.filter((t) => t.listed).map((t) => listing(t, scopes)) }));
  return server;
}

export function mcpHandler(services: Services, schema: GraphQLSchema, operations: PreparedOperations, tasks: readonly TaskTool[] = taskTools) {
  // Once per app, on the first /mcp request: the task tools' operations are parsed, validated and
  // compiled here. A task tool may also name a REST operation; one name means one operation.
  const own = prepareOperations(schema, TOOL_OPERATIONS_DIR);
  for (const name of own.keys()) if (operations.has(name)) throw new Error(`operation ${name} is defined for both REST and MCP`);
  const tools = buildTools(schema, operations, new Map([...operations, ...own]), tasks);
  const guide = instructions(tasks);
  const listing = listings();
  const validator = new AjvJsonSchemaValidator();
  // The tools the fast path answers: the read ones (a write goes through the SDK).
  const fast = new Map<string, FastTool>(tools.filter((t) => t.annotations.readOnlyHint === true).map((t) => [t.name, fastTool(t)]));
  const pool = services.db.readerPool;
  return async (req: Request, res: Response) => {
    try {
      const call = fastCall(req);
      const messages: unknown[] = Array.isArray(req.body) ? req.body : [req.body];
      // Each tool call of a batch takes a slot of the credential (up to the cap), as a request would.
      const calls = messages.filter((m) => (m as { method?: unknown })?.method === "tools/call").length;
      const gate = services.credentialGate;
      const named = call && fast.get(call.name);
      const context = await createContext(services, {
        authorization: req.get("authorization"),
        propertyHeader: req.get("x-property-id"),
        surface: "mcp",
        address: req.ip,
        response: res,
        slots: calls,
        // A read tool's call answered here proves a remembered credential with its first statement
        // (or with one statement before it answers); the SDK's path answers first, so it looks up.
        provesBeforeAnswering: named !== undefined,
      });
      res.locals.credential = context.credential;
      const maxBytes = services.config.graphqlMaxResponseBytes;
      const parallel = Math.max(1, gate ? Math.min(calls, gate.max) : calls);
      const budget: CallBudget = { parallel, bytes: maxBytes, maxBytes };
      if (call && named && mayUse(named.tool, context.credential.scopes)) {
        const args = fastArguments(named, call);
        if (args !== undefined) {
          const result = await callTool(named.tool, args, context, req, budget, atMost(parallel));
          await proveRememberedCredential(pool);
          sendResult(res, call.id, checkOutput(named, result));
          return;
        }
      }
      await proveRememberedCredential(pool);
      const server = buildMcpServer(toolsFor(tools, context, messages), listing, guide, validator, context, req, budget);
      const transport = new StreamableHTTPServerTransport({ sessionIdGenerator: undefined, enableJsonResponse: true });
      res.on("close", () => {
        // Closing makes the SDK build an Error to reject pending outgoing requests, which a stateless
        // server never has: without its stack trace (the Error is made in the synchronous part of close).
        const stackTraceLimit = Error.stackTraceLimit;
        Error.stackTraceLimit = 0;
        try {
          void transport.close();
          void server.close();
        } finally {
          Error.stackTraceLimit = stackTraceLimit;
        }
      });
      await server.connect(transport);
      await transport.handleRequest(req, res, req.body);
    } catch (err) {
      if (!res.headersSent) sendError(req, res, await provedError(err, pool));
    }
  };
}
