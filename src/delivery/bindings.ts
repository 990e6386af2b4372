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
// the binding's row lock while it delivers; the UPDATE waits for it and then applies to the row as
// the flush committed it (PostgreSQL re-reads the locked row), so a pause always ends paused and a
// resume always ends active, whatever the engine wrote meanwhile. Neither touches confirmed_seq.
//
// The binding is first found through the request's (possibly tenant-scoped) client with model
// queries, so the scope applies: another group's table answers null exactly like a missing one.
// The UPDATE then names that binding by id and group.
import { Prisma, type BindingState, type DestinationBinding, type PrismaClient } from "../generated/prisma/client";
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

// SET clauses, evaluated against the row as it is when the UPDATE holds its lock. updated_at only
// moves when the state does (the column is @updatedAt for Prisma; raw SQL sets it itself).
const TRANSITIONS = {
  pause: Prisma.sql`state = 'paused',
    updated_at = CASE WHEN state <> 'paused' THEN now() ELSE updated_at END`,
  // The backoff is cleared only when the binding actually moves: resuming an active binding that
  // is backing off after a transient failure changes nothing.
  resume: Prisma.sql`state = 'active',
    failure_count = CASE WHEN state <> 'active' THEN 0 ELSE failure_count END,
    next_attempt_at = CASE WHEN state <> 'active' THEN NULL ELSE next_attempt_at END,
    updated_at = CASE WHEN state <> 'active' THEN now() ELSE updated_at END`,
} as const;

// Column → field, so a RETURNING row has the shape of the Prisma model.
const RETURNING = Prisma.raw(`id, property_group_id AS "propertyGroupId", table_id AS "tableId", connection_id AS "connectionId",
  provider, remote_list_id AS "remoteListId", state::text AS state, confirmed_seq AS "confirmedSeq",
  last_flush_at AS "lastFlushAt", last_error AS "lastError", last_flush_counts AS "lastFlushCounts",
  last_resync_run_handle AS "lastResyncRunHandle", failure_count AS "failureCount", next_attempt_at AS "nextAttemptAt",
  created_at AS "createdAt", updated_at AS "updatedAt"`);

/** Pauses delivery; the binding view, or null when the table or its binding is not in scope. */
export const pauseBinding = (db: PrismaClient, ref: BindingRef) => transition(db, ref, "pause");

/** Resumes delivery from the saved cursor; the binding view, or null as for pause. */
export const resumeBinding = (db: PrismaClient, ref: BindingRef) => transition(db, ref, "resume");

async function transition(db: PrismaClient, ref: BindingRef, name: keyof typeof TRANSITIONS): Promise<BindingView | null> {
  const binding = await findBinding(db, ref);
  if (!binding) return null;
  const [row] = await db.$queryRaw<DestinationBinding[]>`
    UPDATE destination_bindings SET ${TRANSITIONS[name]}
    WHERE id = ${binding.id}::uuid AND property_group_id = ${binding.propertyGroupId}::uuid
    RETURNING ${RETURNING}`;
  // No row: the binding (or its table) was deleted after it was found.
  return row ? bindingView(db, row) : null;
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
