// Task-shaped MCP tools: each answers an agent's question in one call by running a named GraphQL
// operation (src/api/operations/tools/*.graphql) with the caller's context, so tenant scoping, consent
// precedence and errors stay in the resolvers. server.ts registers every tool listed here beside the
// tools made from the route table.
import { z } from "zod";
import type { ToolAnnotations } from "@modelcontextprotocol/sdk/types.js";
import { invalidRequest } from "../../errors";
import { metricTools } from "./metric-tools";
import { webhookTools } from "./webhook-tools";

export interface TaskTool {
  name: string;
  title: string;
  /** Written for a model: what it answers, when to use it, what to call next. */
  description: string;
  /** The scope the credential must hold for the tool to be listed (the operation's root field's). */
  scope: string;
  /** The named operation in src/api/operations/tools/*.graphql. */
  operation: string;
  /** Typed arguments, each with a description. */
  inputSchema: z.ZodRawShape;
  outputSchema: z.ZodRawShape;
  annotations: ToolAnnotations;
  /** Tool arguments (already validated by inputSchema) → the operation's variables. */
  toVariables(args: Record<string, unknown>): Record<string, unknown>;
  /** Checks across arguments (exactly one of …), in the tool's own argument names. */
  check?(args: Record<string, unknown>): void;
  /** The operation's data → the tool's structured result (matches outputSchema). */
  toResult(data: Record<string, unknown>): Record<string, unknown>;
}

const READ_ONLY: ToolAnnotations = { readOnlyHint: true, openWorldHint: false };

// Keys are the operations' field names (and a few argument names): a small, fixed set.
const snakeNames = new Map<string, string>();
const snakeName = (key: string) => {
  let name = snakeNames.get(key);
  if (name === undefined) {
    name = key.replace(/[A-Z]/g, (c) => `_${c.toLowerCase()}`);
    if (snakeNames.size < 10_000) snakeNames.set(key, name);
  }
  return name;
};

/** camelCase → snake_case keys, deeply: tool results read like the REST bodies (and their arguments). */
export function snakeKeys(value: unknown): unknown {
  if (Array.isArray(value)) return value.map(snakeKeys);
  if (value === null || typeof value !== "object") return value;
  const out: Record<string, unknown> = {};
  for (const k in value) {
    if (!Object.hasOwn(value, k)) continue;
    const v = snakeKeys((value as Record<string, unknown>)[k]);
    // An own member even for "__proto__" (a JSON scalar's key), as Object.fromEntries makes it.
    if (k === "__proto__") Object.defineProperty(out, k, { value: v, enumerable: true, writable: true, configurable: true });
    else out[snakeName(k)] = v;
  }
  return out;
}

/** The arguments that were given, renamed to the operation's variables. */
function variables(args: Record<string, unknown>, names: Record<string, string>): Record<string, unknown> {
  const out: Record<string, unknown> = {};
  for (const [arg, variable] of Object.entries(names)) if (args[arg] !== undefined) out[variable] = args[arg];
  return out;
}

/** The GraphQL field says "give exactly one of masterProfileId, …": a tool says it in its own argument names. */
function exactlyOne(args: Record<string, unknown>, names: string[]): void {
  const given = names.filter((n) => args[n] !== undefined && args[n] !== null);
  if (given.length !== 1) throw invalidRequest(`give exactly one of ${names.slice(0, -1).join(", ")} or ${names.at(-1)}${given.length ? ` (got ${given.join(" and ")})` : ""}`);
}

// Output shapes, shared where the tools return the same thing.
const date = z.string().describe("YYYY-MM-DD");
const instant = z.string().describe("ISO 8601 instant, UTC");
const more = z
  .object({ tool: z.string(), arguments: z.record(z.string(), z.unknown()) })
  .describe("Call this tool with these arguments for the section's full rows (pass next_cursor back for further pages).");
const evidence = z.object({
  id: z.string(),
  status: z.enum(["granted", "withdrawn", "denied"]),
  channel: z.string(),
  source: z.string(),
  observed_at: instant,
  property: z.string().nullable(),
});

const ONE_OF_PERSON = "Give exactly one of master_profile_id, guest_profile_id or email.";
const ONE_OF_CONTACT = "Give exactly one of email or phone.";

