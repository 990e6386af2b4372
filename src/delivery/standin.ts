// A local stand-in for both destinations (tests and the embedded demo): the Mailchimp and Klaviyo
// endpoints the provider clients call, with their auth checks, answering as the real APIs do in
// outline. It records every member operation it accepted and can be told to fail the next requests.
import { createServer, type IncomingMessage, type Server, type ServerResponse } from "node:http";
import type { AddressInfo } from "node:net";
import { subscriberHash } from "./providers/mailchimp";

export type StandInProvider = "mailchimp" | "klaviyo";

export interface ReceivedOperation {
  provider: StandInProvider;
  listId: string;
  op: "subscribe" | "remove";
  /** The address; for a Mailchimp delete of an address never seen here, `md5:<hash>`. */
  email: string;
}

export interface StandInOptions {
  /** Keys accepted by either provider; empty or unset accepts any non-empty key. */
  apiKeys?: string[];
}

export interface FailureSwitch {
  /** Only requests to this provider fail; others pass. */
  provider?: StandInProvider;
  /** Seconds for a Retry-After header (429). */
  retryAfter?: number;
}

export interface StandIn {
  /** Base URL for both providers' clients, e.g. http://127.0.0.1:43121 */
  url: string;
  received(): ReceivedOperation[];
  /** Requests answered so far, failed ones included. */
  requestCount(): number;
  /** The next `count` matching requests answer `status` and change nothing. */
  failNext(count: number, status: number, options?: FailureSwitch): void;
  /** Mailchimp rejects these addresses in a batch's `errors[]` (per-member failure). */
  rejectEmails(emails: string[]): void;
  /** Every request waits this long before it is answered (to hold a flush's lock in tests). */
  setDelay(ms: number): void;
  /** Forgets received operations, the request count and switches; list contents are kept. */
  reset(): void;
  close(): Promise<void>;
}

interface Route {
  provider: StandInProvider;
  handle(body: unknown, match: RegExpExecArray): Answer;
}

export async function startStandIn(options: StandInOptions = {}): Promise<StandIn> {
  const state = new StandInState(options);
  const server = createServer((req, res) => {
    readJson(req)
      .then((body) => state.answer(req, body))
      .then((answer) => reply(res, answer.status, answer.body, answer.headers))
      .catch(() => reply(res, 400, { title: "Invalid JSON" }));
  });
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
  const { port } = server.address() as AddressInfo;
  return {
    url: `http://127.0.0.1:${port}`,
    received: () => [...state.operations],
    requestCount: () => state.requests,
    failNext: (count, status, opts = {}) => state.failures.push({ remaining: count, status, ...opts }),
    rejectEmails: (emails) => emails.forEach((e) => state.rejected.add(e.toLowerCase())),
    setDelay: (ms) => (state.delayMs = ms),
    reset: () => state.reset(),
    close: () => closeServer(server),
  };
}

interface Failure extends FailureSwitch {
  remaining: number;
  status: number;
}

interface Answer {
  status: number;
  body?: unknown;
  headers?: Record<string, string>;
}

class StandInState {
  operations: ReceivedOperation[] = [];
  failures: Failure[] = [];
  rejected = new Set<string>();
  requests = 0;
  delayMs = 0;
  /** Mailchimp member hash → address, to name the member a DELETE is about. */
  private known = new Map<string, string>();
  /** `${provider}:${listId}` → member hashes on that list. */
  private lists = new Map<string, Set<string>>();
  private routes: [string, RegExp, Route][];

  constructor(private options: StandInOptions) {
    this.routes = [
      ["POST", /^\/3\.0\/lists\/([^/]+)$/, { provider: "mailchimp", handle: (b, m) => this.mailchimpBatch(m[1], b) }],
      ["DELETE", /^\/3\.0\/lists\/([^/]+)\/members\/([0-9a-f]{32})$/, { provider: "mailchimp", handle: (_b, m) => this.mailchimpDelete(m[1], m[2]) }],
      ["POST", /^\/api\/profile-subscription-bulk-create-jobs\/?$/, { provider: "klaviyo", handle: (b) => this.klaviyoJob(b, "subscribe") }],
      ["POST", /^\/api\/profile-subscription-bulk-delete-jobs\/?$/, { provider: "klaviyo", handle: (b) => this.klaviyoJob(b, "remove") }],
    ];
  }

  reset() {
    this.operations = [];
    this.requests = 0;
    this.failures = [];
    this.rejected.clear();
    this.delayMs = 0;
  }

  async answer(req: IncomingMessage, body: unknown): Promise<Answer> {
    this.requests++;
    if (this.delayMs > 0) await new Promise((r) => setTimeout(r, this.delayMs));
    const path = new URL(req.url ?? "/", "http://stand-in").pathname;
    for (const [method, pattern, route] of this.routes) {
      const match = pattern.exec(path);
      if (!match || req.method !== method) continue;
      if (!this.authorised(route.provider, req)) return problem(route.provider, 401, "API Key Invalid");
      const failure = this.takeFailure(route.provider);
      if (failure) {
        const headers: Record<string, string> = failure.retryAfter ? { "retry-after": String(failure.retryAfter) } : {};
        return { ...problem(route.provider, failure.status, "Stand-in failure"), headers };
      }
      return route.handle(body, match);
    }
    return { status: 404, body: { title: "Resource Not Found" } };
  }

