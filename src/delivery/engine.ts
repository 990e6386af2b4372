// The delivery engine: moves each active binding's confirmed_seq up its table's membership log by
// telling the destination about the changes in between.
//
// No transaction or row lock is ever held while a destination answers. A flush leases its binding
// in one short statement (claimDueBinding), reads and plans a batch, then runs the destination calls
// one by one; before each call one statement records what the destination confirmed so far, renews
// the lease and reads the binding's state (checkpoint). So a pause or resume is one quick UPDATE that
// never waits for a flush, and the flush starts no call after it sees the pause; a slow destination
// advances confirmed_seq call by call; a change the destination confirmed is not sent again, except
// the calls in flight when an instance dies (its lease runs out and another instance re-sends them:
// every destination operation here is idempotent, upsert and delete).
//
// This is cross-tenant background work, so it runs on the unscoped client and may use raw SQL.
import { createHash } from "node:crypto";
import type { DataClient as PrismaClient } from "../data/client";
import * as store from "../data/stores/delivery";
import type { ClaimTarget, ClaimedBinding, DeliveryTx as Db } from "../data/stores/delivery";
import type { Logger } from "../logger";
import { normaliseContact, type Observation } from "../consent/precedence";
import { decideConsent } from "../data/consents";
import { addCounts, planBatch, zeroCounts, type BatchPlan, type Change, type Contact, type FlushCounts } from "./plan";
import {
  DestinationError,
  destinationClient,
  runCalls,
  type DestinationCall,
  type DestinationClient,
  type DestinationsConfig,
} from "./providers";
import { open, type Keyring } from "./secret-box";
import { databaseFault } from "../db/errors";
import { startPoller } from "./poller";
import { jitteredBackoffMs } from "./backoff";
import { acrossGroups } from "../db/session";

type EngineLogger = Pick<Logger, "debug" | "info" | "warn" | "error">;

export interface FlushOptions {
  /** Keys the connection secrets are sealed with (secret-box.ts; run.ts deliverySecretKey). */
  secretKey: Keyring;
  destinations: DestinationsConfig;
  /** Changes read per batch; default 500. */
  batchSize?: number;
  /** Batches per binding per call, so one long backlog cannot starve the others; default 20. */
  maxBatches?: number;
  /** Clock for due checks and backoff; tests move it forward. */
  now?: () => Date;
  /** Random number in [0, 1) for the backoff's jitter; tests fix it. */
  random?: () => number;
  /** Stops before the next destination call (the worker's stop()). */
  signal?: AbortSignal;
  fetch?: typeof fetch;
  /** Per destination request; default 15 s. */
  requestTimeoutMs?: number;
  /**
   * How long a flush holds its binding without a word: renewed before every destination call, so it
   * must outlast one call (the request timeout). A crashed instance's bindings wait this long before
   * another instance takes them over; default 60 s.
   */
  leaseMs?: number;
  logger?: EngineLogger;
}

export type FlushOutcome = "delivered" | "transient" | "permanent" | "failed" | "stopped";

export interface FlushReport {
  bindingId: string;
  propertyGroupId: string;
  tableId: string;
  provider: string;
  /** delivered: caught up or maxBatches reached; transient: backing off; permanent: now in error;
   *  stopped: paused, lease lost or the worker stopping, between two calls; failed: an unexpected
   *  error (logged), retried at the next poll. */
  outcome: FlushOutcome;
  /** Batches delivered whole. */
  batches: number;
  /** confirmed_seq before and after this call. */
  fromSeq: string;
  toSeq: string;
  counts: FlushCounts;
  error?: string;
}

const BACKOFF_BASE_MS = 5_000;
const BACKOFF_CAP_MS = 15 * 60_000;
export const DEFAULT_LEASE_MS = 60_000;
const PURPOSE = "email_marketing";
const DECRYPT_ERROR = "cannot decrypt connection secret";

/**
 * 5 s · 2^(failures so far), capped at 15 min, with "equal jitter": a random point in the upper
 * half, so failed bindings of many tenants do not all retry in the same second. A longer
 * Retry-After wins (it is the destination's word, not jittered).
 */
export function backoffMs(previousFailures: number, retryAfterMs = 0, random: () => number = Math.random): number {
  return jitteredBackoffMs({ baseMs: BACKOFF_BASE_MS, capMs: BACKOFF_CAP_MS }, previousFailures, retryAfterMs, random);
}

