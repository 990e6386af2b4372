// Error responses of the document, derived from ERROR_STATUS (src/errors.ts): each status
// lists exactly the codes that map to it, so a new code shows up here by itself.
import { ERROR_STATUS, GRAPHQL_ONLY_CODES, type ErrorCode } from "../../errors";
import { ROLLUP_DEPRECATION } from "../routes";
import type { JsonSchema } from "../selection-schema";

export const ERROR_SCHEMA: JsonSchema = {
  type: "object",
  required: ["error"],
  properties: {
    error: { type: "string", description: "Machine-readable error code." },
    scope: { type: "string", description: "The scope that was required, present when the error is a scope failure." },
    detail: { type: "string", description: "Human-readable detail; for a bad parameter it names the parameter and shows a valid example." },
  },
  additionalProperties: false,
};

/** Response components by status; per-route 403s are built by `forbiddenResponse`. */
const RESPONSES: Record<number, { name: string; when: string; example: Record<string, string> }> = {
  400: {
    name: "BadRequest",
    when:
      "`invalid_request`: a bad parameter type or value, an unknown query parameter or body member, a malformed JSON body, " +
      "or an `X-Property-Id` that is not a uuid (or is empty). `invalid_cursor`: the cursor was altered, is not ours, or belongs to " +
      "another group, list or filter set; restart from page one. `source_id requires integration_id`: a `source_id` " +
      "filter without `integration_id`.",
    example: { error: "invalid_request", detail: "limit must be an integer from 1 to 500 (larger values are clamped), e.g. limit=50" },
  },
  401: {
    name: "Unauthorized",
    when:
      "`unauthorized`: the bearer credential is missing, unknown, revoked or expired, or a session is badly signed " +
      "or carries claims that name no user, organisation (a uuid) or known role.",
    example: { error: "unauthorized", detail: "send Authorization: Bearer <token>" },
  },
  404: {
    name: "NotFound",
    when: "`not_found`: no such resource in the caller's scope (missing, or another group's).",
    example: { error: "not_found", detail: "no guest 3f1c2a9e-7d4b-4c1a-9e2f-5b6a7c8d9e0f in scope" },
  },
  413: {
    name: "PayloadTooLarge",
    when: "`payload_too_large`: the body is over 256 KB.",
    example: { error: "payload_too_large", detail: "request body is too large" },
  },
  415: {
    name: "UnsupportedMediaType",
    when: "`unsupported_media_type`: a body that is not JSON in UTF-8 (`Content-Type: application/json`, no other charset). Checked before authentication.",
    example: { error: "unsupported_media_type", detail: "send the body as Content-Type: application/json in UTF-8; got charset latin1" },
  },
  429: {
    name: "TooManyRequests",
    when:
      "`rate_limited`: the credential spent its request budget for the window (the `RateLimit` header says what is left), " +
      "or already has as many requests using the database as one credential may hold at once. Wait `Retry-After` seconds.",
    example: { error: "rate_limited", detail: "this credential made more than 12000 requests in 60 s; retry in 12 s" },
  },
  500: {
    name: "InternalError",
    when: "`internal_error`: a fault of the service. The body carries no internals; `X-Request-Id` finds the cause in the log. Retry later.",
    example: { error: "internal_error", detail: "unexpected server fault; retry later" },
  },
  503: {
    name: "ServiceUnavailable",
    when: "`unavailable`: the database is not reachable, or the instance is draining for a restart. Retry after `Retry-After` seconds; nothing was written.",
    example: { error: "unavailable", detail: "the database is not reachable; retry shortly" },
  },
  504: {
    name: "QueryTimeout",
    when: "`query_timeout`: the request's database work ran past the statement timeout and was stopped. Narrow the filters or ask for a smaller page.",
    example: { error: "query_timeout", detail: "the query ran longer than 5 s and was stopped; narrow the filters or ask for a smaller page" },
  },
};

export function codesFor(status: number): ErrorCode[] {
  return (Object.keys(ERROR_STATUS) as ErrorCode[]).filter((code) => ERROR_STATUS[code] === status && !GRAPHQL_ONLY_CODES.has(code));
}

/** The Error component narrowed to some codes. */
export function errorSchema(codes: readonly string[]): JsonSchema {
  return { type: "object", allOf: [{ $ref: "#/components/schemas/Error" }], properties: { error: { type: "string", enum: [...codes] } } };
}

export const COMMON_HEADERS = {
  "X-Request-Id": { $ref: "#/components/headers/XRequestId" },
  "X-Sql-Statements": { $ref: "#/components/headers/XSqlStatements" },
};

