// The MCP tools as the docs describe them. This is the one place that knows where tool metadata
// lives: today the route table's `mcp` entries (one read-only tool per route, its arguments the
// route's path and query parameters). When the tools move (src/mcp), point this function there.
import { openApiDocument, openApiPath } from "../openapi";
import { routes } from "../rest/routes";
import type { JsonSchema } from "../openapi/selection-schema";

export interface ToolArgument {
  name: string;
  required: boolean;
  description: string;
  schema: JsonSchema;
}

export interface DocumentedTool {
  name: string;
  description: string;
  /** The scope the tool needs. */
  scope: string;
  /** The REST route it answers like, when there is one. */
  route?: { method: string; path: string };
  readOnly: boolean;
  arguments: ToolArgument[];
}

interface Parameter {
  name: string;
  in: string;
  required: boolean;
  description: string;
  schema: JsonSchema;
}

export function documentedMcpTools(): DocumentedTool[] {
  const paths = openApiDocument().paths;
  return routes.flatMap((route) => {
    if (!route.mcp) return [];
    const path = openApiPath(route.path);
    const parameters = (paths[path][route.method.toLowerCase()].parameters as (Parameter | { $ref: string })[]).filter(
      (p): p is Parameter => "name" in p && (p.in === "path" || p.in === "query"),
    );
    return [
      {
        name: route.mcp.tool,
        description: route.mcp.description,
        scope: route.scope,
        route: { method: route.method, path },
        readOnly: route.method === "GET",
        arguments: parameters.map((p) => ({ name: p.name, required: p.required, description: p.description, schema: p.schema })),
      },
    ];
  });
}