  private authorised(provider: StandInProvider, req: IncomingMessage): boolean {
    const header = req.headers.authorization ?? "";
    let key = "";
    if (provider === "mailchimp") {
      const basic = /^Basic (.+)$/.exec(header)?.[1];
      const decoded = basic ? Buffer.from(basic, "base64").toString("utf8") : "";
      key = decoded.includes(":") ? decoded.slice(decoded.indexOf(":") + 1) : "";
    } else {
      key = /^Klaviyo-API-Key (.+)$/.exec(header)?.[1] ?? "";
      if (!req.headers.revision) return false;
    }
    const allowed = this.options.apiKeys ?? [];
    return key !== "" && (allowed.length === 0 || allowed.includes(key));
  }

  private takeFailure(provider: StandInProvider): Failure | undefined {
    const f = this.failures.find((x) => x.remaining > 0 && (!x.provider || x.provider === provider));
    if (f) f.remaining--;
    return f;
  }

  private record(provider: StandInProvider, listId: string, op: ReceivedOperation["op"], email: string) {
    this.operations.push({ provider, listId, op, email });
    const list = this.lists.get(`${provider}:${listId}`) ?? new Set<string>();
    this.lists.set(`${provider}:${listId}`, list);
    const hash = subscriberHash(email);
    if (op === "subscribe") list.add(hash);
    else list.delete(hash);
  }

  private mailchimpBatch(listId: string, body: unknown): Answer {
    const members = (body as { members?: { email_address?: unknown; status?: unknown }[] })?.members;
    if (!Array.isArray(members) || members.length > 500) return problem("mailchimp", 400, "Invalid Resource");
    const errors: { email_address: string; error: string; error_code: string }[] = [];
    const accepted: string[] = [];
    for (const m of members) {
      const email = typeof m.email_address === "string" ? m.email_address.toLowerCase() : "";
      if (!email || this.rejected.has(email) || m.status !== "subscribed") {
        errors.push({ email_address: String(m.email_address), error: "rejected by stand-in", error_code: "ERROR_GENERIC" });
        continue;
      }
      this.known.set(subscriberHash(email), email);
      this.record("mailchimp", listId, "subscribe", email);
      accepted.push(email);
    }
    const members_ = accepted.map((email) => ({ email_address: email, status: "subscribed" }));
    return {
      status: 200,
      body: { new_members: members_, updated_members: [], errors, total_created: accepted.length, total_updated: 0, error_count: errors.length },
    };
  }

  /** Deleting a member that is not on the list is Mailchimp's 404; it is still recorded as received. */
  private mailchimpDelete(listId: string, hash: string): Answer {
    const onList = this.lists.get(`mailchimp:${listId}`)?.has(hash) ?? false;
    this.record("mailchimp", listId, "remove", this.known.get(hash) ?? `md5:${hash}`);
    return onList ? { status: 204 } : problem("mailchimp", 404, "Resource Not Found");
  }

  private klaviyoJob(body: unknown, op: ReceivedOperation["op"]): Answer {
    const data = (body as { data?: KlaviyoJob })?.data;
    const expectedType = op === "subscribe" ? "profile-subscription-bulk-create-job" : "profile-subscription-bulk-delete-job";
    const listId = data?.relationships?.list?.data?.id;
    const profiles = data?.attributes?.profiles?.data;
    if (data?.type !== expectedType || typeof listId !== "string" || !Array.isArray(profiles)) {
      return problem("klaviyo", 400, "Invalid input.");
    }
    const emails = profiles.map((p) => p?.attributes?.email);
    if (emails.some((e) => typeof e !== "string" || !e.includes("@"))) return problem("klaviyo", 400, "Invalid email.");
    for (const email of emails as string[]) this.record("klaviyo", listId, op, email.toLowerCase());
    return { status: 202 };
  }
}

interface KlaviyoJob {
  type?: string;
  attributes?: { profiles?: { data?: { attributes?: { email?: unknown } }[] } };
  relationships?: { list?: { data?: { id?: unknown } } };
}

/** Each provider's error body shape: Mailchimp problem JSON, Klaviyo JSON:API errors. */
function problem(provider: StandInProvider, status: number, title: string): Answer {
  return provider === "mailchimp"
    ? { status, body: { type: "about:blank", title, status, detail: title } }
    : { status, body: { errors: [{ status, code: "stand_in", title, detail: title }] } };
}

function readJson(req: IncomingMessage): Promise<unknown> {
  return new Promise((resolve, reject) => {
    const chunks: Buffer[] = [];
    req.on("data", (c: Buffer) => chunks.push(c));
    req.on("error", reject);
    req.on("end", () => {
      const text = Buffer.concat(chunks).toString("utf8");
      try {
        resolve(text ? JSON.parse(text) : undefined);
      } catch (err) {
        reject(err);
      }
    });
  });
}

function reply(res: ServerResponse, status: number, body?: unknown, headers: Record<string, string> = {}) {
  if (body === undefined) {
    res.writeHead(status, headers).end();
    return;
  }
  res.writeHead(status, { "content-type": "application/json", ...headers }).end(JSON.stringify(body));
}

function closeServer(server: Server): Promise<void> {
  server.closeAllConnections();
  return new Promise((resolve, reject) => server.close((err) => (err ? reject(err) : resolve())));
}
