// Loyalty programs and their members. Read through Prisma: not a hot path.
import type { Prisma } from "../generated/prisma/client";
import type { CursorKey } from "../pagination/cursor";
import { createdAtKey, createdAtPrisma } from "./keyset";
import { allInstantsAsText, instantsAsText, type AsText } from "./prisma-rows";
import type { Readers } from "./readers";
import { given } from "./where";

export interface LoyaltyProgramFilter {
  active?: boolean | null;
}

export interface LoyaltyMemberFilter {
  programId?: string | null;
  guestProfileId?: string | null;
  masterProfileId?: string | null;
  memberNumber?: string | null;
  tier?: string | null;
  status?: string | null;
  updatedSince?: Date | null;
}

export type LoyaltyProgramRow = AsText<Prisma.LoyaltyProgramGetPayload<object>>;
export type LoyaltyMemberRow = AsText<Prisma.LoyaltyMemberGetPayload<object>>;

export const loyaltyKeyOf = createdAtKey;

export function loyalty(r: Readers) {
  return {
    programPage: async (f: LoyaltyProgramFilter, after: CursorKey | null, take: number): Promise<LoyaltyProgramRow[]> =>
      allInstantsAsText(await r.prisma.loyaltyProgram.findMany(createdAtPrisma.page(given({ active: f.active }), after, take))),

    memberPage: async (f: LoyaltyMemberFilter, after: CursorKey | null, take: number): Promise<LoyaltyMemberRow[]> => {
      const where = given({
        programId: f.programId,
        guestProfileId: f.guestProfileId,
        masterProfileId: f.masterProfileId,
        memberNumber: f.memberNumber,
        tier: f.tier,
        status: f.status,
        updatedAt: f.updatedSince == null ? undefined : { gte: f.updatedSince },
      });
      return allInstantsAsText(await r.prisma.loyaltyMember.findMany(createdAtPrisma.page(where, after, take)));
    },
    // findFirst, not findUnique: Prisma runs the findUniques of one tick as one batch, from the first
    // caller's async context, so another request's lookup would run in that caller's group (db/session.ts).
    memberById: async (id: string): Promise<LoyaltyMemberRow | null> => instantsAsText(await r.prisma.loyaltyMember.findFirst({ where: { id } })),

    membersOfGuests: async (ids: readonly string[]): Promise<LoyaltyMemberRow[]> =>
      allInstantsAsText(await r.prisma.loyaltyMember.findMany(createdAtPrisma.all({ guestProfileId: { in: [...ids] } }))),
    membersOfMasterProfiles: async (ids: readonly string[]): Promise<LoyaltyMemberRow[]> =>
      allInstantsAsText(await r.prisma.loyaltyMember.findMany(createdAtPrisma.all({ masterProfileId: { in: [...ids] } }))),

    /** A person's memberships (of their guest profiles or their master profile), largest first, with their programs. */
    async membershipsOfPerson(guestIds: readonly string[], masterProfileId: string | null) {
      const members = await r.prisma.loyaltyMember.findMany({
        where: { OR: [{ guestProfileId: { in: [...guestIds] } }, ...(masterProfileId ? [{ masterProfileId }] : [])] },
        orderBy: [{ lifetimePoints: "desc" }, { id: "asc" }],
      });
      // Programs in a second statement, not a nested include: one statement per Prisma query (db/sql-count.ts).
      const programs =
        members.length === 0 ? [] : await r.prisma.loyaltyProgram.findMany({ where: { id: { in: [...new Set(members.map((m) => m.programId))] } } });
      return { members: allInstantsAsText(members), programs: allInstantsAsText(programs) };
    },
  };
}
