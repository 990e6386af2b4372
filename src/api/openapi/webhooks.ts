// /v1/webhook-endpoints (the route table; rules in src/webhooks/endpoints.ts) and the `webhooks` section: what a receiver gets.
import { WEBHOOK_TOPICS } from "../../webhooks/input";
import { PARAMETERS } from "../descriptions";
import { COMMON_HEADERS, RATE_LIMIT_HEADERS, errorRef, forbiddenResponse } from "./errors";
import type { OperationObject } from "./generate";

type Json = Record<string, unknown>;
const ID = "7d1e6c2a-4b3f-4e8a-9c1d-2f5a6b7c8d9e";
const NOW = "2026-11-27T09:30:00.000Z";
const nullable = (type: string, extra: Json = {}) => ({ type: [type, "null"], ...extra });

const ENDPOINT: Json = {
  type: "object",
  description: "A webhook endpoint: where the group's events are POSTed, signed (Standard Webhooks 1.0).",
  required: ["id", "url", "topics", "property_ids", "description", "state", "disabled_reason", "disabled_at", "failure_count", "next_attempt_at", "last_error", "previous_secret_expires_at", "created_at", "updated_at"],
  properties: {
    id: { type: "string", format: "uuid" },
    url: { type: "string", description: "The receiver's URL (https in production)." },
    topics: { type: "array", items: { type: "string", enum: ["*", ...WEBHOOK_TOPICS] }, description: "Entity types sent (spec 2.6), or `*` for all." },
    property_ids: { type: "array", items: { type: "string", format: "uuid" }, description: "Only events of these properties; empty: every property and events without one." },
    description: nullable("string"),
    state: { type: "string", enum: ["active", "disabled"], description: "`disabled` after a 410 answer or three days of failures; `disabled_reason` says which. Replay makes it active again." },
    disabled_reason: nullable("string"),
    disabled_at: nullable("string", { format: "date-time" }),
    failure_count: { type: "integer", minimum: 0, description: "Failed attempts of the event the endpoint is held on; 0 when healthy." },
    next_attempt_at: nullable("string", { format: "date-time", description: "When the next retry is due, while failing." }),
    last_error: nullable("string"),
    previous_secret_expires_at: nullable("string", { format: "date-time", description: "After a rotation, until when the old secret's signature is sent beside the new one." }),
    created_at: { type: "string", format: "date-time" },
    updated_at: { type: "string", format: "date-time" },
  },
  additionalProperties: false,
};
const ENDPOINT_EXAMPLE = {
  id: ID, url: "https://crm.example.com/hooks/guest-context", topics: ["reservation", "guest_profile"], property_ids: [], description: "CRM sync",
  state: "active", disabled_reason: null, disabled_at: null, failure_count: 0, next_attempt_at: null, last_error: null,
  previous_secret_expires_at: null, created_at: NOW, updated_at: NOW,
};
const WITH_SECRET: Json = {
  ...ENDPOINT,
  required: [...(ENDPOINT.required as string[]), "secret"],
  properties: { ...(ENDPOINT.properties as Json), secret: { type: "string", pattern: "^whsec_", description: "The signing secret. Shown only here: store it now." } },
};
const SECRET_EXAMPLE = "whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw";
const DELIVERY: Json = {
  type: "object",
  description: "One attempt to deliver one message.",
  required: ["id", "message_id", "event_type", "event_seq", "attempt", "status", "response_code", "duration_ms", "error", "next_retry_at", "created_at"],
  properties: {
    id: { type: "string", format: "uuid" },
    message_id: { type: "string", description: "The `webhook-id` header: `evt_` and 22 characters (a keyed hash of the event), the same on every attempt and replay; `ping_…` for a test." },
    event_type: { type: "string" },
    event_seq: nullable("string"),
    attempt: { type: "integer", minimum: 1 },
    status: { type: "string", enum: ["succeeded", "failed", "refused"], description: "`refused`: the URL resolved to an address the sender may not call." },
    response_code: nullable("integer"),
    duration_ms: { type: "integer", minimum: 0 },
    error: nullable("string"),
    next_retry_at: nullable("string", { format: "date-time" }),
    created_at: { type: "string", format: "date-time" },
  },
  additionalProperties: false,
};
const page = (item: Json) => ({
  type: "object",
  required: ["data", "next_cursor", "has_more"],
  properties: { data: { type: "array", items: item }, next_cursor: nullable("string"), has_more: { type: "boolean" } },
  additionalProperties: false,
});
const data = (schema: Json) => ({ type: "object", required: ["data"], properties: { data: schema }, additionalProperties: false });

