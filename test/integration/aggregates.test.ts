// The dashboard aggregates (issue 28) agree with the rows: every number stayMetrics, guestMetrics,
// consentMetrics and reviewMetrics give equals what paging the matching rows through /v1 and
// counting them gives, for the whole group, a pinned key, X-Property-Id, and group B.
import { effectiveConsent, type ConsentStatus } from "../../src/consent/precedence";
import { loadConfig } from "../../src/config";
import { startTestApp, type TestApp } from "../helpers/app";

let t: TestApp;
beforeAll(async () => {
  t = await startTestApp();
});
afterAll(() => t.close());

type Row = Record<string, any>; // eslint-disable-line @typescript-eslint/no-explicit-any

const A = () => t.manifest.groups.A;
const B = () => t.manifest.groups.B;

/** A caller: a token and, optionally, the X-Property-Id it sends. */
interface Caller {
  name: string;
  token: string;
  property?: string;
  /** The property the caller is narrowed to (pinned or by header), if any. */
  narrowedTo?: string;
  /** A token of the same group that sees the whole group (for the group-wide consent rows). */
  groupToken: string;
}

const callers = (): Caller[] => [
  { name: "group A", token: A().credentials.api_key, groupToken: A().credentials.api_key },
  { name: "pinned key", token: A().credentials.api_key_pinned.token, narrowedTo: A().credentials.api_key_pinned.property_id, groupToken: A().credentials.api_key },
  { name: "X-Property-Id", token: A().credentials.api_key, property: A().properties[1], narrowedTo: A().properties[1], groupToken: A().credentials.api_key },
  { name: "group B", token: B().credentials.api_key, groupToken: B().credentials.api_key },
];

function gql(caller: Pick<Caller, "token" | "property">, query: string, variables?: Record<string, unknown>) {
  const req = t.api.post("/graphql").set("Content-Type", "application/json").set("Authorization", `Bearer ${caller.token}`);
  if (caller.property) req.set("X-Property-Id", caller.property);
  return req.send({ query, variables });
}

async function data(caller: Pick<Caller, "token" | "property">, query: string, variables?: Record<string, unknown>) {
  const res = await gql(caller, query, variables);
  expect(res.body.errors).toBeUndefined();
  expect(res.status).toBe(200);
  return res.body.data;
}

/** Every row of a /v1 list, page by page. */
async function all(caller: Pick<Caller, "token" | "property">, path: string): Promise<Row[]> {
  const rows: Row[] = [];
  let cursor: string | null = null;
  do {
    const sep = path.includes("?") ? "&" : "?";
    const paged = path !== "/v1/properties";
    const req: ReturnType<typeof t.api.get> = t.api.get(`${path}${paged ? `${sep}limit=500` : ""}${cursor ? `&cursor=${encodeURIComponent(cursor)}` : ""}`).set("Authorization", `Bearer ${caller.token}`);
    if (caller.property) req.set("X-Property-Id", caller.property);
    const res: { status: number; body: Row } = await req;
    expect(res.status).toBe(200);
    rows.push(...res.body.data);
    cursor = res.body.next_cursor;
  } while (cursor);
  return rows;
}

/** Counts per key, as a map of key → accumulated value. */
function tally<V>(rows: Iterable<Row>, keyOf: (r: Row) => string, init: () => V, add: (acc: V, r: Row) => void): Map<string, V> {
  const out = new Map<string, V>();
  for (const r of rows) {
    const k = keyOf(r);
    if (!out.has(k)) out.set(k, init());
    add(out.get(k)!, r);
  }
  return out;
}

const byKey = <T extends Row>(buckets: T[], keyOf: (b: T) => string) => new Map(buckets.map((b) => [keyOf(b), b]));

/** YYYY-MM-01 of an instant in a time zone. */
function localMonth(instant: string, timeZone: string): string {
  const parts = new Intl.DateTimeFormat("en-CA", { timeZone, year: "numeric", month: "2-digit" }).formatToParts(new Date(instant));
  const get = (type: string) => parts.find((p) => p.type === type)!.value;
  return `${get("year")}-${get("month")}-01`;
}

