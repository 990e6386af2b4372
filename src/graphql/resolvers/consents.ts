// Consent: the stored observations, and the effective status per contact point and purpose.
import type { GraphQLContext } from "../../context";
import type { Prisma } from "../../generated/prisma/client";
import { effectiveConsent } from "../../consent/precedence";
import { keysetPage } from "../../pagination/keyset";
import { given, guestIdsOfMaster, insensitive, keysetList, range, type PageArgs } from "./lists";

interface ConsentFilter {
  guestProfileId?: string | null;
  masterProfileId?: string | null;
  contactValue?: string | null;
  purpose?: string | null;
  status?: string | null;
  propertyId?: string | null;
  observedFrom?: Date | null;
  observedTo?: Date | null;
}

interface EffectiveConsentFilter {
  contactValue?: string | null;
  purpose?: string | null;
  guestProfileId?: string | null;
}

type Observation = Prisma.ConsentObservationGetPayload<object>;

async function consentWhere(f: ConsentFilter, ctx: GraphQLContext): Promise<Prisma.ConsentObservationWhereInput> {
  const ofMaster = await guestIdsOfMaster(ctx, f.masterProfileId);
  return {
    ...given({
      contactValue: insensitive(f.contactValue?.trim()),
      purpose: f.purpose,
      status: f.status,
      propertyId: f.propertyId,
      observedAt: range(f.observedFrom, f.observedTo, true),
    }),
    AND: [given({ guestProfileId: f.guestProfileId }), given({ guestProfileId: ofMaster })],
  };
}

/** Contact points of a guest profile in scope; none when the guest is not in scope. */
async function contactsOfGuest(ctx: GraphQLContext, guestProfileId: string): Promise<string[]> {
  const guest = await ctx.loaders.guest.load(guestProfileId);
  if (!guest) return [];
  return [guest.email?.toLowerCase(), guest.phone].filter((v): v is string => Boolean(v));
}

/**
 * Effective consent, keyset-paged over (contact_value, purpose, contact_type). The keys are those the
 * caller can see (its scope, so a property-narrowed caller sees the contacts observed there); the
 * status of each is decided by every observation of that contact and purpose in the whole group
 * (spec 1.5), so a withdrawal recorded at another property still wins.
 */
async function effectiveConsents(_: unknown, args: PageArgs<EffectiveConsentFilter>, ctx: GraphQLContext) {
  const f = args.filter ?? {};
  const contacts = f.guestProfileId == null ? undefined : await contactsOfGuest(ctx, f.guestProfileId);
  const where: Prisma.ConsentObservationWhereInput = given({
    contactValue:
      contacts !== undefined
        ? { in: f.contactValue == null ? contacts : contacts.filter((c) => c === f.contactValue!.trim().toLowerCase()) }
        : f.contactValue == null
          ? undefined
          : f.contactValue.trim().toLowerCase(),
    purpose: f.purpose,
  });
  type Row = { contactValue: string; purpose: string; contactType: string };
  return keysetPage<Row & ReturnType<typeof effectiveConsent>>({
    limit: args.limit,
    cursor: args.cursor,
    secret: ctx.cursorSecret,
    binding: { family: "effective_consents", propertyGroupId: ctx.scope.propertyGroupId, query: { f, propertyId: ctx.scope.propertyId } },
    keyOf: (row) => [row.contactValue, row.purpose, row.contactType],
    fetch: async (after, take) => {
      const keys = await ctx.db.consentObservation.groupBy({
        by: ["contactValue", "purpose", "contactType"],
        where: { AND: [where, afterContactKey(after)] },
        orderBy: [{ contactValue: "asc" }, { purpose: "asc" }, { contactType: "asc" }],
        take,
      });
      if (keys.length === 0) return [];
      const observations = await ctx.dbGroup.consentObservation.findMany({
        where: { OR: keys.map((k) => ({ contactValue: k.contactValue, purpose: k.purpose, contactType: k.contactType })) },
      });
      return keys.map((k) => {
        const mine = observations.filter(
          (o) => o.contactValue === k.contactValue && o.purpose === k.purpose && o.contactType === k.contactType,
        );
        const effective = effectiveConsent(mine);
        return { ...k, ...effective, decidedBy: effective.decidedBy as Observation | null };
      });
    },
  });
}

function afterContactKey(after: readonly (string | number)[] | null): Prisma.ConsentObservationWhereInput {
  if (!after) return {};
  const [value, purpose, type] = after.map(String);
  return {
    OR: [
      { contactValue: { gt: value } },
      { contactValue: value, purpose: { gt: purpose } },
      // contact_type has two values: after "email" only "phone" can follow.
      ...(type === "email" ? [{ contactValue: value, purpose, contactType: "phone" as const }] : []),
    ],
  };
}

export const consentResolvers = {
  Query: {
    consents: keysetList<ConsentFilter, Observation>("consents", (db, args) => db.consentObservation.findMany(args), consentWhere),
    effectiveConsents,
  },
};
