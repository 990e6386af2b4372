// The guest event log (spec 4.4, 6): a timeline in commit-safe order, or the latest event of each
// entity (data/events.ts says how the timeline never skips a late commit).
import type { RequestContext } from "../../context";
import { eventKeyOf, type EventFilter } from "../../data/events";
import { invalidRequest } from "../../errors";
import { pageSize } from "../../pagination/keyset";
import { boundPage, type PageArgs } from "./lists";
import { subscribeEvents, type EventStreamItem } from "../stream";

function checkFilter(f: EventFilter) {
  if (f.guestProfileId != null && f.masterProfileId != null) {
    throw invalidRequest("send guest_profile_id or master_profile_id, not both");
  }
}

function timeline(args: PageArgs<EventFilter>, ctx: RequestContext) {
  checkFilter(args.filter ?? {});
  return boundPage("events", args, ctx, eventKeyOf, ctx.data.events.timeline);
}

/**
 * The newest event of each entity the filter selects, most recently changed entities first. `limit`
 * caps the number of entities; `has_more` says more entities matched (narrow the filter to see
 * them). One page: next_cursor is always null.
 */
async function latest(args: PageArgs<EventFilter>, ctx: RequestContext) {
  const size = pageSize(args.limit);
  if (args.cursor) throw invalidRequest("mode=latest is a single page: it takes no cursor");
  const filter = args.filter ?? {};
  checkFilter(filter);
  const { heads, nodes } = await ctx.data.events.latest(filter, size);
  return { nodes, nextCursor: null, hasMore: heads > size };
}

export const eventResolvers = {
  Query: {
    events: async (_: unknown, args: PageArgs<EventFilter> & { mode?: string | null }, ctx: RequestContext) => {
      const mode = args.mode === "latest" || args.mode === "rollup" ? "latest" : "timeline";
      const page = mode === "latest" ? await latest(args, ctx) : await timeline(args, ctx);
      return { ...page, mode };
    },
  },
  // Served at /graphql/stream only (graphql/stream.ts).
  Subscription: {
    events: {
      subscribe: (_: unknown, args: { filter?: EventFilter | null; after?: string | null }, ctx: RequestContext) => subscribeEvents(args, ctx),
      resolve: (item: EventStreamItem) => item,
    },
  },
};
