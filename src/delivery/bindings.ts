// Destination binding state machine (spec 3.2) and the binding view (spec 2.2).
//
//   pause:  active | error  → paused   (paused stays paused: idempotent)
//   resume: paused | error  → active   (active stays active: no-op); clears the backoff so delivery
//                                      continues at once from the saved confirmed_seq
//   engine: active → error on a permanent destination failure (engine.ts)
//
// Each transition is one conditional UPDATE (`… WHERE state IN (…)`), so concurrent pause, resume
// and flush leave one consistent state: a flush holds the binding's row lock while it delivers, and
// an UPDATE here waits for it, then re-evaluates the state condition on the committed row. None of
// them touches confirmed_seq.
//
// These functions take the request's (possibly tenant-scoped) client and use model queries only, so
// the scope applies: another group's table answers null exactly like a missing one.
import type { BindingState, DestinationBinding, PrismaClient } from "../generated/prisma/client";
import { guidanceFor, type BindingGuidance } from "./guidance";
import { normaliseCounts, type FlushCounts } from "./plan";

export interface BindingRef {
  tableId: string;
  provider: string;
}

export interface BindingView {
  id: string;
  table_id: string;
  connection_id: string;
  provider: string;
  remote_list_id: string;
  state: BindingState;
  confirmed_seq: string;
  log_head: string;
  lag: number;
  last_flush_at: string | null;
  last_error: string | null;
  last_flush_counts: FlushCounts;
  last_resync_run_handle: string | null;
  guidance: BindingGuidance;
}

const TRANSITIONS = {
  pause: { from: ["active", "error"], to: { state: "paused" } },
  resume: { from: ["paused", "error"], to: { state: "active", failureCount: 0, nextAttemptAt: null } },
} as const;

/** Pauses delivery; the binding view, or null when the table or its binding is not in scope. */
export const pauseBinding = (db: PrismaClient, ref: BindingRef) => transition(db, ref, "pause");

/** Resumes delivery from the saved cursor; the binding view, or null as for pause. */
export const resumeBinding = (db: PrismaClient, ref: BindingRef) => transition(db, ref, "resume");

async function transition(db: PrismaClient, ref: BindingRef, name: keyof typeof TRANSITIONS): Promise<BindingView | null> {
  const binding = await findBinding(db, ref);
  if (!binding) return null;
  const t = TRANSITIONS[name];
  // No match (already in the target state) is the idempotent case, not an error.
  await db.destinationBinding.updateMany({
    where: { id: binding.id, state: { in: [...t.from] } },
    data: { ...t.to },
  });
  const current = await db.destinationBinding.findFirst({ where: { id: binding.id } });
  return current && bindingView(db, current);
}

/** The binding of a table visible in the caller's scope (the table check applies property narrowing). */
export async function findBinding(db: PrismaClient, ref: BindingRef): Promise<DestinationBinding | null> {
  const table = await db.guestTable.findFirst({ where: { id: ref.tableId }, select: { id: true } });
  if (!table) return null;
  return db.destinationBinding.findFirst({ where: { tableId: table.id, provider: ref.provider } });
}

export async function bindingView(db: PrismaClient, binding: DestinationBinding): Promise<BindingView> {
  const [head, table] = await Promise.all([
    db.tableMembershipChange.aggregate({ where: { tableId: binding.tableId }, _max: { seq: true } }),
    db.guestTable.findFirst({ where: { id: binding.tableId }, select: { filterDoc: true } }),
  ]);
  const logHead = head._max.seq ?? binding.confirmedSeq;
  const lag = logHead > binding.confirmedSeq ? Number(logHead - binding.confirmedSeq) : 0;
  return {
    id: binding.id,
    table_id: binding.tableId,
    connection_id: binding.connectionId,
    provider: binding.provider,
    remote_list_id: binding.remoteListId,
    state: binding.state,
    confirmed_seq: binding.confirmedSeq.toString(),
    log_head: logHead.toString(),
    lag,
    last_flush_at: binding.lastFlushAt?.toISOString() ?? null,
    last_error: binding.lastError,
    last_flush_counts: normaliseCounts(binding.lastFlushCounts),
    last_resync_run_handle: binding.lastResyncRunHandle,
    guidance: guidanceFor(table?.filterDoc ?? null),
  };
}
