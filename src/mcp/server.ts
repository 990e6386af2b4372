// The MCP server at /mcp (streamable HTTP, stateless): one read-only tool per /v1 read route that
// names an `mcp` tool in the route table. A tool runs the route's GraphQL operation with the same
// context and returns the same body as the REST route, as JSON text.
import type { Request, Response } from "express";
import type { GraphQLSchema } from "graphql";
import { z } from "zod";
import { McpServer } from "@modelcontextprotocol/sdk/server/mcp.js";
import { StreamableHTTPServerTransport } from "@modelcontextprotocol/sdk/server/streamableHttp.js";
import { createContext, type GraphQLContext } from "../context";
import { runRoute, type PreparedOperations } from "../rest/execute";
import { sendError } from "../rest/respond";
import { toHttpError } from "../rest/http-errors";
import { routes } from "../rest/routes";
import type { Services } from "../services";
import type { DatabaseFaults } from "../db/faults";

function buildMcpServer(schema: GraphQLSchema, operations: PreparedOperations, context: GraphQLContext, faults: DatabaseFaults): McpServer {
  const server = new McpServer({ name: "guest-context-service", version: "1.0.0" });
  for (const route of routes) {
    if (!route.mcp) continue;
    const shape: Record<string, z.ZodOptional<z.ZodString> | z.ZodString> = {};
    for (const name of Object.keys(route.pathParams ?? {})) shape[name] = z.string().describe(`${name} (path parameter)`);
    for (const name of Object.keys(route.query ?? {})) shape[name] = z.string().optional();
    server.registerTool(
      route.mcp.tool,
      { description: route.mcp.description, inputSchema: shape, annotations: { readOnlyHint: true } },
      async (args: Record<string, unknown>) => {
        const path: Record<string, string> = {};
        const query: Record<string, string> = {};
        for (const [k, v] of Object.entries(args)) {
          if (typeof v !== "string") continue;
          if (route.pathParams && Object.hasOwn(route.pathParams, k)) path[k] = v;
          else query[k] = v;
        }
        try {
          const body = await runRoute(schema, operations, route, context, { path, query });
          return { content: [{ type: "text" as const, text: JSON.stringify(body) }] };
        } catch (err) {
          const { body } = toHttpError(faults.errorFor(err, "/mcp") ?? err);
          return { isError: true, content: [{ type: "text" as const, text: JSON.stringify(body) }] };
        }
      },
    );
  }
  return server;
}

export function mcpHandler(services: Services, schema: GraphQLSchema, operations: PreparedOperations) {
  return async (req: Request, res: Response) => {
    try {
      const context = await createContext(services, {
        authorization: req.get("authorization"),
        propertyHeader: req.get("x-property-id"),
        surface: "mcp",
        response: res,
      });
      res.locals.credential = context.credential;
      const server = buildMcpServer(schema, operations, context, req.faults);
      const transport = new StreamableHTTPServerTransport({ sessionIdGenerator: undefined, enableJsonResponse: true });
      res.on("close", () => {
        void transport.close();
        void server.close();
      });
      await server.connect(transport);
      await transport.handleRequest(req, res, req.body);
    } catch (err) {
      if (!res.headersSent) sendError(req, res, err);
    }
  };
}
