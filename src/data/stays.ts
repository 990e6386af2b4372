// Stays and spend: reservations and folio transactions, read in SQL (dates and instants as the
// API's ISO text, bigint amounts as decimal text).
import type { CursorKey } from "../pagination/cursor";
import { createdAtKey, createdAtSql } from "./keyset";
import type { JsonRelation } from "./json-rows";
import type { Readers } from "./readers";
import { anyOf, columns, equals, sql, type RowShape } from "./sql";
import { between, dateText, guestConditions, instantText, since } from "./where";
import { Reservation, Transaction, type RowOf } from "./models";

export const RESERVATION_ROW: RowShape = Reservation.row;
export const TRANSACTION_ROW: RowShape = Transaction.row;

/** A reservation as data/ returns it: dates as YYYY-MM-DD text, instants as ISO text, amounts as decimal text. */
export type ReservationRow = RowOf<typeof Reservation>;
export type TransactionRow = RowOf<typeof Transaction>;
/** The columns every reservation or transaction read has: the key and the grouping key. */
export type StayRow = Pick<TransactionRow, "id" | "guestProfileId" | "createdAt">;

export interface StaySummary {
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

export interface ReservationFilter {
  guestProfileId?: string | null;
  masterProfileId?: string | null;
  propertyId?: string | null;
  integrationId?: string | null;
  sourceId?: string | null;
  status?: string | null;
  kind?: string | null;
  confirmationNumber?: string | null;
  arrivalFrom?: Date | null;
  arrivalTo?: Date | null;
  departureFrom?: Date | null;
  departureTo?: Date | null;
  updatedSince?: Date | null;
}

export interface TransactionFilter {
  guestProfileId?: string | null;
  masterProfileId?: string | null;
  reservationId?: string | null;
  propertyId?: string | null;
  integrationId?: string | null;
  kind?: string | null;
  category?: string | null;
  occurredFrom?: Date | null;
  occurredTo?: Date | null;
}

export const stayKeyOf = createdAtKey;

/** A guest's reservations and transactions, oldest first: what reservationsOfGuests and transactionsOfGuests read, per guest. */
export const RESERVATIONS_OF_GUEST: JsonRelation = { model: "Reservation", foreignKey: "guestProfileId", references: "id", orderBy: ["createdAt", "id"] };
export const TRANSACTIONS_OF_GUEST: JsonRelation = { model: "Transaction", foreignKey: "guestProfileId", references: "id", orderBy: ["createdAt", "id"] };

const reservations = createdAtSql("Reservation");
const transactions = createdAtSql("Transaction");
const R = columns("Reservation");
const T = columns("Transaction");

/**
 * A folio line's spend on a transaction aliased `x`: charges and adjustments as stored, a refund
 * always reducing spend, whatever sign its source stored it with (the contract says negative; some
 * sources and the fixtures store it positive). Payments settle the bill and are not spend: readers
 * keep SPEND_KINDS.
 */
export const SPEND_AMOUNT = sql`CASE WHEN x.kind = 'refund' THEN -abs(x.amount_minor) ELSE x.amount_minor END`;
/** The folio lines (transaction aliased `x`) that are spend: every kind but payments. */
export const SPEND_KINDS = sql`x.kind IN ('charge', 'adjustment', 'refund')`;

/**
 * A reservation's phase (reservation aliased `r`), as `s.begun` and `s.upcoming`: a stay begun (not
 * cancelled or no-show, arrived by today) or upcoming (tentative or confirmed, arriving after today).
 * The guest context and the guest lookup count stays by it.
 */
export const STAY_PHASE = sql`CROSS JOIN LATERAL (SELECT
              r.kind = 'stay' AND r.status NOT IN ('cancelled', 'no_show') AND r.arrival_date <= current_date AS begun,
              r.kind = 'stay' AND r.status IN ('tentative', 'confirmed') AND r.arrival_date > current_date AS upcoming) s`;


export function stays(r: Readers) {
  const reservationWhere = (f: ReservationFilter) => [
    equals(R("propertyId"), f.propertyId),
    equals(R("integrationId"), f.integrationId),
    equals(R("sourceId"), f.sourceId),
    equals(R("status"), f.status),
    equals(R("kind"), f.kind),
    equals(R("confirmationNumber"), f.confirmationNumber),
    ...between(R("arrivalDate"), f.arrivalFrom, f.arrivalTo, dateText, false),
    ...between(R("departureDate"), f.departureFrom, f.departureTo, dateText, false),
    since(R("updatedAt"), f.updatedSince),
    ...guestConditions(r, f, R("guestProfileId")),
  ];

  const transactionWhere = (f: TransactionFilter) => [
    equals(T("reservationId"), f.reservationId),
    equals(T("propertyId"), f.propertyId),
    equals(T("integrationId"), f.integrationId),
    equals(T("kind"), f.kind),
    equals(T("category"), f.category),
    ...between(T("occurredAt"), f.occurredFrom, f.occurredTo, instantText, true),
    ...guestConditions(r, f, T("guestProfileId")),
  ];

  return {
    reservationPage: async (filter: ReservationFilter, after: CursorKey | null, take: number) =>
      reservations.page<ReservationRow>(r.sql, reservationWhere(filter), after, take, RESERVATION_ROW),
    reservationById: async (id: string) => (await reservations.byId<ReservationRow>(r.sql, id, RESERVATION_ROW)) ?? null,
    transactionPage: async (filter: TransactionFilter, after: CursorKey | null, take: number) =>
      transactions.page<StayRow>(r.sql, transactionWhere(filter), after, take, TRANSACTION_ROW),
    transactionById: async (id: string) => (await transactions.byId<StayRow>(r.sql, id, TRANSACTION_ROW)) ?? null,

    /** The reservations of these guests, oldest first, with the columns of `shape`. */
    reservationsOfGuests: <Row = ReservationRow>(ids: readonly string[], shape: RowShape) =>
      r.sql.rows<Row>({ from: "Reservation", shape, where: [anyOf(R("guestProfileId"), ids)], orderBy: reservations.orderBy }),
    transactionsOfGuests: <Row = StayRow>(ids: readonly string[], shape: RowShape) =>
      r.sql.rows<Row>({ from: "Transaction", shape, where: [anyOf(T("guestProfileId"), ids)], orderBy: transactions.orderBy }),
    /** One aggregate over these guests' reservations: stays begun, nights, first, last and next stay. */
    async summaryOfGuests(guestIds: readonly string[]): Promise<StaySummary> {
      const [row] = await r.sql.query<StaySummary>(
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
          ${STAY_PHASE}
          WHERE ${scoped("Reservation", "r")} AND r.guest_profile_id = ANY(${[...guestIds]}::uuid[])`,
        { prepare: true },
      );
      return row;
    },

    /**
     * These guests' spend per currency and category: charges and adjustments less refunds; payments
     * settle the bill and are not spend. A refund always reduces spend, whatever sign its source
     * stored it with (the contract says negative; some sources and the fixtures store it positive).
     */
    spendOfGuests: (guestIds: readonly string[]) =>
      r.sql.query<{ currency: string; category: string; amountMinor: string; transactions: number }>(
        (scoped) => sql`SELECT x.currency, x.category,
            sum(${SPEND_AMOUNT})::text AS "amountMinor",
            count(*)::int AS transactions
          FROM transactions x
          WHERE ${scoped("Transaction", "x")} AND x.guest_profile_id = ANY(${[...guestIds]}::uuid[])
            AND ${SPEND_KINDS}
          GROUP BY x.currency, x.category`,
        { prepare: true },
      ),

    /** The transactions of these reservations, oldest first. */
    transactionsOfReservations: (ids: readonly string[]) =>
      r.sql.rows<StayRow & { reservationId: string | null }>({
        from: "Transaction",
        shape: TRANSACTION_ROW,
        where: [anyOf(T("reservationId"), ids)],
        orderBy: transactions.orderBy,
      }),
  };
}
