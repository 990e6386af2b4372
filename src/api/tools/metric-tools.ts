// MCP tools over the dashboard aggregates (issue 28): "how did the Lisbon hotel do last month?",
// "how are its reviews trending?", "how many guests can we e-mail?". Each runs one named operation
// of operations/metrics.graphql through the same executor as the other task tools, so scoping,
// consent precedence, costs and errors are the resolvers'.
import { z } from "zod";
import type { ToolAnnotations } from "@modelcontextprotocol/sdk/types.js";
import { DAY_OR_INSTANT_HINT, dayOf } from "../../validate";
import { snakeKeys, type TaskTool } from "./task-tools";

const READ_ONLY: ToolAnnotations = { readOnlyHint: true, openWorldHint: false };

// A day that does not exist (2026-02-30) is a tool error naming the argument, never rolled over. An
// instant is accepted too (issue 42: dates and timestamps alike): where dates are kept, the date it is
// written in; where instants are (review_trend), the instant itself.
const date = z.string().refine((v) => dayOf(v) !== undefined, `must be ${DAY_OR_INSTANT_HINT}`);
/** A date argument as YYYY-MM-DD (checked by `date`). */
const day = (v: unknown) => dayOf(v)!.toISOString().slice(0, 10);
const uuid = z.string().meta({ format: "uuid" });

/** The arguments given, renamed to the operation's variables. */
function pick(args: Record<string, unknown>, names: Record<string, string>): Record<string, unknown> {
  const out: Record<string, unknown> = {};
  for (const [arg, name] of Object.entries(names)) if (args[arg] !== undefined) out[name] = args[arg];
  return out;
}

const money = z.object({
  currency: z.string(),
  revenue_minor: z.number().int().describe("Revenue in the currency's minor unit (12050 EUR is 120.50)."),
  room_revenue_minor: z.number().int(),
  room_nights: z.number().int(),
  average_daily_rate_minor: z.number().int().nullable(),
});

const stayPerformance: TaskTool = {
  name: "stay_performance",
  scope: "read:reservations",
  title: "How did a property do?",
  description: [
    "How a property (or the group) did over arrival dates: buckets of stays, nights, distinct_guests and revenue per currency",
    "(revenue, room revenue, average daily rate). Stays exclude cancellations and no-shows, on their local arrival day.",
    "returning_guests: first stay before the bucket.",
  ].join(" "),
  operation: "StayPerformance",
  inputSchema: {
    from: date.describe("First arrival date."),
    to: date.describe("Last arrival date, inclusive; at most 731 days after from."),
    property_id: uuid.optional().describe("The whole group when absent."),
    channel: z.string().min(1).max(100).optional().describe("e.g. direct."),
    group_by: z
      .array(z.enum(["property", "day", "week", "month", "channel", "guest_country"]))
      .max(3)
      .optional()
      .describe("Splits the answer; at most one of day, week and month; omit for one total."),
  },
  outputSchema: {
    buckets: z.array(
      z.object({
        property_id: z.string().nullable(),
        period: z.string().nullable().describe("First day of the day, week or month bucket."),
        channel: z.string().nullable(),
        guest_country: z.string().nullable(),
        stays: z.number().int(),
        nights: z.number().int(),
        distinct_guests: z.number().int(),
        returning_guests: z.number().int(),
        repeat_rate: z.number().nullable(),
        revenue: z.array(money),
      }),
    ),
  },
  annotations: READ_ONLY,
  toVariables: (args) => ({
    filter: { arrivalFrom: day(args.from), arrivalTo: day(args.to), ...pick(args, { property_id: "propertyId", channel: "channel" }) },
    ...pick(args, { group_by: "groupBy" }),
  }),
  toResult: (data) => ({ buckets: snakeKeys(data.stayMetrics) }),
};

const reviewTrend: TaskTool = {
  name: "review_trend",
  scope: "read:reviews",
  title: "How are reviews trending?",
  description: [
    "Review count, average rating (1 to 5) and count per rating over publication days (UTC), for a property or the group.",
    "group_by month is the trend (each property's local months), source compares platforms, property compares properties.",
  ].join(" "),
  operation: "ReviewMetrics",
  inputSchema: {
    from: date.optional().describe("First publication day."),
    to: date.optional().describe("Last publication day, inclusive."),
    property_id: uuid.optional().describe("The whole group when absent."),
    source: z.string().min(1).max(100).optional().describe("A platform, e.g. google."),
    group_by: z.array(z.enum(["property", "month", "source"])).max(3).optional().describe("Dimensions, each at most once; omit for one total."),
  },
  outputSchema: {
    buckets: z.array(
      z.object({
        property_id: z.string().nullable(),
        period: z.string().nullable(),
        source: z.string().nullable(),
        count: z.number().int(),
        average_rating: z.number().nullable(),
        by_rating: z.array(z.object({ rating: z.number().int(), count: z.number().int() })),
      }),
    ),
  },
  annotations: READ_ONLY,
  toVariables: (args) => ({
    filter: {
      ...pick(args, { property_id: "propertyId", source: "source" }),
      // Passed as given: the DateTime filter takes a date as its start (from) or whole day (to), an
      // instant as itself, exclusive as the end.
      ...pick(args, { from: "publishedFrom", to: "publishedTo" }),
    },
    ...pick(args, { group_by: "groupBy" }),
  }),
  toResult: (data) => ({ buckets: snakeKeys(data.reviewMetrics) }),
};

const guestReach: TaskTool = {
  name: "guest_reach",
  scope: "read:guests",
  title: "How many guests can we reach?",
  description: [
    "Counts guest and master profiles and the guests reachable by e-mail or SMS (effective consent), per property, country,",
    "loyalty tier or vip if asked. One person: check_contact_permission.",
  ].join(" "),
  operation: "GuestReach",
  inputSchema: {
    group_by: z.array(z.enum(["property", "country", "loyalty_tier", "vip"])).max(4).optional().describe("Dimensions, each at most once; omit for one total."),
    email_purpose: z.string().min(1).max(100).optional().describe("Default email_marketing."),
    sms_purpose: z.string().min(1).max(100).optional().describe("Default sms_marketing."),
  },
  outputSchema: {
    buckets: z.array(
      z.object({
        property_id: z.string().nullable(),
        country: z.string().nullable(),
        loyalty_tier: z.string().nullable(),
        vip: z.boolean().nullable(),
        guests: z.number().int(),
        master_profiles: z.number().int(),
        reachable_by_email: z.number().int(),
        reachable_by_sms: z.number().int(),
      }),
    ),
  },
  annotations: READ_ONLY,
  toVariables: (args) => ({
    emailPurpose: (args.email_purpose as string | undefined) ?? "email_marketing",
    smsPurpose: (args.sms_purpose as string | undefined) ?? "sms_marketing",
    ...pick(args, { group_by: "groupBy" }),
  }),
  toResult: (data) => ({ buckets: snakeKeys(data.guestMetrics) }),
};

export const metricTools: TaskTool[] = [stayPerformance, reviewTrend, guestReach];
