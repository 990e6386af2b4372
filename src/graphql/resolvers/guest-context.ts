// guestContext (the guest_context MCP tool): one person, every family summarised in one answer small
// enough for a model. The root resolver finds the person (a master profile and its guest profiles in
// scope, or one unclustered guest profile); each section is its own field with its own scope, read
// in one or two batched statements over all the person's guest profiles, and says where its rows
// are (`more`: the list tool and its arguments) and whether it shows only some (`truncated`).
import type { GraphQLContext } from "../../context";
import { effectiveConsent, type ConsentStatus } from "../../consent/precedence";
import { GUEST_ROW, MASTER_PROFILE_ROW, type GuestRow } from "../../db/rows";
import { sql } from "../../db/scoped-sql";
import { invalidRequest } from "../errors";
import { isStorableText, unstorableDetail } from "../text";

const PROFILES_SHOWN = 10;
const CONSENTS_SHOWN = 12;
const EVENTS_SHOWN = 5;
const EXCERPT_CHARS = 160;

interface MasterRow {
  id: string;
  givenName: string | null;
  familyName: string | null;
  email: string | null;
  phone: string | null;
  language: string | null;
  countryCode: string | null;
  vip: boolean;
}

/** The person a guestContext is about; the parent of every section. */
export interface Person {
  masterProfileId: string | null;
  master: MasterRow | null;
  guests: GuestRow[];
}

async function masterPerson(ctx: GraphQLContext, masterProfileId: string): Promise<Person | null> {
  const [[master], guests] = await Promise.all([
    ctx.sql.rows<MasterRow>({ from: "MasterProfile", shape: MASTER_PROFILE_ROW, where: [sql`t.id = ${masterProfileId}::uuid`], limit: 1 }),
    ctx.loaders.guestsByMasterProfile(GUEST_ROW).load(masterProfileId),
  ]);
  return master ? { masterProfileId, master, guests } : null;
}

