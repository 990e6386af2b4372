// The guest event log (spec 4.4, 6): a timeline in commit-safe order, or the latest event of each
// entity (data/events.ts says how the timeline never skips a late commit).
import type { RequestContext } from "../../context";
import { eventKeyOf, type EventFilter, type TimelineOrder } from "../../data/events";
import { apiError, invalidRequest } from "../../errors";
import { decodeCursor } from "../../pagination/cursor";
import { pageSize } from "../../pagination/keyset";
import { boundPage, guestOfRow, type PageArgs } from "./lists";
import { subscribeEvents, type EventStreamItem } from "../stream";

function checkFilter(f: EventFilter) {
  if (f.guestProfileId != null && f.masterProfileId != null) {
    throw invalidRequest("send guest_profile_id or master_profile_id, not both");
  }
}

type EventArgs = PageArgs<EventFilter> & { mode?: string | null; order?: "ASC" | "DESC" | null };

/**
 * What a timeline cursor is bound to besides the family and group. Ascending keeps the binding it
 * always had (stream ids and webhook replays are ascending cursors); descending adds the order, so a
 * cursor of one order given with the other is `invalid_cursor`.
 */
const timelineBinding = (ctx: RequestContext, order: TimelineOrder) => (filter: EventFilter) =>
  order === "asc" ? { filter, propertyId: ctx.scope.propertyId } : { filter, propertyId: ctx.scope.propertyId, order };

function timeline(args: EventArgs, ctx: RequestContext) {
  const filter = args.filter ?? {};
  checkFilter(filter);
  const order: TimelineOrder = args.order === "DESC" ? "desc" : "asc";
  if (args.cursor) refuseOtherOrder(args.cursor, filter, order, ctx);
  return boundPage("events", args, ctx, eventKeyOf, (f, after, take) => ctx.data.events.timeline(f, after, take, order), timelineBinding(ctx, order));
}

/** A cursor of the other order is refused with a detail that says so (any other bad cursor: as always). */
function refuseOtherOrder(cursor: string, filter: EventFilter, order: TimelineOrder, ctx: RequestContext) {
  const other: TimelineOrder = order === "asc" ? "desc" : "asc";
  const binding = { family: "events", propertyGroupId: ctx.scope.propertyGroupId, query: timelineBinding(ctx, other)(filter) };
  try {
    decodeCursor(cursor, binding, ctx.cursorSecret);
  } catch {
    return; // not the other order's: boundPage decides
  }
  throw apiError("invalid_cursor", `this cursor walks the timeline in order ${other}; send it with order=${other} or restart from the first page`);
}

/**
 * The newest event of each entity the filter selects, most recently changed entities first. `limit`
 * caps the number of entities; `has_more` says more entities matched (narrow the filter to see
 * them). One page: next_cursor is always null.
 */
async function latest(args: EventArgs, ctx: RequestContext) {
  const size = pageSize(args.limit);
  if (args.cursor) throw invalidRequest("mode=latest is a single page: it takes no cursor");
  const filter = args.filter ?? {};
  checkFilter(filter);
  const { heads, nodes } = await ctx.data.events.latest(filter, size);
  return { nodes, nextCursor: null, hasMore: heads > size };
}

export const eventResolvers = {
  Event: { guest: guestOfRow },
  Query: {
    // mode=latest is newest first whatever the order: order walks the timeline.
    events: async (_: unknown, args: EventArgs, ctx: RequestContext) => {
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
