// Destination bindings of tables, for a request: the bindings of tables with their table's log head
// and filter document (what the binding view, delivery/bindings.ts, is built from), and pause and
// resume as one UPDATE each. The state machine's rules are delivery/bindings.ts's.
//
//   pause:  active | error  → paused   (paused stays paused: idempotent)
//   resume: paused | error  → active   (active stays active: no-op); clears the backoff so delivery
//                                      continues at once from the saved confirmed_seq
//
// Each transition is ONE statement, `UPDATE … RETURNING`, and the answer is built from the row it
// returns: under concurrent pause and resume calls every response reports the state its own
// request produced. The binding is first found through the caller's (possibly scoped) client with
// model queries, so the scope applies: another group's table answers null exactly like a missing one.
import { Prisma, type PrismaClient } from "../generated/prisma/client";
import { DestinationBinding, type RowOf } from "./models";
import type { Readers } from "./readers";
import { raw, renderColumn, selectList, sql } from "./sql";

export interface BindingRef {
  tableId: string;
  provider: string;
}

/** A binding as the view needs it (bigints as decimal text, instants as ISO text), with its table's state. */
export type BindingRow = RowOf<typeof DestinationBinding> & {
  /** The newest seq of the table's membership log; null when it is empty. */
  logHead: string | null;
  filterDoc: unknown;
};

export function destinations(r: Readers) {
  return {
    /** The bindings of these tables, by provider, each with its table's log head and filter document: one statement. */
    ofTables: (tableIds: readonly string[]) =>
      r.sql.query<BindingRow>(
        (scoped) => sql`SELECT ${selectList("DestinationBinding", DestinationBinding.row)},
            (SELECT max(c.seq) FROM table_membership_changes c WHERE c.table_id = t.table_id AND ${scoped("TableMembershipChange", "c")})::text AS "logHead",
            g.filter_doc AS "filterDoc"
          FROM destination_bindings t LEFT JOIN tables g ON g.id = t.table_id AND ${scoped("GuestTable", "g")}
          WHERE ${scoped("DestinationBinding", "t")} AND t.table_id = ANY(${[...tableIds]}::uuid[])
          ORDER BY t.provider`,
      ),
    pause: (ref: BindingRef) => transitionBinding(r.primary, ref, "pause"),
    resume: (ref: BindingRef) => transitionBinding(r.primary, ref, "resume"),
  };
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
export type BindingTransition = keyof typeof TRANSITIONS;

// The declared row as text, as the driver of a Prisma raw query would not give it (bigints, enums).
const RETURNING = raw(
  Object.entries(DestinationBinding.row)
    .map(([field, kind]) => {
      const column = `t.${DestinationBinding.columns[field as keyof typeof DestinationBinding.columns]}`;
      const spec = DestinationBinding.specs[field as keyof typeof DestinationBinding.specs];
      return `${/^(bigint|enum)/.test(spec) ? `${column}::text` : renderColumn(kind, column)} AS "${field}"`;
    })
    .join(", "),
);

/**
 * Pauses or resumes the binding of a table visible through `db` (a scoped client applies property
 * narrowing to the table); null when the table or its binding is not there, or went meanwhile.
 */
export async function transitionBinding(db: PrismaClient, ref: BindingRef, name: BindingTransition): Promise<BindingRow | null> {
  const table = await db.guestTable.findFirst({ where: { id: ref.tableId }, select: { id: true } });
  if (!table) return null;
  const binding = await db.destinationBinding.findFirst({ where: { tableId: table.id, provider: ref.provider }, select: { id: true, propertyGroupId: true } });
  if (!binding) return null;
  const [row] = await db.$queryRaw<RowOf<typeof DestinationBinding>[]>`
    UPDATE destination_bindings t SET ${TRANSITIONS[name]}
    WHERE t.id = ${binding.id}::uuid AND t.property_group_id = ${binding.propertyGroupId}::uuid
    RETURNING ${RETURNING}`;
  if (!row) return null;
  const [head, state] = await Promise.all([
    db.tableMembershipChange.aggregate({ where: { tableId: row.tableId }, _max: { seq: true } }),
    db.guestTable.findFirst({ where: { id: row.tableId }, select: { filterDoc: true } }),
  ]);
  return { ...row, logHead: head._max.seq?.toString() ?? null, filterDoc: state?.filterDoc ?? null };
}
