// Consent observations, and the one way an effective status is decided: every observation of the
// given contact points (and purpose) in the property group, with consent/precedence.ts applied per
// contact and purpose. Requests decide through `consents(r).decide` (one prepared SQL statement:
// the effective consents page, contactPermission, the guest context, the guest lookup); the delivery
// engine, inside its own transaction, through `decideConsent` (Prisma). Table filters decide the
// same rule in SQL (data/filter-document.ts) over the same normalised contact values
// (consent/precedence.ts normaliseContact).
import type { Prisma, PrismaClient } from "../generated/prisma/client";
import { effectiveConsent, normaliseContact, type ConsentStatus, type ContactType, type EffectiveConsent, type EffectiveStatus } from "../consent/precedence";
import type { CursorKey } from "../pagination/cursor";
import { createdAtKey, createdAtSql } from "./keyset";
import { ConsentObservation, pick, type RowOf, type RowShape } from "./models";
import type { Readers } from "./readers";
import { tenantWhere } from "./tenant";
import { between, given, guestConditions, instantText } from "./where";
import { anyOf, columns, equals, equalsInsensitive, equalsText, join, sql, type Sql, type TenantPredicate } from "./sql";

export interface ConsentFilter {
  guestProfileId?: string | null;
  masterProfileId?: string | null;
  contactValue?: string | null;
  purpose?: string | null;
  status?: string | null;
  propertyId?: string | null;
  observedFrom?: Date | null;
  observedTo?: Date | null;
}

/** An observation as the database holds it (decideConsent's input, the delivery engine's rows). */
type StoredObservation = Prisma.ConsentObservationGetPayload<object>;
/** An observation as the list, a guest's observations and `decide` read it in SQL (data/sql.ts): the API's columns. */
export type ObservationListRow = RowOf<typeof ConsentObservation>;
/** The same, its enum labels typed as theirs (what `decide` hands out). */
export type DecidedObservation = ObservationListRow & { contactType: ContactType; status: ConsentStatus };
/**
 * The columns a decision shown as evidence needs (the guest context, the guest lookup): `decide`
 * reads only these when asked, three fewer than the API row.
 */
const EVIDENCE_FIELDS = ["id", "propertyId", "contactType", "contactValue", "purpose", "channel", "status", "source", "observedAt"] as const;
export const EVIDENCE = pick(ConsentObservation, ...EVIDENCE_FIELDS);
export type EvidenceObservation = Pick<DecidedObservation, (typeof EVIDENCE_FIELDS)[number]>;
const observations = createdAtSql("ConsentObservation");
const O = columns("ConsentObservation");

/** The consent of one contact point for one purpose, with every observation behind it (latest first). */
export interface ConsentDecision<O = StoredObservation> {
  contactType: ContactType;
  contactValue: string;
  purpose: string;
  observations: O[];
  effective: Omit<EffectiveConsent, "decidedBy"> & { decidedBy: O | null };
}

/** A decision as requests get it: observations as read in SQL, instants as ISO text. */
export interface ConsentDecisionRow<O = DecidedObservation> {
  contactType: ContactType;
  contactValue: string;
  purpose: string;
  observations: O[];
  effective: { status: EffectiveStatus; observationCount: number; decidedBy: O | null; lastObservedAt: string | null };
}

/** What a decision is made of: an observation's key, status and instant (ISO text). */
type DecidedRow = { id: string; contactType: ContactType; contactValue: string; purpose: string; status: ConsentStatus; observedAt: string };

/**
 * Observations read latest first, as decideConsent decides them: per contact, purpose and type, in
 * key order, each with its effective consent (spec 1.5) and the row that decides it.
 */
function decisionsOf<R extends DecidedRow>(rows: readonly R[]): ConsentDecisionRow<R>[] {
  const byKey = new Map<string, { id: string; status: ConsentStatus; observedAt: Date; row: R }[]>();
  for (const row of rows) {
    const key = `${row.contactValue}\u0000${row.purpose}\u0000${row.contactType}`;
    const observation = { id: row.id, status: row.status, observedAt: new Date(row.observedAt), row };
    const list = byKey.get(key);
    if (list) list.push(observation);
    else byKey.set(key, [observation]);
  }
  return [...byKey.keys()].sort().map((key) => {
    const mine = byKey.get(key)!;
    const { contactType, contactValue, purpose } = mine[0].row;
    const { status, decidedBy, observationCount, lastObservedAt } = effectiveConsent(mine);
    return {
      contactType,
      contactValue,
      purpose,
      observations: mine.map((o) => o.row),
      // decidedBy is one of `mine`: its row.
      effective: { status, observationCount, lastObservedAt: lastObservedAt?.toISOString() ?? null, decidedBy: (decidedBy as (typeof mine)[number] | null)?.row ?? null },
    };
  });
}

