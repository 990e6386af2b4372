// lookupGuests (POST /v1/guests/lookup, the lookup_guests MCP tool): many people in one call, one
// compact row per person. The inputs are found in one statement (data/people.ts), then each family
// (profiles, stays, spend, loyalty, consent) is read once for every person found: the statement
// count does not grow with the number of inputs. Reads follow the caller's scope as the guest
// context does: a credential pinned to a property sees a person's guest profiles, stays and spend at
// that property only, and consent group-wide (spec 1.5).
import type { RequestContext } from "../../context";
import { normaliseContact, toE164, type ContactType, type EffectiveStatus } from "../../consent/precedence";
import { EVIDENCE, type EvidenceObservation } from "../../data/consents";
import type { MasterProfileRow } from "../../data/master-profiles";
import { personOf, type PeopleInputs, type PersonGuestRow, type PersonHit, type StayRef } from "../../data/people";
import type { MemberType } from "../../data/filter-document";
import { invalidRequest, notFound } from "../../errors";
import { offsetPage } from "../../pagination/offset";
import { isStorableText, unstorableDetail } from "../text";
import { checkedPurpose } from "./contact-permission";

/** At most this many inputs in all, and this many table members per call. */
export const MAX_LOOKUP_INPUTS = 100;

interface GuestLookupInput {
  guestProfileIds?: string[] | null;
  masterProfileIds?: string[] | null;
  emails?: string[] | null;
  phones?: string[] | null;
  tableId?: string | null;
  offset?: number | null;
  purpose?: string | null;
}

type Kind = PersonHit["kind"];

/**
 * One input as given, and the form the reads compare (data/people.ts PeopleInputs); an e-mail or
 * phone that cannot be compared (no @, no country code) has no key but the reason, and is not found.
 */
interface Input {
  kind: Kind;
  value: string;
  key: string | null;
  reason?: string;
}

/** The input lists: their field, their name on REST and MCP (error messages), the kind of their entries. */
const LISTS = [
  ["guestProfileIds", "guest_profile_ids", "guest_profile_id"],
  ["masterProfileIds", "master_profile_ids", "master_profile_id"],
  ["emails", "emails", "email"],
  ["phones", "phones", "phone"],
] as const;

/** Why an entry of its kind cannot be compared, as not_found says it. */
const UNREADABLE: Partial<Record<Kind, string>> = {
  email: "an e-mail address needs an @, e.g. olivia.smith@example.com",
  phone: "a phone needs its country code, e.g. +44 7700 900123",
};

/**
 * The compared form of an e-mail or phone (null when it cannot be one: not found, with its reason,
 * as contactPermission would refuse it); text that cannot be stored is a 400 naming the entry.
 */
function keyOf(kind: Kind, value: string, at: string): string | null {
  if (!isStorableText(value)) throw invalidRequest(unstorableDetail(at));
  if (kind === "email") {
    const email = normaliseContact("email", value);
    return email && /^[^\s@]+@[^\s@]+$/.test(email) ? email : null;
  }
  if (kind === "phone") {
    // Stored phones are compared by their digits (gcs_phone_digits), whatever formatting they were stored in.
    return toE164(value)?.slice(1) ?? null;
  }
  return value.toLowerCase();
}

/** The inputs of the lists, checked: at most MAX_LOOKUP_INPUTS in all; exact repeats count once. */
function listInputs(input: GuestLookupInput): Input[] {
  const total = LISTS.reduce((n, [field]) => n + (input[field]?.length ?? 0), 0);
  if (total > MAX_LOOKUP_INPUTS) {
    throw invalidRequest(`a lookup takes at most ${MAX_LOOKUP_INPUTS} inputs in all across guest_profile_ids, master_profile_ids, emails and phones; got ${total} (use table_id for a table's members, ${MAX_LOOKUP_INPUTS} per call)`);
  }
  const seen = new Set<string>();
  const inputs: Input[] = [];
  for (const [field, name, kind] of LISTS) {
    (input[field] ?? []).forEach((value, i) => {
      if (seen.has(`${kind}\u0000${value}`)) return;
      seen.add(`${kind}\u0000${value}`);
      const key = keyOf(kind, value, `${name}[${i}]`);
      inputs.push(key === null ? { kind, value, key, reason: UNREADABLE[kind] } : { kind, value, key });
    });
  }
  return inputs;
}

/**
 * A page of a table's members as inputs (ids of their kind), and the next page's offset: an offset
 * page as the members route pages (offsetPage: offset checked and clamped to MAX_OFFSET, where a
 * walk ends, so following next_offset never loops).
 */
