import { GraphQLError } from "graphql";
import { bodyParam, bool, closest, date, expand, instant, int, jsonValue, lowerEnumOf, parseBody, parsePath, parseQuery, str, uuid } from "../../src/api/params";
import { parseDate, parseDay, parseInstant, parseInstantOrDay, rangeEnd, WholeDay } from "../../src/validate";
import { unstorablePath } from "../../src/graphql/text";

const specs = { limit: int("limit"), cursor: str("cursor"), source_id: str("filter.sourceId"), updated_since: instant("filter.updatedSince"), include_total: bool("includeTotal") };

function detailOf(fn: () => unknown): string {
  try {
    fn();
  } catch (err) {
    expect((err as GraphQLError).extensions.code).toBe("invalid_request");
    return String((err as GraphQLError).extensions.detail);
  }
  throw new Error("expected a 400");
}

describe("query parameters", () => {
  it("maps names to nested variables and parses types", () => {
    expect(parseQuery({ limit: "20", source_id: "P-1", include_total: "1", updated_since: "2026-03-01T10:00:00+01:00" }, specs)).toEqual({
      limit: 20,
      includeTotal: true,
      filter: { sourceId: "P-1", updatedSince: "2026-03-01T09:00:00.000Z" },
    });
  });

  it("rejects unknown parameters and suggests the one meant", () => {
    expect(detailOf(() => parseQuery({ after: "x" }, specs))).toMatch(/unknown query parameter after; did you mean cursor\?/);
    expect(detailOf(() => parseQuery({ limt: "2" }, specs))).toMatch(/did you mean limit\?/);
    expect(detailOf(() => parseQuery({ sourceId: "2" }, specs))).toMatch(/did you mean source_id\?/);
    expect(detailOf(() => parseQuery({ zzzzzzzz: "2" }, specs))).not.toMatch(/did you mean/);
    expect(detailOf(() => parseQuery({ q: "2" }, {}))).toMatch(/takes no query parameters/);
  });

  it("rejects bad values with an example", () => {
    expect(detailOf(() => parseQuery({ limit: "ten" }, specs))).toMatch(/limit must be an integer, e\.g\. limit=50/);
    expect(detailOf(() => parseQuery({ limit: "1.5" }, specs))).toMatch(/integer/);
    expect(detailOf(() => parseQuery({ updated_since: "yesterday" }, specs))).toMatch(/ISO 8601/);
    expect(detailOf(() => parseQuery({ updated_since: "2026-02-30T00:00:00Z" }, specs))).toMatch(/ISO 8601/);
    expect(detailOf(() => parseQuery({ include_total: "yes" }, specs))).toMatch(/true, false, 1 or 0/);
    expect(detailOf(() => parseQuery({ limit: ["1", "2"] }, specs))).toMatch(/given once/);
    expect(detailOf(() => parsePath({ id: "123" }, { id: uuid("id") }))).toMatch(/id must be a uuid/);
  });

  it("suggests only near names", () => {
    expect(closest("cursr", ["cursor", "limit"])).toBe("cursor");
    expect(closest("page_size", ["cursor", "limit"])).toBe("limit");
    expect(closest("unrelated", ["cursor", "limit"])).toBeUndefined();
  });
});

describe("expand and order (issue 42)", () => {
  const listSpecs = { expand: expand("guest"), order: lowerEnumOf("order", "EventOrder") };

  it("expand takes guest, comma-separated or as expand[]=…, and sets $expandGuest", () => {
    for (const query of [{ expand: "guest" }, { expand: "guest, guest" }, { "expand[]": "guest" }, { "expand[]": ["guest", "guest"] }]) {
      expect(parseQuery(query, listSpecs)).toEqual({ expandGuest: true });
    }
  });

  it("the OpenAPI schemas say what the parsers take: a range bound either form (its own first), expand a comma-separated list", () => {
    expect(instant("x").schema()).toEqual({ anyOf: [{ type: "string", format: "date-time" }, { type: "string", format: "date" }] });
    expect(date("x").schema()).toEqual({ anyOf: [{ type: "string", format: "date" }, { type: "string", format: "date-time" }] });
    expect(parseQuery({ d: "2026-03-14T10:00:00Z", i: "2026-03-14" }, { d: date("d"), i: instant("i") })).toEqual({ d: "2026-03-14", i: "2026-03-14" });
    expect(expand("guest").schema()).toEqual({ type: "array", items: { type: "string", enum: ["guest"] } });
    expect(expand("guest").list).toBe(true);
  });

  it("expand refuses any other value, naming the one allowed; expand given twice is refused", () => {
    for (const raw of ["guests", "guest,property", "", "GUEST"]) {
      expect(detailOf(() => parseQuery({ expand: raw }, listSpecs))).toMatch(/^expand must be a comma-separated list of guest; got/);
    }
    expect(detailOf(() => parseQuery({ "expand[]": ["guest", "x"] }, listSpecs))).toMatch(/list of guest; got "x"/);
    expect(detailOf(() => parseQuery({ expand: ["guest", "guest"] }, listSpecs))).toMatch(/expand must be given once/);
    // [] is only for the specs that take lists.
    expect(detailOf(() => parseQuery({ "order[]": "desc" }, listSpecs))).toMatch(/unknown query parameter order\[\]/);
  });

  it("order takes the enum's values in lower case", () => {
    expect(parseQuery({ order: "desc" }, listSpecs)).toEqual({ order: "DESC" });
    expect(parseQuery({ order: "asc" }, listSpecs)).toEqual({ order: "ASC" });
    expect(detailOf(() => parseQuery({ order: "DESC" }, listSpecs))).toMatch(/order must be one of asc, desc/);
  });
});

