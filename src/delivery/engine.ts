// The delivery engine: moves each active binding's confirmed_seq up its table's membership log by
// telling the destination about the changes in between.
//
// Exactly-once hand-off between instances: a batch runs in one transaction that claims the binding
// row with SELECT … FOR UPDATE SKIP LOCKED, calls the destination, and only after it confirms
// advances confirmed_seq and commits. Another instance skips a locked binding; a pause or resume
// waits for the lock. If the process dies after the destination confirmed but before the commit,
// the batch is sent again: every destination operation here is idempotent (upsert, delete).
//
// This is cross-tenant background work, so it runs on the unscoped client and may use raw SQL.
import type { DataClient as PrismaClient } from "../data/client";
import * as store from "../data/delivery";
import type { ClaimTarget, ClaimedBinding, DeliveryTx as Tx } from "../data/delivery";
import type { Logger } from "../logger";
import { normaliseContact, type Observation } from "../consent/precedence";
import { decideConsent } from "../data/consents";
import { addCounts, planBatch, zeroCounts, type BatchPlan, type Change, type Contact, type FlushCounts } from "./plan";
import {
  DestinationError,
  destinationClient,
  type DestinationClient,
  type DestinationsConfig,
} from "./providers";
import { open, type Keyring } from "./secret-box";
import { databaseFault } from "../db/errors";

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
  /** Stops between batches (the worker's stop()). */
  signal?: AbortSignal;
  fetch?: typeof fetch;
  /** Per destination request; default 15 s. */
  requestTimeoutMs?: number;
  /** A batch transaction holds the binding lock across destination calls; default 2 min. */
  transactionTimeoutMs?: number;
  logger?: EngineLogger;
}

export type FlushOutcome = "delivered" | "transient" | "permanent" | "failed";

export interface FlushReport {
  bindingId: string;
  propertyGroupId: string;
  tableId: string;
  provider: string;
  /** delivered: caught up or maxBatches reached; transient: backing off; permanent: now in error;
   *  failed: an unexpected error (logged), retried at the next poll. */
  outcome: FlushOutcome;
  batches: number;
  /** confirmed_seq before and after this call. */
  fromSeq: string;
  toSeq: string;
  counts: FlushCounts;
  error?: string;
}

const BACKOFF_BASE_MS = 5_000;
const BACKOFF_CAP_MS = 15 * 60_000;
const PURPOSE = "email_marketing";
const DECRYPT_ERROR = "cannot decrypt connection secret";

/** 5 s · 2^(failures so far), capped at 15 min; a longer Retry-After wins. */
export function backoffMs(previousFailures: number, retryAfterMs = 0): number {
  const exp = Math.min(BACKOFF_BASE_MS * 2 ** Math.min(previousFailures, 20), BACKOFF_CAP_MS);
  return Math.max(exp, Math.min(retryAfterMs, BACKOFF_CAP_MS));
}

