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
    "Finds a person by name in either order (accents, case, name starts do not matter), e-mail, phone, source id, member or",
    "confirmation number: ranked candidates, one per person; closest: nothing matched, these are near names or phones without",
    "country code (similarity 0 to 1). Next: guest_context with master_profile_id (or guest_profile_ids[0]).",
  ].join(" "),
  operation: "FindGuests",
  inputSchema: {
    query: z
      .string()
      .min(1)
      .max(200)
      .describe("A name (\"Olivia Smith\"), e-mail, phone (+44 7700 900123) or id."),
    limit: z.number().int().min(1).max(25).optional().describe("Candidates to return; default 5."),
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
        matched_on: z.array(z.string()).describe("email, phone, confirmation_number, member_number, source_id, name, name_prefix; similar_name or phone_national when closest."),
        score: z.number().int().describe("100 exact identifier, 90 exact name, 60 name prefix, 50 × similarity when closest."),
        similarity: z.number().nullable().describe("Closest candidates only: 0 to 1."),
      }),
    ),
    truncated: z.boolean().describe("More candidates matched than were returned."),
    closest: z.boolean().describe("Nothing matched exactly: the candidates are the closest, not matches."),
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
    "Everything about one person in one call: identity and source profiles, stays, spend per currency and category, effective",
    `consent per contact point and purpose, loyalty, reviews, recent events. ${ONE_OF_PERSON} A section's more: the call for`,
    "its full rows; found: false when nobody in scope matches.",
  ].join(" "),
  operation: "GuestContext",
  inputSchema: {
    master_profile_id: z.uuid().optional().describe("From find_guests."),
    guest_profile_id: z.uuid().optional().describe("Its master profile's context when it has one."),
    email: z.string().min(3).max(320).optional().describe("On the person's profiles."),
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
          z.object({
            guest_profile_id: z.string(),
            property: z.string().nullable(),
            source: z.string().nullable(),
            source_id: z.string(),
            link: z.object({ linked_to: z.string().nullable(), rule: z.string(), matched_on: z.array(z.string()), confidence: z.number() }).nullable(),
          }),
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
    if (!found) return { found: false };
    // Each section's `more` names a tool the list offers (list_records {type: "reservations", …}): the resolver's.
    return { found: true, ...(snakeKeys(found) as Record<string, unknown>) };
  },
};

const checkContactPermission: TaskTool = {
  name: "check_contact_permission",
  scope: "read:consents",
  title: "May we contact them?",
  description: [
    "Whether an e-mail or phone may be contacted for a purpose: allowed, not_allowed or unknown, with the rule and deciding",
    `observations. Group-wide, withdrawn or denied beat any grant; only allowed is permission. ${ONE_OF_CONTACT}`,
  ].join(" "),
  operation: "CheckContactPermission",
  inputSchema: {
    email: z.string().min(3).max(320).optional().describe("Case-insensitive."),
    phone: z.string().min(7).max(40).optional().describe("With its country code, any formatting."),
    purpose: z.string().min(1).max(100).describe("e.g. email_marketing, sms_marketing, profiling."),
    property_id: z.uuid().optional().describe("The sending property; consent counts every property's."),
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

const explainMerge: TaskTool = {
  name: "explain_merge",
  scope: "read:guests",
  title: "Explain merge",
  description: "Are two guest profiles one person? The links that joined them (rule, evidence), or why not.",
  operation: "ExplainMerge",
  inputSchema: { guest_profile_id: z.uuid(), other_guest_profile_id: z.uuid() },
  // Within the tool's 600-character listing (issue 42): master_profile_id is in every result but not listed.
  outputSchema: { joined: z.boolean(), chain: z.array(z.unknown()), reason: z.string() },
  annotations: READ_ONLY,
  toVariables: (args) => variables(args, { guest_profile_id: "guestProfileId", other_guest_profile_id: "otherGuestProfileId" }),
  toResult: (data) => snakeKeys(data.mergeExplanation) as Record<string, unknown>,
};

export const taskTools: TaskTool[] = [findGuests, guestContext, checkContactPermission, explainMerge, ...metricTools, ...webhookTools];
