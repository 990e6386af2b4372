// Loyalty programs and members; channels and spaces (the "resources").
import type { Prisma } from "../../generated/prisma/client";
import { getById, given, keysetList } from "./lists";

interface LoyaltyProgramFilter {
  active?: boolean | null;
}

interface LoyaltyMemberFilter {
  programId?: string | null;
  guestProfileId?: string | null;
  masterProfileId?: string | null;
  memberNumber?: string | null;
  tier?: string | null;
  status?: string | null;
  updatedSince?: Date | null;
}

interface ChannelFilter {
  propertyId?: string | null;
  kind?: string | null;
  active?: boolean | null;
}

interface SpaceFilter extends ChannelFilter {
  minCapacity?: number | null;
}

interface Tier {
  code: string;
  name: string;
  threshold_points: number;
}

export const loyaltyResourceResolvers = {
  Query: {
    loyaltyPrograms: keysetList<LoyaltyProgramFilter, Prisma.LoyaltyProgramGetPayload<object>>(
      "loyalty_programs",
      (db, args) => db.loyaltyProgram.findMany(args),
      (f) => given({ active: f.active }),
    ),
    loyaltyMembers: keysetList<LoyaltyMemberFilter, Prisma.LoyaltyMemberGetPayload<object>>(
      "loyalty_members",
      (db, args) => db.loyaltyMember.findMany(args),
      (f) =>
        given({
          programId: f.programId,
          guestProfileId: f.guestProfileId,
          masterProfileId: f.masterProfileId,
          memberNumber: f.memberNumber,
          tier: f.tier,
          status: f.status,
          updatedAt: f.updatedSince == null ? undefined : { gte: f.updatedSince },
        }),
    ),
    loyaltyMember: getById("loyalty member", (db, id) => db.loyaltyMember.findUnique({ where: { id } })),
    channels: keysetList<ChannelFilter, Prisma.ChannelGetPayload<object>>(
      "channels",
      (db, args) => db.channel.findMany(args),
      (f) => given({ propertyId: f.propertyId, kind: f.kind, active: f.active }),
    ),
    spaces: keysetList<SpaceFilter, Prisma.SpaceGetPayload<object>>(
      "spaces",
      (db, args) => db.space.findMany(args),
      (f) =>
        given({ propertyId: f.propertyId, kind: f.kind, active: f.active, capacity: f.minCapacity == null ? undefined : { gte: f.minCapacity } }),
    ),
  },
  LoyaltyProgram: {
    tiers: (p: { tiers: unknown }) =>
      (Array.isArray(p.tiers) ? (p.tiers as Tier[]) : []).map((t) => ({ code: t.code, name: t.name, thresholdPoints: t.threshold_points })),
  },
};