/** The Monday of a date's ISO week. */
function isoWeek(date: string): string {
  const d = new Date(`${date}T00:00:00Z`);
  d.setUTCDate(d.getUTCDate() - ((d.getUTCDay() + 6) % 7));
  return d.toISOString().slice(0, 10);
}

function range() {
  const anchor = new Date(`${t.manifest.anchor_date}T00:00:00Z`);
  const day = (offset: number) => new Date(anchor.getTime() + offset * 86_400_000).toISOString().slice(0, 10);
  return { arrivalFrom: day(-500), arrivalTo: day(200) };
}

const STAYS = `query($filter: StayMetricsFilter!, $groupBy: [StayDimension!]) {
  stayMetrics(filter: $filter, groupBy: $groupBy) {
    propertyId period channel guestCountry stays nights distinctGuests returningGuests repeatRate
    revenue { currency revenueMinor roomRevenueMinor roomNights averageDailyRateMinor }
  }
}`;

describe("stayMetrics agrees with /v1 reservations, guests and transactions", () => {
  it.each([0, 1, 2, 3])("caller %#: by property and month, and by week, channel and guest country", async (i) => {
    const caller = callers()[i];
    const { arrivalFrom, arrivalTo } = range();
    const reservations = (await all(caller, `/v1/reservations?kind=stay&arrival_from=${arrivalFrom}&arrival_to=${arrivalTo}`)).filter(
      (r) => !["cancelled", "no_show"].includes(r.status),
    );
    expect(reservations.length).toBeGreaterThan(3);
    const guests = new Map((await all(caller, "/v1/guests")).map((g) => [g.id, g]));
    const stayIds = new Set(reservations.map((r) => r.id));
    const folio = (await all(caller, "/v1/transactions")).filter((x) => stayIds.has(x.reservation_id) && ["charge", "adjustment", "refund"].includes(x.kind));
    expect(folio.length).toBeGreaterThan(0);

    const person = (r: Row) => {
      const g = guests.get(r.guest_profile_id);
      return g ? (g.master_profile_id ?? g.id) : null;
    };
    // Each person's first stay among every stay the caller reads, at any date (returningGuests).
    const firstStay = new Map<string, string>();
    for (const r of await all(caller, "/v1/reservations?kind=stay")) {
      const p = person(r);
      if (p && !["cancelled", "no_show"].includes(r.status) && !(firstStay.get(p)! <= r.arrival_date)) firstStay.set(p, r.arrival_date);
    }
    const later = (a: string, b: string) => (a > b ? a : b);
    const spend = (x: Row) => (x.kind === "refund" ? -Math.abs(x.amount_minor) : x.amount_minor);
    // startOf: the bucket's first day (its period's start, or arrivalFrom when later).
    const cases: { groupBy: string[]; keyOf: (r: Row) => string[]; startOf: (r: Row) => string }[] = [
      { groupBy: ["property", "month"], keyOf: (r) => [r.property_id, `${r.arrival_date.slice(0, 7)}-01`], startOf: (r) => later(`${r.arrival_date.slice(0, 7)}-01`, arrivalFrom) },
      { groupBy: ["week", "channel", "guest_country"], keyOf: (r) => [isoWeek(r.arrival_date), r.booking_channel, guests.get(r.guest_profile_id)?.country_code ?? null], startOf: (r) => later(isoWeek(r.arrival_date), arrivalFrom) },
      { groupBy: ["day"], keyOf: (r) => [r.arrival_date], startOf: (r) => r.arrival_date },
      { groupBy: [], keyOf: () => [], startOf: () => arrivalFrom },
    ];
    let returning = 0;
    for (const { groupBy, keyOf, startOf } of cases) {
      const fields = { day: "period", property: "propertyId", month: "period", week: "period", channel: "channel", guest_country: "guestCountry" } as Record<string, string>;
      const got = { buckets: (await data(caller, STAYS, { filter: { arrivalFrom, arrivalTo }, groupBy })).stayMetrics };
      const key = (values: unknown[]) => JSON.stringify(values);
      const expected = tally(reservations, (r) => key(keyOf(r)), () => ({ stays: 0, nights: 0, people: new Set<string>(), returning: new Set<string>(), ids: [] as string[] }), (acc, r) => {
        acc.stays++;
        acc.nights += r.nights;
        const p = person(r);
        if (p) acc.people.add(p);
        if (p && firstStay.get(p)! < startOf(r)) acc.returning.add(p);
        acc.ids.push(r.id);
      });
      const buckets = byKey(got.buckets as Row[], (b) => key(groupBy.map((d) => b[fields[d]])));
      expect([...buckets.keys()].sort()).toEqual([...expected.keys()].sort());
      for (const [k, e] of expected) {
        const b = buckets.get(k)!;
        expect({ k, stays: b.stays, nights: b.nights, distinctGuests: b.distinctGuests, returningGuests: b.returningGuests, repeatRate: b.repeatRate }).toEqual({
          k, stays: e.stays, nights: e.nights, distinctGuests: e.people.size, returningGuests: e.returning.size,
          repeatRate: e.people.size ? Math.round((e.returning.size / e.people.size) * 10_000) / 10_000 : null,
        });
        returning += e.returning.size;
        // Revenue per currency, from the folio lines of the bucket's stays.
        const mine = new Set(e.ids);
        const lines = folio.filter((x) => mine.has(x.reservation_id));
        const perCurrency = tally(lines, (x) => x.currency, () => ({ revenue: 0, room: 0, roomStays: new Set<string>() }), (acc, x) => {
          acc.revenue += spend(x);
          if (x.category === "accommodation") {
            acc.room += spend(x);
            acc.roomStays.add(x.reservation_id);
          }
        });
        const nightsOf = new Map(reservations.map((r) => [r.id, r.nights as number]));
        const want = [...perCurrency.entries()].sort(([a], [b]) => (a < b ? -1 : 1)).map(([currency, m]) => {
          const roomNights = [...m.roomStays].reduce((s, id) => s + nightsOf.get(id)!, 0);
          return { currency, revenueMinor: m.revenue, roomRevenueMinor: m.room, roomNights, averageDailyRateMinor: roomNights > 0 ? Math.round(m.room / roomNights) : null };
        });
        expect({ k, revenue: b.revenue }).toEqual({ k, revenue: want });
      }
      // Narrowed callers see their property's stays only.
      if (caller.narrowedTo && groupBy.includes("property")) expect(new Set(got.buckets.map((b: Row) => b.propertyId))).toEqual(new Set([caller.narrowedTo]));
    }
    expect(returning).toBeGreaterThan(0);
  });

  it("filter.propertyId and filter.channel count what the same /v1 filters list", async () => {
    const caller = callers()[0];
    const { arrivalFrom, arrivalTo } = range();
    const property = A().properties[0];
    const rows = (await all(caller, `/v1/reservations?kind=stay&property_id=${property}&arrival_from=${arrivalFrom}&arrival_to=${arrivalTo}`)).filter(
      (r) => !["cancelled", "no_show"].includes(r.status),
    );
    const channel = rows[0].booking_channel as string;
    for (const [filter, expected] of [
      [{ propertyId: property }, rows],
      [{ propertyId: property, channel }, rows.filter((r) => r.booking_channel === channel)],
    ] as const) {
      const [bucket] = (await data(caller, STAYS, { filter: { arrivalFrom, arrivalTo, ...filter } })).stayMetrics;
      expect({ filter, stays: bucket.stays, nights: bucket.nights }).toEqual({
        filter, stays: expected.length, nights: expected.reduce((n: number, r: Row) => n + r.nights, 0),
      });
    }
    expect(rows.filter((r) => r.booking_channel === channel).length).toBeLessThan(rows.length);
  });

  it("group B's numbers are its own, in its own currencies, never summed across them", async () => {
    const { arrivalFrom, arrivalTo } = range();
    const b = { buckets: (await data(callers()[3], STAYS, { filter: { arrivalFrom, arrivalTo }, groupBy: ["property"] })).stayMetrics };
    for (const bucket of b.buckets) {
      expect(B().properties).toContain(bucket.propertyId);
      expect(A().properties).not.toContain(bucket.propertyId);
    }
    const currencies = new Set(b.buckets.flatMap((x: Row) => x.revenue.map((m: Row) => m.currency)));
    expect(currencies.size).toBeGreaterThan(1);
    const totals = (await data(callers()[3], STAYS, { filter: { arrivalFrom, arrivalTo } })).stayMetrics[0];
    expect(totals.revenue.map((m: Row) => m.currency)).toEqual([...currencies].sort());
    // B's key cannot narrow to an A property.
    const res = await gql({ token: B().credentials.api_key, property: A().properties[0] }, STAYS, { filter: { arrivalFrom, arrivalTo } });
    expect(res.body.errors[0].extensions.code).toBe("forbidden");
  });
});

