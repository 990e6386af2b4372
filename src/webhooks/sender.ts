// The webhook sender: moves each active endpoint's cursor along the event timeline by POSTing the
// events it selects, one at a time, in log order.
//
// Built like table delivery (src/delivery/engine.ts): no transaction or row lock is held while a
// receiver answers. Endpoints are leased in one short statement (claimDueEndpoints, SKIP LOCKED for
// that statement only), each to its own lane (up to `concurrency` per instance). A lane takes the
// endpoint's next events from the worker's shared read of the group's log (feed.ts), or reads them in
// one statement when its cursor is outside it, and POSTs them in order, up to `pipeline` at a time. Progress is recorded in batches:
// a checkpoint (checkpointEndpoint, one statement) records the attempts answered since the last one
// (one multi-row insert), moves the cursor, renews the lease, hears a disable, a delete or a replay
// (which takes the lease) and reads the signing secrets (so a rotation reaches a busy lane). It runs
// with the read of the next batch (checkpointAndRead: one statement per batch), before a POST when
// CHECKPOINT_MS have passed or `batchSize` attempts wait, when the lane stops, and before a failure
// is recorded; so a POST always starts within CHECKPOINT_MS of a renewed lease, which outlasts it
// (the lease is much longer than the timeout), and a change to the endpoint reaches the lane within
// CHECKPOINT_MS (LANES_HEAR_WITHIN_MS). A failure backs off with jitter on RETRY_CURVE. Lanes are
// shared fairly between groups (LaneShares): a reserve of an eighth of the lanes is kept for groups
// holding none, one lane each, so hanging receivers, of one group or of several, cannot hold them
// all: a group holding no lane gets one at the next poll while at most `reserve` other groups hold
// lanes (8 of the default 64), whatever their receivers do (LaneShares).
// Several instances therefore send each (endpoint, event) once in normal operation; an instance
// that dies leaves its lease to run out, and another re-sends from the recorded cursor with the
// same webhook-id (at least once): what was in flight, and what was answered since the last
// checkpoint (at most CHECKPOINT_MS of sending, or `batchSize` events).
//
// Order: per endpoint, events go out in timeline order (data/events.ts) on one connection, up to
// `pipeline` on the wire (HTTP/1.1 pipelining: they arrive in that order). The cursor moves past
// event n only once n was answered 2xx: a failing event holds the endpoint's later events back, and
// those already sent behind it are sent again after it (the same webhook-id). Pipeline 1: event n+1
// is sent only after n was answered.
import { randomUUID } from "node:crypto";
import type { DataClient as PrismaClient } from "../data/client";
import * as store from "../data/stores/webhook-sender";
import type { ClaimedEndpoint } from "../data/stores/webhook-sender";
import { databaseFault } from "../db/errors";
import { startPoller } from "../delivery/poller";
import { jitteredBackoffMs, type BackoffCurve } from "../delivery/backoff";
import { open, type Keyring } from "../delivery/secret-box";
import type { Logger } from "../logger";
import type { Client } from "undici";
import { pinnedClient, postWebhook, type PostResult } from "./http";
import { eventMessage, signedHeaders, signer, type Message, type SigningSecrets } from "./sign";
import { groupFeeds, type GroupFeed } from "./feed";
import { systemResolver, type Resolver, type UrlPolicy } from "./ssrf";
import { acrossGroups } from "../db/session";

type SenderLogger = Pick<Logger, "debug" | "info" | "warn" | "error">;

/**
 * The retry schedule: 5 s · 4^(failures so far), capped at 12 h, with equal jitter (so a retry
 * comes after 2.5–5 s, 10–20 s, 40–80 s, 2.7–5.3 min, 11–21 min, 43–85 min, 2.8–5.7 h, then every
 * 6–12 h). An endpoint whose first failed attempt (of the event it is stuck on) is GIVE_UP_AFTER_MS
 * old when another attempt fails is disabled, with the reason shown.
 */
export const RETRY_CURVE: BackoffCurve = { baseMs: 5_000, capMs: 12 * 60 * 60_000, factor: 4 };
export const GIVE_UP_AFTER_MS = 3 * 24 * 60 * 60_000;
export const DEFAULT_WEBHOOK_LEASE_MS = 60_000;
/**
 * The longest a lane sends without a checkpoint (see the top of this file). Not shorter: with 50
 * lanes sharing a busy process, a lane answered about one POST per 15 ms, and a checkpoint every
 * 50 ms was then one statement per 2–3 deliveries (bench/results/2026-11-27-webhooks-after.md).
 */
