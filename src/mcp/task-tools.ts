// Task-shaped MCP tools: each answers an agent's question in one call by running a named GraphQL
// operation (src/mcp/operations/*.graphql) with the caller's context, so tenant scoping, consent
// precedence and errors stay in the resolvers. server.ts registers every tool listed here beside the
// tools made from the route table.
import type { z } from "zod";
import type { ToolAnnotations } from "@modelcontextprotocol/sdk/types.js";

export interface TaskTool {
  name: string;
  title: string;
  /** Written for a model: what it answers, when to use it, what to call next. */
  description: string;
  /** The named operation in src/mcp/operations/*.graphql. */
  operation: string;
  /** Typed arguments, each with a description. */
  inputSchema: z.ZodRawShape;
  outputSchema: z.ZodRawShape;
  annotations: ToolAnnotations;
  /** Tool arguments (already validated by inputSchema) → the operation's variables. */
  toVariables(args: Record<string, unknown>): Record<string, unknown>;
  /** The operation's data → the tool's structured result (matches outputSchema). */
  toResult(data: Record<string, unknown>): Record<string, unknown>;
}

export const taskTools: TaskTool[] = [];
