// Whether the read replica (DATABASE_REPLICA_URL, a streaming hot standby) may serve reads now.
// Each instance checks on its own, in the background: no shared state, and no statement on the
// request path (Database.readerPool reads `usable`: no I/O).
//
// Lag is measured by WAL position, not by the standby's last replayed commit time: on an idle primary
// nothing commits, and a replay timestamp grows old while the standby is fully caught up. Every
// check reads the primary's current WAL position first, then the standby's replay position, and keeps
// the primary's positions of recent checks: the standby is at least (now - T) behind, where T is the
// first check whose primary position it has not replayed yet. Caught up reads 0, whatever the age
// of the last write; the resolution is one check interval.
import type { Pool } from "pg";
import type { Logger } from "../logger";

export type ReplicaState =
  /** Not checked yet: reads go to the primary until the first check passes. */
  | "starting"
  /** Reads go to the standby. */
  | "streaming"
  /** More than the allowed lag behind: reads go to the primary. */
  | "lagging"
  /** Did not answer the check: reads go to the primary. */
  | "down"
  /** Answers but is not in recovery (promoted, or not a standby): its lag cannot be known, so no reads. */
  | "not_standby";

export interface ReplicaStatus {
  state: ReplicaState;
  /** WAL bytes the standby had not replayed at the last check that reached it; null before one. */
  lagBytes: number | null;
  /** Seconds behind the primary at that check (at least; one check interval's resolution). */
  lagSeconds: number | null;
  /** When the last check finished (Date.now()), 0 before the first. */
  checkedAt: number;
}

export interface ReplicaHealthOptions {
  /** Out of reads above this lag; back once at or below half of it (no flapping at the edge). */
  maxLagMs: number;
  /** How often to check. */
  checkMs: number;
  logger?: Pick<Logger, "warn" | "info">;
  /** The replica's URL with its password removed, for log lines. */
  label: string;
  /** host:port, the replica's label in /metrics. */
  address: string;
}

interface Sample {
  at: number;
  lsn: bigint;
}

// The insert position: a commit under synchronous_commit = off is visible on the primary before its
// WAL is written out, and the standby lacks it until then.
const PRIMARY_POSITION = "SELECT (pg_current_wal_insert_lsn() - '0/0'::pg_lsn)::text AS lsn";
const REPLAY_POSITION = "SELECT pg_is_in_recovery() AS recovery, (pg_last_wal_replay_lsn() - '0/0'::pg_lsn)::text AS lsn";

export class ReplicaHealth {
  private current: ReplicaStatus = { state: "starting", lagBytes: null, lagSeconds: null, checkedAt: 0 };
  private serving = false;
  /** The primary's positions at recent checks, oldest first. */
  private samples: Sample[] = [];
  private timer: NodeJS.Timeout | undefined;
  private running: Promise<void> | undefined;
  private stopped = false;

  readonly address: string;

  constructor(
    private readonly primary: Pool,
    readonly pool: Pool,
    private readonly opts: ReplicaHealthOptions,
  ) {
    this.address = opts.address;
  }

  /** True while the standby serves reads: what Database.readerPool looks at per request. */
  get usable(): boolean {
    return this.serving;
  }

  status(): ReplicaStatus {
    return this.current;
  }

  /** The first check (so that a healthy standby serves the first request), then one every checkMs. */
  async start(): Promise<void> {
    await this.check();
    this.schedule();
  }

  /** Checks now; a check already running counts. */
  check(): Promise<void> {
    if (this.stopped) return Promise.resolve();
    this.running ??= this.measure()
      .then((next) => this.apply(next))
      .finally(() => (this.running = undefined));
    return this.running;
  }

  /**
   * A pooled connection to the standby failed (it may be shutting down): reads go to the primary
   * until a fresh check, started after the failure, finds it healthy.
   */
  suspect(): void {
    this.serving = false;
    void (this.running ?? Promise.resolve()).then(() => this.check());
  }

  async stop(): Promise<void> {
    this.stopped = true;
    clearTimeout(this.timer);
    await this.running;
  }

  private schedule() {
    if (this.stopped) return;
    this.timer = setTimeout(() => void this.check().finally(() => this.schedule()), this.opts.checkMs);
    this.timer.unref();
  }

  private async measure(): Promise<Omit<ReplicaStatus, "checkedAt"> & { error?: string }> {
    const at = Date.now();
    let primaryLsn: bigint;
    try {
      primaryLsn = BigInt((await this.timed<{ lsn: string }>(this.primary, PRIMARY_POSITION)).lsn);
    } catch {
      // The primary's outage is /readyz's and the requests' to report; the standby keeps its last
      // state (reads on a streaming standby go on meanwhile).
      return { ...this.current };
    }
    this.remember({ at, lsn: primaryLsn });
    let replay: { recovery: boolean; lsn: string | null };
    try {
      replay = await this.timed<{ recovery: boolean; lsn: string | null }>(this.pool, REPLAY_POSITION);
    } catch (err) {
      return { state: "down", lagBytes: null, lagSeconds: null, error: (err as Error).message };
    }
    if (!replay.recovery || replay.lsn === null) return { state: "not_standby", lagBytes: null, lagSeconds: null };
    const replayed = BigInt(replay.lsn);
    const behind = this.samples.find((s) => s.lsn > replayed);
    const lagSeconds = behind ? (at - behind.at) / 1000 : 0;
    const lagMs = lagSeconds * 1000;
    const wasUsable = this.current.state === "streaming";
    const state = lagMs > this.opts.maxLagMs || (!wasUsable && lagMs > this.opts.maxLagMs / 2) ? "lagging" : "streaming";
    return { state, lagBytes: Number(primaryLsn > replayed ? primaryLsn - replayed : 0n), lagSeconds };
  }

  private apply(next: Omit<ReplicaStatus, "checkedAt"> & { error?: string }) {
    const { error, ...status } = next;
    const previous = this.current.state;
    this.current = { ...status, checkedAt: Date.now() };
    this.serving = status.state === "streaming";
    if (status.state === previous || this.stopped) return;
    const log = { replica: this.opts.label, state: status.state, was: previous, lagSeconds: status.lagSeconds, lagBytes: status.lagBytes };
    if (status.state === "streaming") this.opts.logger?.info(log, "read replica in use for reads");
    else this.opts.logger?.warn({ ...log, ...(error ? { err: error } : {}), maxLagMs: this.opts.maxLagMs }, "read replica out of reads: reading from the primary");
  }

  /** Keeps the positions of checks within the horizon: far enough back to tell any lag past the limit. */
  private remember(sample: Sample) {
    this.samples.push(sample);
    const horizon = sample.at - Math.max(2 * this.opts.maxLagMs, 60_000);
    while (this.samples.length > 1 && this.samples[0].at < horizon) this.samples.shift();
  }

  /** One statement on `pool`, given up after a check interval (at least 2 s): a hung server is down. */
  private async timed<Row>(pool: Pool, text: string): Promise<Row> {
    let timer: NodeJS.Timeout | undefined;
    const timeout = new Promise<never>((_, reject) => {
      timer = setTimeout(() => reject(new Error("no answer in time")), Math.max(2000, this.opts.checkMs));
    });
    try {
      const result = await Promise.race([pool.query(text), timeout]);
      return result.rows[0] as Row;
    } finally {
      clearTimeout(timer);
    }
  }
}
