// The webhook sender: moves each active endpoint's cursor along the event timeline by POSTing the
// events it selects, one at a time, in log order.
//
// Built like table delivery (src/delivery/engine.ts): no transaction or row lock is held while a
// receiver answers. An endpoint is leased in one short statement (claimDueEndpoint, SKIP LOCKED for
// that statement only); before each POST one statement records the cursor so far, renews the lease
// and hears a disable or delete (checkpointEndpoint); a failure backs off with jitter on RETRY_CURVE.
// Several instances therefore send each (endpoint, event) once in normal operation; an instance
// that dies mid-call leaves its lease to run out, and another re-sends from the recorded cursor
// with the same webhook-id (at least once).
//
// Order: per endpoint, events go out in timeline order (data/events.ts), and event n+1 is not sent
// before event n was answered 2xx: a failing event holds the endpoint's later events back.
import { randomUUID } from "node:crypto";
import type { DataClient as PrismaClient } from "../data/client";
import * as store from "../data/webhooks";
import type { ClaimedEndpoint } from "../data/webhooks";
import { databaseFault } from "../db/errors";
import { startPoller } from "../delivery/poller";
import { jitteredBackoffMs, type BackoffCurve } from "../delivery/backoff";
import { open, type Keyring } from "../delivery/secret-box";
import type { Logger } from "../logger";
import { pinnedAgent, postWebhook, type PostResult } from "./http";
import type { Agent } from "node:http";
import { eventMessage, signedHeaders, type Message } from "./sign";
import { systemResolver, type Resolver, type UrlPolicy } from "./ssrf";

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
/** Delivery attempts are kept this long (GET …/deliveries), then pruned by the worker. */
export const DELIVERY_RETENTION_MS = 30 * 24 * 60 * 60_000;