/** Flushes every due binding (active, not backing off, not leased, behind its log head) once. */
/** Flushes the due bindings of every group: the delivery worker's cross-group path (db/session.ts). */
export function flushDue(prisma: PrismaClient, opts: FlushOptions): Promise<FlushReport[]> {
  return acrossGroups("delivery worker", () => flushDueBindings(prisma, opts));
}

async function flushDueBindings(prisma: PrismaClient, opts: FlushOptions): Promise<FlushReport[]> {
  const tried = new Set<string>();
  const reports: FlushReport[] = [];
  while (!opts.signal?.aborted) {
    const next = await flushNextBinding(prisma, opts, tried);
    if (!next.claimed) break;
    if (next.report) reports.push(next.report);
  }
  return reports;
}

// ---------------------------------------------------------------------------------------------
// One binding: batch after batch under one lease, until caught up, stopped or failed.
// ---------------------------------------------------------------------------------------------

interface BatchStep {
  outcome: FlushOutcome | "idle";
  toSeq: bigint;
  counts: FlushCounts;
  more: boolean;
  error?: string;
}

async function flushNextBinding(
  prisma: PrismaClient,
  opts: FlushOptions,
  tried: Set<string>,
): Promise<{ claimed: boolean; report?: FlushReport }> {
  const leaseMs = opts.leaseMs ?? DEFAULT_LEASE_MS;
  const b = await store.claimDueBinding(prisma, { exclude: [...tried] } satisfies ClaimTarget, now(opts), leaseMs);
  if (!b) return { claimed: false };
  tried.add(b.id);
  const report: FlushReport = {
    bindingId: b.id,
    propertyGroupId: b.propertyGroupId,
    tableId: b.tableId,
    provider: b.provider,
    outcome: "delivered",
    batches: 0,
    fromSeq: b.confirmedSeq.toString(),
    toSeq: b.confirmedSeq.toString(),
    counts: zeroCounts(),
  };
  let leaseEnded = false;
  try {
    const maxBatches = opts.maxBatches ?? 20;
    for (let n = 0; n < maxBatches; n++) {
      const step = await runBatch(prisma, b, opts, report.counts);
      if (step.outcome === "idle") break;
      report.outcome = step.outcome;
      report.toSeq = step.toSeq.toString();
      report.counts = step.counts;
      if (step.error) report.error = step.error;
      leaseEnded = step.outcome === "transient" || step.outcome === "permanent";
      if (step.outcome !== "delivered") break;
      report.batches++;
      b.confirmedSeq = step.toSeq;
      if (!step.more) break;
    }
  } catch (err) {
    // Whatever was checkpointed stays; the rest is re-sent at a later poll (after the lease if the
    // release below cannot be written either). An outage is the worker's to log, once.
    if (databaseFault(err)?.kind === "unavailable") throw err;
    opts.logger?.error({ err, binding: b.id }, "delivery flush failed unexpectedly");
    report.outcome = "failed";
    report.error = String((err as Error)?.message ?? err).slice(0, 300);
  } finally {
    if (!leaseEnded) await store.releaseLease(prisma, b).catch(() => undefined);
  }
  return { claimed: true, report };
}

// ---------------------------------------------------------------------------------------------
// One batch: read, plan, then the destination calls with a checkpoint before each.
// ---------------------------------------------------------------------------------------------

async function runBatch(db: Db, b: ClaimedBinding, opts: FlushOptions, before: FlushCounts): Promise<BatchStep> {
  const batchSize = opts.batchSize ?? 500;
  const leaseMs = opts.leaseMs ?? DEFAULT_LEASE_MS;
  const changes: Change[] = await store.membershipChangesAfter(db, b.tableId, b.confirmedSeq, batchSize);
  if (changes.length === 0) return { outcome: "idle", toSeq: b.confirmedSeq, counts: before, more: false };
  const lastSeq = changes[changes.length - 1].seq;

  let counts = before;
  let progress = new Progress(new Map(), b.confirmedSeq, b.confirmedSeq, b.sentAhead);
  const save = () => store.checkpoint(db, b, { confirmedSeq: progress.confirmedSeq(), sentAhead: progress.ahead(), counts, at: now(opts) }, leaseMs);
  try {
    const client = clientFor(b, opts);
    const plan = await planFor(db, b, changes);
    counts = addCounts(before, plan.counts);
    progress = new Progress(plan.seqByEmail, b.confirmedSeq, lastSeq, b.sentAhead);
    const { calls, isSubscribe } = callsInLogOrder(client, b.remoteListId, plan, progress);
    const outcome = await runCalls(calls, client.concurrency, {
      // One statement: record what is confirmed so far, renew the lease, and hear a pause.
      beforeCall: async () => !opts.signal?.aborted && (await save()) && !opts.signal?.aborted,
      afterCall: (call, r) => {
        progress.done(call);
        counts = addCounts(counts, callCounts(isSubscribe.has(call), r));
      },
    });
    const going = await save();
    b.sentAhead = progress.ahead();
    const toSeq = progress.confirmedSeq();
    if (outcome.stopped || !going) return { outcome: "stopped", toSeq, counts, more: false };
    return { outcome: "delivered", toSeq, counts, more: changes.length === batchSize };
  } catch (err) {
    if (!(err instanceof DestinationError)) throw err;
    // The calls that went through before the failure are confirmed; then the backoff or error.
    await save();
    const failures = b.failureCount + 1;
    const outcome = err.kind === "transient" ? "transient" : "permanent";
    if (outcome === "transient") {
      const retryAt = new Date(now(opts).getTime() + backoffMs(b.failureCount, err.retryAfterMs, opts.random));
      await store.recordBackoff(db, b, failures, retryAt, errorText(err));
    } else {
      await store.recordError(db, b, failures, errorText(err));
    }
    opts.logger?.warn({ binding: b.id, provider: b.provider, outcome, error: err.message }, "delivery failed");
    return { outcome, toSeq: progress.confirmedSeq(), counts, more: false, error: err.message };
  }
}

