// The typed TypeScript client of the /v1 REST API: openapi-fetch over the types that `npm run openapi`
// generates from openapi.yaml (client/openapi.d.ts), plus what every integrator writes by hand
// otherwise: the credential headers, walking a list to its end, and one error type. It lives outside
// src/ because openapi-fetch is a development dependency; the service never imports it.
import createClient, { type Client } from "openapi-fetch";
import type { components, paths } from "./openapi";

export type { components, paths };
export type GuestContextClient = Client<paths>;

export interface GuestContextClientOptions {
  /** Where the service listens, e.g. http://localhost:4000 (the client adds the /v1/… paths). */
  baseUrl: string;
  /** An API key or a session token, sent as `Authorization: Bearer …`. */
  token: string;
  /** Narrows every request to one property of the credential's group (`X-Property-Id`). */
  propertyId?: string;
  /** Another fetch (a proxy, a test recorder); globalThis.fetch by default. */
  fetch?: (input: Request) => Promise<Response>;
}

export function createGuestContextClient({ baseUrl, token, propertyId, fetch }: GuestContextClientOptions): GuestContextClient {
  const headers: Record<string, string> = { Authorization: `Bearer ${token}` };
  if (propertyId !== undefined) headers["X-Property-Id"] = propertyId;
  return createClient<paths>({ baseUrl, headers, fetch });
}

/** Every error body (spec 2.3): `{error, scope?, detail?}`. */
export type ErrorBody = components["schemas"]["Error"];

/** A response that is not 2xx, with the spec's error body, as an exception. */
export class GuestContextError extends Error {
  override readonly name = "GuestContextError";

  constructor(
    readonly status: number,
    readonly body: ErrorBody,
    /** Seconds to wait, from `Retry-After` (429 rate_limited, 503 unavailable); undefined without one. */
    readonly retryAfter?: number,
    /** `X-Request-Id`, which finds the request in the service's log. */
    readonly requestId?: string,
  ) {
    super(`${status} ${body.error}${body.detail ? `: ${body.detail}` : ""}`);
  }

  static from(response: Response, error: unknown): GuestContextError {
    // A proxy in front of the service may answer with a body that is not the spec's.
    const body: ErrorBody =
      typeof error === "object" && error !== null && typeof (error as ErrorBody).error === "string"
        ? (error as ErrorBody)
        : { error: `http_${response.status}`, detail: typeof error === "string" ? error : undefined };
    return new GuestContextError(response.status, body, retryAfterSeconds(response.headers.get("retry-after")), response.headers.get("x-request-id") ?? undefined);
  }
}

/** Retry-After is delay-seconds or an HTTP date (RFC 9110 10.2.3). */
function retryAfterSeconds(header: string | null): number | undefined {
  if (header === null || header.trim() === "") return undefined;
  const seconds = Number(header);
  if (Number.isFinite(seconds)) return Math.max(0, seconds);
  const date = Date.parse(header);
  return Number.isNaN(date) ? undefined : Math.max(0, Math.ceil((date - Date.now()) / 1000));
}

/** The data of a successful openapi-fetch result; a GuestContextError otherwise. */
export function unwrap<T>(result: { data?: T; error?: unknown; response: Response }): T {
  if (!result.response.ok || result.data === undefined) throw GuestContextError.from(result.response, result.error);
  return result.data;
}

type GetOperation<P extends keyof paths> = paths[P] extends { get: infer Op } ? Op : never;
type OkBody<P extends keyof paths> = GetOperation<P> extends { responses: { 200: { content: { "application/json": infer B } } } } ? B : never;

interface KeysetBody<R = unknown> {
  data: R[];
  next_cursor: string | null;
  has_more: boolean;
}
interface OffsetBody<R = unknown> {
  data: R[];
  next_offset: number;
  has_more: boolean;
}

/** The GET paths answering a keyset page (`next_cursor`) or an offset page (`next_offset`). */
export type KeysetPath = { [P in keyof paths]: OkBody<P> extends KeysetBody ? P : never }[keyof paths];
export type OffsetPath = { [P in keyof paths]: OkBody<P> extends OffsetBody ? P : never }[keyof paths];
export type ListPath = KeysetPath | OffsetPath;

/** A list's query parameters; a `cursor` or `offset` given here is where the walk starts. */
export type ListQuery<P extends ListPath> = NonNullable<GetOperation<P> extends { parameters: { query?: infer Q } } ? Q : never>;
/** One page of a list, as the document types it. */
export type Page<P extends ListPath> = OkBody<P> & (KeysetBody<Row<P>> | OffsetBody<Row<P>>);
/** One row of a list. */
export type Row<P extends ListPath> = OkBody<P> extends { data: (infer R)[] } ? R : never;

// openapi-fetch's GET is typed per literal path; inside these generic walkers the path is only
// known to be a list, so they call it through this narrower view.
type UntypedGet = (path: string, init: { params: { query: Record<string, unknown> } }) => Promise<{ data?: unknown; error?: unknown; response: Response }>;

/**
 * Every page of a list, in order: follows `next_cursor` until it is null (keyset lists) or, while
 * `has_more`, sends `next_offset` as `offset` (offset lists). Throws GuestContextError on a failure.
 */
export async function* pages<P extends ListPath>(client: GuestContextClient, path: P, query?: ListQuery<P>): AsyncGenerator<Page<P>, void, undefined> {
  const get = client.GET as unknown as UntypedGet;
  let position: Record<string, unknown> = {};
  for (;;) {
    const page = unwrap(await get(path, { params: { query: { ...query, ...position } } })) as KeysetBody | OffsetBody;
    yield page as Page<P>;
    if ("next_offset" in page) {
      if (!page.has_more) return;
      position = { offset: page.next_offset };
    } else {
      if (page.next_cursor === null) return;
      position = { cursor: page.next_cursor };
    }
  }
}

/** Every row of a list, across its pages: `for await (const guest of walk(client, "/v1/guests", { email }))`. */
export async function* walk<P extends ListPath>(client: GuestContextClient, path: P, query?: ListQuery<P>): AsyncGenerator<Row<P>, void, undefined> {
  for await (const page of pages(client, path, query)) yield* page.data;
}