const findGuests: TaskTool = {
  name: "find_guests",
  scope: "read:guests",
  title: "Find guests",
  description: [
    "Find who a guest is from one free-text query: a full name in either order (\"Olivia Smith\" or \"smith olivia\"; accents and case",
    "do not matter, each part may be the start of the name), an e-mail address, a phone number in any formatting with its country code,",
    "a source-system guest id, a loyalty member number or a reservation confirmation number.",
    "Returns ranked candidates (one per person: a master profile, or a guest profile that has none) with name, e-mails, phones,",
    "properties, last stay and what matched, best first. Use it first whenever you only know how someone is called or reached.",
    "Next: guest_context with the chosen candidate's master_profile_id (or its guest_profile_ids[0] when master_profile_id is null).",
    "When truncated is true, make the query more specific.",
  ].join(" "),
  operation: "FindGuests",
  inputSchema: {
    query: z
      .string()
      .min(1)
      .max(200)
      .describe("What you know: a name (\"Olivia Smith\"), e-mail, phone (+44 7700 900123), source id, member number or confirmation number."),
    limit: z.number().int().min(1).max(25).optional().describe("How many candidates to return, 1–25; default 5."),
  },
  outputSchema: {
    query: z.string().describe("The query as searched."),
    candidates: z.array(
      z.object({
        master_profile_id: z.string().nullable().describe("Pass to guest_context; null for a guest profile without a master profile."),
        guest_profile_ids: z.array(z.string()),
        name: z.string().nullable(),
        emails: z.array(z.string()),
        phones: z.array(z.string()),
        properties: z.array(z.string()),
        last_stay: date.nullable(),
        matched_on: z.array(z.string()).describe("email, phone, confirmation_number, member_number, source_id, name or name_prefix."),
        score: z.number().int().describe("100 exact identifier, 90 exact name, 60 name prefix."),
      }),
    ),
    truncated: z.boolean().describe("More candidates matched than were returned."),
  },
  annotations: READ_ONLY,
  toVariables: (args) => variables(args, { query: "query", limit: "limit" }),
  toResult: (data) => snakeKeys(data.guestSearch) as Record<string, unknown>,
};

const guestContext: TaskTool = {
  name: "guest_context",
  scope: "read:guests",
  title: "Everything about one guest",
  description: [
    "Everything known about one person in one call, compact: identity (names, e-mails, phones, linked source profiles with property",
    "and source system), stays (count, nights, first, last and next stay, properties), spend by currency and category (minor units),",
    "effective consent per contact point and purpose with the observation that decides it (withdrawn or denied beat granted),",
    "loyalty memberships (program, tier, points), reviews (count, average, latest) and the most recent events.",
    `${ONE_OF_PERSON} Use it after find_guests, or directly when you have an id or e-mail.`,
    "Each section's `more` names the list tool and arguments that return its full rows; `truncated: true` says a section shows only some.",
    "found is false when nobody in scope matches. To ask about one contact point and purpose only, check_contact_permission is smaller.",
  ].join(" "),
  operation: "GuestContext",
  inputSchema: {
    master_profile_id: z.uuid().optional().describe(`The person's master profile (from find_guests). ${ONE_OF_PERSON}`),
    guest_profile_id: z.uuid().optional().describe(`A guest profile; its master profile is used when it has one. ${ONE_OF_PERSON}`),
    email: z.string().min(3).max(320).optional().describe(`An e-mail address on the person's profiles (case-insensitive). ${ONE_OF_PERSON}`),
  },
  outputSchema: {
    found: z.boolean().describe("False when nobody in scope matches; the other fields are then absent."),
    master_profile_id: z.string().nullable().optional(),
    identity: z
      .object({
        given_name: z.string().nullable(),
        family_name: z.string().nullable(),
        emails: z.array(z.string()),
        phones: z.array(z.string()),
        language: z.string().nullable(),
        country_code: z.string().nullable(),
        vip: z.boolean(),
        profiles: z.array(
          z.object({ guest_profile_id: z.string(), property: z.string().nullable(), source: z.string().nullable(), source_id: z.string() }),
        ),
        truncated: z.boolean(),
        more,
      })
      .optional(),
    stays: z
      .object({
        count: z.number().int(),
        nights: z.number().int(),
        first_stay: date.nullable(),
        last_stay: date.nullable(),
        next_stay: date.nullable(),
        upcoming: z.number().int(),
        cancelled: z.number().int(),
        other_bookings: z.number().int(),
        properties: z.array(z.string()),
        more,
      })
      .optional(),
    spend: z
      .object({
        by_currency: z.array(
          z.object({
            currency: z.string(),
            total_minor: z.number().int(),
            by_category: z.array(z.object({ category: z.string(), amount_minor: z.number().int(), transactions: z.number().int() })),
          }),
        ),
        more,
      })
      .optional(),
    consent: z
      .object({
        effective: z.array(
          z.object({
            contact_type: z.enum(["email", "phone"]),
            contact_value: z.string(),
            purpose: z.string(),
            status: z.enum(["granted", "withdrawn", "denied", "unknown"]),
            observation_count: z.number().int(),
            decided_by: evidence.nullable(),
          }),
        ),
        truncated: z.boolean(),
        more,
      })
      .optional(),
    loyalty: z
      .object({
        memberships: z.array(
          z.object({
            program: z.string(),
            member_number: z.string(),
            tier: z.string(),
            status: z.string(),
            points_balance: z.number().int(),
            points_name: z.string(),
          }),
        ),
        more,
      })
      .optional(),
    reviews: z
      .object({
        count: z.number().int(),
        average_rating: z.number().nullable(),
        latest: z
          .object({
            rating: z.number().int(),
            source: z.string(),
            title: z.string().nullable(),
            excerpt: z.string().nullable(),
            published_at: instant,
            property: z.string().nullable(),
          })
          .nullable(),
        more,
      })
      .optional(),
    recent_events: z
      .object({
        events: z.array(
          z.object({ seq: z.string(), entity_type: z.string(), operation: z.string(), occurred_at: instant, changed: z.array(z.string()) }),
        ),
        truncated: z.boolean(),
        more,
      })
      .optional(),
  },
  annotations: READ_ONLY,
  check: (args) => exactlyOne(args, ["master_profile_id", "guest_profile_id", "email"]),
  toVariables: (args) => variables(args, { master_profile_id: "masterProfileId", guest_profile_id: "guestProfileId", email: "email" }),
  toResult: (data) => {
    const found = data.guestContext as Record<string, unknown> | null;
    return found ? { found: true, ...(snakeKeys(found) as Record<string, unknown>) } : { found: false };
  },
};

