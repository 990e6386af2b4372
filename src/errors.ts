// Every error the API can return, through any door (REST, /graphql, MCP), as GraphQLErrors with a
// stable `extensions.code`. The code is the spec's `error` value; REST maps it to the HTTP status
// below and the `{error, scope?, detail?}` body, and /graphql carries the same code and status.
import { GraphQLError } from "graphql";

export const ERROR_STATUS = {
  invalid_request: 400,
  invalid_cursor: 400,
  "source_id requires integration_id": 400,
  // /graphql only (src/graphql/limits.ts): an operation over a bound, a subscription, a response
  // over GCS_GRAPHQL_MAX_RESPONSE_BYTES.
  query_too_complex: 400,
  unsupported_operation: 400,
  response_too_large: 400,
  // /graphql only, with GCS_GRAPHQL_TRUSTED_DOCUMENTS (src/graphql/trusted-documents.ts).
  untrusted_document: 400,
  unauthorized: 401,
  forbidden: 403,
  tenant_not_provisioned: 403,
  session_required: 403,
  mcp_oauth_required: 403,
  not_found: 404,
  method_not_allowed: 405,
  payload_too_large: 413,
  unsupported_media_type: 415,
  rate_limited: 429,
  headers_too_large: 431,
  internal_error: 500,
  unavailable: 503,
  query_timeout: 504,
} as const;

export type ErrorCode = keyof typeof ERROR_STATUS;

/** How much of a client's value an error message echoes, and how long a message may be. */
const ECHO_MAX = 200;
const MESSAGE_MAX = 1000;

/** `text` cut to `max` characters with an ellipsis: what an error may echo of a client's text. */
export const clip = (text: string, max = ECHO_MAX) => (text.length <= max ? text : `${text.slice(0, max)}…`);

/** A client's value as an error message quotes it: JSON, strings clipped (clip). */
export const echo = (value: unknown) => (typeof value === "string" ? JSON.stringify(clip(value)) : clip(JSON.stringify(value) ?? String(value)));

// A JSON-quoted string (how graphql-js and echo quote values) longer than ECHO_MAX.
const LONG_QUOTED = new RegExp(`"((?:[^"\\\\]|\\\\.){${ECHO_MAX}})(?:[^"\\\\]|\\\\.)+"`, "g");

const SUGGESTION = " Did you mean ";

/**
 * An error message that cannot grow with the input: every quoted value clipped to ECHO_MAX, the whole
 * to MESSAGE_MAX (graphql-js quotes a bad variable whole, maybe several times: a 900 KB variable made
 * a 2.7 MB error body). Every coded error (apiError) and every /graphql message goes through it.
 * `hideSuggestions`: without graphql-js's closing "Did you mean …?", which names fields, arguments
 * or enum values (found from the end, not by a pattern: the message may quote a value holding it).
 */
export function boundMessage(message: string, { hideSuggestions = false } = {}): string {
  let bounded = message.length <= ECHO_MAX ? message : message.replace(LONG_QUOTED, '"$1…"');
  if (hideSuggestions && bounded.endsWith("?")) {
    const at = bounded.lastIndexOf(SUGGESTION);
    if (at !== -1) bounded = bounded.slice(0, at);
  }
  return clip(bounded, MESSAGE_MAX);
}

export function apiError(code: ErrorCode, rawDetail?: string, scope?: string): GraphQLError {
  const detail = rawDetail === undefined ? undefined : boundMessage(rawDetail);
  return new GraphQLError(detail ?? code, {
    extensions: {
      code,
      ...(scope ? { scope } : {}),
      ...(detail ? { detail } : {}),
    },
  });
}

export const invalidRequest = (detail: string) => apiError("invalid_request", detail);
export const invalidCursor = () =>
  apiError("invalid_cursor", "cursor is not a valid keyset token for this query; restart from the first page");
export const notFound = (what: string, id: string) => apiError("not_found", `no ${what} ${id} in scope`);
export const unauthorized = (detail: string) => apiError("unauthorized", detail);
/** The 401 of a token with no row or a revoked one: a lookup's answer, and a remembered credential's refused proof's (db/faults.ts). */
export const unknownToken = () => unauthorized("the bearer token is unknown or revoked");
export const forbidden = (detail: string, scope?: string) => apiError("forbidden", detail, scope);
export const missingScope = (scope: string) => apiError("forbidden", `this credential lacks the scope ${scope}`, scope);
export const tenantNotProvisioned = () =>
  apiError("tenant_not_provisioned", "the organisation in this session has no property group yet");
export const sessionRequired = () =>
  apiError("session_required", "this surface needs a signed-in web-app session; API keys and partner tokens cannot use it");
export const mcpOAuthRequired = () =>
  apiError("mcp_oauth_required", "the MCP server accepts API keys and MCP connector tokens, not web-app sessions");
export const internalError = () => apiError("internal_error", "unexpected server fault; retry later");
export const unavailable = (detail = "the database is not reachable; retry shortly") => apiError("unavailable", detail);
export const queryTimeout = (seconds: number) =>
  apiError("query_timeout", `the query ran longer than ${seconds} s and was stopped; narrow the filters or ask for a smaller page`);
export const rateLimited = (detail: string) => apiError("rate_limited", detail);
export const responseTooLarge = (maxBytes: number) =>
  apiError(
    "response_too_large",
    `the response would be larger than ${maxBytes} bytes; ask for fewer rows or fields (a smaller limit, fewer aliases)`,
  );

/** Codes only /graphql answers: the /v1 document does not list them. */
export const untrustedDocument = () =>
  apiError("untrusted_document", "this service runs only trusted documents (GCS_GRAPHQL_TRUSTED_DOCUMENTS); this document's sha256 is not one of them");

export const GRAPHQL_ONLY_CODES: ReadonlySet<ErrorCode> = new Set(["query_too_complex", "unsupported_operation", "response_too_large", "untrusted_document"]);

/** The same error with an HTTP status for Apollo: failures before execution (auth) and the response cap. */
export function withHttpStatus(err: unknown): unknown {
  if (!(err instanceof GraphQLError)) return err;
  const code = errorCodeOf(err);
  if (!code) return err;
  return new GraphQLError(err.message, { extensions: { ...err.extensions, http: { status: ERROR_STATUS[code] } } });
}

export function errorCodeOf(err: GraphQLError): ErrorCode | undefined {
  const code = err.extensions?.code;
  return typeof code === "string" && Object.hasOwn(ERROR_STATUS, code) ? (code as ErrorCode) : undefined;
}
