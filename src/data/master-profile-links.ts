// Master profile links: how identity resolution joined each guest profile to its master profile
// (docs/identity-resolution.md). Read through Prisma: a master has a handful of links, read in one
// statement for every master of a request. Scoped like guest profiles (data/tenant.ts): a
// property-pinned caller sees the links of its property's profiles.
import type { Prisma } from "../generated/prisma/client";
import { instantsAsText, type AsText } from "./prisma-rows";
import type { Readers } from "./readers";

export interface MatchedField {
  field: string;
  value: string | null;
}

export type MasterProfileLinkRow = Omit<AsText<Prisma.MasterProfileLinkGetPayload<object>>, "confidence" | "matchedFields"> & {
  confidence: number;
  matchedFields: MatchedField[];
};

/** A master's links in the order they were made: linked_at, then id. */
const IN_ORDER = [{ linkedAt: "asc" as const }, { id: "asc" as const }];

function asRow(row: Prisma.MasterProfileLinkGetPayload<object>): MasterProfileLinkRow {
  return { ...instantsAsText(row), confidence: Number(row.confidence), matchedFields: row.matchedFields as unknown as MatchedField[] };
}

export function masterProfileLinks(r: Readers) {
  return {
    /** The links of these master profiles, each master's in order (one statement). */
    ofMasters: async (ids: readonly string[]): Promise<MasterProfileLinkRow[]> =>
      (await r.prisma.masterProfileLink.findMany({ where: { masterProfileId: { in: [...ids] } }, orderBy: IN_ORDER })).map(asRow),

    /** The link of each of these guest profiles (one statement). */
    ofGuests: async (ids: readonly string[]): Promise<MasterProfileLinkRow[]> =>
      (await r.prisma.masterProfileLink.findMany({ where: { guestProfileId: { in: [...ids] } }, orderBy: IN_ORDER })).map(asRow),
  };
}