const checkContactPermission: TaskTool = {
  name: "check_contact_permission",
  scope: "read:consents",
  title: "May we contact them?",
  description: [
    "Whether an e-mail address or phone number may be contacted for a purpose (email_marketing, sms_marketing …):",
    "answer is allowed, not_allowed or unknown, with the rule applied and the consent observations that decided it.",
    "The rule (spec 1.5), across every property of the group: a withdrawn or denied observation beats any granted one whatever",
    "their order; no observation at all is unknown, which is never permission. Treat only allowed as permission.",
    `${ONE_OF_CONTACT} For everything else about the person use guest_context.`,
  ].join(" "),
  operation: "CheckContactPermission",
  inputSchema: {
    email: z.string().min(3).max(320).optional().describe(`The e-mail address (case-insensitive). ${ONE_OF_CONTACT}`),
    phone: z
      .string()
      .min(7)
      .max(40)
      .optional()
      .describe(`The phone number with its country code, any formatting ("+44 7700 900123", "0044 7700-900123"). ${ONE_OF_CONTACT}`),
    purpose: z.string().min(1).max(100).describe("What the contact is for, e.g. email_marketing, sms_marketing, profiling."),
    property_id: z.uuid().optional().describe("The property that wants to send; must be in scope. Consent still counts every property's observations."),
  },
  outputSchema: {
    answer: z.enum(["allowed", "not_allowed", "unknown"]),
    contact_type: z.enum(["email", "phone"]),
    contact_value: z.string().describe("The contact point looked up: lower-case e-mail or E.164 phone."),
    purpose: z.string(),
    status: z.enum(["granted", "withdrawn", "denied", "unknown"]).describe("The effective status."),
    rule: z.string().describe("The rule that decided, in words."),
    decided_by: evidence.nullable().describe("The deciding observation; null when unknown."),
    observations: z.array(evidence).describe("Every observation, newest first (at most 10)."),
    observation_count: z.number().int(),
  },
  annotations: READ_ONLY,
  check: (args) => exactlyOne(args, ["email", "phone"]),
  toVariables: (args) => variables(args, { email: "email", phone: "phone", purpose: "purpose", property_id: "propertyId" }),
  toResult: (data) => snakeKeys(data.contactPermission) as Record<string, unknown>,
};

export const taskTools: TaskTool[] = [findGuests, guestContext, checkContactPermission, ...metricTools, ...webhookTools];