function op(method: "get" | "post" | "delete", operationId: string, summary: string, description: string, scope: string, ok: Record<string, Json>, opts: { body?: Json; query?: boolean; id?: boolean } = {}): OperationObject {
  return {
    operationId,
    summary,
    description: `${description}\n\nRequires the scope \`${scope}\`.${scope.endsWith(":webhooks") ? " Session roles owner and admin hold it." : ""}`,
    tags: ["Webhooks"],
    "x-required-scope": scope,
    security: [{ bearerAuth: [] }],
    parameters: [
      ...(opts.id ? [{ name: "id", in: "path", required: true, description: "The endpoint's id.", schema: { type: "string", format: "uuid" }, example: ID }] : []),
      ...(opts.query
        ? [
            // The prose of every keyset list (descriptions.ts), as the GraphQL arguments say it.
            { name: "limit", in: "query", required: false, description: PARAMETERS.limit.description, schema: { type: "integer", ...PARAMETERS.limit.schema!({}) }, example: 50 },
            { name: "cursor", in: "query", required: false, description: PARAMETERS.cursor.description, schema: { type: "string" }, example: "WyI3ZDFlNmMyYSJd.3q2-7wAAAAAAAAAAAAAAAA" },
          ]
        : []),
      { $ref: "#/components/parameters/PropertyId" },
      { $ref: "#/components/parameters/RequestId" },
    ],
    ...(opts.body ? { requestBody: { required: true, content: { "application/json": opts.body } } } : {}),
    responses: {
      ...Object.fromEntries(Object.entries(ok).map(([status, r]) => [status, { headers: { ...COMMON_HEADERS, ...RATE_LIMIT_HEADERS }, ...r }])),
      "400": errorRef(400),
      "401": errorRef(401),
      "403": forbiddenResponse(scope, false),
      ...(opts.id ? { "404": errorRef(404) } : {}),
      // Any POST may carry a body the JSON parser refuses.
      ...(method === "post" ? { "413": errorRef(413), "415": errorRef(415) } : {}),
      "429": errorRef(429),
      "500": errorRef(500),
      "503": errorRef(503),
      "504": errorRef(504),
    },
  } as OperationObject;
}

const json = (description: string, schema: Json, example: unknown) => ({ description, content: { "application/json": { schema, example } } });