export const CHECKPOINT_MS = 250;
/** Events read per statement, and attempts answered between two checkpoints at most, by default. */
export const CHECKPOINT_BATCH = 100;
/** Endpoints one instance sends to at the same time, by default (GCS_WEBHOOKS_LANES). */
export const DEFAULT_LANES = 64;
/**
 * POSTs one endpoint may have on the wire, by default (GCS_WEBHOOKS_PIPELINE). One at a time, an
 * endpoint's rate is one event per round trip, and a busy process's round trip is milliseconds.
 */
export const DEFAULT_PIPELINE = 8;
/** Delivery attempts are kept this long (GET …/deliveries), then pruned by the worker. */
export const DELIVERY_RETENTION_MS = 30 * 24 * 60 * 60_000;

export interface SendOptions {
  secretKey: Keyring;
  /** The key of the events' webhook-ids (sign.ts messageIdOf; delivery/run.ts messageIdKey). */
  messageIdKey: string;
  policy: UrlPolicy;
  resolve?: Resolver;
  /** Per attempt; default 10 s. */
  timeoutMs?: number;
  /** Renewed at each checkpoint, so it must outlast a POST (the timeout) by far; default 60 s. */
  leaseMs?: number;
  /** Events read per statement, and attempts recorded per checkpoint at most; default 100. */
  batchSize?: number;
  /** Events per endpoint per claim, so one backlog cannot starve the others; default 1,000. */
  maxEvents?: number;
  /** Endpoints sent to at the same time (one lane each); default DEFAULT_LANES. */
  concurrency?: number;
  /** POSTs on the wire per endpoint at most (HTTP/1.1 pipelining on its one connection); default DEFAULT_PIPELINE. */
  pipeline?: number;
  /** Tests: the longest a lane sends without a checkpoint; default CHECKPOINT_MS. */
  checkpointMs?: number;
  /**
   * The worker's: whether a lane whose endpoint has nothing to send keeps it (and reads again after
   * `idleMs`) rather than giving the lane up; true while the worker has lanes to spare.
   */
  keep?: () => boolean;
  idleMs?: number;
  /** The worker's: the group's shared read of the log (feed.ts), which a lane takes its events from when it can. */
  feed?: (e: ClaimedEndpoint) => GroupFeed;
  /** Clock of the schedule (due checks, backoff, give-up); tests move it. Signatures use the wall clock. */
  now?: () => Date;
  random?: () => number;
  signal?: AbortSignal;
  logger?: SenderLogger;
}

export type SendOutcome = "delivered" | "retrying" | "disabled" | "stopped" | "failed";

export interface SendReport {
  endpointId: string;
  outcome: SendOutcome;
  /** Events answered 2xx under this claim. */
  sent: number;
  error?: string;
}

const now = (o: SendOptions) => o.now?.() ?? new Date();

/** Waits `ms` (if positive), or less if `signal` aborts. */
function pause(ms: number, signal?: AbortSignal): Promise<void> {
  if (ms <= 0 || signal?.aborted) return Promise.resolve();
  return new Promise((resolve) => {
    const done = () => {
      clearTimeout(timer);
      signal?.removeEventListener("abort", done);
      resolve();
    };
    const timer = setTimeout(done, ms);
    signal?.addEventListener("abort", done, { once: true });
  });
}

/**
 * Sends to every due endpoint until none is left, each at most once per call (`gcs deliver --once`
 * and the tests): up to `concurrency` lanes, refilled in one claim statement as lanes free up.
 */
/** Sends the due events of every group's endpoints: the webhook worker's cross-group path (db/session.ts). */
export function sendDue(prisma: PrismaClient, opts: SendOptions): Promise<SendReport[]> {
  return acrossGroups("webhook worker", () => sendDueEvents(prisma, opts));
}

