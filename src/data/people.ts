// Many people at once (the guest lookup, issue 42): which people a batch of ids, e-mails and phones
// names, and each family of their data for all of them in one statement. A person is a master
// profile, or a guest profile without one; every read below groups by that person key, so the
// statement count of a lookup does not grow with the number of people.
import type { Readers } from "./readers";
import { SPEND_AMOUNT, SPEND_KINDS, STAY_PHASE } from "./stays";
import { anyOf, empty, join, raw, sql, type Sql } from "./sql";

/** The inputs of a lookup, as the reads compare them: ids as given, e-mails lower-case, phones as digits. */
export interface PeopleInputs {
  guestProfileIds: string[];
  masterProfileIds: string[];
  emails: string[];
  phoneDigits: string[];
}

/** One input that found a profile in scope: `key` is the compared form (lower-case e-mail, phone digits, id). */
export interface PersonHit {
  kind: "guest_profile_id" | "master_profile_id" | "email" | "phone";
  key: string;
  masterProfileId: string | null;
  guestProfileId: string | null;
}

/** A guest profile of a person, with what the compact row shows. */
export interface PersonGuestRow {
  id: string;
  masterProfileId: string | null;
  propertyId: string;
  givenName: string | null;
  familyName: string | null;
  email: string | null;
  phone: string | null;
  vipCode: string | null;
}

export interface StayRef {
  reservationId: string;
  propertyId: string;
  arrivalDate: string;
  departureDate: string;
}

export interface PersonStays {
  person: string;
  stayCount: number;
  lastStay: StayRef | null;
  nextStay: StayRef | null;
}

export interface PersonSpend {
  person: string;
  currency: string;
  amountMinor: string;
}

export interface PersonMembershipRow {
  guestProfileId: string | null;
  masterProfileId: string | null;
  programId: string;
  programName: string | null;
  programTiers: unknown;
  tier: string;
  memberNumber: string;
  pointsBalance: number;
}

/** A guest's person key: its master profile's id, or its own for a guest profile without one. */
export const personOf = (g: { id: string; masterProfileId: string | null }) => g.masterProfileId ?? g.id;

/** The JSON of a reservation as a StayRef, for array_agg picking one per person. */
const STAY_REF = sql`json_build_object('reservationId', r.id, 'propertyId', r.property_id,
  'arrivalDate', to_char(r.arrival_date, 'YYYY-MM-DD'), 'departureDate', to_char(r.departure_date, 'YYYY-MM-DD'))`;

