// One webhook POST: to the address ssrf.ts checked (the name is resolved and checked first, then
// the socket is pinned to that address through `lookup`, so no second DNS answer is ever used),
// with a total timeout, no redirect followed (a 3xx is a failure), and at most RESPONSE_LIMIT bytes
// of the answer kept. undici's Client makes the connection: it pipelines.
import type { LookupFunction } from "node:net";
import { Client } from "undici";
import { resolveChecked, WebhookUrlError, type Resolver, type UrlPolicy } from "./ssrf";

export const DEFAULT_TIMEOUT_MS = 10_000;
/** Bytes of a receiver's answer kept (shown in the deliveries list); the rest is not read. */
export const RESPONSE_LIMIT = 1_024;
/**
 * Bytes of a failed (non-2xx) answer read, and discarded past RESPONSE_LIMIT, before the connection
 * is cut. A 2xx answer is read to its end, whatever its length (within the timeout): cutting its
 * connection would make undici send the POSTs pipelined behind it again, and they had arrived.
 */
export const DRAIN_LIMIT = 64 * 1_024;

export interface PostResult {
  /** The HTTP status, or undefined when no answer came (refused, timeout, connection error). */
  status?: number;
  durationMs: number;
  /** Up to RESPONSE_LIMIT bytes of the answer's body. */
  body?: string;
  /** Why it failed without an answer (never holds a secret). */
  error?: string;
  /** Refused by the SSRF guard: no socket was opened. */
  refused?: boolean;
  /** Retry-After of a 429/503, in ms. */
  retryAfterMs?: number;
}

export interface PostOptions {
  policy: UrlPolicy;
  resolve: Resolver;
  timeoutMs?: number;
}

/**
 * One keep-alive connection whose socket goes to the one address ssrf.ts checked for the URL's host
 * (resolved once, here): a sender keeps it for one claim's events, so a run of events costs one TCP
 * (and TLS) handshake, and DNS is never asked again while it lives. With `pipelining` above 1, up to
 * that many POSTs are written on it before their answers arrive (HTTP/1.1 pipelining), so they reach
 * the receiver in the order they were sent and its answers come back in that order. A refusal is
 * returned, never thrown: no socket was opened.
 */
export async function pinnedClient(rawUrl: string, opts: PostOptions, pipelining = 1): Promise<{ client: Client } | { refused: string }> {
  let url: URL;
  let target: { address: string; family: 4 | 6 };
  try {
    url = new URL(rawUrl);
    if (url.protocol !== "https:" && url.protocol !== "http:") throw new WebhookUrlError("url must use http(s)");
    if (opts.policy.httpsOnly && url.protocol !== "https:") throw new WebhookUrlError("url must use https");
    target = await resolveChecked(url, opts.policy, opts.resolve);
  } catch (err) {
    if (err instanceof WebhookUrlError) return { refused: err.message };
    throw err;
  }
  const lookup: LookupFunction = (_host, options, callback) => {
    // Node asks for all addresses when autoSelectFamily is on; answer with the checked one only.
    if ((options as { all?: boolean }).all) (callback as unknown as (e: null, a: { address: string; family: number }[]) => void)(null, [{ address: target.address, family: target.family }]);
    else callback(null, target.address, target.family);
  };
  // undici passes `connect` options on to net.connect / tls.connect (so TLS still checks the name).
  return { client: new Client(url.origin, { pipelining, connect: { lookup } as Client.Options["connect"] }) };
}

export async function postWebhook(rawUrl: string, headers: Record<string, string>, body: string, opts: PostOptions & { client?: Client }): Promise<PostResult> {
  const started = Date.now();
  const elapsed = () => Date.now() - started;
  const url = new URL(rawUrl);
  let client = opts.client;
  const own = !client;
  if (!client) {
    const pinned = await pinnedClient(rawUrl, opts);
    if ("refused" in pinned) return { durationMs: elapsed(), error: pinned.refused, refused: true };
    client = pinned.client;
  }
  const timeoutMs = opts.timeoutMs ?? DEFAULT_TIMEOUT_MS;
  const timeout = new AbortController();
  const timer = setTimeout(() => timeout.abort(), timeoutMs);
  let status: number | undefined;
  const chunks: Buffer[] = [];
  try {
    const res = await client.request({
      method: "POST",
      path: url.pathname + url.search,
      headers: { ...headers, "content-type": "application/json", "user-agent": "guest-context-webhooks/1" },
      body,
      signal: timeout.signal,
      // Every event is idempotent for its receiver (webhook-id), and an answer is not long in
      // coming: both let undici pipeline the POSTs on the connection.
      idempotent: true,
      blocking: false,
    });
    status = res.statusCode;
    const ok = status >= 200 && status < 300;
    let read = 0;
    for await (const chunk of res.body as AsyncIterable<Buffer>) {
      if (read < RESPONSE_LIMIT) chunks.push(chunk.subarray(0, RESPONSE_LIMIT - read));
      read += chunk.length;
      // Read to its end, an answer leaves the connection (and the POSTs pipelined behind it) usable;
      // a failure's longer than DRAIN_LIMIT is cut, with the connection (those behind it are sent again anyway).
      if (!ok && read > DRAIN_LIMIT) {
        res.body.destroy();
        break;
      }
    }
    const retryAfter = retryAfterMs(headerText(res.headers["retry-after"]));
    return { status, body: Buffer.concat(chunks).toString("utf8"), durationMs: elapsed(), ...(retryAfter ? { retryAfterMs: retryAfter } : {}) };
  } catch (err) {
    // The receiver answered 2xx and its body did not end in time: a 2xx is a success, however long its body.
    if (status !== undefined && status >= 200 && status < 300) return { status, body: Buffer.concat(chunks).toString("utf8"), durationMs: elapsed() };
    if (timeout.signal.aborted) return { error: `no answer within ${timeoutMs} ms`, durationMs: elapsed() };
    const e = err as NodeJS.ErrnoException & { cause?: NodeJS.ErrnoException };
    return { error: `connection failed: ${e.cause?.code ?? e.code ?? e.message}`.slice(0, 200), durationMs: elapsed() };
  } finally {
    clearTimeout(timer);
    if (own) await client.destroy().catch(() => undefined);
  }
}

const headerText = (v: string | string[] | undefined) => (Array.isArray(v) ? v[0] : v);

function retryAfterMs(value: string | undefined): number | undefined {
  if (!value) return undefined;
  const s = Number(value);
  if (Number.isFinite(s) && s >= 0) return s * 1000;
  const at = Date.parse(value);
  return Number.isFinite(at) ? Math.max(at - Date.now(), 0) : undefined;
}
