// One reader of the event timeline per group and instance, fanned out to that group's open streams
// (GET /v1/events/stream and /graphql/stream subscriptions, issues 29 and 40).
//
// A stream first catches up on its own: the timeline (data/events.ts) with its filters after its
// cursor, like GET /v1/events, until it has seen everything up to the feed's position. Then it joins
// the group's feed, which reads the group's new rows once per poll (one statement for all the
// group's streams, instead of one per stream) and hands each row to the streams whose filter and
// scope select it (events.matcher, the same test as the timeline's SQL). Rows arrive in timeline
// order, each once: the feed's position moves in the same synchronous step that hands rows out, and
// a stream joins only when it has seen everything up to that position, read from the same server (a
// replica may lag the primary the feed read); a row at or before a stream's last one is never sent to
// it again (Member.after). A stream whose client is not reading leaves the feed once it holds
// STREAM_BUFFER_BYTES not yet taken by the client (counted in bytes, not rows: one event may be
// megabytes) and catches up on its own once the client drains, so a slow client holds at most that
// plus one event and never slows the others. Both doors, REST and GraphQL, follow through one hub.
import { createData } from "../data";
import { eventKeyOf, type EventFilter, type EventRow } from "../data/events";
import { eventLogEnd } from "../data/webhooks";
import type { Database } from "../db/database";
import type { Logger } from "../logger";
import type { Scope } from "../auth/scope";
import type { CursorKey } from "../pagination/cursor";

/** A timeline position, (txid, seq) as numbers. */
type Position = readonly [bigint, bigint];
const positionOf = (key: CursorKey): Position => [BigInt(key[0]), BigInt(key[1])];
const keyOf = (p: Position): CursorKey => [p[0].toString(), p[1].toString()];
const compare = (a: Position, b: Position) => (a[0] !== b[0] ? (a[0] < b[0] ? -1 : 1) : a[1] === b[1] ? 0 : a[1] < b[1] ? -1 : 1);

/** Rows per statement, when catching up and for the feed; each read also stops at STREAM_BUFFER_BYTES. */
const BATCH = 500;

/**
 * What one stream may hold for its client before it stops taking rows (its Sink is `full`): the text
 * queued or written but not yet taken by the socket. A single larger event still goes, alone.
 */
export const STREAM_BUFFER_BYTES = 1 << 20;

/** Where a stream's rows go: an open SSE response. */
export interface Sink {
  readonly closed: boolean;
  /** The stream's start is known: send the headers. Called once, before any row. */
  open(): void;
  /** Queues one row. */
  send(row: EventRow): void;
  /** STREAM_BUFFER_BYTES or more are queued or unwritten: send no more before drained(). */
  readonly full: boolean;
  /** Writes what is queued (or a heartbeat when idle); false when `full`. */
  flush(): boolean;
  /** Resolves when the stream is no longer full, or has gone. */
  drained(): Promise<void>;
  /** Resolves when the client has gone or the stream was ended (its credential stopped opening it): the stream leaves the feed. */
  readonly gone: Promise<void>;
}

interface Member {
  after: Position;
  match: (row: EventRow) => boolean;
  /** A fresh `match`, for filters that must be resolved again (master_profile_id). */
  refresh?: () => Promise<(row: EventRow) => boolean>;
  sink: Sink;
  /** Resolves the stream's wait on the feed: it left (slow client) or the client went. */
  leave: () => void;
}

class GroupFeed {
  /** Everything of the group up to here has been handed to the members. */
  position: Position = [0n, 0n];
  /** The server `position` was read from (db.readerPool: the primary, or the replica while it serves). */
  readFrom: unknown;
  readonly ready: Promise<void>;
  readonly members = new Set<Member>();
  users = 0;
  private timer?: NodeJS.Timeout;
  private stopped = false;
  private failing = false;

  constructor(
    private readonly db: Database,
    private readonly groupId: string,
    private readonly pollMs: number,
    private readonly logger: Pick<Logger, "warn" | "info">,
  ) {
    const from = db.readerPool;
    this.ready = eventLogEnd(db.reader, groupId).then((end) => {
      this.position = [BigInt(end.txid), BigInt(end.seq)];
      this.readFrom = from;
      this.schedule();
    });
  }

  stop() {
    this.stopped = true;
    clearTimeout(this.timer);
    for (const m of this.members) m.leave();
    this.members.clear();
  }

  private schedule() {
    if (this.stopped) return;
    this.timer = setTimeout(() => void this.poll(), this.pollMs);
    this.timer.unref();
  }

