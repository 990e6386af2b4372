// Loyalty programs and members; channels and spaces (the "resources"): data/loyalty.ts and
// data/properties.ts.
import { loyaltyKeyOf, type LoyaltyMemberFilter, type LoyaltyProgramFilter } from "../../data/loyalty";
import { resourceKeyOf, type ChannelFilter, type SpaceFilter } from "../../data/properties";
import { getById, guestOfRow, keysetList } from "./lists";

interface Tier {
  code: string;
  name: string;
  threshold_points: number;
}

type Keyed = { createdAt: string; id: string };

export const loyaltyResourceResolvers = {
  Query: {
    loyaltyPrograms: keysetList<LoyaltyProgramFilter, Keyed>("loyalty_programs", loyaltyKeyOf, (ctx) => ctx.data.loyalty.programPage),
    loyaltyMembers: keysetList<LoyaltyMemberFilter, Keyed>("loyalty_members", loyaltyKeyOf, (ctx) => ctx.data.loyalty.memberPage),
    loyaltyMember: getById("loyalty member", (ctx, id) => ctx.data.loyalty.memberById(id)),
    channels: keysetList<ChannelFilter, Keyed>("channels", resourceKeyOf, (ctx) => ctx.data.properties.channelPage),
    spaces: keysetList<SpaceFilter, Keyed>("spaces", resourceKeyOf, (ctx) => ctx.data.properties.spacePage),
  },
  LoyaltyMember: { guest: guestOfRow },
  LoyaltyProgram: {
    tiers: (p: { tiers: unknown }) =>
      (Array.isArray(p.tiers) ? (p.tiers as Tier[]) : []).map((t) => ({ code: t.code, name: t.name, thresholdPoints: t.threshold_points })),
  },
};