/**
 * The plan's calls in log order: runs of subscribes and removals as the log has them, so calls
 * started in order confirm the log from its start (confirmed_seq moves call by call). Addresses an
 * earlier flush already confirmed for the same change are left out.
 */
function callsInLogOrder(client: DestinationClient, listId: string, plan: BatchPlan, progress: Progress) {
  type Op = { email: string; contact?: Contact };
  const ops: Op[] = [...plan.subscribe.map((contact) => ({ email: contact.email, contact })), ...plan.remove.map((email) => ({ email }))]
    .filter((op) => !progress.isDone(op.email));
  const seq = (op: Op) => plan.seqByEmail.get(op.email)!;
  ops.sort((x, y) => (seq(x) < seq(y) ? -1 : seq(x) > seq(y) ? 1 : 0));
  const calls: DestinationCall[] = [];
  const isSubscribe = new Set<DestinationCall>();
  for (let i = 0; i < ops.length; ) {
    let j = i;
    while (j < ops.length && Boolean(ops[j].contact) === Boolean(ops[i].contact)) j++;
    const run = ops.slice(i, j);
    if (ops[i].contact) {
      for (const call of client.subscribeCalls(listId, run.map((op) => op.contact!))) {
        calls.push(call);
        isSubscribe.add(call);
      }
    } else {
      calls.push(...client.removeCalls(listId, run.map((op) => op.email)));
    }
    i = j;
  }
  return { calls, isSubscribe };
}

/** What one successful call adds to the flush's counters. */
function callCounts(subscribe: boolean, r: { accepted: number; failed: unknown[] }): FlushCounts {
  const c = zeroCounts();
  if (subscribe) c.subscribed = r.accepted;
  else c.removed = r.accepted;
  c.pushed = r.accepted;
  c.failed = r.failed.length;
  return c;
}

/** The key an address is remembered by in sent_ahead: a hash, so the binding row holds no address. */
const aheadKey = (email: string) => createHash("sha256").update(email).digest("base64url").slice(0, 22);

/**
 * Which log position the destination has confirmed, as calls complete in any order: every change
 * below the first address not yet sent is delivered or superseded (plan.ts seqByEmail), and once
 * every call is done, the whole batch is. Addresses done beyond that position are remembered
 * (sent_ahead) with the position they were sent for, so the next flush does not send them again.
 */
class Progress {
  private readonly pending = new Map<string, bigint>();
  private readonly doneAhead = new Map<string, bigint>();
  constructor(
    seqByEmail: ReadonlyMap<string, bigint>,
    private readonly from: bigint,
    private readonly batchEnd: bigint,
    carried: Record<string, string>,
  ) {
    for (const [key, seq] of Object.entries(carried)) this.doneAhead.set(key, BigInt(seq));
    for (const [email, seq] of seqByEmail) {
      if (this.doneAhead.get(aheadKey(email)) !== seq) this.pending.set(email, seq);
    }
  }
  isDone(email: string): boolean {
    return !this.pending.has(email);
  }
  done(call: DestinationCall) {
    for (const email of call.emails) {
      const seq = this.pending.get(email);
      if (seq === undefined) continue;
      this.pending.delete(email);
      this.doneAhead.set(aheadKey(email), seq);
    }
  }
  confirmedSeq(): bigint {
    let first: bigint | undefined;
    for (const seq of this.pending.values()) if (first === undefined || seq < first) first = seq;
    if (first === undefined) return this.batchEnd;
    return first - 1n > this.from ? first - 1n : this.from;
  }
  ahead(): Record<string, string> {
    const confirmed = this.confirmedSeq();
    const out: Record<string, string> = {};
    for (const [key, seq] of this.doneAhead) if (seq > confirmed) out[key] = seq.toString();
    return out;
  }
}

