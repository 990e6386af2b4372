// Destination binding state machine (spec 3.2) and the binding view (spec 2.2).
//
//   pause:  active | error  → paused   (paused stays paused: idempotent)
//   resume: paused | error  → active   (active stays active: no-op); clears the backoff so delivery
//                                      continues at once from the saved confirmed_seq
//   engine: active → error on a permanent destination failure (engine.ts)
//
// Each transition is ONE statement, `UPDATE … RETURNING`, and the answer is built from the row it
// returns: under concurrent pause and resume calls every response reports the state its own
// request produced (a re-read afterwards could already see the next caller's change). A flush holds
// the binding by a lease, not a lock, so the UPDATE never waits for one; the engine reads the state
// at its checkpoint before each destination call and stops at a pause. A pause always ends paused
// and a resume always ends active, whatever the engine wrote meanwhile. Neither touches confirmed_seq.
//
// The binding is first found through the request's (possibly tenant-scoped) client with model
// queries, so the scope applies: another group's table answers null exactly like a missing one.
// The UPDATE then names that binding by id and group.
import type { DataClient as PrismaClient } from "../data/client";
import * as store from "../data/stores/delivery";
import type { BindingState, BindingTransition, DestinationBinding } from "../data/stores/delivery";
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

/** Pauses delivery; the binding view, or null when the table or its binding is not in scope. */
export const pauseBinding = (db: PrismaClient, ref: BindingRef) => transition(db, ref, "pause");

/** Resumes delivery from the saved cursor; the binding view, or null as for pause. */
export const resumeBinding = (db: PrismaClient, ref: BindingRef) => transition(db, ref, "resume");

async function transition(db: PrismaClient, ref: BindingRef, name: BindingTransition): Promise<BindingView | null> {
  const binding = await findBinding(db, ref);
  if (!binding) return null;
  const row = await store.updateBindingState(db, binding, name);
  // No row: the binding (or its table) was deleted after it was found.
  return row ? bindingView(db, row) : null;
}

/** The binding of a table visible in the caller's scope (the table check applies property narrowing). */
export function findBinding(db: PrismaClient, ref: BindingRef): Promise<DestinationBinding | null> {
  return store.findBinding(db, ref.tableId, ref.provider);
}

export async function bindingView(db: PrismaClient, binding: DestinationBinding): Promise<BindingView> {
  const { logHead: head, filterDoc } = await store.bindingTableState(db, binding.tableId);
  const logHead = head ?? binding.confirmedSeq;
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
    guidance: guidanceFor(filterDoc),
  };
}
