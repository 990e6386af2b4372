// Error → HTTP status and the spec's body `{ error, scope?, detail? }`. Anything that is not one of
// our coded errors is a 500 `internal_error` with no internals in the body; the caller logs it.
import { GraphQLError } from "graphql";
import { ERROR_STATUS, errorCodeOf, type ErrorCode } from "../errors";

export interface ErrorBody {
  error: string;
  scope?: string;
  detail?: string;
}

export interface HttpError {
  status: number;
  body: ErrorBody;
  /** True when the error is a fault of ours and must be logged with its cause. */
  unexpected: boolean;
}

export function toHttpError(err: unknown): HttpError {
  const coded = err instanceof GraphQLError ? codedError(err) : undefined;
  if (!coded) {
    return { status: 500, body: { error: "internal_error", detail: "unexpected server fault; retry later" }, unexpected: true };
  }
  const { code, error } = coded;
  const body: ErrorBody = { error: code };
  const scope = error.extensions.scope;
  const detail = error.extensions.detail;
  if (typeof scope === "string") body.scope = scope;
  if (typeof detail === "string") body.detail = detail;
  return { status: ERROR_STATUS[code], body, unexpected: code === "internal_error" };
}

/** The coded error behind a GraphQLError, which may wrap it (located errors keep extensions). */
function codedError(err: GraphQLError): { code: ErrorCode; error: GraphQLError } | undefined {
  const code = errorCodeOf(err);
  if (code) return { code, error: err };
  const inner = err.originalError;
  if (inner instanceof GraphQLError && inner !== err) return codedError(inner);
  return undefined;
}
