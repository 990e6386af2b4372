// The MCP tools as the docs describe them, read from the tables /mcp is built from: the route tools
// of src/mcp/tools.ts (arguments as the OpenAPI document gives the route's parameters) and the task
// tools of src/api/tools/task-tools.ts (arguments from their input schemas).
import { openApiDocument, openApiPath } from "../api/openapi";
import { z } from "zod";
import { routes } from "../api/routes";
import { MERGED_TOOLS, ROUTE_TOOLS } from "../api/tools/route-tools";
import { taskTools } from "../api/tools/task-tools";
import { routeKey } from "../api/openapi/generate";
import type { JsonSchema } from "../api/selection-schema";

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
  /** A merged tool (MERGED_TOOLS): the tools it stands for, by type; they answer under their names, unlisted. */
  standsFor?: { type: string; tool: DocumentedTool }[];
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
  const tasks: DocumentedTool[] = taskTools.map((task) => {
    const json = z.toJSONSchema(z.object(task.inputSchema)) as { properties?: Record<string, JsonSchema>; required?: string[] };
    return {
      name: task.name,
      description: task.description,
      scope: task.scope,
      readOnly: task.annotations.readOnlyHint === true,
      arguments: Object.entries(json.properties ?? {}).map(([name, schema]) => ({
        name,
        required: json.required?.includes(name) ?? false,
        description: String(schema.description ?? ""),
        schema,
      })),
    };
  });
  const routeTools = routes.flatMap((route) => {
    const tool = ROUTE_TOOLS[routeKey(route)];
    if (!tool) return [];
    const path = openApiPath(route.path);
    const operation = paths[path][route.method.toLowerCase()];
    const parameters = (operation.parameters as (Parameter | { $ref: string })[]).filter(
      (p): p is Parameter => "name" in p && (p.in === "path" || p.in === "query"),
    );
    const body = (operation.requestBody as { content: Record<string, { schema: { properties?: Record<string, JsonSchema>; required?: string[] } }> } | undefined)
      ?.content["application/json"].schema;
    return [
      {
        name: tool.name,
        description: tool.description,
        scope: route.scope,
        route: { method: route.method, path },
        readOnly: !route.scope.startsWith("write:"),
        arguments: [
          ...parameters.map((p) => ({ name: p.name, required: p.required, description: p.description, schema: p.schema })),
          ...Object.entries(body?.properties ?? {}).map(([name, schema]) => ({
            name,
            required: body?.required?.includes(name) ?? false,
            description: String(schema.description ?? ""),
            schema,
          })),
        ],
      },
    ];
  });
  // As /mcp lists them: each merged tool where the first tool it stands for was, and those not at all.
  const listed: DocumentedTool[] = [];
  for (const tool of routeTools) {
    const merged = MERGED_TOOLS.find((m) => Object.values(m.types).includes(tool.name));
    if (!merged) listed.push(tool);
    else if (Object.values(merged.types)[0] === tool.name) listed.push(mergedTool(merged, routeTools));
  }
  return [...tasks, ...listed];
}

/** A merged tool's document: `type`, then every argument of the tools it stands for, once. */
function mergedTool(merged: (typeof MERGED_TOOLS)[number], routeTools: DocumentedTool[]): DocumentedTool {
  const standsFor = Object.entries(merged.types).map(([type, name]) => ({ type, tool: routeTools.find((t) => t.name === name)! }));
  const takenBy = new Map<string, { types: string[]; argument: ToolArgument }>();
  for (const { type, tool } of standsFor) {
    for (const argument of tool.arguments) {
      const seen = takenBy.get(argument.name);
      if (seen) seen.types.push(type);
      else takenBy.set(argument.name, { types: [type], argument });
    }
  }
  const all = standsFor.length;
  return {
    name: merged.name,
    description: merged.description,
    scope: [...new Set(standsFor.map((s) => s.tool.scope))].join(", "),
    readOnly: true,
    standsFor,
    arguments: [
      { name: "type", required: true, description: "Which records.", schema: { type: "string", enum: Object.keys(merged.types) } },
      ...[...takenBy.values()].map(({ types, argument }) => ({
        ...argument,
        required: false,
        description: `${types.length === all ? "" : `For ${types.join(", ")}. `}${types.length === 1 ? argument.description : ""}`.trim(),
      })),
    ],
  };
}
