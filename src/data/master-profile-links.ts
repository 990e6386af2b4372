// Master profile links: how identity resolution joined each guest profile to its master profile
// (docs/identity-resolution.md). Read in SQL, prepared: a master has a handful of links, read in one
// statement for every master of a request, and the guest_context tool reads them on every call
// (through Prisma they cost it ~1.3 ms of CPU). Scoped like guest profiles (data/tenant.ts): a
// property-pinned caller sees the links of its property's profiles.
import type { Readers } from "./readers";
import { anyOf, columns, sql } from "./sql";
import { MasterProfileLink, type RowOf } from "./models";

export interface MatchedField {
  field: string;
  value: string | null;
}

/** A link as stored: confidence as decimal text, matched fields as JSON. */
type StoredRow = RowOf<typeof MasterProfileLink>;

export type MasterProfileLinkRow = Omit<StoredRow, "confidence" | "matchedFields"> & {
  confidence: number;
  matchedFields: MatchedField[];
};

const c = columns("MasterProfileLink");
/** A master's links in the order they were made: linked_at, then id. */
const IN_ORDER = sql`${c("linkedAt")}, ${c("id")}`;

const asRow = (row: StoredRow): MasterProfileLinkRow => ({ ...row, confidence: Number(row.confidence), matchedFields: row.matchedFields as MatchedField[] });

export function masterProfileLinks(r: Readers) {
  const linksWhere = async (field: "masterProfileId" | "guestProfileId", ids: readonly string[]) =>
    (await r.sql.rows<StoredRow>({ from: "MasterProfileLink", shape: MasterProfileLink.row, where: [anyOf(c(field), ids)], orderBy: IN_ORDER, prepare: true })).map(asRow);
  return {
    /** The links of these master profiles, each master's in order (one statement). */
    ofMasters: (ids: readonly string[]): Promise<MasterProfileLinkRow[]> => linksWhere("masterProfileId", ids),

    /** The link of each of these guest profiles (one statement). */
    ofGuests: (ids: readonly string[]): Promise<MasterProfileLinkRow[]> => linksWhere("guestProfileId", ids),
  };
}