async function tableInputs(ctx: RequestContext, tableId: string, offset: number | null | undefined): Promise<{ inputs: Input[]; nextOffset: number | null }> {
  const table = await ctx.data.tables.byId(tableId);
  if (!table) throw notFound("table", tableId);
  const memberType = table.memberType as MemberType;
  const page = await offsetPage({
    limit: MAX_LOOKUP_INPUTS,
    offset,
    fetch: async (skip, take) =>
      table.kind === "filter"
        ? (await ctx.data.tables.matching(memberType, table.filterDoc).ids(skip, take)).map((m) => m.id)
        : (await ctx.data.tables.members(table.id, memberType, skip, take)).map((m) => m.memberId),
    count: async () => 0, // never asked: no total
  });
  const kind: Kind = memberType === "guest_profile" ? "guest_profile_id" : "master_profile_id";
  return { inputs: page.nodes.map((id) => ({ kind, value: id, key: id })), nextOffset: page.hasMore ? page.nextOffset : null };
}

async function readInputs(ctx: RequestContext, input: GuestLookupInput) {
  const lists = LISTS.filter(([field]) => (input[field]?.length ?? 0) > 0);
  if (input.tableId != null) {
    if (lists.length > 0) throw invalidRequest("table_id cannot be combined with guest_profile_ids, master_profile_ids, emails or phones");
    return tableInputs(ctx, input.tableId, input.offset);
  }
  if (input.offset != null) throw invalidRequest("offset pages a table's members: give it with table_id");
  if (lists.length === 0) {
    throw invalidRequest(`give guest_profile_ids, master_profile_ids, emails or phones (at most ${MAX_LOOKUP_INPUTS} in all), or table_id`);
  }
  return { inputs: listInputs(input), nextOffset: null };
}

const distinct = <T>(values: T[]) => [...new Set(values)];
const ofKind = (inputs: Input[], kind: Kind) => distinct(inputs.flatMap((i) => (i.kind === kind && i.key !== null ? [i.key] : [])));

interface Tier {
  code: string;
  name: string;
}

