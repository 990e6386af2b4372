// The OpenAPI document of the catalogue: built from the route table, the named operations,
// schema.graphql and the prose of descriptions.ts (generate.ts). src/openapi serves it, src/docs
// renders Markdown from it, scripts/openapi.ts writes openapi.yaml.
import { generateOpenApi, type OpenApiDocument } from "./generate";

export { generateOpenApi, openApiPath, routeKey, type OpenApiDocument } from "./generate";

/** Express routes that the document leaves out on purpose, with the reason. */
export const UNDOCUMENTED_ROUTES: Record<string, string> = {
  "POST /mcp": "The MCP server is outside this document (spec 1.7); it is described by its own tools/list.",
  "GET /docs/redoc.standalone.js": "The renderer script of GET /docs.",
  "GET /dashboard": "The internal dashboard's page (src/dashboard), off in production unless GCS_DASHBOARD=true.",
  "GET /dashboard/documents.json": "The dashboard's trusted documents (dashboard/trusted-documents.json).",
};

let cached: OpenApiDocument | undefined;

/** The document, built once per process (it depends on code only). */
export function openApiDocument(): OpenApiDocument {
  return (cached ??= generateOpenApi().document);
}
