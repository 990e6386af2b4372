// Actions (guest tasks) and reviews, read in scoped SQL (data/sql.ts): a page of 100 reviews through
// Prisma cost the service 8 ms of CPU, against 2 for a reservations page in SQL.
import type { CursorKey } from "../pagination/cursor";
import { createdAtKey, createdAtSql } from "./keyset";
import { Action, Review, type RowOf } from "./models";
import type { Readers } from "./readers";
import { between, guestConditions, instantText, since } from "./where";
import { anyOf, columns, equals, equalsText, join, raw, renderColumn, sql, type Sql } from "./sql";

/** The latest review as the guest context reads it. */
export interface PersonReview {
  rating: number;
  source: string;
  title: string | null;
  body: string | null;
  publishedAt: string;
  propertyId: string;
}

export interface ActionFilter {
  guestProfileId?: string | null;
  masterProfileId?: string | null;
  reservationId?: string | null;
  propertyId?: string | null;
  status?: string | null;
  priority?: string | null;
  kind?: string | null;
  dueFrom?: Date | null;
  dueTo?: Date | null;
  updatedSince?: Date | null;
}

export interface ReviewFilter {
  guestProfileId?: string | null;
  masterProfileId?: string | null;
  reservationId?: string | null;
  propertyId?: string | null;
  source?: string | null;
  minRating?: number | null;
  maxRating?: number | null;
  publishedFrom?: Date | null;
  publishedTo?: Date | null;
}

/** An action as read in SQL: instants as ISO text. */
export type ActionRow = RowOf<typeof Action>;
const actions = createdAtSql("Action");
/** A review as read in SQL: instants as ISO text, source_rating as decimal text. */
export type ReviewRow = RowOf<typeof Review>;
const reviews = createdAtSql("Review");

export const engagementKeyOf = createdAtKey;

const round2 = (n: number | null | undefined) => (n == null ? null : Math.round(n * 100) / 100);
const averageOf = (text: string | null) => round2(text == null ? null : Number(text));

/**
 * A ReviewFilter in SQL on the reviews table aliased `alias`, each given filter ANDed (the review list
 * and summary, data/metrics.ts reviews). `published_to` as a date takes that whole day in.
 */
export function reviewConditions(r: Readers, f: ReviewFilter, alias: string): Sql[] {
  const column = columns("Review", alias);
  return [
    equals(column("propertyId"), f.propertyId),
    equals(column("reservationId"), f.reservationId),
    equals(column("source"), f.source),
    f.minRating == null ? undefined : sql`${column("rating")} >= ${f.minRating}`,
    f.maxRating == null ? undefined : sql`${column("rating")} <= ${f.maxRating}`,
    ...between(column("publishedAt"), f.publishedFrom, f.publishedTo, instantText, true),
    ...guestConditions(r, f, column("guestProfileId")),
  ].filter((c): c is Sql => c !== undefined);
}

/** One row of the review summary's statement: the totals (g 7), or one rating (3), source (5) or property (6). */
interface SummaryRow {
  g: number;
  rating: number | null;
  source: string | null;
  propertyId: string | null;
  count: number;
  average: string | null;
  respondedCount: number;
  respondedAverage: string | null;
}

