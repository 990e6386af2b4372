// What the engine needs from an email-marketing destination, and the one place HTTP failures are
// classified. Transient failures (network, timeout, 429, 5xx) are retried later by the engine with
// backoff; permanent ones (bad key, no access, list gone) need a person, so the binding stops.

export interface SubscriberInput {
  email: string;
  givenName?: string | null;
  familyName?: string | null;
}

export interface MemberFailure {
  email: string;
  reason: string;
}

export interface OperationResult {
  /** Member operations the destination accepted. */
  accepted: number;
  /** Members the destination rejected individually (the rest of the call went through). */
  failed: MemberFailure[];
}

/**
 * One request to the destination and the addresses it carries. The engine runs calls one by one
 * (at most `concurrency` at once) so that it can stop between them and confirm what each applied.
 */
export interface DestinationCall {
  emails: readonly string[];
  run(): Promise<OperationResult>;
}

export interface DestinationClient {
  readonly provider: string;
  /** Calls that may be in flight at once for one binding. */
  readonly concurrency: number;
  subscribeCalls(listId: string, members: readonly SubscriberInput[]): DestinationCall[];
  removeCalls(listId: string, emails: readonly string[]): DestinationCall[];
  /** All subscribe calls, run as the engine would; for callers that need no checkpoints. */
  upsertSubscribers(listId: string, members: readonly SubscriberInput[]): Promise<OperationResult>;
  remove(listId: string, emails: readonly string[]): Promise<OperationResult>;
}

/** The provider-specific part of a client; `withCallRunners` adds the two whole-list methods. */
export type CallPlanner = Omit<DestinationClient, "upsertSubscribers" | "remove">;

export function withCallRunners(planner: CallPlanner): DestinationClient {
  const runAll = async (calls: DestinationCall[]) => (await runCalls(calls, planner.concurrency)).result;
  return {
    ...planner,
    upsertSubscribers: (listId, members) => runAll(planner.subscribeCalls(listId, members)),
    remove: (listId, emails) => runAll(planner.removeCalls(listId, emails)),
  };
}

export interface CallHooks {
  /** Before each call starts; false stops the run (no further call starts). */
  beforeCall?: () => Promise<boolean>;
  /** After each call the destination answered successfully. */
  afterCall?: (call: DestinationCall, result: OperationResult) => Promise<void> | void;
}

export interface CallsOutcome {
  result: OperationResult;
  /** A beforeCall hook said stop before every call had run. */
  stopped: boolean;
}

/**
 * Runs calls at most `concurrency` at a time. A failed call or a stop starts no new call; the calls
 * already in flight are waited for (their results are real), then the first failure is thrown.
 */
export async function runCalls(calls: readonly DestinationCall[], concurrency: number, hooks: CallHooks = {}): Promise<CallsOutcome> {
  const result: OperationResult = { accepted: 0, failed: [] };
  let next = 0;
  let stopped = false;
  let failure: unknown;
  const worker = async () => {
    while (failure === undefined && !stopped && next < calls.length) {
      try {
        if (hooks.beforeCall && !(await hooks.beforeCall())) {
          stopped = true;
          break;
        }
        if (failure !== undefined || stopped || next >= calls.length) break;
        const call = calls[next++];
        const r = await call.run();
        result.accepted += r.accepted;
        result.failed.push(...r.failed);
        await hooks.afterCall?.(call, r);
      } catch (err) {
        failure ??= err;
      }
    }
  };
  await Promise.all(Array.from({ length: Math.max(1, Math.min(concurrency, calls.length)) }, worker));
  if (failure !== undefined) throw failure;
  return { result, stopped: stopped && next < calls.length };
}

export interface ClientOptions {
  baseUrl: string;
  apiKey: string;
  fetch?: typeof fetch;
  /** Per request; default 15 s. */
  timeoutMs?: number;
}

export type FailureKind = "transient" | "permanent";

export class DestinationError extends Error {
  constructor(
    readonly kind: FailureKind,
    message: string,
    readonly status?: number,
    /** From a 429's Retry-After header. */
    readonly retryAfterMs?: number,
  ) {
    super(message);
  }
}

export function classifyStatus(status: number): FailureKind {
  return status === 429 || status >= 500 ? "transient" : "permanent";
}

export const DEFAULT_TIMEOUT_MS = 15_000;

/** fetch with a timeout; network failures and timeouts become transient DestinationErrors. */
export async function send(
  opts: ClientOptions,
  what: string,
  url: string,
  init: RequestInit,
): Promise<Response> {
  const doFetch = opts.fetch ?? fetch;
  try {
    return await doFetch(url, { ...init, signal: AbortSignal.timeout(opts.timeoutMs ?? DEFAULT_TIMEOUT_MS) });
  } catch (err) {
    const name = (err as Error)?.name;
    const reason = name === "TimeoutError" || name === "AbortError" ? "timed out" : "network error";
    throw new DestinationError("transient", `${what}: ${reason}`);
  }
}

/** A DestinationError for a failed response. The text never carries the API key. */
export async function errorFor(provider: string, what: string, res: Response, apiKey: string): Promise<DestinationError> {
  const detail = redact(await problemTitle(res), apiKey);
  const message = `${provider} ${what}: HTTP ${res.status}${detail ? ` ${detail}` : ""}`;
  return new DestinationError(classifyStatus(res.status), message, res.status, retryAfterMs(res));
}

/** The short human title of a Mailchimp problem or Klaviyo JSON:API error body, if any. */
async function problemTitle(res: Response): Promise<string> {
  try {
    const body = (await res.json()) as { title?: unknown; errors?: { title?: unknown }[] };
    const title = body?.title ?? body?.errors?.[0]?.title;
    return typeof title === "string" ? `(${title.slice(0, 100)})` : "";
  } catch {
    return "";
  }
}

function retryAfterMs(res: Response): number | undefined {
  const seconds = Number(res.headers.get("retry-after"));
  return res.status === 429 && Number.isFinite(seconds) && seconds > 0 ? seconds * 1000 : undefined;
}

function redact(text: string, secret: string): string {
  return secret ? text.split(secret).join("[redacted]") : text;
}

export function chunk<T>(items: readonly T[], size: number): T[][] {
  const out: T[][] = [];
  for (let i = 0; i < items.length; i += size) out.push(items.slice(i, i + size));
  return out;
}