async function sendDueEvents(prisma: PrismaClient, opts: SendOptions): Promise<SendReport[]> {
  const tried = new Set<string>();
  const reports: SendReport[] = [];
  const lanes = opts.concurrency ?? DEFAULT_LANES;
  const running = new Set<Promise<void>>();
  while (!opts.signal?.aborted) {
    const free = lanes - running.size;
    const heardAt = Date.now();
    const claimed = await store.claimDueEndpoints(prisma, [...tried], now(opts), opts.leaseMs ?? DEFAULT_WEBHOOK_LEASE_MS, free);
    for (const e of claimed) {
      tried.add(e.id);
      const lane: Promise<void> = sendEndpoint(prisma, e, opts, heardAt).then((r) => {
        reports.push(r);
        running.delete(lane);
      });
      running.add(lane);
    }
    // Fewer due than free lanes: nothing else is due now; otherwise wait for a lane to free up.
    if (claimed.length < free) break;
    await Promise.race(running);
  }
  await Promise.all(running);
  return reports;
}

/** The endpoint's secrets that sign now: the current one, and the previous one during its overlap. */
export function signingSecrets(e: Pick<ClaimedEndpoint, "id"> & store.SealedSecrets, key: Keyring, at = new Date()): SigningSecrets {
  const current = open(e.secretCiphertext, e.id, key);
  if (!e.previousSecretCiphertext || !e.previousSecretUntil || e.previousSecretUntil <= at) return { current };
  return { current, previous: open(e.previousSecretCiphertext, e.id, key), previousUntil: e.previousSecretUntil };
}

/**
 * How soon a change to an endpoint's row reaches every lane that holds it, on any instance: a lane
 * starts a POST only within CHECKPOINT_MS of having *sent* a checkpoint (or its claim) that found its
 * lease, and reads the signing secrets in it. So once a rotation has committed and this long has
 * passed, every POST carries the new secret's signature; and once a replay has taken the lease, the
 * lane that held it sends nothing more after this long. The margin covers timer lateness.
 */
export const LANES_HEAR_WITHIN_MS = CHECKPOINT_MS + 100;

/**
 * @param heardAt when the claim statement was sent (Date.now()): the lane's first checkpoint, for
 *   LANES_HEAR_WITHIN_MS.
 */
