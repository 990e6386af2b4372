// The MCP tools over the dashboard aggregates (stay_performance, review_trend, guest_reach), driven
// by the SDK's own Client over a listening server as an AI client would: listed read-only for the
// MCP token, answering "how did this hotel do last month?" with the numbers /graphql gives for the
// same question (which test/integration/aggregates.test.ts proves equal to the /v1 rows), scoped
// to a pinned key's property, and refusing bad input with the REST error body.
import { Client } from "@modelcontextprotocol/sdk/client/index.js";
import { StreamableHTTPClientTransport } from "@modelcontextprotocol/sdk/client/streamableHttp.js";
import type { CallToolResult } from "@modelcontextprotocol/sdk/types.js";
import { listenTestApp, startTestApp, type TestApp } from "../helpers/app";

let t: TestApp;
let server: Awaited<ReturnType<typeof listenTestApp>>;
let url: URL;
beforeAll(async () => {
  t = await startTestApp();
  server = await listenTestApp(t);
  url = new URL(`${server.base}/mcp`);
});
const clients: Client[] = [];
afterAll(async () => {
  await Promise.all(clients.map((c) => c.close()));
  await server.close();
  await t.close();
});

const A = () => t.manifest.groups.A;
type Json = Record<string, any>; // eslint-disable-line @typescript-eslint/no-explicit-any

async function connect(token: string): Promise<Client> {
  const client = new Client({ name: "gcs-test", version: "1.0.0" });
  await client.connect(new StreamableHTTPClientTransport(url, { requestInit: { headers: { Authorization: `Bearer ${token}` } } }));
  clients.push(client);
  return client;
}

async function call(client: Client, name: string, args: Record<string, unknown>) {
  const result = (await client.callTool({ name, arguments: args })) as CallToolResult;
  return { result, body: JSON.parse((result.content[0] as { text: string }).text) as Json };
}

async function ok(client: Client, name: string, args: Record<string, unknown>) {
  const { result, body } = await call(client, name, args);
  if (result.isError) throw new Error(`${name} failed: ${JSON.stringify(body)}`);
  expect(result.structuredContent).toEqual(body);
  return body;
}

async function graphql(query: string, variables: Json, token = A().credentials.api_key) {
  const res = await t.api.post("/graphql").set("Authorization", `Bearer ${token}`).send({ query, variables });
  expect(res.body.errors).toBeUndefined();
  return res.body.data as Json;
}

/** The month before the fixtures' anchor day: "last month". */
function lastMonth() {
  const anchor = new Date(`${t.manifest.anchor_date}T00:00:00Z`);
  const first = new Date(Date.UTC(anchor.getUTCFullYear(), anchor.getUTCMonth() - 1, 1));
  const last = new Date(Date.UTC(anchor.getUTCFullYear(), anchor.getUTCMonth(), 0));
  return { from: first.toISOString().slice(0, 10), to: last.toISOString().slice(0, 10) };
}

