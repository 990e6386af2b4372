// Per-credential rate limits on /v1, /graphql and /mcp: the IETF draft-8 `RateLimit-Policy` /
// `RateLimit` headers on every response, and 429 `rate_limited` with `Retry-After` past the limit.
// The middleware is a few synchronous lines over the store below, in the header format of
// express-rate-limit (whose IPv6 subnet keys it reuses): the library's generic per-request path (a
// chain of awaits, a promisified store, validations) was a measurable share of the guests page's
// cost (bench/results).
//
// The key is the SHA-256 of the bearer token (the hash the credential lookup uses), so a request is
// counted before, and without, authenticating it; requests without a bearer token are counted per
// client IP. Windows are fixed and aligned to the clock (window start = now − now mod window), so
// every instance counts the same window.
//
// Cluster-wide without a database round trip per request: each instance counts locally and, every
// GCS_RATE_LIMIT_SYNC_MS in the background, adds its new hits to rate_limit_counters in one upsert
// that returns the cluster totals (keys without new hits are only read). A request is admitted while (cluster total at the last sync +
// local hits since) ≤ limit. Another instance's hits are seen at most one sync interval (plus the
// upsert's round trip) late, so a credential can overshoot by at most what the other instances
// admit in that time: (instances − 1) × its request rate per instance × sync interval. Counts are
// never overestimated, so nobody is refused below the limit. If the database is unreachable the
// sync fails quietly (one warning per outage) and each instance goes on enforcing the limit on its
// own hits plus the last totals it learnt.
import type { Request, RequestHandler, Response } from "express";
import { ipKeyGenerator } from "express-rate-limit";
import type { Config } from "../config";
import type { Database } from "../db/database";
import { postgresCounterTable, type CounterTable } from "../data/stores/rate-limit-counters";
import type { Logger } from "../logger";
import { BEARER } from "../auth/authenticate";
import { hashToken } from "../auth/secrets";
import { rateLimited } from "../errors";
import { sendError } from "./respond";
import { acrossGroups } from "../db/session";

export type { CounterTable };

interface Counter {
  /** Start of the window this counter belongs to (ms since the epoch). */
  window: number;
  /** Cluster-wide hits at the last sync, this instance's synced hits included. */
  known: number;
  /** This instance's hits not yet added to the shared table. */
  pending: number;
}

export interface SharedStoreOptions {
  windowMs: number;
  syncMs: number;
  /** Absent: counts are local to this process (the embedded demo is one process by construction). */
  table?: CounterTable;
  logger: Logger;
  now?: () => number;
}

/** A key's hits in the current window, and when the window ends. */
export interface RateLimitInfo {
  totalHits: number;
  resetTime: Date;
}

export class SharedCounterStore {
  private readonly counters = new Map<string, Counter>();
  private readonly now: () => number;
  private readonly timer?: NodeJS.Timeout;
  private syncing?: Promise<void>;
  private failing = false;
  private prunedBefore = 0;

  constructor(private readonly opts: SharedStoreOptions) {
    this.now = opts.now ?? Date.now;
    if (opts.table) {
      // Created at start-up, outside any request, so the sync is never counted as a request's SQL.
      this.timer = setInterval(() => void this.sync(), opts.syncMs);
      this.timer.unref(); // never keeps the process alive
    }
  }

  private windowStart(): number {
    const now = this.now();
    return now - (now % this.opts.windowMs);
  }

  private counter(key: string): Counter {
    const window = this.windowStart();
    let c = this.counters.get(key);
    if (!c || c.window !== window) {
      c = { window, known: 0, pending: 0 };
      this.counters.set(key, c);
    }
    return c;
  }

  private info(c: Counter): RateLimitInfo {
    return { totalHits: c.known + c.pending, resetTime: new Date(c.window + this.opts.windowMs) };
  }

  increment(key: string, hits = 1): RateLimitInfo {
    const c = this.counter(key);
    c.pending += hits;
    return this.info(c);
  }

  get(key: string): RateLimitInfo {
    return this.info(this.counter(key));
  }

  /**
   * Adds the local hits to the shared table and learns the totals; one sync at a time. Every
   * credential's counts, whichever its group: the rate-limit counters' cross-group path (db/session.ts).
   */
  sync(): Promise<void> {
    return (this.syncing ??= acrossGroups("rate-limit counters", () => this.exchange()).finally(() => (this.syncing = undefined)));
  }