const GUESTS = `query($groupBy: [GuestDimension!]) {
  guestMetrics(groupBy: $groupBy) { propertyId country loyaltyTier vip guests masterProfiles reachableByEmail reachableBySms }
}`;

/** Effective status per contact point and purpose, decided by consent/precedence.ts over the group's /v1 consent rows. */
async function decisions(caller: Caller) {
  const rows = await all({ token: caller.groupToken }, "/v1/consents");
  const groups = tally(rows, (o) => `${o.contact_type}|${o.contact_value}|${o.purpose}`, () => [] as Row[], (acc, o) => acc.push(o));
  const out = new Map<string, ReturnType<typeof effectiveConsent>>();
  for (const [k, list] of groups) {
    out.set(k, effectiveConsent(list.map((o) => ({ id: o.id, status: o.status as ConsentStatus, observedAt: new Date(o.observed_at) }))));
  }
  return out;
}

describe("guestMetrics agrees with /v1 guests, loyalty members and consent rows", () => {
  it.each([0, 1, 2, 3])("caller %#: by property and vip, by country, by loyalty tier", async (i) => {
    const caller = callers()[i];
    const guests = await all(caller, "/v1/guests");
    const members = await all(caller, "/v1/loyalty/members");
    const decided = await decisions(caller);
    const tierOf = new Map<string, Row>();
    for (const m of members.filter((m) => m.status === "active")) {
      const best = tierOf.get(m.guest_profile_id);
      if (!best || m.lifetime_points > best.lifetime_points || (m.lifetime_points === best.lifetime_points && m.id < best.id)) tierOf.set(m.guest_profile_id, m);
    }
    const granted = (type: string, value: string | null, purpose: string) => !!value && decided.get(`${type}|${value}|${purpose}`)?.status === "granted";
    const cases: { groupBy: string[]; keyOf: (g: Row) => unknown[] }[] = [
      { groupBy: ["property", "vip"], keyOf: (g) => [g.property_id, g.vip_code !== null] },
      { groupBy: ["country"], keyOf: (g) => [g.country_code] },
      { groupBy: ["loyalty_tier"], keyOf: (g) => [tierOf.get(g.id)?.tier ?? null] },
      { groupBy: [], keyOf: () => [] },
    ];
    const fields = { property: "propertyId", vip: "vip", country: "country", loyalty_tier: "loyaltyTier" } as Record<string, string>;
    let reachable = 0;
    for (const { groupBy, keyOf } of cases) {
      const got = { buckets: (await data(caller, GUESTS, { groupBy })).guestMetrics };
      const expected = tally(guests, (g) => JSON.stringify(keyOf(g)), () => ({ guests: 0, masters: new Set<string>(), email: 0, sms: 0 }), (acc, g) => {
        acc.guests++;
        if (g.master_profile_id) acc.masters.add(g.master_profile_id);
        if (granted("email", g.email?.trim().toLowerCase() ?? null, "email_marketing")) acc.email++;
        if (granted("phone", g.phone, "sms_marketing")) acc.sms++;
      });
      const buckets = byKey(got.buckets as Row[], (b) => JSON.stringify(groupBy.map((d) => b[fields[d]])));
      expect([...buckets.keys()].sort()).toEqual([...expected.keys()].sort());
      for (const [k, e] of expected) {
        const b = buckets.get(k)!;
        expect({ k, guests: b.guests, masterProfiles: b.masterProfiles, reachableByEmail: b.reachableByEmail, reachableBySms: b.reachableBySms }).toEqual({
          k, guests: e.guests, masterProfiles: e.masters.size, reachableByEmail: e.email, reachableBySms: e.sms,
        });
        reachable += b.reachableByEmail + b.reachableBySms;
      }
    }
    expect(reachable).toBeGreaterThan(0);
  });

  it("a withdrawal at one property makes the contact unreachable at every property (consent precedence)", async () => {
    const conflict = A().consent_conflict;
    const caller = callers()[0];
    const before = (await data(caller, GUESTS, {})).guestMetrics[0];
    // Grant the conflicting contact again, later than its withdrawal: withdrawn still wins.
    const guest = await t.admin.guestProfile.findFirstOrThrow({ where: { propertyGroupId: A().id, email: { equals: conflict.contact_value, mode: "insensitive" } } });
    await t.admin.consentObservation.create({
      data: {
        id: "00000000-0000-4000-8000-00000000a28a", propertyGroupId: A().id, propertyId: guest.propertyId, guestProfileId: guest.id, contactType: "email",
        contactValue: conflict.contact_value, purpose: conflict.purpose, channel: "email", status: "granted", source: "test", observedAt: new Date(),
      },
    });
    const after = (await data(caller, GUESTS, {})).guestMetrics[0];
    expect(after.reachableByEmail).toBe(before.reachableByEmail);
    await t.admin.consentObservation.delete({ where: { id: "00000000-0000-4000-8000-00000000a28a" } });
  });
});

