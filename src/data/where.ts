// Small builders of where-fragments shared by the data/ modules: Prisma ones, and the guest filters in SQL.
import { escapeLike } from "../db/like";
import { GUEST_KEYS, guests } from "./guests";
import type { Readers } from "./readers";
import { anyOf, equals, sql, type Sql } from "./sql";
import { rangeEnd, rangeStart } from "../validate";

type Where = Record<string, unknown>;

/** Keeps only the filter members that were given: `{ a: x, b: undefined }` → `{ a: x }`. */
export function given(where: Where): Where {
  return Object.fromEntries(Object.entries(where).filter(([, v]) => v !== undefined && v !== null));
}

/** `from ≤ x` and `x ≤ to` (dates) or `x < to` (instants, so adjacent windows do not overlap). */
export function range(from: Date | null | undefined, to: Date | null | undefined, toExclusive: boolean) {
  if (from == null && to == null) return undefined;
  // A date given as an instant range's end takes that whole day in (validate.ts rangeEnd).
  return given({ gte: from && rangeStart(from), ...(toExclusive ? { lt: to && rangeEnd(to) } : { lte: to }) });
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

/** Case-insensitive equality, for e-mail addresses and other natural keys typed by people. */
export const insensitive = (value: string | null | undefined) =>
  value == null ? undefined : { equals: escapeLike(value), mode: "insensitive" as const };

/**
 * The guest_profile_id and master_profile_id filters of a family with a guest_profile_id column:
 * both may be given, and a row must match both. Unclustered guests never match a master profile.
 */
export async function guestFilter(r: Readers, f: { guestProfileId?: string | null; masterProfileId?: string | null }) {
  const ofMaster = await guestIdsOfMaster(r, f.masterProfileId);
  return { AND: [given({ guestProfileId: f.guestProfileId }), given({ guestProfileId: ofMaster })] };
}

/** The same two filters in SQL on a guest_profile_id `column`; undefined entries are filters not given. */
export async function guestConditions(r: Readers, f: { guestProfileId?: string | null; masterProfileId?: string | null }, column: Sql) {
  const ofMaster = await guestIdsOfMaster(r, f.masterProfileId);
  return [equals(column, f.guestProfileId), ofMaster && anyOf(column, ofMaster.in)];
}

/**
 * Ids of the guest profiles (in scope) clustered into a master profile, as a Prisma `in`;
 * `undefined` when there is no such filter.
 */
export async function guestIdsOfMaster(r: Readers, masterProfileId: string | null | undefined) {
  if (masterProfileId == null) return undefined;
  const rows = await guests(r).byMasterProfiles<{ id: string }>([masterProfileId], GUEST_KEYS);
  return { in: rows.map((g) => g.id) };
}