async function sendEndpoint(prisma: PrismaClient, e: ClaimedEndpoint, opts: SendOptions, heardAt: number): Promise<SendReport> {
  const leaseMs = opts.leaseMs ?? DEFAULT_WEBHOOK_LEASE_MS;
  const batchSize = opts.batchSize ?? CHECKPOINT_BATCH;
  const checkpointMs = opts.checkpointMs ?? CHECKPOINT_MS;
  const pipeline = Math.max(1, opts.pipeline ?? DEFAULT_PIPELINE);
  const report: SendReport = { endpointId: e.id, outcome: "delivered", sent: 0 };
  // Answered 2xx since the last checkpoint: recorded, and the cursor moved past them, by the next.
  let answered: store.SucceededAttempt[] = [];
  let confirmed: { txid: bigint; seq: bigint } | undefined;
  // The claim itself renewed the lease. The time a checkpoint was sent, not answered: what it read
  // may be older than its answer, never older than its sending (LANES_HEAR_WITHIN_MS).
  let lastCheckpoint = heardAt;
  let leaseEnded = false;
  // Signs with the secrets the claim, then each checkpoint, read: a rotation reaches a busy lane.
  let sealed: store.SealedSecrets = e;
  let sign!: ReturnType<typeof signer>;
  const signWith = (now: store.SealedSecrets) => {
    try {
      sign = signer(signingSecrets({ id: e.id, ...now }, opts.secretKey));
    } catch {
      throw new UnreadableSecret(); // the lane stops: disableUnreadable
    }
    sealed = now;
  };
  const heard = (now: store.SealedSecrets) => {
    if (now.secretCiphertext !== sealed.secretCiphertext || now.previousSecretCiphertext !== sealed.previousSecretCiphertext) signWith(now);
  };
  const checkpoint = async (release = false) => {
    const sentAt = Date.now();
    const now = await store.checkpointEndpoint(prisma, e, leaseMs, confirmed, answered, release);
    answered = [];
    confirmed = undefined;
    lastCheckpoint = sentAt;
    if (now && !release) heard(now);
    return now !== null;
  };
  // The POSTs on the wire, oldest first (at most `pipeline`).
  const inFlight: InFlight[] = [];
  // Settles the oldest: answered 2xx, the cursor moves past it; otherwise it is the failure to record.
  const settleOldest = async (): Promise<Failed | undefined> => {
    const sent = inFlight.shift()!;
    const result = await sent.result;
    if (!answeredOk(result)) return { ...sent, result };
    answered.push(succeeded(e, sent, result));
    confirmed = { txid: BigInt(sent.ev.txid), seq: BigInt(sent.ev.seq) };
    e.cursorTxid = confirmed.txid;
    e.cursorSeq = BigInt(sent.ev.seq);
    e.failureCount = 0;
    e.failingSince = null;
    report.sent++;
    return undefined;
  };
  // After a failure (or when stopping), the later calls still on the wire: those answered 2xx are
  // recorded (they happened), but the cursor stays before the failure, so they are sent again.
  const abandonInFlight = async () => {
    for (const sent of inFlight.splice(0)) {
      const result = await sent.result;
      if (answeredOk(result)) answered.push(succeeded(e, sent, result));
    }
  };
  // A signing secret no configured key opens, at the claim or re-sealed since (e.g. `gcs secrets
  // rotate` on an instance without the new key): like a destination secret that does not open
  // (engine.ts), permanent until someone acts. The calls on the wire are settled and what was
  // answered recorded first; then the endpoint is disabled with the reason, which ends the lease.
  const disableUnreadable = async (): Promise<SendReport> => {
    while (inFlight.length > 0) if (await settleOldest()) break;
    await abandonInFlight();
    leaseEnded = true;
    if (answered.length > 0 && (await store.checkpointEndpoint(prisma, e, leaseMs, confirmed, answered, false)) === null) {
      report.outcome = "stopped";
      return report;
    }
    await store.disableEndpoint(prisma, e, e.failureCount, UNREADABLE_SECRET);
    opts.logger?.error({ endpoint: e.id }, "webhook endpoint disabled: its signing secret does not open");
    return { endpointId: e.id, outcome: "disabled", sent: report.sent, error: UNREADABLE_SECRET };
  };
  // One pinned keep-alive connection per claim (http.ts pinnedClient); a refusal is remembered.
  let connection: Client | { refused: string } | undefined;
  try {
    signWith(e);
    const fail = async (failed: Failed): Promise<SendReport> => {
      await abandonInFlight();
      // What was answered before is recorded first; then the failure (which ends the lease).
      leaseEnded = true;
      if (answered.length > 0 && !(await checkpoint())) {
        report.outcome = "stopped";
        return report;
      }
      report.outcome = await recordFailure(prisma, e, failed.message, BigInt(failed.ev.seq), failed.result, opts);
      report.error = failureText(failed.result);
      return report;
    };
    const maxEvents = opts.maxEvents ?? 1_000;
    while (report.sent < maxEvents && !opts.signal?.aborted) {
      const readAt = Date.now();
      const take = Math.min(batchSize, maxEvents - report.sent);
      // What was answered is recorded with the read of the next batch (one statement), and the
      // lease renewed long before it runs out.
      let events: store.WebhookEvent[] | null;
      const feed = opts.feed?.(e);
      const fed = feed?.take(e, take);
      if (feed && fed) {
        // From the group's shared read: progress is recorded on the clock, not with each read.
        if ((answered.length > 0 && readAt - lastCheckpoint >= checkpointMs) || readAt - lastCheckpoint >= leaseMs / 4) {
          if (!(await checkpoint())) {
            leaseEnded = true;
            report.outcome = "stopped";
            return report;
          }
        }
        if (fed.length === 0) {
          if (!opts.keep?.()) break;
          await feed.advance(opts.signal);
          continue;
        }
        events = fed;
      } else if (answered.length > 0 || readAt - lastCheckpoint >= leaseMs / 4) {
        const read = await store.checkpointAndRead(prisma, e, leaseMs, confirmed, answered, take);
        answered = [];
        confirmed = undefined;
        lastCheckpoint = readAt;
        if (read === null) {
          leaseEnded = true;
          report.outcome = "stopped";
          return report;
        }
        heard(read.secrets);
        events = read.events;
      } else events = await store.eventsAfterCursor(prisma, e, take);
      if (events.length === 0) {
        if (!opts.keep?.()) break;
        // The worker has lanes to spare: this one keeps its endpoint and looks again after idleMs
        // (a read, rather than a release and a claim).
        await pause(readAt + (opts.idleMs ?? 0) - Date.now(), opts.signal);
        continue;
      }
      for (const ev of events) {
        if (opts.signal?.aborted) break;
        // A full pipeline: the oldest call is answered before the next is sent.
        if (inFlight.length >= pipeline) {
          const failed = await settleOldest();
          if (failed) return await fail(failed);
        }
        connection ??= await connectionFor(e, opts, pipeline);
        // The cursor so far, the lease renewed, a disable, delete, replay or rotation heard (see the
        // top of the file). Last before the POST, with no wait between: LANES_HEAR_WITHIN_MS holds.
        if ((answered.length >= batchSize || Date.now() - lastCheckpoint >= checkpointMs) && !(await checkpoint())) {
          leaseEnded = true;
          report.outcome = "stopped";
          return report;
        }
        const sentAt = new Date();
        const message = eventMessage(ev, sentAt, opts.messageIdKey);
        const result: Promise<PostResult> = "refused" in connection
          ? Promise.resolve({ durationMs: 0, error: connection.refused, refused: true })
          : postWebhook(e.url, sign(message, sentAt), message.body, {
            policy: opts.policy,
            resolve: opts.resolve ?? systemResolver,
            timeoutMs: opts.timeoutMs,
            client: connection,
          });
        inFlight.push({ ev, message, result });
      }
      // The batch's calls answered before the next read (which starts after the cursor).
      while (inFlight.length > 0) {
        const failed = await settleOldest();
        if (failed) return await fail(failed);
      }
      if (opts.signal?.aborted) {
        report.outcome = "stopped";
        return report;
      }
      // Caught up: the next read after idleMs (the worker's), so a lane at the log's end reads at most
      // once an interval, not once per event.
      if (events.length < take && opts.keep && !fed) await pause(readAt + (opts.idleMs ?? 0) - Date.now(), opts.signal);
    }
    if (opts.signal?.aborted) report.outcome = "stopped";
    return report;
  } catch (err) {
    if (err instanceof UnreadableSecret) return await disableUnreadable();
    if (databaseFault(err)?.kind === "unavailable") throw err;
    opts.logger?.error({ err, endpoint: e.id }, "webhook send failed unexpectedly");
    report.outcome = "failed";
    report.error = String((err as Error)?.message ?? err).slice(0, 300);
    return report;
  } finally {
    // Calls still on the wire (a lost lease, an error) are waited for, so none outlives the claim.
    await abandonInFlight().catch(() => undefined);
    if (connection && !("refused" in connection)) await connection.destroy().catch(() => undefined);
    // One statement: what was answered recorded, the cursor moved and the lease given up.
    if (!leaseEnded) await checkpoint(true).catch(() => undefined);
  }
}