const CONSENT = `query($purpose: String!, $contactType: ContactType, $groupBy: [ConsentDimension!]) {
  consentMetrics(purpose: $purpose, contactType: $contactType, groupBy: $groupBy) { propertyId period granted withdrawn denied unknown }
}`;

describe("consentMetrics agrees with /v1 guests and consent rows", () => {
  it.each([0, 1, 2, 3])("caller %#: by property and month, and in total, for both purposes", async (i) => {
    const caller = callers()[i];
    const guests = await all(caller, "/v1/guests");
    const zones = new Map((await all(caller, "/v1/properties")).map((p) => [p.id, p.timezone as string]));
    const decided = await decisions(caller);
    for (const purpose of ["email_marketing", "sms_marketing"]) {
      // Contact points per property: the guests' normalised e-mails and phones.
      const points: { property: string; point: string; type: string; value: string }[] = [];
      for (const g of guests) {
        const email = g.email?.trim().toLowerCase();
        if (email) points.push({ property: g.property_id, point: `email:${email}`, type: "email", value: email });
        if (g.phone) points.push({ property: g.property_id, point: `phone:${g.phone}`, type: "phone", value: g.phone });
      }
      const statusOf = (p: { type: string; value: string }) => decided.get(`${p.type}|${p.value}|${purpose}`);
      type Point = (typeof points)[number];
      const cases: { groupBy: string[]; keyOf: (p: Point) => unknown[] }[] = [
        {
          groupBy: ["property", "month"],
          keyOf: (p) => {
            const d = statusOf(p)?.decidedBy;
            return [p.property, d ? localMonth(d.observedAt.toISOString(), zones.get(p.property)!) : null];
          },
        },
        { groupBy: [], keyOf: () => [] },
      ];
      for (const { groupBy, keyOf } of cases) {
        const got = { buckets: (await data(caller, CONSENT, { purpose, groupBy })).consentMetrics };
        const expected = tally(points, (p) => JSON.stringify(keyOf(p as Point)), () => ({ granted: new Set(), withdrawn: new Set(), denied: new Set(), unknown: new Set() }), (acc, p) => {
          acc[(statusOf(p as Point)?.status ?? "unknown") as "granted"].add(p.point);
        });
        const fields = { property: "propertyId", month: "period" } as Record<string, string>;
        const buckets = byKey(got.buckets as Row[], (b) => JSON.stringify(groupBy.map((d) => b[fields[d]])));
        expect([...buckets.keys()].sort()).toEqual([...expected.keys()].sort());
        for (const [k, e] of expected) {
          const { granted, withdrawn, denied, unknown } = buckets.get(k)!;
          expect({ k, granted, withdrawn, denied, unknown }).toEqual({ k, granted: e.granted.size, withdrawn: e.withdrawn.size, denied: e.denied.size, unknown: e.unknown.size });
        }
        if (groupBy.length === 0) expect(got.buckets[0].granted + got.buckets[0].withdrawn + got.buckets[0].denied).toBeGreaterThan(0);
      }
    }
  });

  it("contactType narrows to one kind of contact point", async () => {
    const caller = callers()[0];
    const both = (await data(caller, CONSENT, { purpose: "sms_marketing" })).consentMetrics[0];
    const phones = (await data(caller, CONSENT, { purpose: "sms_marketing", contactType: "phone" })).consentMetrics[0];
    const emails = (await data(caller, CONSENT, { purpose: "sms_marketing", contactType: "email" })).consentMetrics[0];
    for (const s of ["granted", "withdrawn", "denied", "unknown"]) expect(phones[s] + emails[s]).toBe(both[s]);
    expect(phones.granted).toBeGreaterThan(0);
  });
});

