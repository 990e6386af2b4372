// Returning guests (issue 42): stayMetrics' returningGuests and repeatRate on a hand-built set of
// stays in 2033 (after every fixture stay), where each expected count is known: a merged person
// whose first stay was at another property, a person back within the month, a person whose first
// stay was in the same month (returning by day and week, not by month), cancelled, no-show and
// non-stay bookings that do not count, a first stay before the asked range and through another
// channel. Each answer is checked for the whole group, a pinned key and X-Property-Id (first stays
// at their property only), group B (its own), from the rollups and live (equal), over /graphql and
// the MCP tool stay_performance, in one SQL statement whatever the number of buckets.
import { randomUUID } from "node:crypto";
import { Client } from "@modelcontextprotocol/sdk/client/index.js";
import { StreamableHTTPClientTransport } from "@modelcontextprotocol/sdk/client/streamableHttp.js";
import type { CallToolResult } from "@modelcontextprotocol/sdk/types.js";
import { createReaders } from "../../src/data/readers";
import { liveMetrics, type StayDimension } from "../../src/data/metrics";
import { staysFromRollups } from "../../src/data/metric-rollups";
import { refreshRollups } from "../../src/rollups/refresh";
import { listenTestApp, startTestApp, type TestApp } from "../helpers/app";

let t: TestApp;
beforeAll(async () => {
  // The rollups are rebuilt by the test itself, after the stays below are written.
  t = await startTestApp({ GCS_ROLLUP_REFRESH_MS: "0" });
  await writeStays();
  await refreshRollups(t.db);
});
afterAll(() => t.close());

type Json = Record<string, any>; // eslint-disable-line @typescript-eslint/no-explicit-any
const A = () => t.manifest.groups.A;
const B = () => t.manifest.groups.B;
/** The pinned key's property, and another property of group A. */
const here = () => A().credentials.api_key_pinned.property_id;
const there = () => A().properties.find((p) => p !== here())!;

interface Stay {
  property: () => string;
  arrival: string;
  status?: "checked_out" | "cancelled" | "no_show";
  kind?: "stay" | "dining";
  channel?: string;
}

/**
 * The people (one master profile each, or a lone guest profile) and their bookings. Whole group,
 * March 2033: m1, p2, p5 return (first stays 10 January elsewhere, 20 February, 1 December 2032);
 * p3, p6, p7's earlier bookings do not count; p4's first stay is 2 March.
 */
const PEOPLE: { name: string; profiles: { property: () => string; stays: Stay[] }[] }[] = [
  { name: "m1", profiles: [{ property: there, stays: [{ property: there, arrival: "2033-01-10" }] }, { property: here, stays: [{ property: here, arrival: "2033-03-15" }] }] },
  { name: "p2", profiles: [{ property: here, stays: [{ property: here, arrival: "2033-02-20", channel: "ota" }, { property: here, arrival: "2033-03-05" }] }] },
  { name: "p3", profiles: [{ property: here, stays: [{ property: here, arrival: "2033-01-05", status: "cancelled" }, { property: here, arrival: "2033-03-10" }] }] },
  { name: "p4", profiles: [{ property: here, stays: [{ property: here, arrival: "2033-03-02" }, { property: here, arrival: "2033-03-20" }] }] },
  { name: "p5", profiles: [{ property: there, stays: [{ property: there, arrival: "2032-12-01" }, { property: there, arrival: "2033-03-08" }] }] },
  { name: "p6", profiles: [{ property: here, stays: [{ property: here, arrival: "2033-01-15", kind: "dining" }, { property: here, arrival: "2033-03-12" }] }] },
  { name: "p7", profiles: [{ property: here, stays: [{ property: here, arrival: "2033-01-06", status: "no_show" }, { property: here, arrival: "2033-03-11" }] }] },
];