async function findPerson(ctx: GraphQLContext, args: GuestContextArgs): Promise<Person | null> {
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
    // Profiles with a master profile first: the address then names the person, not one source record.
    [guest] = await ctx.sql.rows<GuestRow>({
      from: "GuestProfile",
      shape: GUEST_ROW,
      where: [sql`lower(t.email) = lower(${email})`],
      orderBy: sql`t.master_profile_id IS NULL, t.created_at, t.id`,
      limit: 1,
    });
    if (!guest) {
      const [master] = await ctx.sql.rows<{ id: string }>({
        from: "MasterProfile",
        shape: { id: "value" },
        where: [sql`lower(t.email) = lower(${email})`],
        orderBy: sql`t.created_at, t.id`,
        limit: 1,
      });
      return master ? masterPerson(ctx, master.id) : null;
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

/** The list tool that returns a section's rows, with the person's filter. */
function more(p: Person, tool: string, extra: Record<string, unknown> = {}) {
  const who = p.masterProfileId ? { master_profile_id: p.masterProfileId } : { guest_profile_id: p.guests[0]?.id };
  return { tool, arguments: { ...who, ...extra } };
}

/** Contact points of the person: lower-case e-mails and phones (stored as E.164). */
function contactPoints(p: Person): string[] {
  return distinct([
    p.master?.email?.toLowerCase(),
    ...p.guests.map((g) => g.email?.toLowerCase()),
    p.master?.phone,
    ...p.guests.map((g) => g.phone),
  ]);
}

async function propertyNames(ctx: GraphQLContext, ids: (string | null)[]): Promise<Map<string, string>> {
  const wanted = distinct(ids);
  const rows = await ctx.loaders.property.loadMany(wanted);
  return new Map(rows.flatMap((r) => (r && !(r instanceof Error) ? [[r.id, r.name] as [string, string]] : [])));
}

async function identity(p: Person, _: unknown, ctx: GraphQLContext) {
  const shown = p.guests.slice(0, PROFILES_SHOWN);
  const [names, integrations] = await Promise.all([
    propertyNames(ctx, shown.map((g) => g.propertyId)),
    ctx.loaders.integration.loadMany(distinct(shown.map((g) => g.integrationId))),
  ]);
  const provider = new Map(integrations.flatMap((i) => (i && !(i instanceof Error) ? [[i.id, i.provider] as [string, string]] : [])));
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
    more: p.masterProfileId ? more(p, "list_guests") : { tool: "get_guest", arguments: { id: p.guests[0]?.id } },
  };
}

interface StayRow {
  count: number;
  nights: number;
  firstStay: string | null;
  lastStay: string | null;
  nextStay: string | null;
  upcoming: number;
  cancelled: number;
  otherBookings: number;
  properties: string[] | null;
}

/** One aggregate over the person's reservations. */
async function stays(p: Person, _: unknown, ctx: GraphQLContext) {
  const [row] = await ctx.sql.query<StayRow>(
    (scoped) => sql`SELECT
        count(*) FILTER (WHERE s.begun)::int AS count,
        coalesce(sum(r.departure_date - r.arrival_date) FILTER (WHERE s.begun), 0)::int AS nights,
        to_char(min(r.arrival_date) FILTER (WHERE s.begun), 'YYYY-MM-DD') AS "firstStay",
        to_char(max(r.arrival_date) FILTER (WHERE s.begun), 'YYYY-MM-DD') AS "lastStay",
        to_char(min(r.arrival_date) FILTER (WHERE s.upcoming), 'YYYY-MM-DD') AS "nextStay",
        count(*) FILTER (WHERE s.upcoming)::int AS upcoming,
        count(*) FILTER (WHERE r.kind = 'stay' AND r.status IN ('cancelled', 'no_show'))::int AS cancelled,
        count(*) FILTER (WHERE r.kind <> 'stay')::int AS "otherBookings",
        array_agg(DISTINCT p.name) FILTER (WHERE s.begun) AS properties
      FROM reservations r
      JOIN properties p ON p.id = r.property_id AND ${scoped("Property", "p")}
      CROSS JOIN LATERAL (SELECT
          r.kind = 'stay' AND r.status NOT IN ('cancelled', 'no_show') AND r.arrival_date <= current_date AS begun,
          r.kind = 'stay' AND r.status IN ('tentative', 'confirmed') AND r.arrival_date > current_date AS upcoming) s
      WHERE ${scoped("Reservation", "r")} AND r.guest_profile_id = ANY(${guestIds(p)}::uuid[])`,
  );
  return { ...row, properties: row.properties ?? [], more: more(p, "list_reservations") };
}

/**
 * Spend per currency and category: charges and adjustments less refunds; payments settle the bill
 * and are not spend. A refund always reduces spend, whatever sign its source stored it with (the
 * contract says negative; some sources and the fixtures store it positive).
 */
async function spend(p: Person, _: unknown, ctx: GraphQLContext) {
  const groups = await ctx.sql.query<{ currency: string; category: string; amountMinor: string; transactions: number }>(
    (scoped) => sql`SELECT x.currency, x.category,
        sum(CASE WHEN x.kind = 'refund' THEN -abs(x.amount_minor) ELSE x.amount_minor END)::text AS "amountMinor",
        count(*)::int AS transactions
      FROM transactions x
      WHERE ${scoped("Transaction", "x")} AND x.guest_profile_id = ANY(${guestIds(p)}::uuid[])
        AND x.kind IN ('charge', 'adjustment', 'refund')
      GROUP BY x.currency, x.category`,
  );
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
  return { byCurrency: currencies, more: more(p, "list_transactions") };
}

interface ObservationRow {
  id: string;
  propertyId: string | null;
  contactType: "email" | "phone";
  contactValue: string;
  purpose: string;
  channel: string;
  status: ConsentStatus;
  source: string;
  observedAt: Date;
}

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
 * (spec 1.5): a withdrawal at a property outside a narrowed request still decides, so the
 * observations are read across the group (ctx.dbGroup), as effectiveConsents does.
 */
async function consent(p: Person, _: unknown, ctx: GraphQLContext) {
  const contacts = contactPoints(p);
  const observations: ObservationRow[] =
    contacts.length === 0 ? [] : await ctx.dbGroup.consentObservation.findMany({ where: { contactValue: { in: contacts } } });
  const keyed = new Map<string, ObservationRow[]>();
  for (const o of observations) {
    const key = `${o.purpose}\u0000${o.contactValue}`;
    keyed.set(key, [...(keyed.get(key) ?? []), o]);
  }
  const keys = [...keyed.keys()].sort();
  const shownKeys = keys.slice(0, CONSENTS_SHOWN);
  const decided = shownKeys.map((k) => {
    const mine = keyed.get(k)!;
    return { first: mine[0], effective: effectiveConsent(mine) };
  });
  const names = await propertyNames(ctx, decided.map((d) => (d.effective.decidedBy as ObservationRow | null)?.propertyId ?? null));
  return {
    effective: decided.map(({ first, effective }) => ({
      contactType: first.contactType,
      contactValue: first.contactValue,
      purpose: first.purpose,
      status: effective.status,
      decidedBy: effective.decidedBy ? evidence(effective.decidedBy as ObservationRow, names) : null,
      observationCount: effective.observationCount,
    })),
    truncated: keys.length > shownKeys.length,
    more: more(p, "list_consent_observations"),
  };
}

interface Tier {
  code: string;
  name: string;
}

async function loyalty(p: Person, _: unknown, ctx: GraphQLContext) {
  const members = await ctx.db.loyaltyMember.findMany({
    where: {
      OR: [{ guestProfileId: { in: guestIds(p) } }, ...(p.masterProfileId ? [{ masterProfileId: p.masterProfileId }] : [])],
    },
    orderBy: [{ lifetimePoints: "desc" }, { id: "asc" }],
  });
  // Programs in a second statement, not a nested include: one statement per Prisma query (db/sql-count.ts).
  const programs =
    members.length === 0 ? [] : await ctx.db.loyaltyProgram.findMany({ where: { id: { in: [...new Set(members.map((m) => m.programId))] } } });
  const programById = new Map(programs.map((pr) => [pr.id, pr]));
  return {
    memberships: members.map((m) => {
      const program = programById.get(m.programId);
      const tiers = Array.isArray(program?.tiers) ? (program.tiers as unknown as Tier[]) : [];
      return {
        program: program?.name ?? m.programId,
        memberNumber: m.memberNumber,
        tier: tiers.find((t) => t.code === m.tier)?.name ?? m.tier,
        status: m.status,
        pointsBalance: m.pointsBalance,
        pointsName: program?.pointsName ?? "points",
      };
    }),
    more: more(p, "list_loyalty_members"),
  };
}

async function reviews(p: Person, _: unknown, ctx: GraphQLContext) {
  const where = { guestProfileId: { in: guestIds(p) } };
  const [summary, latest] = await Promise.all([
    ctx.db.review.aggregate({ where, _count: { _all: true }, _avg: { rating: true } }),
    ctx.db.review.findFirst({ where, orderBy: [{ publishedAt: "desc" }, { id: "asc" }] }),
  ]);
  const names = await propertyNames(ctx, [latest?.propertyId ?? null]);
  const body = latest?.body ?? null;
  return {
    count: summary._count._all,
    averageRating: summary._avg.rating == null ? null : Math.round(summary._avg.rating * 100) / 100,
    latest: latest && {
      rating: latest.rating,
      source: latest.source,
      title: latest.title,
      excerpt: body && body.length > EXCERPT_CHARS ? `${body.slice(0, EXCERPT_CHARS - 1)}…` : body,
      publishedAt: latest.publishedAt,
      property: names.get(latest.propertyId) ?? null,
    },
    more: more(p, "list_reviews"),
  };
}

const CHANGED_SHOWN = 6;
/** The changed fields' names; a create lists every field, so long lists end in "+N more". */
function changedFields(delta: unknown): string[] {
  const names = delta && typeof delta === "object" && !Array.isArray(delta) ? Object.keys(delta) : [];
  return names.length <= CHANGED_SHOWN ? names : [...names.slice(0, CHANGED_SHOWN - 1), `+${names.length - CHANGED_SHOWN + 1} more`];
}

async function recentEvents(p: Person, _: unknown, ctx: GraphQLContext) {
  const rows = await ctx.db.event.findMany({
    where: { guestProfileId: { in: guestIds(p) } },
    orderBy: { seq: "desc" },
    take: EVENTS_SHOWN + 1,
  });
  return {
    events: rows.slice(0, EVENTS_SHOWN).map((e) => ({
      seq: e.seq.toString(),
      entityType: e.entityType,
      operation: e.operation,
      occurredAt: e.occurredAt,
      changed: changedFields(e.delta),
    })),
    truncated: rows.length > EVENTS_SHOWN,
    more: more(p, "guest_events", { mode: "timeline" }),
  };
}

export const guestContextResolvers = {
  Query: {
    guestContext: (_: unknown, args: GuestContextArgs, ctx: GraphQLContext) => findPerson(ctx, args),
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
