// A fair share of the database: at most `max` requests of one credential use it at once in this
// instance (GCS_CREDENTIAL_MAX_CONCURRENCY, default half the pool), so one key cannot take every
// pooled connection from the others. A request over the cap waits up to `queueMs` for a slot, then
// gets 429 rate_limited with Retry-After: 1. The cap is per instance: n instances admit up to n × max.
import type { ServerResponse } from "node:http";
import { rateLimited } from "../errors";

interface Slots {
  active: number;
  /** Requests waiting for a slot, first come first served. */
  waiting: { admit: () => void; timer: NodeJS.Timeout }[];
}

export class CredentialGate {
  private readonly slots = new Map<string, Slots>();

  constructor(
    readonly max: number,
    readonly queueMs: number,
  ) {}

  /**
   * Takes a slot for `key` until `res` finishes or its connection closes, whichever comes first
   * (errors and aborted requests included), or throws rate_limited after waiting `queueMs`.
   */
  async enter(key: string, res: ServerResponse): Promise<void> {
    let slots = this.slots.get(key);
    if (!slots) this.slots.set(key, (slots = { active: 0, waiting: [] }));
    if (slots.active < this.max) slots.active++;
    else await this.wait(slots, res);
    let released = false;
    const release = () => {
      if (released) return;
      released = true;
      this.leave(key, slots);
    };
    res.once("finish", release);
    res.once("close", release);
    if (res.closed) release(); // the client left while the request waited or authenticated
  }

  /** In use plus waiting, per key (tests and diagnostics). */
  load(key: string): number {
    const slots = this.slots.get(key);
    return slots ? slots.active + slots.waiting.length : 0;
  }

  private wait(slots: Slots, res: ServerResponse): Promise<void> {
    return new Promise((resolve, reject) => {
      const waiter = {
        admit: resolve,
        timer: setTimeout(() => {
          slots.waiting.splice(slots.waiting.indexOf(waiter), 1);
          // Set here because the three doors send this error through different helpers.
          if (!res.headersSent) res.setHeader("Retry-After", "1");
          reject(rateLimited(`this credential already has ${this.max} requests in progress; retry in a second`));
        }, this.queueMs),
      };
      slots.waiting.push(waiter);
    });
  }

  private leave(key: string, slots: Slots) {
    const next = slots.waiting.shift();
    if (next) {
      clearTimeout(next.timer);
      next.admit(); // the slot passes straight to the next request
      return;
    }
    slots.active--;
    if (slots.active === 0 && this.slots.get(key) === slots) this.slots.delete(key);
  }
}
