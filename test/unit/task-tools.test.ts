// The task-shaped MCP tools as plain data and functions: their operations exist and validate, their
// arguments are typed and described, and toVariables/toResult reshape as the tools promise.
import { readFileSync } from "node:fs";
import path from "node:path";
import { Kind, parse, validate } from "graphql";
import { z } from "zod";
import { buildSchema } from "../../src/graphql/schema";
import { snakeKeys, taskTools } from "../../src/api/tools/task-tools";
import { toE164 } from "../../src/consent/precedence";

const tool = (name: string) => taskTools.find((t) => t.name === name)!;

/** Tools listed within a character budget (issue 42), whose argument names say what they are. */
const BUDGETED = new Set(["explain_merge"]);

describe("task tools", () => {
  it("are find_guests, guest_context, check_contact_permission, the aggregate and the webhook tools, read-only and closed-world", () => {
    expect(taskTools.map((t) => t.name)).toEqual(["find_guests", "guest_context", "check_contact_permission", "explain_merge", "stay_performance", "review_trend", "guest_reach", "list_webhook_endpoints", "list_webhook_deliveries"]);
    for (const t of taskTools) {
      expect(t.annotations).toEqual({ readOnlyHint: true, openWorldHint: false });
      // Issue 42's tools have a listing budget (explain_merge: 600 characters in all): a sentence.
      expect(t.description.length).toBeGreaterThan(BUDGETED.has(t.name) ? 60 : 150);
    }
  });

  it("every argument is typed and described (paging once, in the instructions); exactly-one tools say so", () => {
    for (const t of taskTools) {
      for (const [name, schema] of Object.entries(t.inputSchema)) {
        if (name === "limit" && t.name.startsWith("list_")) continue; // paging: described once, in the instructions
        if (name === "cursor") continue;
        if (BUDGETED.has(t.name)) continue; // arguments named so they need no description
        expect({ tool: t.name, name, description: (schema as z.ZodType).description }).toEqual({
          tool: t.name,
          name,
          description: expect.any(String),
        });
      }
    }
    expect(tool("guest_context").description).toMatch(/exactly one of master_profile_id, guest_profile_id or email/);
    expect(tool("check_contact_permission").description).toMatch(/exactly one of email or phone/);
    const args = z.object(tool("find_guests").inputSchema).strict();
    expect(args.safeParse({ query: "Olivia Smith", limit: 2 }).success).toBe(true);
    expect(args.safeParse({ query: "Olivia Smith", limit: "2" }).success).toBe(false);
    expect(args.safeParse({ query: "Olivia Smith", limit: 26 }).success).toBe(false);
    expect(z.object(tool("guest_context").inputSchema).safeParse({ master_profile_id: "not-a-uuid" }).success).toBe(false);
  });

  it("run operations of src/api/operations/tools that validate against schema.graphql", () => {
    const dir = path.resolve(__dirname, "../../src/api/operations/tools");
    const document = parse(["tasks.graphql", "metrics.graphql", "webhooks.graphql", "merges.graphql"].map((f) => readFileSync(path.join(dir, f), "utf8")).join("\n"));
    expect(validate(buildSchema(), document)).toEqual([]);
    const names = document.definitions.flatMap((d) => (d.kind === Kind.OPERATION_DEFINITION && d.name ? [d.name.value] : []));
    expect(taskTools.map((t) => t.operation).sort()).toEqual([...names].sort());
  });

  it("toVariables renames the arguments given and leaves the others out", () => {
    expect(tool("find_guests").toVariables({ query: "x" })).toEqual({ query: "x" });
    expect(tool("guest_context").toVariables({ guest_profile_id: "g" })).toEqual({ guestProfileId: "g" });
    expect(tool("check_contact_permission").toVariables({ phone: "+41 79", purpose: "sms_marketing", property_id: "p" })).toEqual({
      phone: "+41 79",
      purpose: "sms_marketing",
      propertyId: "p",
    });
  });

  it("the aggregate tools turn dates into the operations' filters", () => {
    expect(tool("stay_performance").toVariables({ from: "2026-10-01", to: "2026-10-31", property_id: "p", group_by: ["week"] })).toEqual({
      filter: { arrivalFrom: "2026-10-01", arrivalTo: "2026-10-31", propertyId: "p" },
      groupBy: ["week"],
    });
    // from and to go to the DateTime filter as given: a date `to` is its whole UTC day there (the
    // scalar's WholeDay), an instant `to` the exclusive instant itself.
    expect(tool("review_trend").toVariables({ from: "2026-10-01", to: "2026-10-31" })).toEqual({
      filter: { publishedFrom: "2026-10-01", publishedTo: "2026-10-31" },
    });
    expect(tool("review_trend").toVariables({ from: "2026-10-01T06:00:00+01:00", to: "2026-10-31T12:00:00Z" })).toEqual({
      filter: { publishedFrom: "2026-10-01T06:00:00+01:00", publishedTo: "2026-10-31T12:00:00Z" },
    });
    expect(tool("stay_performance").toVariables({ from: "2026-10-01T23:30:00-02:00", to: "2026-10-31T00:00:00+01:00" }).filter).toEqual({
      arrivalFrom: "2026-10-01",
      arrivalTo: "2026-10-31",
    });
    expect(tool("guest_reach").toVariables({})).toEqual({ emailPurpose: "email_marketing", smsPurpose: "sms_marketing" });
    expect(tool("guest_reach").toResult({ guestMetrics: [{ reachableByEmail: 3 }] })).toEqual({ buckets: [{ reachable_by_email: 3 }] });
  });

  it("toResult answers in snake_case, and says when nobody was found", () => {
    expect(tool("guest_context").toResult({ guestContext: null })).toEqual({ found: false });
    expect(
      tool("guest_context").toResult({
        guestContext: { masterProfileId: "m", stays: { lastStay: "2026-01-02", more: { tool: "list_records", arguments: { type: "reservations", master_profile_id: "m" } } } },
      }),
    ).toEqual({ found: true, master_profile_id: "m", stays: { last_stay: "2026-01-02", more: { tool: "list_records", arguments: { type: "reservations", master_profile_id: "m" } } } });
    expect(snakeKeys([{ decidedBy: { observedAt: "t" } }])).toEqual([{ decided_by: { observed_at: "t" } }]);
  });
});

describe("toE164", () => {
  it.each([
    ["+447700900123", "+447700900123"],
    ["+44 7700 900123", "+447700900123"],
    ["+44 (0)7700-900.123", "+447700900123"],
    ["0044 7700 900123", "+447700900123"],
    ["(+41) 79 123 45 67", "+41791234567"],
  ])("%s → %s", (raw, e164) => expect(toE164(raw)).toBe(e164));

  it.each(["07700 900123", "447700900123", "+0 7700 900123", "+44 77", "olivia@example.com", ""])("%s is not an international number", (raw) =>
    expect(toE164(raw)).toBeNull(),
  );
});
