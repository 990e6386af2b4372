// Actions (guest tasks) and reviews, with the review summary (data/engagement.ts).
import type { RequestContext } from "../../context";
import { engagementKeyOf, type ActionFilter, type ReviewFilter } from "../../data/engagement";
import { invalidRequest } from "../../errors";
import { getById, guestOfRow, keysetList } from "./lists";

function checkRatings(f: ReviewFilter) {
  for (const [name, value] of [["min_rating", f.minRating], ["max_rating", f.maxRating]] as const) {
    if (value != null && (value < 1 || value > 5)) throw invalidRequest(`${name} must be a rating from 1 to 5`);
  }
}

export const engagementResolvers = {
  Query: {
    actions: keysetList<ActionFilter, { createdAt: string; id: string }>("actions", engagementKeyOf, (ctx) => ctx.data.engagement.actionPage),
    action: getById("action", (ctx, id) => ctx.data.engagement.actionById(id)),
    reviews: keysetList<ReviewFilter, { createdAt: string; id: string }>("reviews", engagementKeyOf, (ctx) => ctx.data.engagement.reviewPage, checkRatings),
    review: getById("review", (ctx, id) => ctx.data.engagement.reviewById(id)),
    reviewSummary: (_: unknown, args: { filter?: ReviewFilter | null }, ctx: RequestContext) => {
      const filter = args.filter ?? {};
      checkRatings(filter);
      return ctx.data.engagement.reviewSummary(filter);
    },
  },
  Review: {
    sourceRating: (r: { sourceRating: string }) => Number(r.sourceRating), // numeric(5, 2) as decimal text
    guest: guestOfRow,
  },
  Action: { guest: guestOfRow },
};
