// The fast path of /mcp: a request that is one tools/call of a read tool is answered here, without
// the SDK's per-request server and transport (about a quarter of such a request's CPU), with the
// bytes the SDK would answer: same tool handler (server.ts callTool), same input and output checks
// (the SDK's own functions on the same schemas), same JSON-RPC envelope, status and content-type.
// Anything else, and any doubt about a header or the message, goes to the SDK as before.
// test/integration/mcp-fast-path.test.ts compares both paths byte for byte.
import type { Request, Response } from "express";
import type { z } from "zod";
import { type CallToolResult, ErrorCode, McpError, SUPPORTED_PROTOCOL_VERSIONS } from "@modelcontextprotocol/sdk/types.js";
import { getParseErrorMessage, normalizeObjectSchema, safeParse } from "@modelcontextprotocol/sdk/server/zod-compat.js";
import type { McpTool } from "./tools";

let enabled = true;
/** Test-only: off sends every request to the SDK (the fast path's answers are compared with it). */
export function setMcpFastPath(on: boolean): void {
  enabled = on;
}

// @hono/node-server's checks (the SDK's Node adapter) of the request target and Host: what they would
// refuse or rewrite goes to the SDK.
const VALID_URL = /^\/[!#$&-;=?-\[\]_a-z~]*$/;
const DOT_SEGMENT = /\/\.\.?(?:[/?#]|$)/;
const VALID_HOST = /^[a-z0-9._-]+(?::(?:[1-5]\d{3,4}|[6-9]\d{3}))?$/;
/** Headers the SDK reads: sent twice, the Node and Web views of them may differ, so the SDK decides. */
const READ_HEADERS = new Set(["accept", "content-type", "mcp-protocol-version", "host"]);
const MESSAGE_KEYS = new Set(["jsonrpc", "id", "method", "params"]);

export interface FastCall {
  id: string | number;
  name: string;
  arguments: Record<string, unknown> | undefined;
}

/** The tools/call this request is, when the SDK would take it as it comes; else undefined. */
export function fastCall(req: Request): FastCall | undefined {
  if (!enabled || req.method !== "POST") return undefined;
  const { accept, host } = req.headers;
  // The SDK's own test: substrings of Accept, then the media type of Content-Type (here only its exact literal).
  if (typeof accept !== "string" || !accept.includes("application/json") || !accept.includes("text/event-stream")) return undefined;
  if (req.headers["content-type"] !== "application/json") return undefined;
  const version = req.headers["mcp-protocol-version"];
  if (version !== undefined && !(typeof version === "string" && SUPPORTED_PROTOCOL_VERSIONS.includes(version))) return undefined;
  if (typeof host !== "string" || !VALID_HOST.test(host) || !VALID_URL.test(req.originalUrl) || DOT_SEGMENT.test(req.originalUrl)) return undefined;
  const seen = new Set<string>();
  for (let i = 0; i < req.rawHeaders.length; i += 2) {
    const name = req.rawHeaders[i].toLowerCase();
    if (!READ_HEADERS.has(name)) continue;
    if (seen.has(name)) return undefined;
    seen.add(name);
  }
  // One JSON-RPC request, exactly as the SDK's strict schema takes it.
  const m = req.body as Record<string, unknown> | undefined;
  if (!m || typeof m !== "object" || Array.isArray(m) || Object.keys(m).some((k) => !MESSAGE_KEYS.has(k))) return undefined;
  if (m.jsonrpc !== "2.0" || m.method !== "tools/call") return undefined;
  const id = m.id;
  if (!(typeof id === "string" || (typeof id === "number" && Number.isSafeInteger(id)))) return undefined;
  const params = m.params as Record<string, unknown> | undefined;
  if (!params || typeof params !== "object" || Array.isArray(params)) return undefined;
  // No _meta (a progress token), no task: only a name and arguments.
  if (Object.keys(params).some((k) => k !== "name" && k !== "arguments") || typeof params.name !== "string") return undefined;
  const args = params.arguments;
  if (args !== undefined && (args === null || typeof args !== "object" || Array.isArray(args) || Object.hasOwn(args, "__proto__"))) return undefined;
  return { id, name: params.name, arguments: args as Record<string, unknown> | undefined };
}

/** A read tool with the schemas the SDK parses against, normalised once. */
export interface FastTool {
  tool: McpTool;
  input: z.ZodType;
  /** None for a route tool: its result is not checked (the SDK checks only against an output schema). */
  output?: z.ZodType;
}

export function fastTool(tool: McpTool): FastTool {
  const input = (normalizeObjectSchema(tool.inputSchema as never) ?? tool.inputSchema) as z.ZodType;
  const output = tool.outputSchema && (normalizeObjectSchema(tool.outputSchema as never) as unknown as z.ZodType);
  return { tool, input, output };
}

/** The tool's arguments as the SDK hands them to the handler, or undefined when it would refuse them. */
export function fastArguments(fast: FastTool, call: FastCall): unknown {
  const parsed = safeParse(fast.input as never, call.arguments ?? {});
  return parsed.success ? parsed.data : undefined;
}

/** The SDK's output check (McpServer.validateToolOutput): a result off the output schema becomes a tool error. */
export function checkOutput(fast: FastTool, result: CallToolResult): CallToolResult {
  if (result.isError || !fast.output) return result;
  if (!result.structuredContent) return toolError(`Output validation error: Tool ${fast.tool.name} has an output schema but no structured content was provided`);
  const parsed = safeParse(fast.output as never, result.structuredContent);
  if (parsed.success) return result;
  const detail = `Output validation error: Invalid structured content for tool ${fast.tool.name}: ${getParseErrorMessage(parsed.error)}`;
  return toolError(detail);
}

/** McpServer's tool error for an McpError it caught: the error's message, "MCP error -32602: …". */
function toolError(detail: string): CallToolResult {
  return { content: [{ type: "text", text: new McpError(ErrorCode.InvalidParams, detail).message }], isError: true };
}

/** The answer as the SDK writes it: its JSON-RPC envelope and key order, through @hono/node-server's headers. */
export function sendResult(res: Response, id: string | number, result: CallToolResult): void {
  // Key order as the SDK's result schema parse leaves it: content, structuredContent, isError.
  let body: string;
  const [first] = result.content;
  if (!result.isError && result.content.length === 1 && first.type === "text") {
    // callTool's text is JSON.stringify(structuredContent): reused rather than serialised again.
    body = `{"result":{"content":[{"type":"text","text":${JSON.stringify(first.text)}}],"structuredContent":${first.text}},"jsonrpc":"2.0","id":${JSON.stringify(id)}}`;
  } else {
    const ordered = result.isError ? { content: result.content, isError: true } : { content: result.content, structuredContent: result.structuredContent };
    body = JSON.stringify({ result: ordered, jsonrpc: "2.0", id });
  }
  res.writeHead(200, { "content-type": "application/json", "content-length": Buffer.byteLength(body) });
  res.end(body);
}
