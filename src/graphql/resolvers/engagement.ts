// Actions (guest tasks) and reviews, with the review summary.
import type { GraphQLContext } from "../../context";
import type { Prisma } from "../../generated/prisma/client";
import { invalidRequest } from "../errors";
import { getById, given, guestIdsOfMaster, keysetList, range } from "./lists";

interface ActionFilter {
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

interface ReviewFilter {
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

async function actionWhere(f: ActionFilter, ctx: GraphQLContext): Promise<Prisma.ActionWhereInput> {
  const ofMaster = await guestIdsOfMaster(ctx, f.masterProfileId);
  return {
    ...given({
      reservationId: f.reservationId,
      propertyId: f.propertyId,
      status: f.status,
      priority: f.priority,
      kind: f.kind,
      dueAt: range(f.dueFrom, f.dueTo, true),
      updatedAt: f.updatedSince == null ? undefined : { gte: f.updatedSince },
    }),
    AND: [given({ guestProfileId: f.guestProfileId }), given({ guestProfileId: ofMaster })],
  };
}

async function reviewWhere(f: ReviewFilter, ctx: GraphQLContext): Promise<Prisma.ReviewWhereInput> {
  for (const [name, value] of [["min_rating", f.minRating], ["max_rating", f.maxRating]] as const) {
    if (value != null && (value < 1 || value > 5)) throw invalidRequest(`${name} must be a rating from 1 to 5`);
  }
  const ofMaster = await guestIdsOfMaster(ctx, f.masterProfileId);
  return {
    ...given({
      reservationId: f.reservationId,
      propertyId: f.propertyId,
      source: f.source,
      rating: f.minRating == null && f.maxRating == null ? undefined : given({ gte: f.minRating, lte: f.maxRating }),
      publishedAt: range(f.publishedFrom, f.publishedTo, true),
    }),
    AND: [given({ guestProfileId: f.guestProfileId }), given({ guestProfileId: ofMaster })],
  };
}

const round2 = (n: number | null | undefined) => (n == null ? null : Math.round(n * 100) / 100);

async function reviewSummary(_: unknown, args: { filter?: ReviewFilter | null }, ctx: GraphQLContext) {
  const where = await reviewWhere(args.filter ?? {}, ctx);
  const [all, byRating, bySource, byProperty, responded] = await Promise.all([
    ctx.db.review.aggregate({ where, _count: { _all: true }, _avg: { rating: true } }),
    ctx.db.review.groupBy({ by: ["rating"], where, _count: { _all: true } }),
    ctx.db.review.groupBy({ by: ["source"], where, _count: { _all: true }, _avg: { rating: true }, orderBy: { source: "asc" } }),
    ctx.db.review.groupBy({ by: ["propertyId"], where, _count: { _all: true }, _avg: { rating: true }, orderBy: { propertyId: "asc" } }),
    ctx.db.review.aggregate({ where: { AND: [where, { respondedAt: { not: null } }] }, _count: { _all: true }, _avg: { rating: true } }),
  ]);
  const perRating = new Map(byRating.map((r) => [r.rating, r._count._all]));
  return {
    count: all._count._all,
    averageRating: round2(all._avg.rating),
    byRating: [1, 2, 3, 4, 5].map((rating) => ({ rating, count: perRating.get(rating) ?? 0 })),
    bySource: bySource.map((s) => ({ source: s.source, count: s._count._all, averageRating: round2(s._avg.rating) })),
    byProperty: byProperty.map((p) => ({ propertyId: p.propertyId, count: p._count._all, averageRating: round2(p._avg.rating) })),
    responded: { count: responded._count._all, averageRating: round2(responded._avg.rating) },
  };
}

export const engagementResolvers = {
  Query: {
    actions: keysetList<ActionFilter, Prisma.ActionGetPayload<object>>("actions", (db, args) => db.action.findMany(args), actionWhere),
    action: getById("action", (db, id) => db.action.findUnique({ where: { id } })),
    reviews: keysetList<ReviewFilter, Prisma.ReviewGetPayload<object>>("reviews", (db, args) => db.review.findMany(args), reviewWhere),
    review: getById("review", (db, id) => db.review.findUnique({ where: { id } })),
    reviewSummary,
  },
  Review: {
    sourceRating: (r: { sourceRating: { toNumber(): number } }) => r.sourceRating.toNumber(),
  },
};