async function writeStays() {
  const integrationOf = async (propertyId: string) => (await t.admin.integration.findFirstOrThrow({ where: { propertyId } })).id;
  const write = async (groupId: string, propertyOf: () => string, masterProfileId: string | null, stays: Stay[]) => {
    const propertyId = propertyOf();
    const integrationId = await integrationOf(propertyId);
    const guestId = randomUUID();
    await t.admin.guestProfile.create({ data: { id: guestId, propertyGroupId: groupId, propertyId, integrationId, sourceId: `returning-${guestId}`, masterProfileId, givenName: "Returning", familyName: "Guest" } });
    for (const s of stays) {
      const id = randomUUID();
      const arrival = new Date(`${s.arrival}T00:00:00Z`);
      const property = s.property();
      await t.admin.reservation.create({
        data: {
          id, propertyGroupId: groupId, propertyId: property, integrationId: await integrationOf(property), sourceId: `returning-${id}`, guestProfileId: guestId,
          confirmationNumber: `RET-${id.slice(0, 8)}`, kind: s.kind ?? "stay", status: s.status ?? "checked_out", arrivalDate: arrival,
          departureDate: new Date(arrival.getTime() + 2 * 86_400_000), startsAt: s.kind === "dining" ? new Date(`${s.arrival}T19:00:00Z`) : null,
          bookingChannel: s.channel ?? "direct", currency: "EUR", bookedAt: new Date("2032-06-01T00:00:00Z"),
        },
      });
    }
  };
  for (const person of PEOPLE) {
    let master: string | null = null;
    if (person.profiles.length > 1) {
      master = randomUUID();
      await t.admin.masterProfile.create({ data: { id: master, propertyGroupId: A().id, givenName: "Returning", familyName: person.name } });
    }
    for (const profile of person.profiles) await write(A().id, profile.property, master, profile.stays);
  }
  // Group B: one person back in March; never counted in A, and A's never in B.
  await write(B().id, () => B().properties[0], null, [{ property: () => B().properties[0], arrival: "2033-01-20" }, { property: () => B().properties[0], arrival: "2033-03-20" }]);
}

interface Caller {
  name: string;
  token: () => string;
  property?: () => string;
}
const GROUP: Caller = { name: "group A", token: () => A().credentials.api_key };
const PINNED: Caller = { name: "pinned key", token: () => A().credentials.api_key_pinned.token };
const HEADER: Caller = { name: "X-Property-Id", token: () => A().credentials.api_key, property: here };
const GROUP_B: Caller = { name: "group B", token: () => B().credentials.api_key };

const QUERY = `query($filter: StayMetricsFilter!, $groupBy: [StayDimension!]) {
  stayMetrics(filter: $filter, groupBy: $groupBy) { propertyId period stays distinctGuests returningGuests repeatRate }
}`;

async function post(caller: Caller, query: string, variables: Json) {
  const req = t.api.post("/graphql").set("Authorization", `Bearer ${caller.token()}`);
  if (caller.property) req.set("X-Property-Id", caller.property());
  return req.send({ query, variables });
}

async function buckets(caller: Caller, filter: Json, groupBy: StayDimension[] = []) {
  const res = await post(caller, QUERY, { filter, groupBy });
  expect(res.body.errors).toBeUndefined();
  return res.body.data.stayMetrics as Json[];
}

const MARCH = { arrivalFrom: "2033-03-01", arrivalTo: "2033-03-31" };
const rate = (returning: number, distinct: number) => (distinct ? Math.round((returning / distinct) * 10_000) / 10_000 : null);
/** [key, distinct, returning] → the bucket fields the query selects (key: period or propertyId). */
const expected = (field: "period" | "propertyId" | null, rows: [string | null, number, number][]) =>
  rows.map(([key, distinctGuests, returningGuests]) => ({ ...(field ? { [field]: key } : {}), distinctGuests, returningGuests, repeatRate: rate(returningGuests, distinctGuests) }));
const pickOf = (field: "period" | "propertyId" | null) => (b: Json) => ({ ...(field ? { [field]: b[field] } : {}), distinctGuests: b.distinctGuests, returningGuests: b.returningGuests, repeatRate: b.repeatRate });

