// One reader of a group's event log per worker, shared by the lanes of that group's endpoints.
//
// Without it every lane reads its own endpoint's events: with 50 endpoints near the log's end that
// is 50 statements per interval for the same rows. A feed reads the group's events once per
// interval at most (one statement, whichever lanes are waiting) and keeps the last MAX_BUFFERED in
// memory; a lane whose cursor falls inside the buffer takes its endpoint's events from it, filtered
// as the SQL filter does (data/webhooks.ts `selects`). A lane outside the buffer (behind it, after a
// replay or a long failure; or ahead of it) reads from the database as before, so the feed is only a
// shortcut: the events and their order are the same either way (the timeline, finished
// transactions only).
import type { DataClient as PrismaClient } from "../data/client";
import * as store from "../data/stores/webhook-sender";
import type { ClaimedEndpoint, WebhookEvent } from "../data/stores/webhook-sender";

/**
 * Events a feed keeps (a few MB: about 5 s of a busy group's log); a lane further behind reads from
 * the database. A feed no lane has used for FEED_IDLE_MS is dropped.
 */
export const MAX_BUFFERED = 5_000;
const FEED_IDLE_MS = 60_000;
/** Events one read of a feed takes at most. */
const READ_SIZE = 1_000;

type Position = readonly [bigint, bigint];
const compare = (a: Position, b: Position) => (a[0] !== b[0] ? (a[0] < b[0] ? -1 : 1) : a[1] === b[1] ? 0 : a[1] < b[1] ? -1 : 1);
const positionOf = (ev: WebhookEvent): Position => [BigInt(ev.txid), BigInt(ev.seq)];

/** Whether the endpoint selects the event: the SQL filter of data/webhooks.ts, in memory. */
export const selects = (e: Pick<ClaimedEndpoint, "topics" | "propertyIds">, ev: WebhookEvent) =>
  (e.topics.includes("*") || e.topics.includes(ev.entity_type)) && (e.propertyIds.length === 0 || (ev.property_id !== null && e.propertyIds.includes(ev.property_id)));

export class GroupFeed {
  /** Every event of the group after `start` up to `end`, in timeline order. */
  private events: WebhookEvent[] = [];
  private positions: Position[] = [];
  private start: Position;
  private end: Position;
  private reading?: Promise<void>;
  private lastRead = 0;
  lastUsed = Date.now();

  constructor(private readonly db: PrismaClient, private readonly propertyGroupId: string, at: Position, private readonly intervalMs: number) {
    this.start = at;
    this.end = at;
  }

  /**
   * The next `take` events after the endpoint's cursor that it selects, or undefined when the
   * cursor is outside the buffer (the lane reads from the database). An empty answer means the
   * lane is at the feed's end: `advance` brings more.
   */
  take(e: ClaimedEndpoint, take: number): WebhookEvent[] | undefined {
    this.lastUsed = Date.now();
    const cursor: Position = [BigInt(e.cursorTxid), BigInt(e.cursorSeq)];
    // Nothing buffered and a lane ahead: the feed moves to it (no lane can be served from nothing).
    if (this.events.length === 0 && compare(cursor, this.end) > 0) this.start = this.end = cursor;
    if (compare(cursor, this.start) < 0 || compare(cursor, this.end) > 0) return undefined;
    let i = this.firstAfter(cursor);
    const out: WebhookEvent[] = [];
    for (; i < this.events.length && out.length < take; i++) if (selects(e, this.events[i])) out.push(this.events[i]);
    return out;
  }

  /** Reads the group's next events: one statement for every lane waiting, at most one per interval. */
  advance(signal?: AbortSignal): Promise<void> {
    this.reading ??= this.read(signal).finally(() => (this.reading = undefined));
    return this.reading;
  }

  private async read(signal?: AbortSignal) {
    const wait = this.lastRead + this.intervalMs - Date.now();
    if (wait > 0) await new Promise<void>((resolve) => {
      const timer = setTimeout(resolve, wait);
      signal?.addEventListener("abort", () => (clearTimeout(timer), resolve()), { once: true });
    });
    if (signal?.aborted) return;
    this.lastRead = Date.now();
    const rows = await store.groupEventsAfter(this.db, this.propertyGroupId, this.end, READ_SIZE);
    for (const ev of rows) {
      this.events.push(ev);
      this.positions.push(positionOf(ev));
    }
    if (rows.length > 0) this.end = this.positions[this.positions.length - 1];
    const over = this.events.length - MAX_BUFFERED;
    if (over > 0) {
      this.start = this.positions[over - 1];
      this.events.splice(0, over);
      this.positions.splice(0, over);
    }
  }

  /** The index of the first buffered event after `p` (binary search). */
  private firstAfter(p: Position): number {
    let lo = 0;
    let hi = this.positions.length;
    while (lo < hi) {
      const mid = (lo + hi) >> 1;
      if (compare(this.positions[mid], p) <= 0) lo = mid + 1;
      else hi = mid;
    }
    return lo;
  }
}

/** The worker's feeds, one per group, each made at the first lane's cursor; idle ones are dropped. */
export function groupFeeds(db: PrismaClient, intervalMs: number): (e: ClaimedEndpoint) => GroupFeed {
  const feeds = new Map<string, GroupFeed>();
  let swept = Date.now();
  return (e) => {
    if (Date.now() - swept > FEED_IDLE_MS) {
      swept = Date.now();
      for (const [group, f] of feeds) if (swept - f.lastUsed > FEED_IDLE_MS) feeds.delete(group);
    }
    let feed = feeds.get(e.propertyGroupId);
    if (!feed) feeds.set(e.propertyGroupId, (feed = new GroupFeed(db, e.propertyGroupId, [BigInt(e.cursorTxid), BigInt(e.cursorSeq)], intervalMs)));
    return feed;
  };
}
