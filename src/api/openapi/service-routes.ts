// The routes outside /v1 that the document describes: health, readiness, the document itself, its
// reference page and the documents for agents (src/api/doc-pages.ts). They need no credential.
// (/graphql has schema.graphql as its contract and /mcp is outside the spec's document; see
// UNDOCUMENTED_ROUTES in index.ts.)
import { DOC_PAGES } from "../doc-pages";
import { COMMON_HEADERS, errorRef } from "./errors";
import type { OperationObject } from "./generate";

const statusBody = (value: string) => ({
  type: "object",
  required: ["status"],
  properties: { status: { const: value } },
  additionalProperties: false,
});

/** /readyz: the replica's part is reported, never a reason for 503 (reads fall back to the primary). */
const readinessBody = {
  type: "object",
  required: ["status"],
  properties: {
    status: { const: "ready" },
    replica: {
      type: "object",
      description:
        "Present when DATABASE_REPLICA_URL is set: the read replica as this instance's last check saw it. `streaming`: reads go to it; `lagging` (more than GCS_REPLICA_MAX_LAG_MS behind), `down`, `not_standby` (not in recovery) and `starting` (not checked yet): reads go to the primary.",
      required: ["state", "serving_reads", "lag_seconds", "lag_bytes"],
      properties: {
        state: { type: "string", enum: ["starting", "streaming", "lagging", "down", "not_standby"] },
        serving_reads: { type: "boolean" },
        lag_seconds: { type: ["number", "null"], minimum: 0, description: "Seconds of WAL the standby had not replayed (at least; one check interval's resolution); null when not measured." },
        lag_bytes: { type: ["integer", "null"], minimum: 0, description: "WAL bytes the standby had not replayed; null when not measured." },
      },
      additionalProperties: false,
    },
  },
  additionalProperties: false,
};

function service(operationId: string, summary: string, description: string, ok: Record<string, unknown>, more = {}): OperationObject {
  return {
    operationId,
    summary,
    description,
    tags: ["Service"],
    security: [],
    parameters: [{ $ref: "#/components/parameters/RequestId" }],
    responses: { "200": { headers: COMMON_HEADERS, ...ok }, ...more },
  };
}

export function serviceOperations(): Record<string, Record<string, OperationObject>> {
  return {
    "/healthz": {
      get: service("getHealth", "Liveness", "The process is up. Touches nothing else.", {
        description: "Up.",
        content: { "application/json": { schema: statusBody("ok"), example: { status: "ok" } } },
      }),
    },
    "/readyz": {
      get: service(
        "getReadiness",
        "Readiness",
        "The database is reachable and the instance is not shutting down: send traffic here. 503 `unavailable` otherwise (from the first moment of a SIGTERM drain). With a read replica, its state and lag are reported; a replica that is down or behind does not make the instance unready (reads go to the primary meanwhile).",
        {
          description: "Ready.",
          content: {
            "application/json": {
              schema: readinessBody,
              examples: {
                ready: { summary: "Without a read replica", value: { status: "ready" } },
                replica: { summary: "With a read replica in use", value: { status: "ready", replica: { state: "streaming", serving_reads: true, lag_seconds: 0, lag_bytes: 0 } } },
              },
            },
          },
        },
        { "503": errorRef(503) },
      ),
    },
    "/openapi.json": {
      get: service("getOpenApi", "The OpenAPI document", "This OpenAPI document, as JSON.", {
        description: "The OpenAPI 3.1 document.",
        content: {
          "application/json": {
            schema: {
              type: "object",
              required: ["openapi", "info", "paths"],
              properties: { openapi: { const: "3.1.0" }, info: { type: "object" }, paths: { type: "object" } },
            },
            example: { openapi: "3.1.0", info: { title: "Guest Context Service API", version: "1.0.0" }, paths: { "/v1/guests": {} } },
          },
        },
      }),
    },
    "/docs": {
      get: service("getDocs", "Reference page", "A readable reference rendered from this document (Redoc), served entirely by the service.", {
        description: "An HTML page.",
        content: { "text/html": { schema: { type: "string" }, example: "<!doctype html>\n<html lang=\"en\">…<div id=\"redoc\"></div>…</html>" } },
      }),
    },
    ...Object.fromEntries(
      DOC_PAGES.map((page) => [
        page.path,
        {
          get: service(docOperationId(page.path), page.title, page.summary, {
            description: page.contentType === "text/plain" ? "Plain text in the llms.txt Markdown format." : "A Markdown document.",
            content: { [page.contentType]: { schema: { type: "string" }, example: `# ${page.title}\n\n${page.summary}\n…` } },
          }),
        },
      ]),
    ),
  };
}

/** `/llms.txt` → getLlmsTxt, `/docs/api.md` → getDocsApiMd */
function docOperationId(path: string): string {
  return "get" + path.split(/[^A-Za-z0-9]+/).filter(Boolean).map((w) => w[0].toUpperCase() + w.slice(1)).join("");
}
