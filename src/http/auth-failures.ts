// Failed authentications per client address. The per-credential rate limit counts a request by its
// token's hash, so a fresh random token on every request is a fresh credential each time, and each
// costs a credential lookup in SQL. Here each address may fail to authenticate (a 401: an unknown,
// revoked or expired token, a bad session, no token) at most `limit` times per fixed window; past
// that its requests get 429 rate_limited with Retry-After before the rate limit counts them and before
// any lookup. Tokens that authenticated lately keep working from that address (clients behind one NAT
// or proxy with a flooding neighbour); a token it has not seen waits for the window's end.
// Counts are per instance: n instances admit up to n × limit failures per address.
import type { NextFunction, Request, Response } from "express";
import { ipKeyGenerator } from "express-rate-limit";
import { BEARER } from "../auth/authenticate";
import { hashToken } from "../auth/secrets";
import { rateLimited } from "../errors";
import { sendError } from "./respond";

/** The tokens remembered as good; the oldest is forgotten past this. */
const KNOWN_TOKENS = 10_000;

export class AuthFailures {
  private window = 0;
  /** Failures per address (an IPv6 /56, as the rate limit counts) in the current window. */
  private readonly failures = new Map<string, number>();
  /** SHA-256 of tokens that authenticated, oldest first. */
  private readonly known = new Set<string>();

  constructor(
    readonly limit: number,
    readonly windowMs: number,
    private readonly now: () => number = Date.now,
  ) {}

  private count(): Map<string, number> {
    const now = this.now();
    const window = now - (now % this.windowMs);
    if (window !== this.window) {
      this.window = window;
      this.failures.clear();
    }
    return this.failures;
  }

  /** Before the rate limit and authentication: 429 for an address over its budget, unless its token is known good. */
  readonly middleware = (req: Request, res: Response, next: NextFunction) => {
    const failures = this.count();
    if (failures.size === 0 || (failures.get(ipKeyGenerator(req.ip ?? "")) ?? 0) < this.limit) return next();
    const bearer = BEARER.exec(req.get("authorization") ?? "");
    if (bearer && this.known.has(hashToken(bearer[1]))) return next();
    const resetS = Math.max(1, Math.ceil((this.window + this.windowMs - this.now()) / 1000));
    res.setHeader("Retry-After", String(resetS));
    sendError(req, res, rateLimited(`this address failed to authenticate more than ${this.limit} times in ${this.windowMs / 1000} s; retry in ${resetS} s`));
  };

  /** A request from `address` was refused 401. */
  failed(address: string | undefined) {
    const failures = this.count();
    const key = ipKeyGenerator(address ?? "");
    failures.set(key, (failures.get(key) ?? 0) + 1);
  }

  /** `token` authenticated: it stays welcome from an address over its budget. */
  succeeded(token: string) {
    const hash = hashToken(token);
    if (this.known.has(hash)) return;
    this.known.add(hash);
    if (this.known.size > KNOWN_TOKENS) this.known.delete(this.known.values().next().value!);
  }
}
