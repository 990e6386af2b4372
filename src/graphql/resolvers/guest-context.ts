// guestContext (the guest_context MCP tool): one person, every family summarised in one answer small
// enough for a model. The root resolver finds the person (a master profile and its guest profiles in
// scope, or one unclustered guest profile); each section is its own field with its own scope, read
// in one or two batched statements over all the person's guest profiles, and says where its rows
// are (`more`: the list tool and its arguments) and whether it shows only some (`truncated`).
import type { RequestContext } from "../../context";
import { normaliseContact } from "../../consent/precedence";
import { GUEST_ROW, type GuestRow } from "../../data/guests";
import type { MasterProfileRow } from "../../data/master-profiles";
import { EVIDENCE, type EvidenceObservation } from "../../data/consents";
import { invalidRequest } from "../../errors";
import { isStorableText, unstorableDetail } from "../text";

const PROFILES_SHOWN = 10;
const CONSENTS_SHOWN = 12;
const EVENTS_SHOWN = 5;
const EXCERPT_CHARS = 160;

/** The person a guestContext is about; the parent of every section. */
export interface Person {
  masterProfileId: string | null;
  master: MasterProfileRow | null;
  guests: GuestRow[];
}

async function masterPerson(ctx: RequestContext, masterProfileId: string): Promise<Person | null> {
  const [master, guests] = await Promise.all([
    ctx.data.masterProfiles.byId(masterProfileId),
    ctx.loaders.guestsByMasterProfile(GUEST_ROW).load(masterProfileId),
  ]);
  return master ? { masterProfileId, master, guests } : null;
}

async function findPerson(ctx: RequestContext, args: GuestContextArgs): Promise<Person | null> {
  const given = [args.masterProfileId, args.guestProfileId, args.email].filter((v) => v != null);
  if (given.length !== 1) throw invalidRequest("give exactly one of masterProfileId, guestProfileId or email");
  if (args.masterProfileId != null) return masterPerson(ctx, args.masterProfileId);

  let guest: GuestRow | null | undefined;
  if (args.guestProfileId != null) {
    guest = await ctx.loaders.guest.load(args.guestProfileId);
  } else {
    if (!isStorableText(args.email!)) throw invalidRequest(unstorableDetail("email"));
    const email = args.email!.trim();
    if (!email) throw invalidRequest("email must not be empty");
    guest = await ctx.data.guests.firstByEmail(email);
    if (!guest) {
      const masterId = await ctx.data.masterProfiles.idByEmail(email);
      return masterId ? masterPerson(ctx, masterId) : null;
    }
  }
  if (!guest) return null;
  if (guest.masterProfileId) return masterPerson(ctx, guest.masterProfileId);
  return { masterProfileId: null, master: null, guests: [guest] };
}

interface GuestContextArgs {
  masterProfileId?: string | null;
  guestProfileId?: string | null;
  email?: string | null;
}

const guestIds = (p: Person) => p.guests.map((g) => g.id);
const distinct = (values: (string | null | undefined)[]) => [...new Set(values.filter((v): v is string => Boolean(v)))];

/**
 * The MCP call that returns a section's rows, with the person's filter: list_records and the record
 * type, as tools/list offers it (the per-family tools it stands for are not listed; issue 42).
 */
function more(p: Person, type: string, extra: Record<string, unknown> = {}) {
  const who = p.masterProfileId ? { master_profile_id: p.masterProfileId } : { guest_profile_id: p.guests[0]?.id };
  return { tool: "list_records", arguments: { type, ...who, ...extra } };
}

/** Contact points of the person, normalised as consent observations store them. */
function contactPoints(p: Person): string[] {
  const people = [p.master, ...p.guests];
  return distinct([
    ...people.map((x) => x?.email && normaliseContact("email", x.email)),
    ...people.map((x) => x?.phone && normaliseContact("phone", x.phone)),
  ]);
}

