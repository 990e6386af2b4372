// Loyalty programs and their members. Read through Prisma (not a hot path), but for the guest context's one SQL statement.
import type { Prisma } from "../generated/prisma/client";
import type { CursorKey } from "../pagination/cursor";
import { createdAtKey, createdAtPrisma } from "./keyset";
import { allInstantsAsText, instantsAsText, type AsText } from "./prisma-rows";
import type { Readers } from "./readers";
import { given } from "./where";
import { rangeStart } from "../validate";
import { anyOf, empty, raw, sql } from "./sql";

/** A membership as the guest context reads it: its program's labels beside it (null without the program). */
export interface PersonMembership {
  programId: string;
  memberNumber: string;
  tier: string;
  status: string;
  pointsBalance: number;
  programName: string | null;
  programTiers: unknown;
  pointsName: string | null;
}

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
        updatedAt: f.updatedSince == null ? undefined : { gte: rangeStart(f.updatedSince) },
      });
      return allInstantsAsText(await r.prisma.loyaltyMember.findMany(createdAtPrisma.page(where, after, take)));
    },
    memberById: async (id: string): Promise<LoyaltyMemberRow | null> => instantsAsText(await r.prisma.loyaltyMember.findFirst({ where: { id } })),

    membersOfGuests: async (ids: readonly string[]): Promise<LoyaltyMemberRow[]> =>
      allInstantsAsText(await r.prisma.loyaltyMember.findMany(createdAtPrisma.all({ guestProfileId: { in: [...ids] } }))),
    membersOfMasterProfiles: async (ids: readonly string[]): Promise<LoyaltyMemberRow[]> =>
      allInstantsAsText(await r.prisma.loyaltyMember.findMany(createdAtPrisma.all({ masterProfileId: { in: [...ids] } }))),

    /** A person's memberships (of their guest profiles or their master profile), largest first, with their programs. */
    /**
     * A person's memberships (of their guest profiles or their master profile), largest lifetime points
     * first, each with its program's name, tiers and points name: one SQL statement (the guest context).
     */
    membershipsOfPerson: (guestIds: readonly string[], masterProfileId: string | null) =>
      r.sql.query<PersonMembership>(
        (scoped) => sql`SELECT t.program_id AS "programId", t.member_number AS "memberNumber", t.tier, t.status::text AS status,
            t.points_balance AS "pointsBalance", p.name AS "programName", p.tiers AS "programTiers", p.points_name AS "pointsName"
          FROM loyalty_members t
          LEFT JOIN loyalty_programs p ON p.id = t.program_id AND ${scoped("LoyaltyProgram", "p")}
          WHERE ${scoped("LoyaltyMember", "t")} AND (${anyOf(raw("t.guest_profile_id"), guestIds)}${
            masterProfileId ? sql` OR t.master_profile_id = ${masterProfileId}::uuid` : empty
          })
          ORDER BY t.lifetime_points DESC, t.id`,
        { prepare: true },
      ),
  };
}