/** The connection's API key opens here; a secret that does not open is a permanent failure. */
function clientFor(b: ClaimedBinding, opts: FlushOptions): DestinationClient {
  let apiKey: string;
  try {
    apiKey = open(b.secretCiphertext, b.connectionId, opts.secretKey);
  } catch {
    throw new DestinationError("permanent", DECRYPT_ERROR);
  }
  return destinationClient(b.provider, apiKey, opts.destinations, { fetch: opts.fetch, timeoutMs: opts.requestTimeoutMs });
}

async function planFor(db: Db, b: ClaimedBinding, changes: Change[]): Promise<BatchPlan> {
  const contacts = await resolveContacts(db, b, [...new Set(changes.map((c) => c.memberId))]);
  const removedEmails = changes.filter((c) => c.op === "remove").flatMap((c) => contacts.get(c.memberId)?.email ?? []);
  const [observations, retainedEmails] = await Promise.all([
    emailObservations(db, b.propertyGroupId, [...new Set([...contacts.values()].map((c) => c.email))]),
    store.emailsOfCurrentMembers(db, b.tableId, b.memberType, removedEmails),
  ]);
  return planBatch({ changes, contacts, observations, retainedEmails });
}

// ---------------------------------------------------------------------------------------------
// Reads that feed the plan.
// ---------------------------------------------------------------------------------------------

/** Member id → contact. No profile in the binding's group, or no email: absent (unresolved). */
async function resolveContacts(tx: Db, b: ClaimedBinding, memberIds: string[]): Promise<Map<string, Contact>> {
  const rows = await store.memberProfiles(tx, b.memberType, b.propertyGroupId, memberIds);
  const contacts = new Map<string, Contact>();
  for (const r of rows) {
    const email = r.email ? normaliseContact("email", r.email) : null;
    if (email) contacts.set(r.id, { email, givenName: r.givenName, familyName: r.familyName });
  }
  return contacts;
}

/** Every email-marketing observation of these addresses in the group, from any property or source. */
async function emailObservations(tx: Db, groupId: string, emails: string[]): Promise<Map<string, Observation[]>> {
  const decisions = await decideConsent(tx, groupId, emails, { purpose: PURPOSE, contactType: "email" });
  return new Map(decisions.map((d) => [d.contactValue, d.observations]));
}

/** Error texts are built by the provider clients without secrets; keep them short. */
const errorText = (err: DestinationError) => err.message.slice(0, 300);

const now = (opts: FlushOptions) => opts.now?.() ?? new Date();

// ---------------------------------------------------------------------------------------------
// The background worker.
// ---------------------------------------------------------------------------------------------

export interface DeliveryWorkerOptions extends Omit<FlushOptions, "signal" | "logger"> {
  prisma: PrismaClient;
  logger: EngineLogger;
  /** Pause between the end of one poll and the start of the next; default 2 s. */
  intervalMs?: number;
}

export interface DeliveryWorker {
  /** Starts no further destination call, waits for the calls in flight and records them, then resolves. */
  stop(): Promise<void>;
}

/** Polls flushDue; a poll never overlaps the previous one. */
export function startDeliveryWorker(opts: DeliveryWorkerOptions): DeliveryWorker {
  const { prisma, logger, intervalMs = 2_000, ...flush } = opts;
  // A database outage is logged when it starts and when it ends, not with a stack every poll.
  let databaseDown = false;
  return startPoller(intervalMs, async (signal) => {
    try {
      const reports = await flushDue(prisma, { ...flush, logger, signal });
      for (const r of reports) logger.info({ delivery: r }, `delivery ${r.provider} ${r.outcome}`);
      if (databaseDown) logger.info("delivery resumed: database reachable again");
      databaseDown = false;
    } catch (err) {
      const fault = databaseFault(err);
      if (fault?.kind !== "unavailable") logger.error({ err }, "delivery poll failed");
      else if (!databaseDown) logger.warn({ reason: fault.reason }, "delivery paused: database unavailable; retrying every poll");
      if (fault?.kind === "unavailable") databaseDown = true;
    }
  });
}