/** id → name or provider, of the ids a loader found. */
function found(ids: string[], values: (string | null | Error)[]): Map<string, string> {
  return new Map(ids.flatMap((id, i) => (typeof values[i] === "string" ? [[id, values[i]] as [string, string]] : [])));
}

async function propertyNames(ctx: RequestContext, ids: (string | null)[]): Promise<Map<string, string>> {
  const wanted = distinct(ids);
  return found(wanted, await ctx.loaders.propertyName.loadMany(wanted));
}

async function identity(p: Person, _: unknown, ctx: RequestContext) {
  const shown = p.guests.slice(0, PROFILES_SHOWN);
  const integrationIds = distinct(shown.map((g) => g.integrationId));
  const [names, providers] = await Promise.all([
    propertyNames(ctx, shown.map((g) => g.propertyId)),
    ctx.loaders.integrationProvider.loadMany(integrationIds),
  ]);
  const provider = found(integrationIds, providers);
  const first = p.master ?? p.guests[0];
  return {
    givenName: first?.givenName ?? null,
    familyName: first?.familyName ?? null,
    emails: distinct([p.master?.email, ...p.guests.map((g) => g.email)].map((e) => e?.toLowerCase())),
    phones: distinct([p.master?.phone, ...p.guests.map((g) => g.phone)]),
    language: first?.language ?? null,
    countryCode: first?.countryCode ?? null,
    vip: p.master?.vip ?? p.guests.some((g) => g.vipCode != null),
    profiles: shown.map((g) => ({
      guestProfileId: g.id,
      propertyId: g.propertyId,
      property: names.get(g.propertyId) ?? null,
      source: provider.get(g.integrationId) ?? null,
      sourceId: g.sourceId,
    })),
    truncated: p.guests.length > shown.length,
    more: p.masterProfileId ? more(p, "guests") : { tool: "get_record", arguments: { type: "guest", id: p.guests[0]?.id } },
  };
}

/** One aggregate over the person's reservations. */
async function stays(p: Person, _: unknown, ctx: RequestContext) {
  const row = await ctx.data.stays.summaryOfGuests(guestIds(p));
  return { ...row, properties: row.properties ?? [], more: more(p, "reservations") };
}

/** Spend per currency and category (data/stays.ts says what counts as spend). */
async function spend(p: Person, _: unknown, ctx: RequestContext) {
  const groups = await ctx.data.stays.spendOfGuests(guestIds(p));
  type Category = { category: string; amountMinor: bigint; transactions: number };
  const byCurrency = new Map<string, { currency: string; totalMinor: bigint; byCategory: Category[] }>();
  for (const g of groups) {
    const amount = BigInt(g.amountMinor);
    const entry = byCurrency.get(g.currency) ?? { currency: g.currency, totalMinor: 0n, byCategory: [] };
    entry.totalMinor += amount;
    entry.byCategory.push({ category: g.category, amountMinor: amount, transactions: g.transactions });
    byCurrency.set(g.currency, entry);
  }
  // Largest first; ties by name, so the answer does not depend on the order rows arrive in.
  const larger = (a: bigint, b: bigint) => (b > a ? 1 : b < a ? -1 : 0);
  const currencies = [...byCurrency.values()].sort((a, b) => larger(a.totalMinor, b.totalMinor) || a.currency.localeCompare(b.currency));
  for (const c of currencies) c.byCategory.sort((a, b) => larger(a.amountMinor, b.amountMinor) || a.category.localeCompare(b.category));
  return { byCurrency: currencies, more: more(p, "transactions") };
}

/** An observation as the consent reads give it (data/consents.ts). */
type ObservationRow = EvidenceObservation;

/** An observation as evidence: what decided, where and when. */
export function evidence(o: ObservationRow, names: Map<string, string>) {
  return {
    id: o.id,
    status: o.status,
    channel: o.channel,
    source: o.source,
    observedAt: o.observedAt,
    propertyId: o.propertyId,
    property: o.propertyId ? (names.get(o.propertyId) ?? null) : null,
  };
}

/**
 * Effective consent of each of the person's contact points per purpose. Precedence is group-wide
 * (spec 1.5): a withdrawal at a property outside a narrowed request still decides.
 */