/** On every /v1 response while rate limits are on (src/http/rate-limit.ts): optional in the document. */
export const RATE_LIMIT_HEADERS = {
  RateLimit: { $ref: "#/components/headers/RateLimit" },
  "RateLimit-Policy": { $ref: "#/components/headers/RateLimitPolicy" },
};

export const HEADER_COMPONENTS = {
  XRequestId: {
    description: "The request id, echoed from the request's `X-Request-Id` (1–128 of `A-Z a-z 0-9 _ . : -`) or generated; it finds the request in the logs.",
    required: true,
    schema: { type: "string", minLength: 1, maxLength: 128 },
  },
  XSqlStatements: {
    description: "How many database statements the request issued.",
    required: true,
    schema: { type: "integer", minimum: 0 },
  },
  RateLimit: {
    description:
      "What is left of the credential's request budget in the current window (IETF draft-ietf-httpapi-ratelimit-headers-08): " +
      "`r` requests remain, the window ends in `t` seconds. Sent on every /v1, /graphql and /mcp response while rate limits are on.",
    required: false,
    schema: { type: "string", pattern: '^"credential"; r=\\d+; t=\\d+$' },
    example: '"credential"; r=5987; t=42',
  },
  RateLimitPolicy: {
    description:
      "The credential's quota (IETF draft 8): `q` requests per window of `w` seconds, windows aligned to the clock; `pk` identifies the " +
      "counted credential (a hash of a hash of the bearer token, or of the client address without one).",
    required: false,
    schema: { type: "string", pattern: '^"credential"; q=\\d+; w=\\d+; pk=:[A-Za-z0-9+/=]+:$' },
    example: '"credential"; q=12000; w=60; pk=:ZDQ5NzM2ZTFhNGVl:',
  },
  Deprecation: {
    description:
      "The request used a deprecated value (`mode=rollup`): since when it is deprecated, as `@` and Unix seconds (RFC 9745). " +
      "Only on such requests.",
    required: false,
    schema: { type: "string", pattern: "^@\\d+$" },
    example: `@${ROLLUP_DEPRECATION.deprecatedAt.getTime() / 1000}`,
  },
  Sunset: {
    description: "When the deprecated value may stop working, as an HTTP-date (RFC 8594). Sent with `Deprecation`.",
    required: false,
    schema: { type: "string" },
    example: ROLLUP_DEPRECATION.sunsetAt.toUTCString(),
  },
  RetryAfter: {
    description: "Seconds to wait before retrying.",
    required: true,
    schema: { type: "integer", minimum: 0 },
  },
  WWWAuthenticate: {
    description: "The authentication scheme: `Bearer`.",
    required: true,
    schema: { type: "string" },
  },
};

function errorResponse(codes: readonly string[], description: string, example: Record<string, string>, extraHeaders = {}) {
  return {
    description,
    headers: { ...COMMON_HEADERS, ...RATE_LIMIT_HEADERS, ...extraHeaders },
    content: { "application/json": { schema: errorSchema(codes), example } },
  };
}

export function errorResponseComponents(): Record<string, unknown> {
  const out: Record<string, unknown> = {};
  for (const [status, r] of Object.entries(RESPONSES)) {
    const extra =
      Number(status) === 401
        ? { "WWW-Authenticate": { $ref: "#/components/headers/WWWAuthenticate" } }
        : Number(status) === 429 || Number(status) === 503
          ? { "Retry-After": { $ref: "#/components/headers/RetryAfter" } }
          : {};
    out[r.name] = errorResponse(codesFor(Number(status)), r.when, r.example, extra);
  }
  return out;
}

export const errorRef = (status: number) => ({ $ref: `#/components/responses/${RESPONSES[status].name}` });

/**
 * A route's 403: only the codes /v1 can answer (mcp_oauth_required is /mcp's), session_required
 * where the route needs a session, and the route's own scope in the example.
 */
export function forbiddenResponse(scope: string, sessionOnly: boolean) {
  const when = [
    `\`forbidden\` with \`scope: ${scope}\`: the credential lacks the scope; also an MCP connector token on \`/v1\`.`,
    "`forbidden`: `X-Property-Id` names a property outside the group, or comes with a session token.",
    "`tenant_not_provisioned`: the session's organisation has no property group yet.",
    sessionOnly ? "`session_required`: this route needs a signed-in web-app session; API keys and partner tokens cannot use it." : "",
  ];
  const codes = ["forbidden", "tenant_not_provisioned", ...(sessionOnly ? ["session_required"] : [])];
  return errorResponse(codes, when.filter(Boolean).join(" "), {
    error: "forbidden",
    scope,
    detail: `this credential lacks the scope ${scope}`,
  });
}
