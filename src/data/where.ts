// Small builders of where-fragments shared by the data/ modules: Prisma ones, and the guest filters in SQL.
import { escapeLike } from "../db/like";
import { GUEST_KEYS, guests } from "./guests";
import type { Readers } from "./readers";
import { anyOf, equals, type Sql } from "./sql";
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