describe("names inherited from Object.prototype", () => {
  const INHERITED = ["__proto__", "constructor", "toString", "hasOwnProperty", "valueOf"];

  it("are unknown query parameters, not specs", () => {
    for (const name of INHERITED) {
      // Object.fromEntries, as the query parser makes them: "__proto__" is an own member.
      expect(detailOf(() => parseQuery(Object.fromEntries([[name, "x"]]), specs))).toMatch(new RegExp(`^unknown query parameter ${name}`));
    }
  });

  it("are unknown body members, and a body's prototype lends no member", () => {
    const bodySpecs = { limit: bodyParam(int("limit")) };
    for (const name of INHERITED) {
      expect(detailOf(() => parseBody(JSON.parse(`{${JSON.stringify(name)}:1}`), bodySpecs))).toMatch(new RegExp(`^unknown body member ${name}`));
    }
    expect(parseBody(Object.create({ limit: 5 }), bodySpecs)).toEqual({});
  });

  it("path parameters are own members only", () => {
    expect(detailOf(() => parsePath(Object.create({ id: "3f1c2a9e-7d4b-4c1a-9e2f-5b6a7c8d9e0f" }), { id: uuid("id") }))).toMatch(/id must be a uuid/);
  });

  it("a route table variable path through a prototype is refused, nothing is polluted", () => {
    expect(() => parseQuery({ a: "1" }, { a: int("__proto__.polluted") })).toThrow(/prototype member/);
    expect(({} as Record<string, unknown>).polluted).toBeUndefined();
  });
});

describe("text the database cannot hold", () => {
  it("NUL and lone surrogates in a string parameter are a 400 naming it", () => {
    for (const raw of ["a\u0000b", "\u0000", "x\ud800", "\udfffy"]) {
      expect(detailOf(() => parseQuery({ source_id: raw }, specs))).toBe("source_id must be text without NUL characters (U+0000) or lone UTF-16 surrogates");
    }
    expect(detailOf(() => parsePath({ provider: "a\u0000" }, { provider: str("provider") }))).toMatch(/^provider must be text/);
    expect(parseQuery({ source_id: "é😀" }, specs)).toEqual({ filter: { sourceId: "é😀" } });
  });

  it("in a JSON body member, the place is named, key or value", () => {
    const bodySpecs = { filter_doc: jsonValue("filterDoc", true) };
    expect(detailOf(() => parseBody({ filter_doc: { and: [{ value: "ok" }, { value: ["x", "\u0000"] }] } }, bodySpecs))).toMatch(/^filter_doc\.and\[1\]\.value\[1\] must be text/);
    expect(detailOf(() => parseBody({ filter_doc: { "a\u0000": 1 } }, bodySpecs))).toMatch(/^filter_doc\.a\\u0000 must be text/);
  });

  it("walks a value nested 100,000 deep without overflowing the stack", () => {
    const deep = JSON.parse("[".repeat(100_000) + '"\\u0000"' + "]".repeat(100_000));
    expect(unstorablePath(deep, "v")).toBe(`v${"[0]".repeat(100_000)}`);
  });

  it("a scalar body member refuses objects and arrays, however deep", () => {
    const deep = JSON.parse("[".repeat(10_000) + "]".repeat(10_000));
    expect(detailOf(() => parseBody({ limit: deep }, { limit: bodyParam(int("limit")) }))).toBe("limit must be a string, number or boolean, not an object or array");
    expect(parseBody({ limit: 5, flag: true }, { limit: bodyParam(int("limit")), flag: bodyParam(bool("flag")) })).toEqual({ limit: 5, flag: true });
  });
});

