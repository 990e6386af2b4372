// A fair share of the database: at most `max` requests of one credential use it at once in this
// instance (GCS_CREDENTIAL_MAX_CONCURRENCY, default half the pool), so one key cannot take every
// pooled connection from the others. A request over the cap waits up to `queueMs` for a slot, then
// gets 429 rate_limited with Retry-After: 1. The cap is per instance: n instances admit up to n × max.
// An MCP batch takes a slot per call (up to the cap) and runs at most that many calls at once.
import type { ServerResponse } from "node:http";
import { rateLimited } from "../errors";

interface Slots {
  active: number;
  /** Requests waiting for their slots, first come first served. */
  waiting: Waiter[];
}

interface Waiter {
  /** Slots it needs: one per request, one per call of an MCP batch (up to the cap). */
  n: number;
  admit: () => void;
  timer: NodeJS.Timeout;
}

export class CredentialGate {
  private readonly slots = new Map<string, Slots>();

  constructor(
    readonly max: number,
    readonly queueMs: number,
  ) {}

  /**
   * Takes `n` slots for `key` (at most the cap) until `res` finishes or its connection closes,
   * whichever comes first (errors and aborted requests included), or throws rate_limited after
   * waiting `queueMs`. Returns how many it took.
   */
  async enter(key: string, res: ServerResponse, n = 1): Promise<number> {
    n = Math.max(1, Math.min(n, this.max)); // a batch larger than the cap runs its calls cap at a time
    let slots = this.slots.get(key);
    if (!slots) this.slots.set(key, (slots = { active: 0, waiting: [] }));
    if (slots.waiting.length === 0 && slots.active + n <= this.max) slots.active += n;
    else await this.wait(key, slots, res, n);
    let released = false;
    const release = () => {
      if (released) return;
      released = true;
      slots.active -= n;
      this.admitWaiting(key, slots);
    };
    res.once("finish", release);
    res.once("close", release);
    if (res.closed) release(); // the client left while the request waited or authenticated
    return n;
  }

  /** In use plus waiting, per key (tests and diagnostics). */
  load(key: string): number {
    const slots = this.slots.get(key);
    return slots ? slots.active + slots.waiting.reduce((sum, w) => sum + w.n, 0) : 0;
  }

  private wait(key: string, slots: Slots, res: ServerResponse, n: number): Promise<void> {
    return new Promise((resolve, reject) => {
      const waiter: Waiter = {
        n,
        admit: resolve,
        timer: setTimeout(() => {
          slots.waiting.splice(slots.waiting.indexOf(waiter), 1);
          this.admitWaiting(key, slots); // a smaller request behind this one may fit now
          // Set here because the three doors send this error through different helpers.
          if (!res.headersSent) res.setHeader("Retry-After", "1");
          reject(rateLimited(`this credential already has ${this.max} requests in progress; retry in a second`));
        }, this.queueMs),
      };
      slots.waiting.push(waiter);
    });
  }

  /** Freed slots pass straight to the waiting requests, in order, while the first in line fits. */
  private admitWaiting(key: string, slots: Slots) {
    while (slots.waiting.length > 0 && slots.active + slots.waiting[0].n <= this.max) {
      const next = slots.waiting.shift()!;
      clearTimeout(next.timer);
      slots.active += next.n;
      next.admit();
    }
    if (slots.active === 0 && slots.waiting.length === 0 && this.slots.get(key) === slots) this.slots.delete(key);
  }
}