export function engagement(r: Readers) {
  function actionConditions(f: ActionFilter): (Sql | undefined)[] {
    const column = columns("Action");
    return [
      equals(column("reservationId"), f.reservationId),
      equals(column("propertyId"), f.propertyId),
      equalsText(column("status"), f.status),
      equalsText(column("priority"), f.priority),
      equals(column("kind"), f.kind),
      ...between(column("dueAt"), f.dueFrom, f.dueTo, instantText, true),
      since(column("updatedAt"), f.updatedSince),
      ...guestConditions(r, f, column("guestProfileId")),
    ];
  }

  return {
    actionPage: async (filter: ActionFilter, after: CursorKey | null, take: number): Promise<ActionRow[]> =>
      actions.page<ActionRow>(r.sql, actionConditions(filter), after, take, Action.row),
    actionById: async (id: string): Promise<ActionRow | null> => (await actions.byId<ActionRow>(r.sql, id, Action.row)) ?? null,
    actionsOfGuests: (ids: readonly string[]): Promise<ActionRow[]> =>
      r.sql.rows<ActionRow>({ from: "Action", shape: Action.row, where: [anyOf(raw("t.guest_profile_id"), ids)], orderBy: actions.orderBy }),

    reviewPage: async (filter: ReviewFilter, after: CursorKey | null, take: number): Promise<ReviewRow[]> =>
      reviews.page<ReviewRow>(r.sql, reviewConditions(r, filter, "t"), after, take, Review.row),
    reviewById: async (id: string): Promise<ReviewRow | null> => (await reviews.byId<ReviewRow>(r.sql, id, Review.row)) ?? null,
    reviewsOfGuests: (ids: readonly string[]): Promise<ReviewRow[]> =>
      r.sql.rows<ReviewRow>({ from: "Review", shape: Review.row, where: [anyOf(raw("t.guest_profile_id"), ids)], orderBy: reviews.orderBy }),

    /**
     * Counts and average ratings of the reviews the filter selects: overall, per rating, source and
     * property, and of those answered. One statement, one pass over the rows (grouping sets): five
     * Prisma aggregates cost the service about 1 ms of CPU each, in Prisma's query compiler.
     */
    async reviewSummary(filter: ReviewFilter) {
      const conditions = reviewConditions(r, filter, "t");
      const rows = await r.sql.query<SummaryRow>(
        (scoped) => sql`SELECT GROUPING(t.rating, t.source, t.property_id)::int AS g, t.rating, t.source, t.property_id AS "propertyId",
            count(*)::int AS count, avg(t.rating)::text AS average,
            count(*) FILTER (WHERE t.responded_at IS NOT NULL)::int AS "respondedCount",
            avg(t.rating) FILTER (WHERE t.responded_at IS NOT NULL)::text AS "respondedAverage"
          FROM reviews t WHERE ${join([scoped("Review", "t"), ...conditions], " AND ")}
          GROUP BY GROUPING SETS ((), (t.rating), (t.source), (t.property_id))
          ORDER BY g, t.source, t.property_id`,
        // One person's reviews (the guest_profile_id index) on a kept plan; a group-wide summary planned each time.
        { prepare: filter.guestProfileId != null || filter.masterProfileId != null },
      );
      const all = rows.find((x) => x.g === 7)!;
      const perRating = new Map(rows.filter((x) => x.g === 3).map((x) => [x.rating, x.count]));
      return {
        count: all.count,
        averageRating: averageOf(all.average),
        byRating: [1, 2, 3, 4, 5].map((rating) => ({ rating, count: perRating.get(rating) ?? 0 })),
        bySource: rows.filter((x) => x.g === 5).map((x) => ({ source: x.source!, count: x.count, averageRating: averageOf(x.average) })),
        byProperty: rows.filter((x) => x.g === 6).map((x) => ({ propertyId: x.propertyId!, count: x.count, averageRating: averageOf(x.average) })),
        responded: { count: all.respondedCount, averageRating: averageOf(all.respondedAverage) },
      };
    },

    /** How many reviews these guests wrote, their average rating, and the latest one. */
    /** Count, average rating and the latest of these guest profiles' reviews: one SQL statement (the guest context). */
    async reviewsOfPerson(guestIds: readonly string[]) {
      const [row] = await r.sql.query<{ count: number; average: string | null } & Partial<PersonReview> & { id: string | null }>(
        (scoped) => sql`SELECT s.count, s.average, l.*
          FROM (SELECT count(*)::int AS count, avg(t.rating)::text AS average FROM reviews t
                WHERE ${scoped("Review", "t")} AND ${anyOf(raw("t.guest_profile_id"), guestIds)}) s
          LEFT JOIN LATERAL (SELECT t.id, t.rating, t.source, t.title, t.body, ${raw(renderColumn("instant", "t.published_at"))} AS "publishedAt",
                t.property_id AS "propertyId"
              FROM reviews t WHERE ${scoped("Review", "t")} AND ${anyOf(raw("t.guest_profile_id"), guestIds)}
              ORDER BY t.published_at DESC, t.id LIMIT 1) l ON true`,
        { prepare: true },
      );
      const latest = row.id == null ? null : (row as PersonReview);
      return { count: row.count, averageRating: round2(row.average == null ? null : Number(row.average)), latest };
    },
  };
}
