// Consent: the stored observations, and the effective status per contact point and purpose
// (data/consents.ts decides it, group-wide, spec 1.5).
import type { RequestContext } from "../../context";
import { consentKeyKeyOf, consentKeyOf, contactValueOf, type ConsentFilter } from "../../data/consents";
import { normaliseContact } from "../../consent/precedence";
import { checkedPurpose } from "./contact-permission";
import { boundPage, guestOfRow, keysetList, type PageArgs } from "./lists";

/** The filter with its purpose checked as every consent question checks it (checkedPurpose). */
async function withKnownPurpose<F extends { purpose?: string | null }>(ctx: RequestContext, args: PageArgs<F>): Promise<PageArgs<F>> {
  const purpose = args.filter?.purpose;
  return purpose == null ? args : { ...args, filter: { ...args.filter!, purpose: await checkedPurpose(ctx, purpose) } };
}

interface EffectiveConsentFilter {
  contactValue?: string | null;
  purpose?: string | null;
  guestProfileId?: string | null;
}

/** Contact points of a guest profile in scope, normalised; none when the guest is not in scope. */
async function contactsOfGuest(ctx: RequestContext, guestProfileId: string): Promise<string[]> {
  const guest = await ctx.loaders.guest.load(guestProfileId);
  if (!guest) return [];
  return [guest.email && normaliseContact("email", guest.email), guest.phone && normaliseContact("phone", guest.phone)].filter(
    (v): v is string => Boolean(v),
  );
}

/**
 * Effective consent, keyset-paged over (contact_value, purpose, contact_type). The keys are those the
 * caller can see (its scope, so a property-narrowed caller sees the contacts observed there); the
 * status of each is decided by every observation of that contact and purpose in the whole group
 * (spec 1.5), so a withdrawal recorded at another property still wins.
 */
async function effectiveConsents(_: unknown, given: PageArgs<EffectiveConsentFilter>, ctx: RequestContext) {
  const args = await withKnownPurpose(ctx, given);
  const f = args.filter ?? {};
  const asked = f.contactValue == null ? undefined : contactValueOf(f.contactValue);
  const ofGuest = f.guestProfileId == null ? undefined : await contactsOfGuest(ctx, f.guestProfileId);
  const values = ofGuest !== undefined ? (asked === undefined ? ofGuest : ofGuest.filter((c) => c === asked)) : asked === undefined ? undefined : [asked];
  return boundPage(
    "effective_consents",
    args,
    ctx,
    consentKeyKeyOf,
    async (_filter, after, take) => {
      const keys = await ctx.data.consents.keys(values, f.purpose, after, take);
      if (keys.length === 0) return [];
      const decisions = await ctx.data.consents.decide([...new Set(keys.map((k) => k.contactValue))], f.purpose == null ? {} : { purpose: f.purpose });
      const byKey = new Map(decisions.map((d) => [`${d.contactValue}\u0000${d.purpose}\u0000${d.contactType}`, d.effective]));
      return keys.map((k) => ({ ...k, ...byKey.get(`${k.contactValue}\u0000${k.purpose}\u0000${k.contactType}`)! }));
    },
    () => ({ f, propertyId: ctx.scope.propertyId }),
  );
}

const observations = keysetList<ConsentFilter, { createdAt: string; id: string }>("consents", consentKeyOf, (ctx) => ctx.data.consents.page);

export const consentResolvers = {
  Query: {
    consents: async (parent: unknown, args: PageArgs<ConsentFilter>, ctx: RequestContext) => observations(parent, await withKnownPurpose(ctx, args), ctx),
    effectiveConsents,
  },
  ConsentObservation: { guest: guestOfRow },
  EffectiveConsent: {
    /** The one person holding the contact point (loaders: guestIdByContact), as that person's guest profile. */
    guest: async (e: { contactType: string; contactValue: string }, _: unknown, ctx: RequestContext) => {
      const id = await ctx.loaders.guestIdByContact.load(`${e.contactType}\u0000${e.contactValue}`);
      return id ? ctx.loaders.guest.load(id) : null;
    },
  },
};
