// The destination binding view (spec 2.2), built from a binding row and its table's state
// (data/destinations.ts reads them, and runs pause and resume as one UPDATE each).
//
//   engine: active → error on a permanent destination failure (engine.ts)
//
// A flush holds the binding by a lease, not a lock, so a pause or resume UPDATE never waits for
// one; the engine reads the state at its checkpoint before each destination call and stops at a
// pause. A pause always ends paused and a resume always ends active, whatever the engine wrote
// meanwhile. Neither touches confirmed_seq.
import type { DataClient as PrismaClient } from "../data/client";
import { transitionBinding, type BindingRef, type BindingRow } from "../data/destinations";
import { guidanceFor, type BindingGuidance } from "./guidance";
import { normaliseCounts, type FlushCounts } from "./plan";

export type { BindingRef, BindingRow };
export type BindingState = "active" | "paused" | "error";

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
export const pauseBinding = async (db: PrismaClient, ref: BindingRef) => viewOrNull(await transitionBinding(db, ref, "pause"));

/** Resumes delivery from the saved cursor; the binding view, or null as for pause. */
export const resumeBinding = async (db: PrismaClient, ref: BindingRef) => viewOrNull(await transitionBinding(db, ref, "resume"));

const viewOrNull = (row: BindingRow | null) => (row ? bindingView(row) : null);

export function bindingView(binding: BindingRow): BindingView {
  const confirmedSeq = BigInt(binding.confirmedSeq);
  const logHead = binding.logHead === null ? confirmedSeq : BigInt(binding.logHead);
  const lag = logHead > confirmedSeq ? Number(logHead - confirmedSeq) : 0;
  return {
    id: binding.id,
    table_id: binding.tableId,
    connection_id: binding.connectionId,
    provider: binding.provider,
    remote_list_id: binding.remoteListId,
    state: binding.state as BindingState,
    confirmed_seq: confirmedSeq.toString(),
    log_head: logHead.toString(),
    lag,
    last_flush_at: binding.lastFlushAt,
    last_error: binding.lastError,
    last_flush_counts: normaliseCounts(binding.lastFlushCounts),
    last_resync_run_handle: binding.lastResyncRunHandle,
    guidance: guidanceFor(binding.filterDoc),
  };
}
