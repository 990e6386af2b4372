// Pure planning of one delivery batch: membership changes → what to send to the destination.
// No I/O here, so the rules (last op wins, consent precedence, de-duplication by email) are unit
// tested on their own; engine.ts feeds it what it read from the database.
import { effectiveConsent, type EffectiveStatus, type Observation } from "../consent/precedence";

export type MembershipOp = "add" | "remove";

export interface Change {
  seq: bigint;
  memberId: string;
  op: MembershipOp;
}

/** Integer counters of a flush (spec 2.2 `last_flush_counts`). */
export interface FlushCounts {
  pushed: number;
  subscribed: number;
  skipped_no_consent_subscribe: number;
  skipped_suppressed: number;
  skipped_unresolved: number;
  removed: number;
  failed: number;
}

export const COUNT_KEYS: readonly (keyof FlushCounts)[] = [
  "pushed", "subscribed", "skipped_no_consent_subscribe", "skipped_suppressed", "skipped_unresolved", "removed", "failed",
];

export const zeroCounts = (): FlushCounts =>
  Object.fromEntries(COUNT_KEYS.map((k) => [k, 0])) as unknown as FlushCounts;

export function addCounts(a: FlushCounts, b: FlushCounts): FlushCounts {
  return Object.fromEntries(COUNT_KEYS.map((k) => [k, a[k] + b[k]])) as unknown as FlushCounts;
}

/** Stored JSON (possibly null or partial) → counters with every key an integer. */
export function normaliseCounts(json: unknown): FlushCounts {
  const source = typeof json === "object" && json !== null ? (json as Record<string, unknown>) : {};
  const counts = zeroCounts();
  for (const k of COUNT_KEYS) {
    const v = Number(source[k]);
    counts[k] = Number.isFinite(v) ? Math.trunc(v) : 0;
  }
  return counts;
}

/**
 * One entry per member: its last op in the batch wins (add then remove is a remove). Entries keep
 * the order of each member's last change, so destination calls follow the log.
 */
export function collapseChanges(changes: readonly Change[]): Change[] {
  const last = new Map<string, Change>();
  for (const c of changes) {
    last.delete(c.memberId); // re-insert so Map order is the order of last changes
    last.set(c.memberId, c);
  }
  return [...last.values()];
}

export interface Contact {
  /** Lower-cased: the key consent observations are stored under. */
  email: string;
  givenName: string | null;
  familyName: string | null;
}

export interface PlanInput {
  changes: readonly Change[];
  /** Member id → contact; a member missing here has no profile or no email. */
  contacts: ReadonlyMap<string, Contact>;
  /** Lower-cased email → its email-marketing observations in the binding's property group. */
  observations: ReadonlyMap<string, readonly Observation[]>;
  /** Emails still held by a current member of the table: removing them would drop that member. */
  retainedEmails: ReadonlySet<string>;
}

export interface BatchPlan {
  subscribe: Contact[];
  remove: string[];
  /**
   * Each address sent (subscribe or remove) → the log position of the last change behind it. Every
   * change up to a position below the first unsent address's is delivered or superseded by a later
   * one, so the engine can confirm that far after each destination call (engine.ts deliveredUpTo).
   */
  seqByEmail: Map<string, bigint>;
  /** The skipped_* counters; the others are filled in from what the destination confirms. */
  counts: FlushCounts;
}

export function consentStatus(observations: readonly Observation[] | undefined): EffectiveStatus {
  return effectiveConsent(observations ?? []).status;
}

export function planBatch(input: PlanInput): BatchPlan {
  const counts = zeroCounts();
  const subscribe = new Map<string, Contact>();
  const remove = new Set<string>();
  const seqByEmail = new Map<string, bigint>();
  for (const change of collapseChanges(input.changes)) {
    const contact = input.contacts.get(change.memberId);
    if (contact) seqByEmail.set(contact.email, change.seq); // collapsed changes come in seq order: the last wins
    if (!contact) {
      counts.skipped_unresolved++;
    } else if (change.op === "remove") {
      remove.add(contact.email);
    } else {
      const status = consentStatus(input.observations.get(contact.email));
      if (status === "granted") subscribe.set(contact.email, contact);
      else if (status === "unknown") counts.skipped_no_consent_subscribe++;
      else counts.skipped_suppressed++;
    }
  }
  // Two members can share an address (one person seen by two sources): a removal must not take the
  // address off the list while another member keeps it, nor undo a subscribe in the same batch.
  const removals = [...remove].filter((email) => !subscribe.has(email) && !input.retainedEmails.has(email));
  const sent = new Set([...subscribe.keys(), ...removals]);
  for (const email of seqByEmail.keys()) if (!sent.has(email)) seqByEmail.delete(email);
  return { subscribe: [...subscribe.values()], remove: removals, seqByEmail, counts };
}