const UNREADABLE_SECRET = "cannot decrypt the signing secret (GCS_DELIVERY_SECRET_KEY changed without GCS_DELIVERY_SECRET_KEY_PREVIOUS?); rotate the secret, then replay";
/** Thrown by a lane whose endpoint's signing secret does not open (sendEndpoint disableUnreadable). */
class UnreadableSecret extends Error {}

interface InFlight {
  ev: store.WebhookEvent;
  message: Message;
  result: Promise<PostResult>;
}
type Failed = Omit<InFlight, "result"> & { result: PostResult };

const answeredOk = (r: PostResult) => r.status !== undefined && r.status >= 200 && r.status < 300;

const succeeded = (e: ClaimedEndpoint, sent: InFlight, r: PostResult): store.SucceededAttempt => ({
  messageId: sent.message.id, eventType: sent.message.type, eventSeq: sent.ev.seq, attempt: e.failureCount + 1, responseCode: r.status!, durationMs: r.durationMs,
});

async function connectionFor(e: ClaimedEndpoint, opts: SendOptions, pipeline: number): Promise<Client | { refused: string }> {
  const pinned = await pinnedClient(e.url, { policy: opts.policy, resolve: opts.resolve ?? systemResolver }, pipeline);
  return "refused" in pinned ? pinned : pinned.client;
}