export function people(r: Readers) {
  /** The guests as `(guest id, person key)` rows: reads join it to attribute each row to its person. */
  const guestPersons = (guests: readonly { id: string; masterProfileId: string | null }[]) =>
    sql`unnest(${guests.map((g) => g.id)}::uuid[], ${guests.map(personOf)}::text[]) AS g(id, person)`;

  return {
    /** Every profile in scope each input names, in one statement (a UNION of one branch per kind given). */
    async find(inputs: PeopleInputs): Promise<PersonHit[]> {
      return r.sql.query<PersonHit>((scoped) => {
        const guest = (kind: string, key: Sql, where: Sql) =>
          sql`SELECT ${kind}::text AS kind, ${key} AS key, gp.master_profile_id AS "masterProfileId", gp.id AS "guestProfileId"
            FROM guest_profiles gp WHERE ${scoped("GuestProfile", "gp")} AND ${where}`;
        const master = (kind: string, key: Sql, where: Sql) =>
          sql`SELECT ${kind}::text AS kind, ${key} AS key, m.id AS "masterProfileId", NULL::uuid AS "guestProfileId"
            FROM master_profiles m WHERE ${scoped("MasterProfile", "m")} AND ${where}`;
        const branches: Sql[] = [];
        const { guestProfileIds: gids, masterProfileIds: mids, emails, phoneDigits: digits } = inputs;
        if (gids.length) branches.push(guest("guest_profile_id", sql`gp.id::text`, anyOf(raw("gp.id"), gids)));
        if (mids.length) branches.push(master("master_profile_id", sql`m.id::text`, anyOf(raw("m.id"), mids)));
        if (emails.length) {
          branches.push(guest("email", sql`lower(gp.email)`, sql`lower(gp.email) = ANY(${emails}::text[])`));
          branches.push(master("email", sql`lower(m.email)`, sql`lower(m.email) = ANY(${emails}::text[])`));
        }
        // Phones on guest profiles, as find_guests matches them: their digits are indexed per group
        // (guest_profiles_group_phone_digits_idx); a master profile's phone is one of its guests'.
        if (digits.length) branches.push(guest("phone", sql`gcs_phone_digits(gp.phone)`, sql`gcs_phone_digits(gp.phone) = ANY(${digits}::text[])`));
        // Nothing to look up: still one scoped statement, so the count never depends on the input.
        if (branches.length === 0) branches.push(guest("guest_profile_id", sql`gp.id::text`, sql`false`));
        return join(branches, " UNION ALL ");
      });
    },

    /** The guest profiles in scope of these master profiles, and these lone guest profiles, oldest first. */
    guests: (masterProfileIds: readonly string[], guestProfileIds: readonly string[]) =>
      r.sql.query<PersonGuestRow>(
        (scoped) => sql`SELECT gp.id, gp.master_profile_id AS "masterProfileId", gp.property_id AS "propertyId",
            gp.given_name AS "givenName", gp.family_name AS "familyName", gp.email, gp.phone, gp.vip_code AS "vipCode"
          FROM guest_profiles gp
          WHERE ${scoped("GuestProfile", "gp")} AND (${anyOf(raw("gp.master_profile_id"), masterProfileIds)} OR ${anyOf(raw("gp.id"), guestProfileIds)})
          ORDER BY gp.created_at, gp.id`,
      ),

    /**
     * Per person: stays begun (kind stay, not cancelled or no-show, arrived by today), the latest of
     * them and the next upcoming one (tentative or confirmed, arriving after today): the stay rule of
     * the guest context (data/stays.ts summaryOfGuests). People without reservations have no row.
     */
    stays: (guests: readonly { id: string; masterProfileId: string | null }[]) =>
      r.sql.query<PersonStays>(
        (scoped) => sql`SELECT g.person,
            count(*) FILTER (WHERE s.begun)::int AS "stayCount",
            (array_agg(${STAY_REF} ORDER BY r.arrival_date DESC, r.id) FILTER (WHERE s.begun))[1] AS "lastStay",
            (array_agg(${STAY_REF} ORDER BY r.arrival_date, r.id) FILTER (WHERE s.upcoming))[1] AS "nextStay"
          FROM ${guestPersons(guests)}
          JOIN reservations r ON r.guest_profile_id = g.id AND ${scoped("Reservation", "r")}
          ${STAY_PHASE}
          GROUP BY g.person`,
      ),

    /** Per person and currency, spend by the rule of data/stays.ts (SPEND_AMOUNT). */
    spend: (guests: readonly { id: string; masterProfileId: string | null }[]) =>
      r.sql.query<PersonSpend>(
        (scoped) => sql`SELECT g.person, x.currency, sum(${SPEND_AMOUNT})::text AS "amountMinor"
          FROM ${guestPersons(guests)}
          JOIN transactions x ON x.guest_profile_id = g.id AND ${scoped("Transaction", "x")}
          WHERE ${SPEND_KINDS}
          GROUP BY g.person, x.currency
          ORDER BY g.person, x.currency`,
      ),

    /** The loyalty memberships of these guest profiles or master profiles, with their program's labels. */
    memberships: (guestProfileIds: readonly string[], masterProfileIds: readonly string[]) =>
      r.sql.query<PersonMembershipRow>(
        (scoped) => sql`SELECT t.guest_profile_id AS "guestProfileId", t.master_profile_id AS "masterProfileId", t.program_id AS "programId",
            p.name AS "programName", p.tiers AS "programTiers", t.tier, t.member_number AS "memberNumber", t.points_balance AS "pointsBalance"
          FROM loyalty_members t
          LEFT JOIN loyalty_programs p ON p.id = t.program_id AND ${scoped("LoyaltyProgram", "p")}
          WHERE ${scoped("LoyaltyMember", "t")} AND (${anyOf(raw("t.guest_profile_id"), guestProfileIds)}${
            masterProfileIds.length ? sql` OR ${anyOf(raw("t.master_profile_id"), masterProfileIds)}` : empty
          })
          ORDER BY t.lifetime_points DESC, t.id`,
      ),
  };
}