const REVIEWS = `query($filter: ReviewFilter, $groupBy: [ReviewDimension!]) {
  reviewMetrics(filter: $filter, groupBy: $groupBy) { propertyId period source count averageRating byRating { rating count } }
}`;

describe("reviewMetrics agrees with /v1 reviews", () => {
  it.each([0, 1, 2, 3])("caller %#: by property and month, by source, filtered", async (i) => {
    const caller = callers()[i];
    const zones = new Map((await all(caller, "/v1/properties")).map((p) => [p.id, p.timezone as string]));
    const reviews = await all(caller, "/v1/reviews");
    expect(reviews.length).toBeGreaterThan(0);
    const cases: { groupBy: string[]; filter?: Row; rows: Row[]; keyOf: (r: Row) => unknown[] }[] = [
      { groupBy: ["property", "month"], rows: reviews, keyOf: (r) => [r.property_id, localMonth(r.published_at, zones.get(r.property_id)!)] },
      { groupBy: ["source"], rows: reviews, keyOf: (r) => [r.source] },
      { groupBy: ["source"], filter: { minRating: 4 }, rows: reviews.filter((r) => r.rating >= 4), keyOf: (r) => [r.source] },
      { groupBy: [], rows: reviews, keyOf: () => [] },
    ];
    const fields = { property: "propertyId", month: "period", source: "source" } as Record<string, string>;
    for (const { groupBy, filter, rows, keyOf } of cases) {
      const got = { buckets: (await data(caller, REVIEWS, { groupBy, filter })).reviewMetrics };
      const expected = tally(rows, (r) => JSON.stringify(keyOf(r)), () => [] as number[], (acc, r) => acc.push(r.rating));
      const buckets = byKey(got.buckets as Row[], (b) => JSON.stringify(groupBy.map((d) => b[fields[d]])));
      expect([...buckets.keys()].sort()).toEqual([...expected.keys()].sort());
      for (const [k, ratings] of expected) {
        const b = buckets.get(k)!;
        const mean = Math.round((ratings.reduce((s, x) => s + x, 0) / ratings.length) * 100) / 100;
        expect({ k, count: b.count, averageRating: b.averageRating, byRating: b.byRating }).toEqual({
          k, count: ratings.length, averageRating: mean, byRating: [1, 2, 3, 4, 5].map((rating) => ({ rating, count: ratings.filter((x) => x === rating).length })),
        });
      }
    }
  });
});