export function webhookOperations(): Record<string, Record<string, OperationObject>> {
  return {
    "/v1/webhook-endpoints": {
      post: op("post", "createWebhookEndpoint", "Create a webhook endpoint",
        "Events the endpoint selects are POSTed to `url` from now on, in log order, signed with the returned `secret` (Standard Webhooks 1.0). The URL must not resolve to a loopback, private, link-local or metadata address (unless `GCS_WEBHOOKS_ALLOW_PRIVATE=true`); production accepts https only. A credential narrowed to one property creates endpoints of that property.",
        "write:webhooks",
        { "201": json("Created; `secret` is shown only now.", data(WITH_SECRET), { data: { ...ENDPOINT_EXAMPLE, secret: SECRET_EXAMPLE } }) },
        {
          body: {
            schema: {
              type: "object",
              required: ["url", "topics"],
              properties: {
                url: { type: "string", description: "The receiver's URL: https (http outside production)." },
                topics: { type: "array", minItems: 1, items: { type: "string", enum: ["*", ...WEBHOOK_TOPICS] }, description: "Entity types sent (spec 2.6: guest_profile, reservation, transaction, action, loyalty_program, membership, review, channel, space), or `*` for all." },
                property_ids: { type: "array", items: { type: "string", format: "uuid" }, description: "Only events of these properties; empty or absent: every property and events without one." },
                description: { type: "string", maxLength: 500, description: "A note for people, at most 500 characters." },
              },
              additionalProperties: false,
            },
            example: { url: "https://crm.example.com/hooks/guest-context", topics: ["reservation", "guest_profile"], description: "CRM sync" },
          },
        }),
      get: op("get", "listWebhookEndpoints", "List webhook endpoints", "The group's endpoints, keyset-paged by id.", "read:webhooks",
        { "200": json("A page of endpoints.", page(ENDPOINT), { data: [ENDPOINT_EXAMPLE], next_cursor: null, has_more: false }) }, { query: true }),
    },
    "/v1/webhook-endpoints/{id}": {
      get: op("get", "getWebhookEndpoint", "Get a webhook endpoint", "One endpoint, with its state and, while failing, the next retry.", "read:webhooks",
        { "200": json("The endpoint.", data(ENDPOINT), { data: ENDPOINT_EXAMPLE }) }, { id: true }),
      delete: op("delete", "deleteWebhookEndpoint", "Delete a webhook endpoint", "Stops delivery at once and forgets the endpoint and its delivery attempts.", "write:webhooks",
        { "204": { description: "Deleted." } }, { id: true }),
    },
    "/v1/webhook-endpoints/{id}/rotate-secret": {
      post: op("post", "rotateWebhookEndpointSecret", "Rotate the signing secret",
        "A new secret signs from now on; for 24 hours the old one's signature is sent beside it in `webhook-signature` (two space-separated signatures), so receivers can switch without losing a message. The answer comes once the instance sending to the endpoint signs with the new secret (at most about 0.35 s later): every POST after it carries both signatures.",
        "write:webhooks", { "200": json("The endpoint and its new secret, shown only now.", data(WITH_SECRET), { data: { ...ENDPOINT_EXAMPLE, previous_secret_expires_at: "2026-11-28T09:30:00.000Z", secret: SECRET_EXAMPLE } }) }, { id: true }),
    },
    "/v1/webhook-endpoints/{id}/test": {
      post: op("post", "testWebhookEndpoint", "Send a test ping",
        "POSTs a signed `webhook.ping` now and answers with the receiver's status (not retried; recorded in the deliveries). One ping per request: over `/graphql`, a document that runs `testWebhookEndpoint` more than once is refused with `invalid_request` before any is sent.", "write:webhooks",
        {
          "200": json("What the receiver answered.", data({
            type: "object",
            required: ["message_id", "delivered", "response_code", "duration_ms", "error"],
            properties: { message_id: { type: "string" }, delivered: { type: "boolean" }, response_code: nullable("integer"), duration_ms: { type: "integer" }, error: nullable("string") },
            additionalProperties: false,
          }), { data: { message_id: "ping_0b6f3c1e-5d2a-4f7b-8e9c-1a2b3c4d5e6f", delivered: true, response_code: 204, duration_ms: 41, error: null } }),
        }, { id: true }),
    },
    "/v1/webhook-endpoints/{id}/deliveries": {
      get: op("get", "listWebhookDeliveries", "List delivery attempts", "The endpoint's attempts, newest first: status, response code, duration and next retry.", "read:webhooks",
        { "200": json("A page of attempts.", page(DELIVERY), { data: [{ id: ID, message_id: "evt_1042", event_type: "reservation.updated", event_seq: "1042", attempt: 1, status: "succeeded", response_code: 200, duration_ms: 38, error: null, next_retry_at: null, created_at: NOW }], next_cursor: null, has_more: false }) },
        { id: true, query: true }),
    },
    "/v1/events/stream": {
      get: {
        ...op("get", "streamEvents", "Stream the event log (Server-Sent Events)",
          "The timeline of `GET /v1/events` as `text/event-stream`: the same filters, rows, order and scope. Each event is `id: <cursor>`, `event: <entity_type>.<created|updated|deleted>`, `data: <the /v1/events row>`. The `id` is the timeline cursor after that event (a `next_cursor` for the same filters), so reconnecting with `Last-Event-ID` resumes with no gap and no duplicate, on any instance; `cursor` does the same for a first connection (continue after a page). Without either, the stream starts at the end of the log. A `retry` hint of 2 s comes first, a `: heartbeat` comment every 15 s when idle; at most 10 open streams per credential and instance (`429 rate_limited`). New events are found by polling the timeline every 500 ms (GCS_STREAM_POLL_MS), which works on PostgreSQL, PgBouncer and the embedded database alike. A client that does not read costs the server at most 1 MiB (plus one event) and catches up when it reads again. Within 5 s after the credential is revoked, expires or loses `read:events`, the stream ends with an `event: error` whose data is the error body a new request would get (`unauthorized`, or `forbidden` with `scope`).",
          "read:events", {}, { query: false }),
        parameters: [
          { name: "entity_type", in: "query", required: false, description: "Only events of this entity type.", schema: { type: "string", enum: [...WEBHOOK_TOPICS] }, example: "reservation" },
          { name: "entity_id", in: "query", required: false, description: "Only events of this entity.", schema: { type: "string" }, example: ID },
          { name: "guest_profile_id", in: "query", required: false, description: "Only events of this guest profile.", schema: { type: "string", format: "uuid" }, example: "3f1c2a9e-7d4b-4c1a-9e2f-5b6a7c8d9e0f" },
          { name: "master_profile_id", in: "query", required: false, description: "Only events of this master profile's guest profiles.", schema: { type: "string", format: "uuid" }, example: "3f1c2a9e-7d4b-4c1a-9e2f-5b6a7c8d9e0f" },
          { name: "cursor", in: "query", required: false, description: "Start after this timeline position (a next_cursor of GET /v1/events with the same filters).", schema: { type: "string" }, example: "WyIxMjM0NSIsIjEwNDIiXQ.3q2-7wAAAAAAAAAAAAAAAA" },
          { name: "Last-Event-ID", in: "header", required: false, description: "Sent by EventSource on reconnection: the id of the last event received.", schema: { type: "string" }, example: "WyIxMjM0NSIsIjEwNDIiXQ.3q2-7wAAAAAAAAAAAAAAAA" },
          { $ref: "#/components/parameters/PropertyId" },
          { $ref: "#/components/parameters/RequestId" },
        ],
        responses: {
          "200": {
            description: "An endless `text/event-stream`.",
            headers: { ...COMMON_HEADERS, ...RATE_LIMIT_HEADERS },
            content: {
              "text/event-stream": {
                schema: { type: "string" },
                example: 'retry: 2000\n\nid: WyIxMjM0NSIsIjEwNDIiXQ.3q2-7wAAAAAAAAAAAAAAAA\nevent: reservation.updated\ndata: {"seq":"1042","entity_type":"reservation",…}\n\n',
              },
            },
          },
          "400": errorRef(400),
          "401": errorRef(401),
          "403": forbiddenResponse("read:events", false),
          "429": errorRef(429),
          "500": errorRef(500),
          "503": errorRef(503),
          "504": errorRef(504),
        },
      } as OperationObject,
    },
    "/v1/webhook-endpoints/{id}/replay": {
      post: op("post", "replayWebhookEndpoint", "Replay events",
        "Moves the endpoint back to a timeline position, `cursor` (a `next_cursor` of `GET /v1/events` without filters: events after it are sent again) or `since` (events recorded from that instant on), and re-activates a disabled endpoint. On an active endpoint it takes effect at once, whichever instance is sending to it: that instance stops, and the events from the position are sent again in order (after about 0.35 s), with their original `webhook-id`. A position ahead of the endpoint's recorded progress (recorded within a quarter second of each answer) is ignored (nothing is skipped).",
        "write:webhooks",
        { "200": json("The endpoint.", data(ENDPOINT), { data: ENDPOINT_EXAMPLE }) },
        {
          id: true,
          body: {
            schema: {
              type: "object",
              required: [],
              properties: {
                cursor: { type: "string", description: "A next_cursor of GET /v1/events (or Query.events) without filters: events after it are sent again." },
                since: { type: "string", format: "date-time", description: "Events recorded from this instant on are sent again." },
              },
              additionalProperties: false,
            },
            example: { since: "2026-11-26T00:00:00Z" },
          },
        }),
    },
  };
}