/** A failed attempt: 410 disables, so does failing for GIVE_UP_AFTER_MS; otherwise the next retry. */
async function recordFailure(prisma: PrismaClient, e: ClaimedEndpoint, m: Message, seq: bigint, r: PostResult, opts: SendOptions): Promise<SendOutcome> {
  const at = now(opts);
  const failures = e.failureCount + 1;
  const failingSince = e.failingSince ?? at;
  const why = failureText(r);
  let disable: string | undefined;
  if (r.status === 410) disable = "the receiver answered 410 Gone";
  else if (at.getTime() - failingSince.getTime() >= GIVE_UP_AFTER_MS) {
    disable = `failing since ${failingSince.toISOString()} (${failures} attempts); last: ${why}`;
  }
  if (disable) {
    await store.recordDelivery(prisma, deliveryRow(e, m, seq, failures, r.refused ? "refused" : "failed", r, null));
    await store.disableEndpoint(prisma, e, failures, disable);
    opts.logger?.warn({ endpoint: e.id, reason: disable }, "webhook endpoint disabled");
    return "disabled";
  }
  const retryAt = new Date(at.getTime() + jitteredBackoffMs(RETRY_CURVE, e.failureCount, r.retryAfterMs, opts.random));
  await store.recordDelivery(prisma, deliveryRow(e, m, seq, failures, r.refused ? "refused" : "failed", r, retryAt));
  await store.recordEndpointBackoff(prisma, e, failures, failingSince, retryAt, why);
  opts.logger?.warn({ endpoint: e.id, status: r.status, error: r.error, retryAt }, "webhook attempt failed");
  return "retrying";
}

function failureText(r: PostResult): string {
  if (r.status !== undefined) return `HTTP ${r.status}${r.status >= 300 && r.status < 400 ? " (redirects are not followed)" : ""}`;
  return (r.error ?? "no answer").slice(0, 300);
}

function deliveryRow(e: ClaimedEndpoint, m: Message, seq: bigint | null, attempt: number, status: store.NewDelivery["status"], r: PostResult, nextRetryAt: Date | null): store.NewDelivery {
  return {
    endpointId: e.id,
    propertyGroupId: e.propertyGroupId,
    messageId: m.id,
    eventType: m.type,
    eventSeq: seq,
    attempt,
    status,
    responseCode: r.status ?? null,
    durationMs: r.durationMs,
    error: status === "succeeded" ? null : failureText(r),
    nextRetryAt,
  };
}

// ---------------------------------------------------------------------------------------------
// The background worker.
// ---------------------------------------------------------------------------------------------

export interface WebhookWorker {
  /** Starts no further POST, waits for those in flight and records them. */
  stop(): Promise<void>;
}

/**
 * Every `intervalMs`, the lanes that are free claim due endpoints (one statement) and send to them;
 * a lane does not wait for the others, so an endpoint whose receiver is slow holds only its own, and
 * a group holds at most its share of the lanes (LaneShares). While lanes are to spare and its group
 * is under its share, a lane keeps its endpoint when it runs out of events and reads again every
 * `intervalMs`; it gives it up after `maxEvents` (another instance may take it) or, otherwise, as
 * soon as it has nothing to send.
 */
type WorkerOptions = Omit<SendOptions, "signal"> & { intervalMs?: number; logger: SenderLogger };
/** The worker's timers start on its cross-group path, so its every statement runs there (db/session.ts). */
export function startWebhookWorker(prisma: PrismaClient, opts: WorkerOptions): WebhookWorker {
  return acrossGroups("webhook worker", () => startWorker(prisma, opts));
}

function startWorker(prisma: PrismaClient, opts: WorkerOptions): WebhookWorker {
  const { intervalMs = 100, ...send } = opts;
  const lanes = opts.concurrency ?? DEFAULT_LANES;
  const running = new Set<Promise<void>>();
  const shares = new LaneShares(lanes);
  let databaseDown = false;
  let prunedAt = 0;
  const faulted = (err: unknown) => {
    const fault = databaseFault(err);
    if (fault?.kind !== "unavailable") opts.logger.error({ err }, "webhook poll failed");
    else if (!databaseDown) opts.logger.warn({ reason: fault.reason }, "webhooks paused: database unavailable");
    databaseDown = fault?.kind === "unavailable";
  };
  const feed = groupFeeds(prisma, intervalMs);
  const poller = startPoller(intervalMs, async (stopping) => {
    try {
      // Retention: a bounded delete at the first poll, then once a minute.
      if (Date.now() - prunedAt >= 60_000) {
        prunedAt = Date.now();
        await store.pruneDeliveries(prisma, new Date(prunedAt - DELIVERY_RETENTION_MS), 10_000);
      }
      const free = lanes - running.size;
      if (free <= 0) return;
      const heardAt = Date.now();
      const claimed = await store.claimDueEndpoints(prisma, [], now(send), send.leaseMs ?? DEFAULT_WEBHOOK_LEASE_MS, free, shares.room(free));
      databaseDown = false;
      for (const e of claimed) {
        const group = e.propertyGroupId;
        shares.take(group);
        // An idle lane keeps its endpoint while lanes are to spare and its group is under its share
        // (else another endpoint of the group, or another group, may need the lane).
        const keep = () => running.size < lanes && shares.under(group);
        const lane: Promise<void> = sendEndpoint(prisma, e, { ...send, signal: stopping, keep, idleMs: intervalMs, feed }, heardAt)
          .then((r) => {
            if (r.outcome !== "delivered") opts.logger.info({ webhook: r }, `webhook ${r.outcome}`);
          }, faulted)
          .finally(() => {
            running.delete(lane);
            shares.give(group);
          });
        running.add(lane);
      }
    } catch (err) {
      faulted(err);
    }
  });
  return {
    async stop() {
      await poller.stop();
      await Promise.all(running);
    },
  };
}

