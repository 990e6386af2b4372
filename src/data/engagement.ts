// Actions (guest tasks) and reviews. Read through Prisma (these lists are not on a hot path), but for
// the guest context's one SQL statement.
import type { Prisma } from "../generated/prisma/client";
import type { CursorKey } from "../pagination/cursor";
import { createdAtKey, createdAtPrisma } from "./keyset";
import { allInstantsAsText, instantsAsText, type AsText } from "./prisma-rows";
import type { Readers } from "./readers";
import { given, guestFilter, range } from "./where";
import { rangeStart } from "../validate";
import { anyOf, raw, renderColumn, sql } from "./sql";

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

export type ActionRow = AsText<Prisma.ActionGetPayload<object>>;
export type ReviewRow = AsText<Prisma.ReviewGetPayload<object>>;

export const engagementKeyOf = createdAtKey;

const round2 = (n: number | null | undefined) => (n == null ? null : Math.round(n * 100) / 100);

export function engagement(r: Readers) {
  async function actionWhere(f: ActionFilter): Promise<Prisma.ActionWhereInput> {
    return {
      ...given({
        reservationId: f.reservationId,
        propertyId: f.propertyId,
        status: f.status,
        priority: f.priority,
        kind: f.kind,
        dueAt: range(f.dueFrom, f.dueTo, true),
        updatedAt: f.updatedSince == null ? undefined : { gte: rangeStart(f.updatedSince) },
      }),
      ...(await guestFilter(r, f)),
    };
  }

  async function reviewWhere(f: ReviewFilter): Promise<Prisma.ReviewWhereInput> {
    return {
      ...given({
        reservationId: f.reservationId,
        propertyId: f.propertyId,
        source: f.source,
        rating: f.minRating == null && f.maxRating == null ? undefined : given({ gte: f.minRating, lte: f.maxRating }),
        publishedAt: range(f.publishedFrom, f.publishedTo, true),
      }),
      ...(await guestFilter(r, f)),
    };
  }

  return {
    async actionPage(filter: ActionFilter, after: CursorKey | null, take: number): Promise<ActionRow[]> {
      const where = await actionWhere(filter);
      return allInstantsAsText(await r.prisma.action.findMany(createdAtPrisma.page(where, after, take)));
    },
    actionById: async (id: string): Promise<ActionRow | null> => instantsAsText(await r.prisma.action.findFirst({ where: { id } })),
    actionsOfGuests: async (ids: readonly string[]): Promise<ActionRow[]> =>
      allInstantsAsText(await r.prisma.action.findMany(createdAtPrisma.all({ guestProfileId: { in: [...ids] } }))),

    async reviewPage(filter: ReviewFilter, after: CursorKey | null, take: number): Promise<ReviewRow[]> {
      const where = await reviewWhere(filter);
      return allInstantsAsText(await r.prisma.review.findMany(createdAtPrisma.page(where, after, take)));
    },
    reviewById: async (id: string): Promise<ReviewRow | null> => instantsAsText(await r.prisma.review.findFirst({ where: { id } })),
    reviewsOfGuests: async (ids: readonly string[]): Promise<ReviewRow[]> =>
      allInstantsAsText(await r.prisma.review.findMany(createdAtPrisma.all({ guestProfileId: { in: [...ids] } }))),

    /** Counts and average ratings of the reviews the filter selects: overall, per rating, source and property. */
    async reviewSummary(filter: ReviewFilter) {
      const where = await reviewWhere(filter);
      const [all, byRating, bySource, byProperty, responded] = await Promise.all([
        r.prisma.review.aggregate({ where, _count: { _all: true }, _avg: { rating: true } }),
        r.prisma.review.groupBy({ by: ["rating"], where, _count: { _all: true } }),
        r.prisma.review.groupBy({ by: ["source"], where, _count: { _all: true }, _avg: { rating: true }, orderBy: { source: "asc" } }),
        r.prisma.review.groupBy({ by: ["propertyId"], where, _count: { _all: true }, _avg: { rating: true }, orderBy: { propertyId: "asc" } }),
        r.prisma.review.aggregate({ where: { AND: [where, { respondedAt: { not: null } }] }, _count: { _all: true }, _avg: { rating: true } }),
      ]);
      const perRating = new Map(byRating.map((x) => [x.rating, x._count._all]));
      return {
        count: all._count._all,
        averageRating: round2(all._avg.rating),
        byRating: [1, 2, 3, 4, 5].map((rating) => ({ rating, count: perRating.get(rating) ?? 0 })),
        bySource: bySource.map((s) => ({ source: s.source, count: s._count._all, averageRating: round2(s._avg.rating) })),
        byProperty: byProperty.map((p) => ({ propertyId: p.propertyId, count: p._count._all, averageRating: round2(p._avg.rating) })),
        responded: { count: responded._count._all, averageRating: round2(responded._avg.rating) },
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