describe("aggregate errors", () => {
  const { arrivalFrom, arrivalTo } = { arrivalFrom: "2026-01-01", arrivalTo: "2026-12-31" };
  it.each([
    ["a dimension twice", STAYS, { filter: { arrivalFrom, arrivalTo }, groupBy: ["property", "property"] }],
    ["two time dimensions", STAYS, { filter: { arrivalFrom, arrivalTo }, groupBy: ["day", "month"] }],
    ["four dimensions", STAYS, { filter: { arrivalFrom, arrivalTo }, groupBy: ["property", "month", "channel", "guest_country"] }],
    ["a range that ends before it starts", STAYS, { filter: { arrivalFrom: arrivalTo, arrivalTo: arrivalFrom } }],
    ["a range over 731 days", STAYS, { filter: { arrivalFrom: "2024-01-01", arrivalTo: "2026-01-01" } }],
    ["a blank purpose", CONSENT, { purpose: "  " }],
    ["a rating out of range", REVIEWS, { filter: { minRating: 0 } }],
  ])("%s is invalid_request, not a fault", async (_name, query, variables) => {
    const res = await gql({ token: A().credentials.api_key }, query, variables);
    expect(res.body.errors[0].extensions.code).toBe("invalid_request");
    expect(res.body.data).toBeNull();
    expect(res.status).toBeLessThan(500);
  });

  it("an unknown dimension or a malformed date is refused by the schema", async () => {
    const res = await gql({ token: A().credentials.api_key }, STAYS, { filter: { arrivalFrom: "2026-13-01", arrivalTo }, groupBy: ["year"] });
    expect(res.status).toBe(400);
    expect(res.body.errors.length).toBeGreaterThan(0);
    expect(res.body.data).toBeUndefined();
  });

  it("each aggregate needs the scope of the data it counts", async () => {
    const limited = { token: A().credentials.api_key_limited }; // read:guests only
    const stays = await gql(limited, `{ stayMetrics(filter: { arrivalFrom: "${arrivalFrom}", arrivalTo: "${arrivalTo}" }) { stays } }`);
    expect(stays.body.errors[0].extensions).toMatchObject({ code: "forbidden", scope: "read:reservations" });
    const reach = await gql(limited, `{ guestMetrics { guests reachableByEmail } }`);
    expect(reach.body.errors[0].extensions).toMatchObject({ code: "forbidden", scope: "read:consents" });
    const counts = await gql(limited, `{ guestMetrics { guests } }`);
    expect(counts.body.errors).toBeUndefined();
    expect(counts.body.data.guestMetrics[0].guests).toBeGreaterThan(0);
    const tiers = await gql(limited, `{ guestMetrics(groupBy: [loyalty_tier]) { guests } }`);
    expect(tiers.body.errors[0].extensions).toMatchObject({ code: "forbidden", scope: "read:loyalty" });
    const reviews = await gql(limited, `{ reviewMetrics { count } }`);
    expect(reviews.body.errors[0].extensions).toMatchObject({ code: "forbidden", scope: "read:reviews" });
  });

  it("costs an aggregate per grouped statement", async () => {
    const one = `stayMetrics(filter: { arrivalFrom: "${arrivalFrom}", arrivalTo: "${arrivalTo}" }) { stays }`;
    const aliases = (n: number) => `{ ${Array.from({ length: n }, (_, i) => `s${i}: ${one}`).join(" ")} }`;
    // stayMetrics runs two grouped statements, 500 each (plus 1 + 5 for its field and buckets).
    const fits = Math.floor(loadConfig({}).graphqlMaxCost / (2 * 500 + 6));
    const ok = await gql({ token: A().credentials.api_key }, aliases(fits));
    expect(ok.body.errors).toBeUndefined();
    const res = await gql({ token: A().credentials.api_key }, aliases(fits + 1));
    expect(res.body.errors[0].extensions).toMatchObject({ code: "query_too_complex", limit: "cost" });
  });

});
