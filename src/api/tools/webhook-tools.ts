// Read-only MCP tools over webhook endpoints (issue 29): "are our webhooks healthy?", "why does the
// CRM endpoint fail?". Each runs one named operation of operations/webhooks.graphql; managing
// endpoints (create, rotate, replay) stays with /v1 and /graphql, and no tool sees a secret.
import { z } from "zod";
import type { ToolAnnotations } from "@modelcontextprotocol/sdk/types.js";
import { MAX_LIMIT } from "../../pagination/keyset";
import { snakeKeys, type TaskTool } from "./task-tools";

const READ_ONLY: ToolAnnotations = { readOnlyHint: true, openWorldHint: false };
/** A page a model can read. */
const DEFAULT_LIMIT = 20;

const paging = {
  // Described once, in the server's instructions (route-tools.ts CONVENTIONS): the list tools' paging.
  limit: z.number().int().min(1).max(MAX_LIMIT).optional(),
  cursor: z.string().min(1).max(2048).optional(),
};
const page = { next_cursor: z.string().nullable().describe("Pass back as cursor while has_more."), has_more: z.boolean() };
const instant = z.string().describe("ISO 8601 instant, UTC");

const pageVariables = (args: Record<string, unknown>) => ({ limit: args.limit ?? DEFAULT_LIMIT, ...(args.cursor ? { cursor: args.cursor } : {}) });
const pageResult = (p: unknown, rows: string) => {
  const { nodes, nextCursor, hasMore } = p as { nodes: unknown[]; nextCursor: string | null; hasMore: boolean };
  return { [rows]: snakeKeys(nodes), next_cursor: nextCursor, has_more: hasMore };
};

const listWebhookEndpoints: TaskTool = {
  name: "list_webhook_endpoints",
  scope: "read:webhooks",
  title: "Webhook endpoint health",
  description: [
    "Whether integrations receive changes: the group's webhook endpoints and their health (state, disabled_reason,",
    "failure_count, next_attempt_at, last_error). An endpoint's attempts: list_webhook_deliveries.",
  ].join(" "),
  operation: "WebhookEndpointHealth",
  inputSchema: paging,
  outputSchema: {
    endpoints: z.array(
      z.object({
        id: z.string(),
        url: z.string(),
        topics: z.array(z.string()),
        property_ids: z.array(z.string()),
        description: z.string().nullable(),
        state: z.string(),
        disabled_reason: z.string().nullable(),
        disabled_at: instant.nullable(),
        failure_count: z.number().int(),
        next_attempt_at: instant.nullable(),
        last_error: z.string().nullable(),
        previous_secret_expires_at: instant.nullable(),
        created_at: instant,
      }),
    ),
    ...page,
  },
  annotations: READ_ONLY,
  toVariables: pageVariables,
  toResult: (data) => pageResult(data.webhookEndpoints, "endpoints"),
};

const listWebhookDeliveries: TaskTool = {
  name: "list_webhook_deliveries",
  scope: "read:webhooks",
  title: "Webhook deliveries",
  description: [
    "One webhook endpoint's delivery attempts, newest first: message_id (the webhook-id a receiver sees, the same on every retry",
    "and replay; ping_… for a test), event_type, attempt, status (succeeded, failed, refused), response_code, error, next_retry_at.",
  ].join(" "),
  operation: "WebhookDeliveryLog",
  inputSchema: {
    endpoint_id: z.uuid().describe("From list_webhook_endpoints."),
    ...paging,
  },
  outputSchema: {
    deliveries: z.array(
      z.object({
        id: z.string(),
        message_id: z.string(),
        event_type: z.string(),
        event_seq: z.string().nullable(),
        attempt: z.number().int(),
        status: z.string(),
        response_code: z.number().int().nullable(),
        duration_ms: z.number().int(),
        error: z.string().nullable(),
        next_retry_at: instant.nullable(),
        created_at: instant,
      }),
    ),
    ...page,
  },
  annotations: READ_ONLY,
  toVariables: (args) => ({ endpointId: args.endpoint_id, ...pageVariables(args) }),
  toResult: (data) => pageResult(data.webhookDeliveries, "deliveries"),
};

export const webhookTools: TaskTool[] = [listWebhookEndpoints, listWebhookDeliveries];