/**
 * The lanes each group holds on this instance, and its fair share. With H other groups holding
 * lanes a group holds at most (lanes − reserve) / (H + 1), at least one; alone, 56 of the default
 * 64 (its 50 endpoints all fit).
 *
 * The reserve (an eighth of the lanes, at least one) is for groups holding no lane: a claim gives
 * each such group its first lane before anything else, from the reserve if need be, and takes
 * every other lane (a further lane of any group) only while more than the reserve is free. So
 * slow or hanging receivers (each holding a lane up to the timeout) of any number of groups never
 * take the reserve beyond one lane per group. The bound: every lane is held only once the last
 * `reserve` went to as many groups as first lanes, besides the group(s) holding the rest; so a group
 * with a due endpoint and no lane gets one at the next poll (one interval) whenever at most
 * `reserve` other groups hold lanes (8 with the default 64), whatever their receivers do. Past that
 * (e.g. one group's 56 hanging receivers and eight groups' one each) it waits for a lane to free up
 * (at most the timeout), and the shares, which shrink as groups come, let it in then.
 */
export class LaneShares {
  private readonly held = new Map<string, number>();
  private readonly reserve: number;
  constructor(private readonly lanes: number) {
    this.reserve = Math.max(1, Math.floor(lanes / 8));
  }

  take(group: string) {
    this.held.set(group, (this.held.get(group) ?? 0) + 1);
  }

  give(group: string) {
    const n = (this.held.get(group) ?? 1) - 1;
    if (n > 0) this.held.set(group, n);
    else this.held.delete(group);
  }

  /** A group's share: `others` other groups hold lanes. */
  private share(others: number) {
    return Math.max(1, Math.floor((this.lanes - this.reserve) / (others + 1)));
  }

  under(group: string): boolean {
    const others = this.held.size - (this.held.has(group) ? 1 : 0);
    return (this.held.get(group) ?? 0) < this.share(others);
  }

  /** What each group may claim now, `free` lanes being free (store.claimDueEndpoints). */
  room(free: number): store.GroupRoom {
    const groups = [...this.held.keys()];
    return {
      groups,
      left: groups.map((g) => Math.max(0, this.share(this.held.size - 1) - this.held.get(g)!)),
      share: this.share(this.held.size),
      beyondFirst: Math.max(0, free - this.reserve),
    };
  }
}

/** A ping, sent now from the request (POST …/test): not retried, recorded as a delivery. */
export async function sendPing(
  record: (d: store.NewDelivery) => Promise<void>,
  endpoint: { id: string; propertyGroupId: string; url: string },
  secrets: SigningSecrets,
  message: Message,
  opts: Pick<SendOptions, "policy" | "resolve" | "timeoutMs">,
): Promise<PostResult> {
  const at = new Date();
  const r = await postWebhook(endpoint.url, signedHeaders(message, secrets, at), message.body, {
    policy: opts.policy,
    resolve: opts.resolve ?? systemResolver,
    timeoutMs: opts.timeoutMs,
  });
  const ok = r.status !== undefined && r.status >= 200 && r.status < 300;
  await record({
    endpointId: endpoint.id,
    propertyGroupId: endpoint.propertyGroupId,
    messageId: message.id,
    eventType: message.type,
    eventSeq: null,
    attempt: 1,
    status: ok ? "succeeded" : r.refused ? "refused" : "failed",
    responseCode: r.status ?? null,
    durationMs: r.durationMs,
    error: ok ? null : failureText(r),
    nextRetryAt: null,
  });
  return r;
}

export const newPingId = () => `ping_${randomUUID()}`;
