// Why profiles merged (docs/identity-resolution.md): a master profile's links, each link's two sides,
// and mergeExplanation, the chain of links that joined two guest profiles. Every read goes through
// the request's loaders, so a page of master profiles costs one statement for all their links, one for
// the guest profiles on either side and one for their source systems, whatever the page size.
import type { RequestContext } from "../../context";
import type { GuestRow } from "../../data/guests";
import type { MasterProfileLinkRow } from "../../data/master-profile-links";
import { notFound } from "../../errors";

/** Where one side of a link comes from: its guest profile's integration and property. */
const sourceOf = (guest: GuestRow | null) => (guest ? { integrationId: guest.integrationId, propertyId: guest.propertyId } : null);

/**
 * The profile a link was matched to, when the request may see it; else null. A link is scoped by its
 * guest side's property, but the profile it names may be at another property, and no identifier of
 * another property's guest may reach a narrowed caller (data/tables.ts). The guest loader answers
 * in scope only, and batches: the profiles of every link of a request cost one statement.
 */
async function linkedInScope(link: MasterProfileLinkRow, ctx: RequestContext): Promise<string | null> {
  if (link.linkedGuestProfileId === null) return null;
  return (await ctx.loaders.guest.load(link.linkedGuestProfileId)) ? link.linkedGuestProfileId : null;
}

interface MergeExplanationArgs {
  guestProfileId: string;
  otherGuestProfileId: string;
}

/** `from`, then the profile each was matched to, up to the master's first profile: each step's link. */
function pathToFirst(from: string, linkOf: Map<string, MasterProfileLinkRow>): MasterProfileLinkRow[] {
  const steps: MasterProfileLinkRow[] = [];
  const seen = new Set<string>();
  for (let at: string | null = from; at !== null && !seen.has(at); ) {
    seen.add(at);
    const link = linkOf.get(at);
    if (!link) break;
    steps.push(link);
    at = link.linkedGuestProfileId;
  }
  return steps;
}

/**
 * The links from `a` to `b` through the link tree of their master: up from `a` to the profile both
 * paths share, then down to `b`. Null when the recorded links in scope do not connect them.
 */
export function chainBetween(a: string, b: string, links: MasterProfileLinkRow[]): MasterProfileLinkRow[] | null {
  const linkOf = new Map(links.map((l) => [l.guestProfileId, l]));
  const up = pathToFirst(a, linkOf);
  const down = pathToFirst(b, linkOf);
  // The profiles on b's path, each with how many of b's links lie below it.
  const onDown = new Map<string, number>([[b, 0]]);
  down.forEach((link, i) => link.linkedGuestProfileId && onDown.set(link.linkedGuestProfileId, i + 1));
  if (onDown.has(a)) return down.slice(0, onDown.get(a)).reverse();
  for (let i = 0; i < up.length; i++) {
    const meet = up[i].linkedGuestProfileId;
    if (meet !== null && onDown.has(meet)) return [...up.slice(0, i + 1), ...down.slice(0, onDown.get(meet)).reverse()];
  }
  return null;
}

async function mergeExplanation(_: unknown, args: MergeExplanationArgs, ctx: RequestContext) {
  const { guestProfileId: a, otherGuestProfileId: b } = args;
  const [guest, other] = await Promise.all([ctx.loaders.guest.load(a), ctx.loaders.guest.load(b)]);
  if (!guest) throw notFound("guest profile", a);
  if (!other) throw notFound("guest profile", b);
  const master = guest.masterProfileId;
  if (a === b) return { joined: true, masterProfileId: master, chain: [], reason: "Both ids name the same guest profile." };
  const none = [guest, other].filter((g) => g.masterProfileId === null).map((g) => g.id);
  if (none.length > 0) {
    return { joined: false, masterProfileId: null, chain: [], reason: `Not joined: guest profile ${none.join(" and ")} ${none.length > 1 ? "are" : "is"} in no master profile.` };
  }
  if (master !== other.masterProfileId) {
    return {
      joined: false,
      masterProfileId: null,
      chain: [],
      reason: `Not joined: guest profile ${a} is in master profile ${master} and guest profile ${b} in master profile ${other.masterProfileId}.`,
    };
  }
  // Only links whose both sides are in scope: a chain through a profile at another property would
  // name that profile and its matched values, so it is no chain in scope.
  const links = await ctx.loaders.linksByMaster.load(master!);
  const visible = await Promise.all(links.map(async (l) => l.linkedGuestProfileId === null || (await linkedInScope(l, ctx)) !== null));
  const chain = chainBetween(a, b, links.filter((_, i) => visible[i]));
  if (chain === null) {
    return {
      joined: true,
      masterProfileId: master,
      chain: [],
      reason: `Joined in master profile ${master}, but no chain of links in scope connects them (a profile between them is at another property, or was linked before links were recorded).`,
    };
  }
  const steps = chain.map((l) => `${l.guestProfileId} matched ${l.linkedGuestProfileId} by ${l.rule}`).join("; ");
  return { joined: true, masterProfileId: master, chain, reason: `Joined in master profile ${master} by ${chain.length} link${chain.length === 1 ? "" : "s"}: ${steps}.` };
}

export const masterProfileLinkResolvers = {
  Query: {
    masterProfileLinks: async (_: unknown, args: { masterProfileId: string }, ctx: RequestContext) => {
      if (!(await ctx.loaders.masterProfile.load(args.masterProfileId))) throw notFound("master profile", args.masterProfileId);
      return ctx.loaders.linksByMaster.load(args.masterProfileId);
    },
    mergeExplanation,
  },
  MasterProfile: {
    links: (row: { id: string }, _: unknown, ctx: RequestContext) => ctx.loaders.linksByMaster.load(row.id),
  },
  MasterProfileLink: {
    linkedGuestProfileId: (link: MasterProfileLinkRow, _: unknown, ctx: RequestContext) => linkedInScope(link, ctx),
    guest: async (link: MasterProfileLinkRow, _: unknown, ctx: RequestContext) => sourceOf(await ctx.loaders.guest.load(link.guestProfileId)),
    linkedGuest: async (link: MasterProfileLinkRow, _: unknown, ctx: RequestContext) =>
      link.linkedGuestProfileId === null ? null : sourceOf(await ctx.loaders.guest.load(link.linkedGuestProfileId)),
  },
  LinkedProfileSource: {
    sourceSystem: (side: { integrationId: string }, _: unknown, ctx: RequestContext) => ctx.loaders.integrationProvider.load(side.integrationId),
  },
  GuestSourceProfile: {
    link: async (profile: { guestProfileId: string }, _: unknown, ctx: RequestContext) => {
      const link = await ctx.loaders.linkByGuest.load(profile.guestProfileId);
      return link && { linkedTo: await linkedInScope(link, ctx), rule: link.rule, matchedOn: link.matchedFields.map((f) => f.field), confidence: link.confidence };
    },
  },
};