describe("dashboard-aggregate MCP tools", () => {
  it("are listed read-only with every argument described, for the MCP token and an API key", async () => {
    for (const token of [A().credentials.mcp_token, A().credentials.api_key]) {
      const tools = (await (await connect(token)).listTools()).tools.filter((x) => ["stay_performance", "review_trend", "guest_reach"].includes(x.name));
      expect(tools.map((x) => x.name).sort()).toEqual(["guest_reach", "review_trend", "stay_performance"]);
      for (const tool of tools) {
        expect(tool.annotations).toMatchObject({ readOnlyHint: true, openWorldHint: false });
        expect(tool.outputSchema).toBeDefined();
        for (const [name, schema] of Object.entries(tool.inputSchema.properties ?? {})) expect({ name, d: (schema as Json).description?.length > 10 }).toEqual({ name, d: true });
      }
    }
    // A key with read:guests only is not offered the stay or review tools.
    const limited = (await (await connect(A().credentials.api_key_limited)).listTools()).tools.map((x) => x.name);
    expect(limited).toContain("guest_reach");
    expect(limited).not.toContain("stay_performance");
    expect(limited).not.toContain("review_trend");
  });

  it("stay_performance answers \"how did this hotel do last month?\" with the /graphql numbers", async () => {
    const hotel = A().properties[0];
    const { from, to } = lastMonth();
    const client = await connect(A().credentials.mcp_token);
    const answer = await ok(client, "stay_performance", { property_id: hotel, from, to, group_by: ["week"] });
    const expected = await graphql(
      `query($f: StayMetricsFilter!) { stayMetrics(filter: $f, groupBy: [week]) { period stays nights distinctGuests returningGuests repeatRate revenue { currency revenueMinor averageDailyRateMinor } } }`,
      { f: { arrivalFrom: from, arrivalTo: to, propertyId: hotel } },
    );
    expect(answer.buckets.length).toBeGreaterThan(0);
    expect(answer.buckets.map((b: Json) => ({ period: b.period, stays: b.stays, nights: b.nights, distinctGuests: b.distinct_guests, returningGuests: b.returning_guests, repeatRate: b.repeat_rate, revenue: b.revenue.map((m: Json) => ({ currency: m.currency, revenueMinor: m.revenue_minor, averageDailyRateMinor: m.average_daily_rate_minor })) }))).toEqual(
      expected.stayMetrics,
    );
    const total = await ok(client, "stay_performance", { property_id: hotel, from, to });
    expect(total.buckets).toHaveLength(1);
    expect(total.buckets[0].stays).toBe(answer.buckets.reduce((s: number, b: Json) => s + b.stays, 0));
    expect(total.buckets[0].stays).toBeGreaterThan(0);
  });

  it("a pinned key's answers cover its property only", async () => {
    const { token, property_id } = A().credentials.api_key_pinned;
    const { from, to } = lastMonth();
    const client = await connect(token);
    const stays = await ok(client, "stay_performance", { from, to, group_by: ["property"] });
    expect(stays.buckets.map((b: Json) => b.property_id)).toEqual([property_id]);
    const reviews = await ok(client, "review_trend", { group_by: ["property"] });
    expect(reviews.buckets.map((b: Json) => b.property_id)).toEqual([property_id]);
    const reach = await ok(client, "guest_reach", { group_by: ["property"] });
    expect(reach.buckets.map((b: Json) => b.property_id)).toEqual([property_id]);
  });

  it("review_trend and guest_reach give the /graphql numbers", async () => {
    const client = await connect(A().credentials.mcp_token);
    const trend = await ok(client, "review_trend", { group_by: ["month"], from: "2000-01-01", to: "2099-12-31" });
    const reviews = await graphql(`{ reviewMetrics(groupBy: [month]) { period count averageRating } }`, {});
    expect(trend.buckets.map((b: Json) => ({ period: b.period, count: b.count, averageRating: b.average_rating }))).toEqual(reviews.reviewMetrics);
    const reach = await ok(client, "guest_reach", {});
    const guests = await graphql(`{ guestMetrics { guests masterProfiles reachableByEmail reachableBySms } }`, {});
    const [g] = guests.guestMetrics;
    expect(reach.buckets).toEqual([expect.objectContaining({ guests: g.guests, master_profiles: g.masterProfiles, reachable_by_email: g.reachableByEmail, reachable_by_sms: g.reachableBySms })]);
    expect(g.reachableByEmail).toBeGreaterThan(0);
  });

  it("bad input is an error result with the REST error body, never a fault", async () => {
    const client = await connect(A().credentials.mcp_token);
    const reversed = await call(client, "stay_performance", { from: "2026-02-01", to: "2026-01-01" });
    expect(reversed.result.isError).toBe(true);
    expect(reversed.body).toMatchObject({ error: "invalid_request" });
    const twice = await call(client, "review_trend", { group_by: ["month", "month"] });
    expect(twice.result.isError).toBe(true);
    expect(twice.body).toMatchObject({ error: "invalid_request" });
    // Arguments that do not match the input schema are refused by the SDK before the operation runs.
    const badDate = (await client.callTool({ name: "stay_performance", arguments: { from: "yesterday", to: "2026-01-01" } })) as CallToolResult;
    expect(badDate.isError).toBe(true);
    expect((badDate.content[0] as { text: string }).text).toMatch(/from/);
  });

  // Issue 40: an impossible day is refused, naming the argument, never rolled over to March; the
  // last storable day is answered, never refused by quoting a day after it that was not sent.
  it("refuses impossible dates naming the argument, and answers to: 9999-12-31", async () => {
    const client = await connect(A().credentials.mcp_token);
    for (const [name, args, arg] of [
      ["review_trend", { to: "2025-02-30" }, "to"],
      ["review_trend", { from: "2026-02-29" }, "from"],
      ["stay_performance", { from: "2026-02-30", to: "2026-03-31" }, "from"],
      ["stay_performance", { from: "2026-01-01", to: "2026-04-31" }, "to"],
    ] as const) {
      const r = (await client.callTool({ name, arguments: args })) as CallToolResult;
      const text = (r.content[0] as { text: string }).text;
      expect(r.isError).toBe(true);
      expect(JSON.parse(text)).toEqual({ error: "invalid_request", detail: expect.stringMatching(new RegExp(`^${arg}: must be a real calendar date YYYY-MM-DD`)) });
      expect(text).not.toMatch(/20\d\d-0[35]-0\d/); // no rolled-over day
    }
    const unbounded = await ok(client, "review_trend", { group_by: ["month"] });
    const lastDay = await ok(client, "review_trend", { group_by: ["month"], to: "9999-12-31" });
    expect(lastDay).toEqual(unbounded);
    expect(unbounded.buckets.length).toBeGreaterThan(0);
  });

  it("errors name the tool's own arguments, never the GraphQL variables behind them", async () => {
    const client = await connect(A().credentials.api_key);
    const errors = [
      await call(client, "stay_performance", { from: "2026-02-01", to: "2026-01-01" }),
      await call(client, "stay_performance", { from: "2026-01-01", to: "2026-01-31", group_by: ["week", "month"] }),
      await call(client, "stay_performance", { from: "2026-02-31", to: "2026-03-01" }),
      await call(client, "review_trend", { group_by: ["month", "month"] }),
      await call(client, "guest_reach", { email_purpose: " " }),
      await call(client, "review_summary", { min_rating: 6 }),
    ].map(({ result, body }) => ({ isError: result.isError, ...body }) as Json);
    expect(errors.slice(0, 3)).toEqual([
      { isError: true, error: "invalid_request", detail: "to is before from" },
      { isError: true, error: "invalid_request", detail: "group_by may name only one of day, week and month" },
      { isError: true, error: "invalid_request", detail: expect.stringMatching(/^from: must be a real calendar date YYYY-MM-DD/) },
    ]);
    for (const error of errors) {
      expect(error).toMatchObject({ isError: true, error: "invalid_request" });
      expect([error.detail, /filter\.|[a-z][A-Z]|\$/.test(error.detail)]).toEqual([error.detail, false]);
    }
  });
});
