// Loyalty programs and their members. Read through Prisma: not a hot path.
import type { Prisma } from "../generated/prisma/client";
import type { CursorKey } from "../pagination/cursor";
import { createdAtKeyOfDate, createdAtPrisma } from "./keyset";
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

export type LoyaltyProgramRow = Prisma.LoyaltyProgramGetPayload<object>;
export type LoyaltyMemberRow = Prisma.LoyaltyMemberGetPayload<object>;

export const loyaltyKeyOf = createdAtKeyOfDate;

export function loyalty(r: Readers) {
  return {
    programPage: (f: LoyaltyProgramFilter, after: CursorKey | null, take: number) =>
      r.prisma.loyaltyProgram.findMany({ where: { AND: [given({ active: f.active }), createdAtPrisma.after(after)] }, orderBy: createdAtPrisma.orderBy, take }),

    memberPage: (f: LoyaltyMemberFilter, after: CursorKey | null, take: number) =>
      r.prisma.loyaltyMember.findMany({
        where: {
          AND: [
            given({
              programId: f.programId,
              guestProfileId: f.guestProfileId,
              masterProfileId: f.masterProfileId,
              memberNumber: f.memberNumber,
              tier: f.tier,
              status: f.status,
              updatedAt: f.updatedSince == null ? undefined : { gte: f.updatedSince },
            }),
            createdAtPrisma.after(after),
          ],
        },
        orderBy: createdAtPrisma.orderBy,
        take,
      }),
    memberById: (id: string) => r.prisma.loyaltyMember.findUnique({ where: { id } }),

    membersOfGuests: (ids: readonly string[]) =>
      r.prisma.loyaltyMember.findMany({ where: { guestProfileId: { in: [...ids] } }, orderBy: createdAtPrisma.orderBy }),
    membersOfMasterProfiles: (ids: readonly string[]) =>
      r.prisma.loyaltyMember.findMany({ where: { masterProfileId: { in: [...ids] } }, orderBy: createdAtPrisma.orderBy }),

    /** A person's memberships (of their guest profiles or their master profile), largest first, with their programs. */
    async membershipsOfPerson(guestIds: readonly string[], masterProfileId: string | null) {
      const members = await r.prisma.loyaltyMember.findMany({
        where: { OR: [{ guestProfileId: { in: [...guestIds] } }, ...(masterProfileId ? [{ masterProfileId }] : [])] },
        orderBy: [{ lifetimePoints: "desc" }, { id: "asc" }],
      });
      // Programs in a second statement, not a nested include: one statement per Prisma query (db/sql-count.ts).
      const programs =
        members.length === 0 ? [] : await r.prisma.loyaltyProgram.findMany({ where: { id: { in: [...new Set(members.map((m) => m.programId))] } } });
      return { members, programs };
    },
  };
}