describe("impossible days and times are refused, never rolled over (one reader for every door)", () => {
  it.each(["2026-02-30", "2026-02-29", "2026-04-31", "2026-13-01", "2026-00-10"])("the date %s", (raw) => {
    expect(() => parseDate(raw)).toThrow(/real calendar date/);
    expect(() => parseInstant(`${raw}T10:00:00Z`)).toThrow(/ISO 8601 instant/);
    expect(detailOf(() => parseQuery({ d: raw }, { d: date("d") }))).toMatch(/^d must be a date YYYY-MM-DD/);
  });
  it.each(["2026-01-01T24:00:00Z", "2026-01-01T23:60:00Z", "2026-01-01T23:59:60Z", "2026-01-01T10:00:00+24:00", "2026-01-01T10:00:00+05:60"])("the instant %s", (raw) => {
    expect(() => parseInstant(raw)).toThrow(/ISO 8601 instant/);
    expect(detailOf(() => parseQuery({ updated_since: raw }, specs))).toMatch(/^updated_since must be an ISO 8601 instant/);
  });
  it("accepts 29 February of a leap year and the widest offsets", () => {
    expect(parseDate("2028-02-29").toISOString()).toBe("2028-02-29T00:00:00.000Z");
    expect(parseInstant("2026-06-01T00:00:00-23:59").toISOString()).toBe("2026-06-01T23:59:00.000Z");
  });
});

describe("dates and timestamps alike wherever a range is asked (issue 42)", () => {
  it("a date where an instant is asked is its UTC midnight, a whole day as a range's exclusive end", () => {
    expect(parseQuery({ updated_since: "2026-11-01" }, specs)).toEqual({ filter: { updatedSince: "2026-11-01" } }); // the DateTime scalar reads it
    const day = parseInstantOrDay("2026-11-01");
    expect(day).toBeInstanceOf(WholeDay);
    expect(day.toISOString()).toBe("2026-11-01T00:00:00.000Z");
    expect(JSON.stringify(day)).toBe('"2026-11-01"'); // a cursor bound to the filter tells it from the instant
    expect(rangeEnd(day)!.toISOString()).toBe("2026-11-02T00:00:00.000Z");
    expect(rangeEnd(parseInstantOrDay("9999-12-31"))).toBeNull(); // no day follows: no bound
    const instant = parseInstantOrDay("2026-11-01T00:00:00Z");
    expect(instant).not.toBeInstanceOf(WholeDay);
    expect(rangeEnd(instant)!.toISOString()).toBe("2026-11-01T00:00:00.000Z");
    expect(() => parseInstantOrDay("2026-02-30")).toThrow(/ISO 8601 instant .* or a date YYYY-MM-DD/);
  });
  it("an instant where a date is asked is the date it is written in (its own offset, not UTC)", () => {
    expect(parseQuery({ d: "2026-11-01T23:30:00-02:00" }, { d: date("d") })).toEqual({ d: "2026-11-01" });
    expect(parseQuery({ d: "2026-03-14T00:00:00+01:00" }, { d: date("d") })).toEqual({ d: "2026-03-14" });
    expect(parseQuery({ d: "2026-11-01T00:00:00Z" }, { d: date("d") })).toEqual({ d: "2026-11-01" });
    expect(parseDay("2026-11-01").toISOString()).toBe("2026-11-01T00:00:00.000Z");
    expect(detailOf(() => parseQuery({ d: "yesterday" }, { d: date("d") }))).toMatch(/^d must be a date YYYY-MM-DD \(or an ISO 8601 instant/);
    expect(detailOf(() => parseQuery({ updated_since: "yesterday" }, specs))).toMatch(/^updated_since must be an ISO 8601 instant with time zone or a date YYYY-MM-DD/);
  });
});

describe("dates and instants PostgreSQL can hold (years 0001 to 9999)", () => {
  it("refuses year 0, five-digit years and offsets that cross the edges; accepts the first and last moments", () => {
    for (const raw of ["0000-01-01", "0000-12-31", "10000-01-01", "-0001-01-01"]) expect(() => parseDate(raw)).toThrow(/years 0001 and 9999/);
    for (const raw of ["0000-06-01T00:00:00Z", "0001-01-01T00:00:00+01:00", "9999-12-31T23:30:00-01:00"]) expect(() => parseInstant(raw)).toThrow(/years 0001 and 9999/);
    expect(detailOf(() => parseQuery({ d: "0000-01-01" }, { d: date("d") }))).toMatch(/^d must be a date YYYY-MM-DD .*in the years 0001 to 9999/);
    expect(detailOf(() => parseQuery({ updated_since: "0000-01-01T00:00:00Z" }, specs))).toMatch(/^updated_since must be an ISO 8601 instant .* 0001 to 9999/);
    expect(parseDate("0001-01-01").toISOString()).toBe("0001-01-01T00:00:00.000Z");
    expect(parseDate("9999-12-31").toISOString()).toBe("9999-12-31T00:00:00.000Z");
    expect(parseInstant("0001-01-01T00:00:00Z").toISOString()).toBe("0001-01-01T00:00:00.000Z");
    expect(parseInstant("9999-12-31T23:59:59.999Z").toISOString()).toBe("9999-12-31T23:59:59.999Z");
  });
});
