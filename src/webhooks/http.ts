// One webhook POST: to the address ssrf.ts checked (the name is resolved and checked first, then
// the socket is pinned to that address through `lookup`, so no second DNS answer is ever used),
// with a total timeout, no redirect followed (a 3xx is a failure), and at most RESPONSE_LIMIT bytes
// of the answer read: the rest is discarded with the connection.
import http from "node:http";
import https from "node:https";
import type { LookupFunction } from "node:net";
import { resolveChecked, WebhookUrlError, type Resolver, type UrlPolicy } from "./ssrf";

export const DEFAULT_TIMEOUT_MS = 10_000;
/** Bytes of a receiver's answer kept (shown in the deliveries list); the rest is not read. */
export const RESPONSE_LIMIT = 1_024;

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
 * A keep-alive agent whose every connection goes to the one address ssrf.ts checked for the URL's
 * host (resolved once, here): a sender reuses it for one claim's events, so a run of events costs
 * one TCP (and TLS) handshake, and DNS is never asked again while it lives. A refusal is returned,
 * never thrown: no socket was opened.
 */
export async function pinnedAgent(rawUrl: string, opts: PostOptions): Promise<{ agent: http.Agent } | { refused: string }> {
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
  const Agent = url.protocol === "https:" ? https.Agent : http.Agent;
  return { agent: new Agent({ keepAlive: true, maxSockets: 1, lookup } as http.AgentOptions) };
}

export async function postWebhook(rawUrl: string, headers: Record<string, string>, body: string, opts: PostOptions & { agent?: http.Agent }): Promise<PostResult> {
  const started = Date.now();
  const elapsed = () => Date.now() - started;
  const url = new URL(rawUrl);
  let agent = opts.agent;
  let ownAgent = false;
  if (!agent) {
    const pinned = await pinnedAgent(rawUrl, opts);
    if ("refused" in pinned) return { durationMs: elapsed(), error: pinned.refused, refused: true };
    agent = pinned.agent;
    ownAgent = true;
  }
  const timeoutMs = opts.timeoutMs ?? DEFAULT_TIMEOUT_MS;
  const client = url.protocol === "https:" ? https : http;
  return new Promise<PostResult>((resolve) => {
    let settled = false;
    const done = (r: Omit<PostResult, "durationMs">) => {
      if (settled) return;
      settled = true;
      clearTimeout(timer);
      if (ownAgent) agent!.destroy();
      resolve({ ...r, durationMs: elapsed() });
    };
    const req = client.request(
      url,
      {
        method: "POST",
        agent,
        headers: { ...headers, "content-type": "application/json", "content-length": Buffer.byteLength(body), "user-agent": "guest-context-webhooks/1" },
      },
      (res) => {
        const chunks: Buffer[] = [];
        let kept = 0;
        const finish = (cut: boolean) => {
          const retryAfter = retryAfterMs(res.headers["retry-after"]);
          done({ status: res.statusCode, body: Buffer.concat(chunks).toString("utf8"), ...(retryAfter ? { retryAfterMs: retryAfter } : {}) });
          // An answer read to its end leaves the kept-alive connection reusable; a longer one is cut.
          if (cut) res.destroy();
        };
        res.on("data", (chunk: Buffer) => {
          if (kept < RESPONSE_LIMIT) chunks.push(chunk.subarray(0, RESPONSE_LIMIT - kept));
          kept += chunk.length;
          if (kept > RESPONSE_LIMIT) finish(true);
        });
        res.on("end", () => finish(false));
        res.on("error", () => finish(true));
      },
    );
    const timer = setTimeout(() => {
      req.destroy();
      done({ error: `no answer within ${timeoutMs} ms` });
    }, timeoutMs);
    req.on("error", (err: NodeJS.ErrnoException) => done({ error: `connection failed: ${err.code ?? err.message}`.slice(0, 200) }));
    req.end(body);
  });
}

function retryAfterMs(value: string | undefined): number | undefined {
  if (!value) return undefined;
  const s = Number(value);
  if (Number.isFinite(s) && s >= 0) return s * 1000;
  const at = Date.parse(value);
  return Number.isFinite(at) ? Math.max(at - Date.now(), 0) : undefined;
}