export interface SendOptions {
  secretKey: Keyring;
  policy: UrlPolicy;
  resolve?: Resolver;
  /** Per attempt; default 10 s. */
  timeoutMs?: number;
  /** Renewed before each POST, so it must outlast one (the timeout); default 60 s. */
  leaseMs?: number;
  /** Events read per statement; default 100. */
  batchSize?: number;
  /** Events per endpoint per claim, so one backlog cannot starve the others; default 1,000. */
  maxEvents?: number;
  /** Endpoints sent to at the same time; default 8. */
  concurrency?: number;
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

/** Sends to every due endpoint until none is left (each at most once per call). */
export async function sendDue(prisma: PrismaClient, opts: SendOptions): Promise<SendReport[]> {
  const tried = new Set<string>();
  const reports: SendReport[] = [];
  const lane = async () => {
    while (!opts.signal?.aborted) {
      const e = await store.claimDueEndpoint(prisma, [...tried], now(opts), opts.leaseMs ?? DEFAULT_WEBHOOK_LEASE_MS);
      if (!e) return;
      tried.add(e.id);
      reports.push(await sendEndpoint(prisma, e, opts));
    }
  };
  await Promise.all(Array.from({ length: opts.concurrency ?? 8 }, lane));
  return reports;
}

/** The endpoint's secrets that sign now: the current one, and the previous one during its overlap. */
export function signingSecrets(e: Pick<ClaimedEndpoint, "id" | "secretCiphertext" | "previousSecretCiphertext" | "previousSecretUntil">, key: Keyring, at = new Date()): string[] {
  const secrets = [open(e.secretCiphertext, e.id, key)];
  if (e.previousSecretCiphertext && e.previousSecretUntil && e.previousSecretUntil > at) secrets.push(open(e.previousSecretCiphertext, e.id, key));
  return secrets;
}

async function sendEndpoint(prisma: PrismaClient, e: ClaimedEndpoint, opts: SendOptions): Promise<SendReport> {
  const leaseMs = opts.leaseMs ?? DEFAULT_WEBHOOK_LEASE_MS;
  const report: SendReport = { endpointId: e.id, outcome: "delivered", sent: 0 };
  let confirmed: { txid: bigint; seq: bigint } | undefined;
  let leaseEnded = false;
  // One pinned keep-alive connection per claim (http.ts pinnedAgent); a refusal is remembered.
  let agent: Agent | { refused: string } | undefined;
  try {
    let secrets: string[];
    try {
      secrets = signingSecrets(e, opts.secretKey);
    } catch {
      // Like a destination secret that does not open (engine.ts): permanent until someone acts.
      leaseEnded = true;
      const reason = "cannot decrypt the signing secret (GCS_DELIVERY_SECRET_KEY changed without GCS_DELIVERY_SECRET_KEY_PREVIOUS?); rotate the secret, then replay";
      await store.disableEndpoint(prisma, e, e.failureCount, reason);
      opts.logger?.error({ endpoint: e.id }, "webhook endpoint disabled: its signing secret does not open");
      return { endpointId: e.id, outcome: "disabled", sent: 0, error: reason };
    }
    const maxEvents = opts.maxEvents ?? 1_000;
    while (report.sent < maxEvents) {
      const events = await store.eventsAfterCursor(prisma, e, Math.min(opts.batchSize ?? 100, maxEvents - report.sent));
      if (events.length === 0) break;
      for (const ev of events) {
        // One statement: the cursor so far, the lease renewed, and a disable or delete heard.
        if (opts.signal?.aborted || !(await store.checkpointEndpoint(prisma, e, leaseMs, confirmed))) {
          report.outcome = "stopped";
          return report;
        }
        confirmed = undefined;
        const sentAt = new Date();
        const message = eventMessage(ev, sentAt);
        agent ??= await connectionFor(e, opts);
        const result = "refused" in agent
          ? { durationMs: 0, error: agent.refused, refused: true }
          : await post(e, message, secrets, sentAt, opts, agent);
        const ok = result.status !== undefined && result.status >= 200 && result.status < 300;
        if (ok) {
          await store.recordDelivery(prisma, deliveryRow(e, message, BigInt(ev.seq), e.failureCount + 1, "succeeded", result, null));
          confirmed = { txid: ev.txid, seq: BigInt(ev.seq) };
          e.cursorTxid = ev.txid;
          e.cursorSeq = BigInt(ev.seq);
          e.failureCount = 0;
          e.failingSince = null;
          report.sent++;
          continue;
        }
        leaseEnded = true;
        const outcome = await recordFailure(prisma, e, message, BigInt(ev.seq), result, opts);
        report.outcome = outcome;
        report.error = failureText(result);
        return report;
      }
    }
    return report;
  } catch (err) {
    if (databaseFault(err)?.kind === "unavailable") throw err;
    opts.logger?.error({ err, endpoint: e.id }, "webhook send failed unexpectedly");
    report.outcome = "failed";
    report.error = String((err as Error)?.message ?? err).slice(0, 300);
    return report;
  } finally {
    if (agent && !("refused" in agent)) agent.destroy();
    if (!leaseEnded) {
      if (confirmed) await store.checkpointEndpoint(prisma, e, leaseMs, confirmed).catch(() => undefined);
      await store.releaseEndpoint(prisma, e).catch(() => undefined);
    }
  }
}

async function connectionFor(e: ClaimedEndpoint, opts: SendOptions): Promise<Agent | { refused: string }> {
  const pinned = await pinnedAgent(e.url, { policy: opts.policy, resolve: opts.resolve ?? systemResolver });
  return "refused" in pinned ? pinned : pinned.agent;
}

function post(e: ClaimedEndpoint, m: Message, secrets: string[], at: Date, opts: SendOptions, agent: Agent): Promise<PostResult> {
  return postWebhook(e.url, signedHeaders(m, secrets, at), m.body, {
    policy: opts.policy,
    resolve: opts.resolve ?? systemResolver,
    timeoutMs: opts.timeoutMs,
    agent,
  });
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

export function startWebhookWorker(prisma: PrismaClient, opts: Omit<SendOptions, "signal"> & { intervalMs?: number; logger: SenderLogger }): WebhookWorker {
  const { intervalMs = 500, ...send } = opts;
  let databaseDown = false;
  let polls = 0;
  return startPoller(intervalMs, async (signal) => {
    try {
      // Retention: a bounded delete every 120th poll (a minute at the default interval).
      if (polls++ % 120 === 0) await store.pruneDeliveries(prisma, new Date(Date.now() - DELIVERY_RETENTION_MS), 10_000);
      const reports = await sendDue(prisma, { ...send, signal });
      for (const r of reports) if (r.outcome !== "delivered") opts.logger.info({ webhook: r }, `webhook ${r.outcome}`);
      databaseDown = false;
    } catch (err) {
      const fault = databaseFault(err);
      if (fault?.kind !== "unavailable") opts.logger.error({ err }, "webhook poll failed");
      else if (!databaseDown) opts.logger.warn({ reason: fault.reason }, "webhooks paused: database unavailable");
      databaseDown = fault?.kind === "unavailable";
    }
  });
}

/** A ping, sent now from the request (POST …/test): not retried, recorded as a delivery. */
export async function sendPing(
  record: (d: store.NewDelivery) => Promise<void>,
  endpoint: { id: string; propertyGroupId: string; url: string },
  secrets: string[],
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