/**
 * A contact value as observations store it, whatever door or formatting it came in: with an "@" an
 * e-mail (normaliseContact), else a phone as E.164 when it is one ("+44 20 7946 0958" →
 * "+442079460958"), else the text trimmed and lower-cased (no stored contact looks like that, so
 * it finds nothing). Every consent read of this module applies it, so /v1, /graphql and /mcp give
 * one answer to one question.
 */
export function contactValueOf(value: string): string {
  const text = value.trim();
  return normaliseContact(text.includes("@") ? "email" : "phone", text) ?? text.toLowerCase();
}

/** What decideConsent reads through: a request's group-wide client or the delivery engine's transaction. */
type ObservationReader = Pick<PrismaClient, "consentObservation">;

/**
 * Effective consent of these contact points in the group, per contact and purpose: spec 1.5 over
 * every observation in the group, from any property or source. `values` in any formatting
 * (contactValueOf); `purpose` and `contactType` narrow what is read. Decisions come in
 * (contact value, purpose, contact type) order; contacts with no observation have none.
 */
export async function decideConsent(
  reader: ObservationReader,
  propertyGroupId: string,
  values: readonly string[],
  narrow: { purpose?: string; contactType?: ContactType } = {},
): Promise<ConsentDecision[]> {
  if (values.length === 0) return [];
  const observations = await reader.consentObservation.findMany({
    // Group-wide by rule (spec 1.5): the tenant rule of the whole group, also on an unscoped client.
    where: { AND: [tenantWhere("ConsentObservation", { propertyGroupId, propertyId: null })!, { contactValue: { in: [...new Set(values.map(contactValueOf))] }, ...given(narrow) }] },
    orderBy: [{ observedAt: "desc" }, { id: "asc" }],
  });
  const byKey = new Map<string, StoredObservation[]>();
  for (const o of observations) {
    const key = `${o.contactValue}\u0000${o.purpose}\u0000${o.contactType}`;
    const list = byKey.get(key);
    if (list) list.push(o);
    else byKey.set(key, [o]);
  }
  return [...byKey.keys()].sort().map((key) => {
    const mine = byKey.get(key)!;
    const { contactType, contactValue, purpose } = mine[0];
    const effective = effectiveConsent(mine);
    return { contactType, contactValue, purpose, observations: mine, effective: { ...effective, decidedBy: effective.decidedBy as StoredObservation | null } };
  });
}

export const consentKeyOf = createdAtKey;

/** An effective-consent key: contact value, purpose and contact type. */
export interface ConsentKey {
  contactValue: string;
  purpose: string;
  contactType: ContactType;
}

/** The effective-consent keyset's position. */
export const consentKeyKeyOf = (k: ConsentKey): CursorKey => [k.contactValue, k.purpose, k.contactType];

/**
 * The statement of `consents(r).keys`: the group's (contact, purpose, type) keys after `after`, in
 * key order. The position is also written as a row comparison led by the group, which the (group,
 * contact value, purpose) index can start at: the key's own comparison (contact_type as text) only
 * filters, and a page deep in the walk would read every observation before it (9,000 rows at 90 %
 * of 10,000 keys, 4 ms, against 0.2 ms for the first page).
 */
export function consentKeysStatement(groupId: string, contacts: string[] | undefined, purpose: string | null | undefined, after: CursorKey | null, take: number) {
  // contact_type compared and ordered as text: its two labels sort as the enum does (email, phone).
  const key = sql`t.contact_value, t.purpose, t.contact_type::text`;
  const position = after === null
    ? undefined
    : sql`(t.property_group_id, t.contact_value, t.purpose) >= (${groupId}::uuid, ${String(after[0])}, ${String(after[1])})
        AND (${key}) > (${String(after[0])}, ${String(after[1])}, ${String(after[2])})`;
  return (scoped: TenantPredicate) => sql`SELECT t.contact_value AS "contactValue", t.purpose, t.contact_type::text AS "contactType" FROM consent_observations t
    WHERE ${join(
      [
        scoped("ConsentObservation", "t"),
        contacts === undefined ? undefined : sql`t.contact_value = ANY(${contacts}::text[])`,
        equals(O("purpose"), purpose),
        position,
      ].filter((c): c is Sql => c !== undefined),
      " AND ",
    )}
    GROUP BY ${key} ORDER BY ${key} LIMIT ${take}`;
}