const EVENT_DATA: Json = {
  type: "object",
  description: "The event as a row of `GET /v1/events`, without `seq` (it counts every group's events; the `webhook-id` header names the event).",
  required: ["entity_type", "entity_id", "guest_profile_id", "property_id", "integration_id", "operation", "delta", "occurred_at", "recorded_at"],
  properties: {
    entity_type: { type: "string", enum: [...WEBHOOK_TOPICS] },
    entity_id: { type: "string", format: "uuid" },
    guest_profile_id: nullable("string", { format: "uuid" }),
    property_id: nullable("string", { format: "uuid" }),
    integration_id: nullable("string", { format: "uuid" }),
    operation: { type: "string", enum: ["create", "update", "delete"] },
    delta: {},
    occurred_at: { type: "string", format: "date-time" },
    recorded_at: { type: "string", format: "date-time" },
  },
};

/** OpenAPI 3.1 `webhooks`: the POST a receiver gets. */
export function webhookPayloads(): Record<string, Json> {
  const headers = {
    "webhook-id": { required: true, description: "`evt_` and 22 characters: a keyed hash of the event (it reveals nothing of other groups' events), the same on every retry and replay; deduplicate on it.", schema: { type: "string" }, example: "evt_Jq3vU8kq0mW2fXbT1rYc9A" },
    "webhook-timestamp": { required: true, description: "Unix seconds when this attempt was signed.", schema: { type: "string" }, example: "1795772400" },
    "webhook-signature": { required: true, description: "`v1,<base64 HMAC-SHA256>`; two, space-separated, during a secret rotation.", schema: { type: "string" }, example: "v1,K5oZfzN95Z9UVu1EsfQmfVNQhnkZ2pj9o9NDN/H/pI4=" },
  };
  return {
    event: {
      post: {
        operationId: "receiveEvent",
        summary: "An event of the log",
        tags: ["Webhooks"],
        // The receiver authenticates the sender by the signature, not by a bearer token.
        security: [],
        description:
          "Sent per endpoint in timeline order (the order of `GET /v1/events`) on one connection, up to 8 at a time (HTTP/1.1 pipelining, `GCS_WEBHOOKS_PIPELINE`), so they arrive in that order; answer them in order. The endpoint moves past an event only once it was answered 2xx: a failed event holds the later ones back, and those already sent behind it (at most 7) come again after its retry, with the same `webhook-id`. Verify the signature with a Standard Webhooks library, then answer 2xx within 10 s (with any body: a long one is read to its end); anything else (or a redirect) is retried: after about 5 s, 20 s, 80 s, 5 min, 21 min, 85 min, 5.7 h, then every 12 h (each jittered down by up to half), until the endpoint has failed for 3 days, when it is disabled. `410 Gone` disables it at once. Delivery is at least once: after a crash or a replay the same `webhook-id` may arrive again.",
        parameters: Object.entries(headers).map(([name, h]) => ({ name, in: "header", ...h })),
        requestBody: {
          required: true,
          content: {
            "application/json": {
              schema: {
                type: "object",
                required: ["type", "timestamp", "data"],
                properties: {
                  type: { type: "string", description: "`<entity_type>.<created|updated|deleted>`.", examples: ["reservation.updated"] },
                  timestamp: { type: "string", format: "date-time" },
                  data: EVENT_DATA,
                },
              },
              examples: {
                reservation: {
                  summary: "A reservation changed",
                  value: {
                    type: "reservation.updated",
                    timestamp: NOW,
                    data: {
                      entity_type: "reservation", entity_id: ID, guest_profile_id: "3f1c2a9e-7d4b-4c1a-9e2f-5b6a7c8d9e0f",
                      property_id: "5b6a7c8d-9e0f-4c1a-9e2f-3f1c2a9e7d4b", integration_id: null, operation: "update",
                      delta: { status: "checked_in" }, occurred_at: "2026-11-27T09:29:58.000Z", recorded_at: "2026-11-27T09:29:59.120Z",
                    },
                  },
                },
              },
            },
          },
        },
        responses: { "2XX": { description: "Received. Any other answer is retried; 410 disables the endpoint." } },
      },
    },
    ping: {
      post: {
        operationId: "receivePing",
        summary: "A test ping",
        description: "Sent by `POST /v1/webhook-endpoints/{id}/test`, signed like an event (`webhook-id` `ping_…`); not retried.",
        tags: ["Webhooks"],
        security: [],
        parameters: Object.entries(headers).map(([name, h]) => ({ name, in: "header", ...h })),
        requestBody: {
          required: true,
          content: {
            "application/json": {
              schema: {
                type: "object",
                required: ["type", "timestamp", "data"],
                properties: {
                  type: { const: "webhook.ping" },
                  timestamp: { type: "string", format: "date-time" },
                  data: { type: "object", required: ["endpoint_id"], properties: { endpoint_id: { type: "string", format: "uuid" } } },
                },
              },
              example: { type: "webhook.ping", timestamp: NOW, data: { endpoint_id: ID } },
            },
          },
        },
        responses: { "2XX": { description: "Received; the test route reports the status." } },
      },
    },
  };
}