  private async exchange(): Promise<void> {
    const table = this.opts.table;
    if (!table) return;
    const window = this.windowStart();
    for (const [key, c] of this.counters) if (c.window !== window) this.counters.delete(key);
    // Only keys with new hits are written (rewriting every key each second wrote 169,906 rows for
    // 19,180 requests); the others' totals are read, to learn the other instances' hits.
    // Sorted: concurrent upserts from several instances then lock rows in one order, never deadlock.
    const keys: string[] = [];
    const unchanged: string[] = [];
    for (const [key, c] of this.counters) (c.pending > 0 ? keys : unchanged).push(key);
    keys.sort();
    const sent = keys.map((k) => this.counters.get(k)!.pending);
    try {
      if (this.prunedBefore !== window) {
        await table.prune(new Date(window));
        this.prunedBefore = window;
      }
      if (keys.length === 0 && unchanged.length === 0) return this.recovered();
      const totals = await table.add(new Date(window), keys, sent, unchanged);
      keys.forEach((key, i) => {
        const c = this.counters.get(key);
        if (!c || c.window !== window) return; // the window ended while the upsert ran
        c.pending -= sent[i]; // hits taken while the upsert ran stay pending for the next sync
        c.known = totals.get(key) ?? c.known;
      });
      for (const key of unchanged) {
        const c = this.counters.get(key);
        // Never below what this instance knows (hits taken meanwhile are pending, not known).
        if (c && c.window === window) c.known = Math.max(c.known, totals.get(key) ?? 0);
      }
      this.recovered();
    } catch (err) {
      // Local counting goes on; the unsent hits are sent by the next sync that succeeds.
      if (!this.failing) this.opts.logger.warn({ err: (err as Error).message }, "rate limit sync failed; counting locally until the database answers");
      this.failing = true;
    }
  }

  private recovered() {
    if (this.failing) this.opts.logger.info("rate limit sync recovered");
    this.failing = false;
  }

  /** Stops the timer and sends the last local hits, waiting at most two seconds for the database. */
  async shutdown(): Promise<void> {
    clearInterval(this.timer);
    let timeout: NodeJS.Timeout | undefined;
    await Promise.race([this.sync(), new Promise((resolve) => (timeout = setTimeout(resolve, 2000)))]);
    clearTimeout(timeout);
  }
}

export interface RateLimiter {
  middleware: RequestHandler;
  /**
   * Counts `hits` more for a request the middleware admitted (the calls of an MCP batch beyond the
   * first); false when that passes the limit, and the 429 has been sent.
   */
  charge(req: Request, res: Response, hits: number): boolean;
  store: SharedCounterStore;
  stop(): Promise<void>;
}

/** The limiter for the three doors, or undefined when GCS_RATE_LIMIT is 0. */
export function createRateLimiter(config: Config, db: Database, logger: Logger): RateLimiter | undefined {
  const { limit, windowS, syncMs } = config.rateLimit;
  if (!limit) return undefined;
  const windowMs = windowS * 1000;
  const store = new SharedCounterStore({ windowMs, syncMs, table: db.embedded ? undefined : postgresCounterTable(db.primary), logger });
  /** Counts `hits` for the request's key and sets the headers; false when past the limit (429 sent). */
  const admit = (req: Request, res: Response, hits: number): boolean => {
    const bearer = BEARER.exec(req.get("authorization") ?? "");
    // The token's hash (as the credential lookup computes it) or the client's address (an IPv6 /56).
    const key = bearer ? hashToken(bearer[1]) : `ip:${ipKeyGenerator(req.ip ?? "")}`;
    const { totalHits, resetTime } = store.increment(key, hits);
    const resetS = Math.max(0, Math.ceil((resetTime.getTime() - Date.now()) / 1000));
    res.setHeader("RateLimit-Policy", `"credential"; q=${limit}; w=${windowS}; pk=:${partitionKey(key)}:`);
    res.setHeader("RateLimit", `"credential"; r=${Math.max(limit - totalHits, 0)}; t=${resetS}`);
    if (totalHits <= limit) return true;
    res.setHeader("Retry-After", String(resetS));
    sendError(req, res, rateLimited(`this credential made more than ${limit} requests in ${windowS} s; retry in ${resetS} s`));
    return false;
  };
  const middleware: RequestHandler = (req, res, next) => {
    if (admit(req, res, 1)) next();
  };
  return { middleware, charge: admit, store, stop: () => store.shutdown() };
}

/** The draft's partition key: names the counter without revealing the key (a prefix of its hash). */
function partitionKey(key: string): string {
  const hash = key.startsWith("ip:") ? hashToken(key) : key; // token keys are hashes already
  return Buffer.from(hash.slice(0, 12)).toString("base64");
}