/** Flushes every due binding (active, not backing off, behind its log head) once; returns what happened. */
export async function flushDue(prisma: PrismaClient, opts: FlushOptions): Promise<FlushReport[]> {
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
// One binding: batch after batch, each its own transaction, until caught up or stopped.
// ---------------------------------------------------------------------------------------------

interface BatchStep {
  binding: ClaimedBinding;
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
  let report: FlushReport | undefined;
  const maxBatches = opts.maxBatches ?? 20;
  for (let n = 0; n < maxBatches && !opts.signal?.aborted; n++) {
    // The first batch claims any due binding not tried yet; later ones re-claim this one by id.
    const target = report ? { id: report.bindingId } : { exclude: [...tried] };
    const step = await runBatch(prisma, opts, target, tried, report?.counts ?? zeroCounts());
    if (!step) return { claimed: report !== undefined, report };
    if (step.outcome !== "idle") report = mergeStep(report, step);
    if (step.outcome !== "delivered" || !step.more) break;
  }
  return { claimed: true, report };
}

/** One batch in its own transaction; null when nothing matching `target` is due (or it is locked). */
async function runBatch(
  prisma: PrismaClient,
  opts: FlushOptions,
  target: ClaimTarget,
  tried: Set<string>,
  countsSoFar: FlushCounts,
): Promise<BatchStep | null> {
  let claimed: ClaimedBinding | undefined;
  try {
    return await store.inBatchTransaction(prisma, opts.transactionTimeoutMs ?? 120_000, async (tx) => {
      claimed = await store.claimDueBinding(tx, target, now(opts));
      if (!claimed) return null;
      tried.add(claimed.id);
      return flushBatch(tx, claimed, opts, countsSoFar);
    });
  } catch (err) {
    if (!claimed) throw err; // the claim itself failed: the database is not usable, stop the run
    // Rolled back, cursor unchanged: the next poll tries this binding again.
    opts.logger?.error({ err, binding: claimed.id }, "delivery batch failed unexpectedly");
    const error = String((err as Error)?.message ?? err).slice(0, 300);
    return { binding: claimed, outcome: "failed", toSeq: claimed.confirmedSeq, counts: countsSoFar, more: false, error };
  }
}

function mergeStep(report: FlushReport | undefined, step: BatchStep): FlushReport {
  const b = step.binding;
  return {
    bindingId: b.id,
    propertyGroupId: b.propertyGroupId,
    tableId: b.tableId,
    provider: b.provider,
    outcome: step.outcome as FlushOutcome,
    batches: (report?.batches ?? 0) + (step.outcome === "delivered" ? 1 : 0),
    fromSeq: report?.fromSeq ?? b.confirmedSeq.toString(),
    toSeq: step.toSeq.toString(),
    // Counts accumulate over the call's batches: last_flush_counts describes the whole flush.
    counts: step.outcome === "delivered" ? step.counts : (report?.counts ?? zeroCounts()),
    ...(step.error ? { error: step.error } : {}),
  };
}

// ---------------------------------------------------------------------------------------------
// One batch, inside the claiming transaction.
// ---------------------------------------------------------------------------------------------

async function flushBatch(tx: Tx, b: ClaimedBinding, opts: FlushOptions, before: FlushCounts): Promise<BatchStep> {
  const batchSize = opts.batchSize ?? 500;
  const changes: Change[] = await store.membershipChangesAfter(tx, b.tableId, b.confirmedSeq, batchSize);
  const unchanged = { binding: b, toSeq: b.confirmedSeq, counts: before, more: false };
  if (changes.length === 0) return { ...unchanged, outcome: "idle" };

  try {
    const client = clientFor(b, opts);
    const plan = await planFor(tx, b, changes);
    const counts = addCounts(before, await deliver(client, b.remoteListId, plan));
    const lastSeq = changes[changes.length - 1].seq;
    await store.recordDelivered(tx, b.id, lastSeq, counts, now(opts));
    return { binding: b, outcome: "delivered", toSeq: lastSeq, counts, more: changes.length === batchSize };
  } catch (err) {
    if (!(err instanceof DestinationError)) throw err;
    const outcome = err.kind === "transient" ? await recordTransient(tx, b, err, now(opts)) : await recordPermanent(tx, b, err);
    opts.logger?.warn({ binding: b.id, provider: b.provider, outcome, error: err.message }, "delivery failed");
    return { ...unchanged, outcome, error: err.message };
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

async function planFor(tx: Tx, b: ClaimedBinding, changes: Change[]): Promise<BatchPlan> {
  const contacts = await resolveContacts(tx, b, [...new Set(changes.map((c) => c.memberId))]);
  const removedEmails = changes.filter((c) => c.op === "remove").flatMap((c) => contacts.get(c.memberId)?.email ?? []);
  const [observations, retainedEmails] = await Promise.all([
    emailObservations(tx, b.propertyGroupId, [...new Set([...contacts.values()].map((c) => c.email))]),
    store.emailsOfCurrentMembers(tx, b.tableId, b.memberType, removedEmails),
  ]);
  return planBatch({ changes, contacts, observations, retainedEmails });
}

async function deliver(client: DestinationClient, listId: string, plan: BatchPlan): Promise<FlushCounts> {
  const counts = { ...plan.counts };
  if (plan.subscribe.length > 0) {
    const r = await client.upsertSubscribers(listId, plan.subscribe);
    counts.subscribed = r.accepted;
    counts.failed += r.failed.length;
  }
  if (plan.remove.length > 0) {
    const r = await client.remove(listId, plan.remove);
    counts.removed = r.accepted;
    counts.failed += r.failed.length;
  }
  counts.pushed = counts.subscribed + counts.removed;
  return counts;
}

// ---------------------------------------------------------------------------------------------
// Reads that feed the plan.
// ---------------------------------------------------------------------------------------------

/** Member id → contact. No profile in the binding's group, or no email: absent (unresolved). */
async function resolveContacts(tx: Tx, b: ClaimedBinding, memberIds: string[]): Promise<Map<string, Contact>> {
  const rows = await store.memberProfiles(tx, b.memberType, b.propertyGroupId, memberIds);
  const contacts = new Map<string, Contact>();
  for (const r of rows) {
    const email = r.email ? normaliseContact("email", r.email) : null;
    if (email) contacts.set(r.id, { email, givenName: r.givenName, familyName: r.familyName });
  }
  return contacts;
}

/** Every email-marketing observation of these addresses in the group, from any property or source. */
async function emailObservations(tx: Tx, groupId: string, emails: string[]): Promise<Map<string, Observation[]>> {
  const decisions = await decideConsent(tx, groupId, emails, { purpose: PURPOSE, contactType: "email" });
  return new Map(decisions.map((d) => [d.contactValue, d.observations]));
}

// ---------------------------------------------------------------------------------------------
// Writes under the claim's lock.
// ---------------------------------------------------------------------------------------------

async function recordTransient(tx: Tx, b: ClaimedBinding, err: DestinationError, at: Date): Promise<"transient"> {
  await store.recordBackoff(tx, b.id, b.failureCount + 1, new Date(at.getTime() + backoffMs(b.failureCount, err.retryAfterMs)), errorText(err));
  return "transient";
}

async function recordPermanent(tx: Tx, b: ClaimedBinding, err: DestinationError): Promise<"permanent"> {
  await store.recordError(tx, b.id, b.failureCount + 1, errorText(err));
  return "permanent";
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
  /** Finishes the batch in flight (none is cut short), then resolves. */
  stop(): Promise<void>;
}

/** Polls flushDue; a poll never overlaps the previous one. */
export function startDeliveryWorker(opts: DeliveryWorkerOptions): DeliveryWorker {
  const { prisma, logger, intervalMs = 2_000, ...flush } = opts;
  const stopping = new AbortController();
  let timer: NodeJS.Timeout | undefined;
  let running: Promise<void> | undefined;
  // A database outage is logged when it starts and when it ends, not with a stack every poll.
  let databaseDown = false;

  const poll = async () => {
    try {
      const reports = await flushDue(prisma, { ...flush, logger, signal: stopping.signal });
      for (const r of reports) logger.info({ delivery: r }, `delivery ${r.provider} ${r.outcome}`);
      if (databaseDown) logger.info("delivery resumed: database reachable again");
      databaseDown = false;
    } catch (err) {
      const fault = databaseFault(err);
      if (fault?.kind !== "unavailable") logger.error({ err }, "delivery poll failed");
      else if (!databaseDown) logger.warn({ reason: fault.reason }, "delivery paused: database unavailable; retrying every poll");
      if (fault?.kind === "unavailable") databaseDown = true;
    }
  };
  const schedule = () => {
    if (stopping.signal.aborted) return;
    timer = setTimeout(() => {
      running = poll().finally(() => {
        running = undefined;
        schedule();
      });
    }, intervalMs);
    timer.unref();
  };
  schedule();
  return {
    async stop() {
      stopping.abort();
      clearTimeout(timer);
      await running;
    },
  };
}
