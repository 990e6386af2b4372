// Loyalty programs and their members, in scoped SQL (data/sql.ts: a page of 100 members through
// Prisma cost the service 6 ms of CPU).
import type { CursorKey } from "../pagination/cursor";
import { createdAtKey, createdAtSql } from "./keyset";
import { anyOf, columns, empty, equals, equalsText, raw, sql } from "./sql";
import { LoyaltyMember, LoyaltyProgram, type RowOf } from "./models";
import type { Readers } from "./readers";
import { since } from "./where";

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

export type LoyaltyProgramRow = RowOf<typeof LoyaltyProgram>;
/** A membership as read in SQL: instants as ISO text. */
export type LoyaltyMemberRow = RowOf<typeof LoyaltyMember>;
const programs = createdAtSql("LoyaltyProgram");
const members = createdAtSql("LoyaltyMember");
const M = columns("LoyaltyMember");
const P = columns("LoyaltyProgram");

export const loyaltyKeyOf = createdAtKey;

export function loyalty(r: Readers) {
  return {
    programPage: (f: LoyaltyProgramFilter, after: CursorKey | null, take: number): Promise<LoyaltyProgramRow[]> =>
      programs.page<LoyaltyProgramRow>(r.sql, [equals(P("active"), f.active)], after, take, LoyaltyProgram.row),

    memberPage: async (f: LoyaltyMemberFilter, after: CursorKey | null, take: number): Promise<LoyaltyMemberRow[]> => {
      const conditions = [
        equals(M("programId"), f.programId),
        equals(M("guestProfileId"), f.guestProfileId),
        equals(M("masterProfileId"), f.masterProfileId),
        equals(M("memberNumber"), f.memberNumber),
        equals(M("tier"), f.tier),
        equalsText(M("status"), f.status),
        since(M("updatedAt"), f.updatedSince),
      ];
      return members.page<LoyaltyMemberRow>(r.sql, conditions, after, take, LoyaltyMember.row);
    },
    memberById: async (id: string): Promise<LoyaltyMemberRow | null> => (await members.byId<LoyaltyMemberRow>(r.sql, id, LoyaltyMember.row)) ?? null,

    membersOfGuests: (ids: readonly string[]): Promise<LoyaltyMemberRow[]> =>
      r.sql.rows<LoyaltyMemberRow>({ from: "LoyaltyMember", shape: LoyaltyMember.row, where: [anyOf(M("guestProfileId"), ids)], orderBy: members.orderBy }),
    membersOfMasterProfiles: (ids: readonly string[]): Promise<LoyaltyMemberRow[]> =>
      r.sql.rows<LoyaltyMemberRow>({ from: "LoyaltyMember", shape: LoyaltyMember.row, where: [anyOf(M("masterProfileId"), ids)], orderBy: members.orderBy }),

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