describe("returningGuests and repeatRate on known stays", () => {
  // [name, filter, groupBy, field, whole group, narrowed to the pinned property]
  const cases: [string, Json, StayDimension[], "period" | "propertyId" | null, [string | null, number, number][], [string | null, number, number][]][] = [
    ["March in total", MARCH, [], null, [[null, 7, 3]], [[null, 6, 1]]],
    ["March by property", MARCH, ["property"], "propertyId", [["HERE", 6, 2], ["THERE", 1, 1]], [["HERE", 6, 1]]],
    ["January to March by month", { arrivalFrom: "2033-01-01", arrivalTo: "2033-03-31" }, ["month"], "period",
      [["2033-01-01", 1, 0], ["2033-02-01", 1, 0], ["2033-03-01", 7, 3]], [["2033-02-01", 1, 0], ["2033-03-01", 6, 1]]],
    // p4 (first stay 2 March) returns in the week of 14 March; the first week starts on 1 March (the range's start).
    ["March by week", MARCH, ["week"], "period", [["2033-02-28", 2, 1], ["2033-03-07", 4, 1], ["2033-03-14", 2, 2]], [["2033-02-28", 2, 1], ["2033-03-07", 3, 0], ["2033-03-14", 2, 1]]],
    ["March by day", MARCH, ["day"], "period",
      [["2033-03-02", 1, 0], ["2033-03-05", 1, 1], ["2033-03-08", 1, 1], ["2033-03-10", 1, 0], ["2033-03-11", 1, 0], ["2033-03-12", 1, 0], ["2033-03-15", 1, 1], ["2033-03-20", 1, 1]],
      [["2033-03-02", 1, 0], ["2033-03-05", 1, 1], ["2033-03-10", 1, 0], ["2033-03-11", 1, 0], ["2033-03-12", 1, 0], ["2033-03-15", 1, 0], ["2033-03-20", 1, 1]]],
    // From 3 March the bucket starts on the 3rd: p4's stay of the 2nd is before it.
    ["3 to 31 March in total", { arrivalFrom: "2033-03-03", arrivalTo: "2033-03-31" }, [], null, [[null, 7, 4]], [[null, 6, 2]]],
    ["3 to 31 March by month", { arrivalFrom: "2033-03-03", arrivalTo: "2033-03-31" }, ["month"], "period", [["2033-03-01", 7, 4]], [["2033-03-01", 6, 2]]],
    // p2's first stay came through another channel: still counted.
    ["March, channel direct", { ...MARCH, channel: "direct" }, [], null, [[null, 7, 3]], [[null, 6, 1]]],
  ];
  const resolve = (rows: [string | null, number, number][]) => rows.map(([k, d, r]) => [k === "HERE" ? here() : k === "THERE" ? there() : k, d, r] as [string | null, number, number]);

  it.each(cases)("%s: the whole group, a pinned key and X-Property-Id", async (_name, filter, groupBy, field, group, narrowed) => {
    expect((await buckets(GROUP, filter, groupBy)).map(pickOf(field))).toEqual(expected(field, resolve(group)));
    for (const caller of [PINNED, HEADER]) {
      expect({ caller: caller.name, rows: (await buckets(caller, filter, groupBy)).map(pickOf(field)) }).toEqual({ caller: caller.name, rows: expected(field, resolve(narrowed)) });
    }
  });

  it("every stay of 2033 is one of this test's (so the counts above are exact)", async () => {
    const [march] = await buckets(GROUP, MARCH);
    expect(march.stays).toBe(8);
  });

  it("filter.propertyId keeps the group's history (first stays at any property)", async () => {
    expect((await buckets(GROUP, { ...MARCH, propertyId: here() })).map(pickOf(null))).toEqual(expected(null, [[null, 6, 2]]));
    expect((await buckets(GROUP, { ...MARCH, propertyId: there() })).map(pickOf(null))).toEqual(expected(null, [[null, 1, 1]]));
  });

  it("group B counts its own stays only, and A's never count in B", async () => {
    expect((await buckets(GROUP_B, MARCH, ["property"])).map(pickOf("propertyId"))).toEqual(expected("propertyId", [[B().properties[0], 1, 1]]));
    expect((await buckets(GROUP_B, { arrivalFrom: "2033-02-01", arrivalTo: "2033-03-31" }, ["month"])).map(pickOf("period"))).toEqual(expected("period", [["2033-03-01", 1, 1]]));
  });

  it("the rollups answer what the live statement answers, for every caller", async () => {
    let served = 0;
    for (const scope of [
      { propertyGroupId: A().id, propertyId: null },
      { propertyGroupId: A().id, propertyId: here() },
      { propertyGroupId: B().id, propertyId: null },
    ]) {
      const r = createReaders(t.db, scope);
      for (const [, filter, groupBy] of cases) {
        const live = (await liveMetrics(r).stays(filter as never, groupBy, false, "caller")).map(({ bucket: _b, ...row }) => row);
        const stored = await staysFromRollups(r, filter as never, groupBy, false, true);
        if (stored === undefined) continue;
        served++;
        expect({ scope, filter, groupBy, rows: stored }).toEqual({ scope, filter, groupBy, rows: JSON.parse(JSON.stringify(live)) });
      }
    }
    // Every case but the part ranges (3 to 31 March), for three scopes.
    expect(served).toBe(18);
  });

  it("buckets without returning guests asked for skip the history (null), and the rollups agree", async () => {
    const r = createReaders(t.db, { propertyGroupId: A().id, propertyId: null });
    const stored = await staysFromRollups(r, MARCH, ["week"], false);
    expect(stored!.map((b) => b.returningGuests)).toEqual([null, null, null]);
    expect((await liveMetrics(r).stays(MARCH, ["week"], false)).map((b) => b.returningGuests)).toEqual([null, null, null]);
  });

  it("one SQL statement per request whatever the number of buckets, from the rollups and live", async () => {
    const statements = async (filter: Json, groupBy: StayDimension[]) => {
      const res = await post(GROUP, QUERY, { filter, groupBy });
      expect(res.body.errors).toBeUndefined();
      return { buckets: res.body.data.stayMetrics.length as number, statements: Number(res.headers["x-sql-statements"]) };
    };
    for (const [small, large] of [
      // Served from the rollups: one day against a quarter of days.
      [[{ arrivalFrom: "2033-03-02", arrivalTo: "2033-03-02" }, ["day"]], [{ arrivalFrom: "2033-01-01", arrivalTo: "2033-03-31" }, ["day"]]],
      // Counted live (ranges that do not start on a bucket's first day).
      [[{ arrivalFrom: "2033-03-03", arrivalTo: "2033-03-05" }, ["channel"]], [{ arrivalFrom: "2032-11-03", arrivalTo: "2033-03-31" }, ["day", "channel"]]],
    ] as [Json, StayDimension[]][][]) {
      const a = await statements(...small);
      const b = await statements(...large);
      expect(b.buckets).toBeGreaterThan(a.buckets + 5);
      // The credential lookup (unless cached) and the one stays statement.
      expect([1, 2]).toContain(a.statements);
      expect(b.statements).toBe(a.statements);
    }
  });
});