async function lookupGuests(_: unknown, args: { input: GuestLookupInput }, ctx: RequestContext) {
  const { input } = args;
  const { inputs, nextOffset } = await readInputs(ctx, input);
  const purpose = input.purpose == null ? null : await checkedPurpose(ctx, input.purpose);

  const wanted: PeopleInputs = {
    guestProfileIds: ofKind(inputs, "guest_profile_id"),
    masterProfileIds: ofKind(inputs, "master_profile_id"),
    emails: ofKind(inputs, "email"),
    phoneDigits: ofKind(inputs, "phone"),
  };
  const hits = inputs.some((i) => i.key !== null) ? await ctx.data.people.find(wanted) : [];
  // The person each hit names: its master profile, or the lone guest profile.
  const personOfHit = (h: PersonHit) => h.masterProfileId ?? h.guestProfileId!;
  const masterIds = distinct(hits.flatMap((h) => (h.masterProfileId ? [h.masterProfileId] : [])));
  const loneGuestIds = distinct(hits.flatMap((h) => (h.masterProfileId ? [] : [h.guestProfileId!])));

  const found = hits.length > 0;
  const [masters, guests] = found
    ? await Promise.all([ctx.data.masterProfiles.byIds(masterIds), ctx.data.people.guests(masterIds, loneGuestIds)])
    : [[] as MasterProfileRow[], [] as PersonGuestRow[]];
  const guestIds = guests.map((g) => g.id);
  const contactValues = distinct([...masters, ...guests].flatMap((p) => contactPoints(p).flatMap((c) => (c.decidable ? [c.value] : []))));
  const [stays, spend, memberships, decisions] = found
    ? await Promise.all([
        ctx.data.people.stays(guests),
        ctx.data.people.spend(guests),
        ctx.data.people.memberships(guestIds, masterIds),
        purpose === null ? Promise.resolve([]) : ctx.data.consents.decide<EvidenceObservation>(contactValues, { purpose }, EVIDENCE),
      ])
    : [[], [], [], []];

  const masterById = new Map(masters.map((m) => [m.id, m]));
  const guestsOf = groupBy(guests, personOf);
  const staysOf = new Map(stays.map((s) => [s.person, s]));
  const spendOf = groupBy(spend, (s) => s.person);
  const personOfGuest = new Map(guests.map((g) => [g.id, personOf(g)]));
  const membershipsOf = groupBy(memberships, (m) => (m.masterProfileId && masterById.has(m.masterProfileId) ? m.masterProfileId : (personOfGuest.get(m.guestProfileId!) ?? "")));
  const consentOf = new Map(decisions.map((d) => [`${d.contactType}\u0000${d.contactValue}`, d.effective.status as EffectiveStatus]));

  // People in the order of the first input that found them; each input found someone or is listed as not found.
  const people = new Map<string, { person: string; matched: Input[] }>();
  const notFound: Input[] = [];
  const hitsOf = groupBy(hits, (h) => `${h.kind}\u0000${h.key}`);
  for (const i of inputs) {
    const mine = (i.key === null ? [] : (hitsOf.get(`${i.kind}\u0000${i.key}`) ?? [])).map(personOfHit).filter((p) => masterById.has(p) || guestsOf.has(p));
    if (mine.length === 0) notFound.push(i);
    for (const person of distinct(mine)) {
      const entry = people.get(person) ?? { person, matched: [] };
      entry.matched.push(i);
      people.set(person, entry);
    }
  }

  return {
    nodes: [...people.values()].map(({ person, matched }) => {
      const master = masterById.get(person) ?? null;
      const own = guestsOf.get(person) ?? [];
      const first = master ?? own[0];
      const stay = staysOf.get(person);
      return {
        masterProfileId: master?.id ?? null,
        guestProfileIds: own.map((g) => g.id),
        name: [first?.givenName, first?.familyName].filter(Boolean).join(" ") || null,
        givenName: first?.givenName ?? null,
        familyName: first?.familyName ?? null,
        vip: master?.vip ?? own.some((g) => g.vipCode != null),
        loyalty: (membershipsOf.get(person) ?? []).map((m) => ({
          programId: m.programId,
          programName: m.programName,
          tier: (Array.isArray(m.programTiers) ? (m.programTiers as Tier[]) : []).find((t) => t.code === m.tier)?.name ?? m.tier,
          memberNumber: m.memberNumber,
          points: m.pointsBalance,
        })),
        propertyIds: distinct(own.map((g) => g.propertyId)),
        stayCount: stay?.stayCount ?? 0,
        lastStay: (stay?.lastStay ?? null) as StayRef | null,
        nextStay: (stay?.nextStay ?? null) as StayRef | null,
        spend: (spendOf.get(person) ?? []).map((s) => ({ currency: s.currency, amountMinor: BigInt(s.amountMinor) })),
        contacts: uniqueContacts([master, ...own].flatMap((p) => (p ? contactPoints(p) : []))).map(({ decidable, ...c }) => ({
          ...c,
          consent: purpose === null || !decidable ? null : (consentOf.get(`${c.type}\u0000${c.value}`) ?? "unknown"),
        })),
        matched: matched.map(({ kind, value }) => ({ kind, value })),
      };
    }),
    notFound: notFound.map(({ kind, value, reason }) => ({ kind, value, reason: reason ?? null })),
    nextOffset,
  };
}

/**
 * A profile's e-mail and phone as consent observations store them (normaliseContact). A stored phone
 * that is not E.164 ("07700 900123", no country code) is shown as stored, trimmed, and `decidable`
 * false: no consent can be decided for it (check_contact_permission refuses it, a table's
 * reachability counts it as no_contact), so its consent is null.
 */
function contactPoints(p: { email: string | null; phone: string | null }): { type: ContactType; value: string; decidable: boolean }[] {
  const points: { type: ContactType; value: string; decidable: boolean }[] = [];
  const email = p.email && normaliseContact("email", p.email);
  if (email) points.push({ type: "email", value: email, decidable: true });
  const phone = p.phone && normaliseContact("phone", p.phone);
  if (phone) points.push({ type: "phone", value: phone, decidable: true });
  else if (p.phone?.trim()) points.push({ type: "phone", value: p.phone.trim(), decidable: false });
  return points;
}

function uniqueContacts<C extends { type: ContactType; value: string }>(points: C[]): C[] {
  const seen = new Set<string>();
  return points.filter((c) => !seen.has(`${c.type}\u0000${c.value}`) && seen.add(`${c.type}\u0000${c.value}`));
}

function groupBy<T>(rows: T[], key: (row: T) => string): Map<string, T[]> {
  const groups = new Map<string, T[]>();
  for (const row of rows) {
    const list = groups.get(key(row));
    if (list) list.push(row);
    else groups.set(key(row), [row]);
  }
  return groups;
}

export const guestLookupResolvers = { Query: { lookupGuests } };