  private async poll() {
    try {
      let full = true;
      while (full && !this.stopped) {
        const from = this.db.readerPool;
        const data = createData(this.db, { propertyGroupId: this.groupId, propertyId: null });
        const { rows, more } = await data.events.timelineWithin({}, keyOf(this.position), BATCH, STREAM_BUFFER_BYTES);
        full = more;
        if (rows.length > 0) await this.refresh();
        this.handOut(rows, from);
      }
      if (this.failing) this.logger.info({ propertyGroupId: this.groupId }, "event stream feed reads again");
      this.failing = false;
    } catch (err) {
      // The streams stay open and the next poll tries again (a database outage, a replica switch).
      if (!this.failing) this.logger.warn({ err, propertyGroupId: this.groupId }, "event stream feed could not read the timeline; retrying");
      this.failing = true;
      this.handOut([], undefined); // heartbeats go on
    } finally {
      this.schedule();
    }
  }

  private async refresh() {
    await Promise.all([...this.members].map(async (m) => {
      if (m.refresh) m.match = await m.refresh();
    }));
  }

  /** Synchronous: the position moves with the rows handed out, so a stream joins between two polls' rows, never inside. */
  private handOut(rows: EventRow[], from: unknown) {
    if (rows.length > 0) this.readFrom = from;
    for (const row of rows) {
      const key = positionOf(eventKeyOf(row));
      for (const m of this.members) {
        if (compare(key, m.after) <= 0 || !m.match(row)) continue;
        // Full: it leaves before this row, and reads it itself once its client drains.
        if (m.sink.full) this.dismiss(m);
        else {
          m.after = key;
          m.sink.send(row);
        }
      }
      this.position = key;
    }
    // One write per stream and poll; a client that is not reading leaves the feed.
    for (const m of this.members) if (!m.sink.flush()) this.dismiss(m);
  }

  private dismiss(m: Member) {
    m.sink.flush();
    this.members.delete(m);
    m.leave();
  }
}

export class EventHub {
  private readonly feeds = new Map<string, GroupFeed>();

  constructor(
    private readonly db: Database,
    private readonly pollMs: number,
    private readonly logger: Pick<Logger, "warn" | "info">,
  ) {}

  /**
   * Reads the stream's next rows and sends them until its sink is full. True when it read every row
   * finished when the read began (a short read, all sent); the rows left unsent are dropped here, not
   * held while the client drains: they are read again after `member.after`.
   */
  private async catchUp(scope: Scope, filter: EventFilter, member: Member): Promise<boolean> {
    const { rows, more } = await createData(this.db, scope).events.timelineWithin(filter, keyOf(member.after), BATCH, STREAM_BUFFER_BYTES);
    if (member.sink.closed) return false;
    let sent = 0;
    for (; sent < rows.length && !member.sink.full; sent++) {
      member.after = positionOf(eventKeyOf(rows[sent]));
      member.sink.send(rows[sent]);
    }
    return sent === rows.length && !more;
  }

  /**
   * Sends the rows `scope` and `filter` select after `start` (the log's end when undefined) to
   * `sink`, in timeline order, until the client goes. Rejects when the database cannot be read
   * while catching up (before sink.open() when it cannot be read at all).
   */
  async follow(scope: Scope, filter: EventFilter, start: CursorKey | undefined, sink: Sink): Promise<void> {
    const groupId = scope.propertyGroupId;
    let feed = this.feeds.get(groupId);
    if (!feed) this.feeds.set(groupId, (feed = new GroupFeed(this.db, groupId, this.pollMs, this.logger)));
    feed.users++;
    try {
      await feed.ready;
      const matcher = () => createData(this.db, scope).events.matcher(filter);
      const member: Member = {
        // The feed's position is the log's end, or at most one poll behind it.
        after: start ? positionOf(start) : feed.position,
        match: await matcher(),
        refresh: filter.masterProfileId ? matcher : undefined,
        sink,
        leave: () => undefined,
      };
      void sink.gone.then(() => member.leave());
      if (sink.closed) return;
      sink.open();
      /** Everything the stream selects up to here has been sent. */
      let seen = member.after;
      while (!sink.closed) {
        const bound = feed.position;
        const boundFrom = feed.readFrom;
        if (compare(seen, bound) >= 0) {
          // Caught up: the feed sends what comes after `bound`, and nothing here awaited since it was read.
          await new Promise<void>((resolve) => {
            member.leave = resolve;
            feed!.members.add(member);
          });
          feed.members.delete(member);
          seen = member.after;
          if (!sink.closed) await sink.drained();
          continue;
        }
        const from = this.db.readerPool;
        const read = await this.catchUp(scope, filter, member);
        if (sink.closed) return;
        if (!sink.flush()) await sink.drained();
        seen = member.after;
        if (!read) continue;
        // A short read saw every row finished when it began, so every row up to `bound` if it read
        // the server the feed read `bound` from (a replica may lag the primary). Else try again
        // after a poll, when the feed has read the server reads go to now.
        if (from === boundFrom) {
          if (compare(bound, seen) > 0) seen = bound;
        } else await new Promise((resolve) => setTimeout(resolve, this.pollMs).unref());
      }
    } finally {
      if (--feed.users === 0) {
        feed.stop();
        this.feeds.delete(groupId);
      }
    }
  }
}