describe("stay_performance over MCP", () => {
  let server: Awaited<ReturnType<typeof listenTestApp>>;
  const clients: Client[] = [];
  beforeAll(async () => {
    server = await listenTestApp(t);
  });
  afterAll(async () => {
    await Promise.all(clients.map((c) => c.close()));
    await server.close();
  });
  async function call(token: string, args: Json) {
    const client = new Client({ name: "gcs-test", version: "1.0.0" });
    await client.connect(new StreamableHTTPClientTransport(new URL(`${server.base}/mcp`), { requestInit: { headers: { Authorization: `Bearer ${token}` } } }));
    clients.push(client);
    const result = (await client.callTool({ name: "stay_performance", arguments: args })) as CallToolResult;
    expect(result.isError).toBeFalsy();
    return (result.structuredContent as { buckets: Json[] }).buckets;
  }

  it("returns returning_guests and repeat_rate per bucket: each property's repeat-guest rate for the period", async () => {
    const rows = await call(A().credentials.mcp_token, { from: "2033-03-01", to: "2033-03-31", group_by: ["property"] });
    expect(rows.map((b) => ({ property_id: b.property_id, distinct_guests: b.distinct_guests, returning_guests: b.returning_guests, repeat_rate: b.repeat_rate }))).toEqual(
      [[here(), 6, 2], [there(), 1, 1]].sort(([a], [b]) => ((a as string) < (b as string) ? -1 : 1)).map(([property_id, d, r]) => ({ property_id, distinct_guests: d, returning_guests: r, repeat_rate: rate(r as number, d as number) })),
    );
    const pinned = await call(A().credentials.api_key_pinned.token, { from: "2033-03-01", to: "2033-03-31" });
    expect(pinned.map((b) => [b.distinct_guests, b.returning_guests, b.repeat_rate])).toEqual([[6, 1, rate(1, 6)]]);
    // A period with no stay: no guest, no rate.
    const none = await call(A().credentials.mcp_token, { from: "2034-03-01", to: "2034-03-31" });
    expect(none.map((b) => [b.distinct_guests, b.returning_guests, b.repeat_rate])).toEqual([[0, 0, null]]);
  });
});
