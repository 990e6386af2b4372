// The aggregates for dashboards (issue 28): stayMetrics, guestMetrics, consentMetrics and
// reviewMetrics, each one grouped statement in data/metrics.ts. Here: the arguments are checked
// (bad input is `invalid_request`), a dimension that reads another family's data needs that
// family's scope, and measures no one selected are not computed.
import type { GraphQLResolveInfo } from "graphql";
import type { RequestContext } from "../../context";
import type { ConsentDimension, GuestDimension, ReviewDimension, ReviewMetricsFilter, StayDimension } from "../../data/metrics";
import { invalidRequest, missingScope } from "../../errors";
import { selectedFields } from "../selection";
import { checkedPurpose } from "./contact-permission";

/** The longest arrival-date range stayMetrics counts: two years, so a year can be compared with the one before. */
export const MAX_STAY_RANGE_DAYS = 731;
const TIME_DIMENSIONS = new Set(["day", "week", "month"]);
const DAY_MS = 86_400_000;

function dimensions<D extends string>(groupBy: readonly D[] | null | undefined, max: number): D[] {
  const list = [...(groupBy ?? [])];
  const seen = new Set<D>();
  for (const d of list) {
    if (seen.has(d)) throw invalidRequest(`groupBy names ${d} twice; name each dimension once`);
    seen.add(d);
  }
  if (list.length > max) throw invalidRequest(`groupBy names ${list.length} dimensions; at most ${max} are allowed`);
  if (list.filter((d) => TIME_DIMENSIONS.has(d)).length > 1) throw invalidRequest("groupBy may name only one of day, week and month");
  return list;
}

function needScope(ctx: RequestContext, scope: string) {
  if (!ctx.credential.scopes.has(scope)) throw missingScope(scope);
}

/**
 * The purposes guestMetrics defaults to, which the dashboard also asks consentMetrics for: answered
 * (zeros) even by a group that never records them, so a default is never an error.
 */
const DEFAULT_PURPOSES = new Set(["email_marketing", "sms_marketing"]);

/** A purpose argument: a default as is, any other checked as every consent question checks it (a typo is an error). */
async function aggregatePurpose(ctx: RequestContext, name: string, value: string): Promise<string> {
  return DEFAULT_PURPOSES.has(value.trim()) ? value.trim() : checkedPurpose(ctx, value, name);
}

const dateText = (d: Date) => d.toISOString().slice(0, 10);

export const metricResolvers = {
  Query: {
    async stayMetrics(
      _: unknown,
      args: { filter: { arrivalFrom: Date; arrivalTo: Date; propertyId?: string | null; channel?: string | null }; groupBy?: StayDimension[] | null },
      ctx: RequestContext,
      info: GraphQLResolveInfo,
    ) {
      const groupBy = dimensions(args.groupBy, 3);
      if (groupBy.includes("guest_country")) needScope(ctx, "read:guests");
      const { arrivalFrom, arrivalTo } = args.filter;
      if (arrivalTo < arrivalFrom) throw invalidRequest("filter.arrivalTo is before filter.arrivalFrom");
      const days = Math.round((arrivalTo.getTime() - arrivalFrom.getTime()) / DAY_MS);
      if (days >= MAX_STAY_RANGE_DAYS) throw invalidRequest(`the arrival range spans ${days + 1} days; at most ${MAX_STAY_RANGE_DAYS} are allowed`);
      const selected = selectedFields(info);
      return ctx.data.metrics.stays(
        { ...args.filter, arrivalFrom: dateText(arrivalFrom), arrivalTo: dateText(arrivalTo) },
        groupBy,
        selected.has("revenue") && ctx.credential.scopes.has("read:transactions"),
        (selected.has("returningGuests") || selected.has("repeatRate")) && ctx.credential.scopes.has("read:guests"),
      );
    },

    async guestMetrics(
      _: unknown,
      args: { groupBy?: GuestDimension[] | null; emailPurpose: string; smsPurpose: string },
      ctx: RequestContext,
      info: GraphQLResolveInfo,
    ) {
      const groupBy = dimensions(args.groupBy, 4);
      if (groupBy.includes("loyalty_tier")) needScope(ctx, "read:loyalty");
      const [emailPurpose, smsPurpose] = await Promise.all([aggregatePurpose(ctx, "emailPurpose", args.emailPurpose), aggregatePurpose(ctx, "smsPurpose", args.smsPurpose)]);
      const selected = selectedFields(info);
      const reach = (selected.has("reachableByEmail") || selected.has("reachableBySms")) && ctx.credential.scopes.has("read:consents");
      return ctx.data.metrics.guests(groupBy, reach ? { email: emailPurpose, sms: smsPurpose } : null);
    },

    async consentMetrics(
      _: unknown,
      args: { purpose: string; contactType?: "email" | "phone" | null; groupBy?: ConsentDimension[] | null },
      ctx: RequestContext,
    ) {
      // The contact points counted are the guest profiles' own.
      needScope(ctx, "read:guests");
      const groupBy = dimensions(args.groupBy, 2);
      const purpose = await aggregatePurpose(ctx, "purpose", args.purpose);
      return ctx.data.metrics.consent(purpose, args.contactType ?? null, groupBy);
    },

    async reviewMetrics(_: unknown, args: { filter?: ReviewMetricsFilter | null; groupBy?: ReviewDimension[] | null }, ctx: RequestContext) {
      const groupBy = dimensions(args.groupBy, 3);
      const filter = args.filter ?? {};
      for (const [name, value] of [["minRating", filter.minRating], ["maxRating", filter.maxRating]] as const) {
        if (value != null && (value < 1 || value > 5)) throw invalidRequest(`filter.${name} must be a rating from 1 to 5`);
      }
      return ctx.data.metrics.reviews(filter, groupBy);
    },
  },
};
