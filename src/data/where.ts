// Small builders of where-fragments shared by the data/ modules: a Prisma one, the ranges and the guest filters in SQL.
import { GUEST_KEYS, guests } from "./guests";
import type { Readers } from "./readers";
import { equals, sql, type Sql } from "./sql";
import { tenantSql } from "./tenant";
import { rangeEnd, rangeStart } from "../validate";

type Where = Record<string, unknown>;

/** Keeps only the filter members that were given: `{ a: x, b: undefined }` → `{ a: x }`. */
export function given(where: Where): Where {
  return Object.fromEntries(Object.entries(where).filter(([, v]) => v !== undefined && v !== null));
}

/** A date column's bound as SQL text: YYYY-MM-DD. */
export const dateText = (d: Date) => d.toISOString().slice(0, 10);
/** An instant column's bound as SQL text: ISO 8601, UTC. */
export const instantText = (d: Date) => d.toISOString();

/**
 * `from <= column` and `column <= to` (dates) or `column < to` (instants, so adjacent windows do not
 * overlap; a date given as the end takes that whole day in), each bound as text of `format`.
 * Undefined entries are bounds not given.
 */
export function between(column: Sql, from: Date | null | undefined, to: Date | null | undefined, format: (d: Date) => string, toExclusive: boolean) {
  return [
    from == null ? undefined : sql`${column} >= ${format(rangeStart(from))}`,
    to == null ? undefined : toExclusive ? exclusiveEnd(column, rangeEnd(to), format) : sql`${column} <= ${format(to)}`,
  ];
}

/** `column >= from`, an instant column (`updated_since`). */
export const since = (column: Sql, from: Date | null | undefined) => between(column, from, undefined, instantText, true)[0];

/** `column < end`; none when the end is past the last storable day (a whole last day given as `_to`). */
const exclusiveEnd = (column: Sql, end: Date | null, format: (d: Date) => string) => (end == null ? undefined : sql`${column} < ${format(end)}`);

/**
 * The guest_profile_id and master_profile_id filters of a family with a guest_profile_id `column`:
 * both may be given, and a row must match both; undefined entries are filters not given. A master
 * profile stands for its guest profiles in scope, read inside the same statement (an InitPlan, whose
 * array the column's index is scanned with): one statement, not a lookup and then the read.
 * Unclustered guests never match a master profile.
 */
export function guestConditions(r: Readers, f: { guestProfileId?: string | null; masterProfileId?: string | null }, column: Sql) {
  return [
    equals(column, f.guestProfileId),
    f.masterProfileId == null
      ? undefined
      : sql`${column} = ANY(ARRAY(SELECT g.id FROM guest_profiles g WHERE ${tenantSql("GuestProfile", r.scope, "g")} AND g.master_profile_id = ${f.masterProfileId}::uuid))`,
  ];
}

/**
 * Ids of the guest profiles (in scope) clustered into a master profile; `undefined` when there is
 * no such filter. For a test of rows already read (data/events.ts matcher); reads filter with guestConditions.
 */
export async function guestIdsOfMaster(r: Readers, masterProfileId: string | null | undefined) {
  if (masterProfileId == null) return undefined;
  const rows = await guests(r).byMasterProfiles<{ id: string }>([masterProfileId], GUEST_KEYS);
  return rows.map((g) => g.id);
}