async function consent(p: Person, _: unknown, ctx: RequestContext) {
  const decisions = await ctx.data.consents.decide<EvidenceObservation>(contactPoints(p), {}, EVIDENCE);
  // By purpose, then contact.
  const order = (d: { purpose: string; contactValue: string }) => `${d.purpose}\u0000${d.contactValue}`;
  decisions.sort((a, b) => (order(a) < order(b) ? -1 : order(a) > order(b) ? 1 : 0));
  const shown = decisions.slice(0, CONSENTS_SHOWN);
  const names = await propertyNames(ctx, shown.map((d) => d.effective.decidedBy?.propertyId ?? null));
  return {
    effective: shown.map((d) => ({
      contactType: d.contactType,
      contactValue: d.contactValue,
      purpose: d.purpose,
      status: d.effective.status,
      decidedBy: d.effective.decidedBy ? evidence(d.effective.decidedBy, names) : null,
      observationCount: d.effective.observationCount,
    })),
    truncated: decisions.length > shown.length,
    more: more(p, "consent_observations"),
  };
}

interface Tier {
  code: string;
  name: string;
}

async function loyalty(p: Person, _: unknown, ctx: RequestContext) {
  const members = await ctx.data.loyalty.membershipsOfPerson(guestIds(p), p.masterProfileId);
  return {
    memberships: members.map((m) => {
      const tiers = Array.isArray(m.programTiers) ? (m.programTiers as Tier[]) : [];
      return {
        program: m.programName ?? m.programId,
        memberNumber: m.memberNumber,
        tier: tiers.find((t) => t.code === m.tier)?.name ?? m.tier,
        status: m.status,
        pointsBalance: m.pointsBalance,
        pointsName: m.pointsName ?? "points",
      };
    }),
    more: more(p, "loyalty_members"),
  };
}

async function reviews(p: Person, _: unknown, ctx: RequestContext) {
  const { count, averageRating, latest } = await ctx.data.engagement.reviewsOfPerson(guestIds(p));
  const names = await propertyNames(ctx, [latest?.propertyId ?? null]);
  const body = latest?.body ?? null;
  return {
    count,
    averageRating,
    latest: latest && {
      rating: latest.rating,
      source: latest.source,
      title: latest.title,
      excerpt: body && body.length > EXCERPT_CHARS ? `${body.slice(0, EXCERPT_CHARS - 1)}…` : body,
      publishedAt: latest.publishedAt,
      property: names.get(latest.propertyId) ?? null,
    },
    more: more(p, "reviews"),
  };
}

const CHANGED_SHOWN = 6;
/** The changed fields' names; a create lists every field, so long lists end in "+N more". */
function changedFields(delta: unknown): string[] {
  const names = delta && typeof delta === "object" && !Array.isArray(delta) ? Object.keys(delta) : [];
  return names.length <= CHANGED_SHOWN ? names : [...names.slice(0, CHANGED_SHOWN - 1), `+${names.length - CHANGED_SHOWN + 1} more`];
}

async function recentEvents(p: Person, _: unknown, ctx: RequestContext) {
  const rows = await ctx.data.events.ofGuests(guestIds(p), EVENTS_SHOWN + 1);
  return {
    events: rows.slice(0, EVENTS_SHOWN).map((e) => ({
      seq: e.seq,
      entityType: e.entityType,
      operation: e.operation,
      occurredAt: e.occurredAt,
      changed: changedFields(e.delta),
    })),
    truncated: rows.length > EVENTS_SHOWN,
    more: more(p, "events", { order: "desc" }),
  };
}

export const guestContextResolvers = {
  Query: {
    guestContext: (_: unknown, args: GuestContextArgs, ctx: RequestContext) => findPerson(ctx, args),
  },
  GuestContext: {
    guestProfileIds: (p: Person) => guestIds(p),
    identity,
    stays,
    spend,
    consent,
    loyalty,
    reviews,
    recentEvents,
  },
};