export function consents(r: Readers) {
  // In SQL: a page of 100 observations through Prisma cost the service 5.5 ms of CPU.
  function consentConditions(f: ConsentFilter) {
    return [
      equalsInsensitive(O("contactValue"), f.contactValue == null ? undefined : contactValueOf(f.contactValue)),
      equals(O("purpose"), f.purpose),
      equalsText(O("status"), f.status),
      equals(O("propertyId"), f.propertyId),
      ...between(O("observedAt"), f.observedFrom, f.observedTo, instantText, true),
      ...guestConditions(r, f, O("guestProfileId")),
    ];
  }

  return {
    page: async (filter: ConsentFilter, after: CursorKey | null, take: number): Promise<ObservationListRow[]> =>
      observations.page<ObservationListRow>(r.sql, consentConditions(filter), after, take, ConsentObservation.row),

    ofGuests: (ids: readonly string[]): Promise<ObservationListRow[]> =>
      r.sql.rows<ObservationListRow>({ from: "ConsentObservation", shape: ConsentObservation.row, where: [anyOf(O("guestProfileId"), ids)], orderBy: observations.orderBy }),

    /**
     * The (contact, purpose, type) keys observed in the caller's scope after `after`, in key order.
     * `values` (contact values in any formatting: contactValueOf) narrows to those contacts; none given: all.
     */
    keys: (values: readonly string[] | undefined, purpose: string | null | undefined, after: CursorKey | null, take: number): Promise<ConsentKey[]> =>
      r.sql.query<ConsentKey>(consentKeysStatement(r.scope.propertyGroupId, values === undefined ? undefined : [...new Set(values.map(contactValueOf))], purpose, after, take)),

    /**
     * Whether the caller's group records consent for `purpose`, and whether it records any: two
     * index probes (consent_observations_group_purpose_contact_idx) in one statement, whatever the
     * number of observations or purposes.
     */
    async purposeKnown(purpose: string): Promise<{ known: boolean; any: boolean }> {
      const [row] = await r.groupSql.query<{ known: boolean; any: boolean }>(
        (scoped) => sql`SELECT EXISTS (SELECT 1 FROM consent_observations t WHERE ${scoped("ConsentObservation", "t")} AND t.purpose = ${purpose}) AS known,
          EXISTS (SELECT 1 FROM consent_observations t WHERE ${scoped("ConsentObservation", "t")}) AS any`,
        { prepare: true },
      );
      return row;
    },

    /**
     * The first `max` purposes consent is recorded for anywhere in the caller's group, in order, and
     * how many there are in all (for an error message).
     */
    async purposes(max: number): Promise<{ purposes: string[]; total: number }> {
      const rows = await r.groupSql.query<{ purpose: string; total: number }>(
        (scoped) => sql`SELECT p.purpose, count(*) OVER ()::int AS total
          FROM (SELECT DISTINCT t.purpose FROM consent_observations t WHERE ${scoped("ConsentObservation", "t")}) p
          ORDER BY p.purpose LIMIT ${max}`,
      );
      return { purposes: rows.map((row) => row.purpose), total: rows[0]?.total ?? 0 };
    },

    /**
     * decideConsent across the caller's whole group, even for a request narrowed to one property, in
     * one prepared SQL statement: through Prisma, a page of 100 effective consents cost the service
     * 11 ms of CPU. The effective consents page, contactPermission, the guest context and the guest
     * lookup all decide through it. `purpose` and `contactType` narrow what is read; `shape` names
     * the observations' columns (the API row unless told: EVIDENCE is what the guest context shows).
     */
    async decide<R extends DecidedRow = DecidedObservation>(
      values: readonly string[],
      narrow: { purpose?: string; contactType?: ContactType } = {},
      shape: RowShape = ConsentObservation.row,
    ): Promise<ConsentDecisionRow<R>[]> {
      if (values.length === 0) return [];
      const rows = await r.groupSql.rows<R>({
        from: "ConsentObservation",
        shape,
        where: [sql`${O("contactValue")} = ANY(${[...new Set(values.map(contactValueOf))]}::text[])`, equals(O("purpose"), narrow.purpose), equalsText(O("contactType"), narrow.contactType)],
        orderBy: sql`${O("observedAt")} DESC, ${O("id")}`,
        prepare: true,
      });
      return decisionsOf(rows);
    },
  };
}

