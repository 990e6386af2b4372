import { GraphQLError } from "graphql";
import { bool, closest, instant, int, parsePath, parseQuery, str, uuid } from "../../src/rest/params";

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
