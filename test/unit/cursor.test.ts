import { GraphQLError } from "graphql";
import { canonicalJson, decodeCursor, encodeCursor, type CursorBinding } from "../../src/pagination/cursor";
import { pageSize } from "../../src/pagination/keyset";

const secret = "s".repeat(40);
const binding: CursorBinding = { family: "guests", propertyGroupId: "g1", query: { filter: { email: "a@b.c" }, propertyId: null } };
const key = ["2026-01-01T00:00:00.123Z", "0b5e6c1a-0000-4000-8000-000000000001"] as const;

function codeOf(fn: () => unknown): unknown {
  try {
    fn();
  } catch (err) {
    return (err as GraphQLError).extensions?.code;
  }
  return "no error";
}

describe("keyset cursor", () => {
  it("round-trips the sort key", () => {
    expect(decodeCursor(encodeCursor(key, binding, secret), binding, secret)).toEqual(key);
  });

  it("rejects any changed byte as invalid_cursor", () => {
    const token = encodeCursor(key, binding, secret);
    for (const i of [0, 5, token.indexOf(".") + 2, token.length - 1]) {
      const flipped = token.slice(0, i) + (token[i] === "A" ? "B" : "A") + token.slice(i + 1);
      expect(codeOf(() => decodeCursor(flipped, binding, secret))).toBe("invalid_cursor");
    }
    expect(codeOf(() => decodeCursor("not-a-cursor", binding, secret))).toBe("invalid_cursor");
    expect(codeOf(() => decodeCursor("", binding, secret))).toBe("invalid_cursor");
  });

  it("is bound to the group, the list and the query it came from", () => {
    const token = encodeCursor(key, binding, secret);
    expect(codeOf(() => decodeCursor(token, { ...binding, propertyGroupId: "g2" }, secret))).toBe("invalid_cursor");
    expect(codeOf(() => decodeCursor(token, { ...binding, family: "reservations" }, secret))).toBe("invalid_cursor");
    expect(codeOf(() => decodeCursor(token, { ...binding, query: { filter: { email: "x@y.z" } } }, secret))).toBe("invalid_cursor");
    expect(codeOf(() => decodeCursor(token, binding, "t".repeat(40)))).toBe("invalid_cursor");
  });

  it("hashes equal queries equally whatever their key order or absent members", () => {
    expect(canonicalJson({ b: 1, a: { d: null, c: [1, "x"] } })).toBe(canonicalJson({ a: { c: [1, "x"] }, b: 1, e: undefined }));
  });
});

describe("page size", () => {
  it("defaults to 100, clamps at 500 and rejects below 1", () => {
    expect(pageSize(undefined)).toBe(100);
    expect(pageSize(null)).toBe(100);
    expect(pageSize(1)).toBe(1);
    expect(pageSize(500)).toBe(500);
    expect(pageSize(501)).toBe(500);
    expect(pageSize(1_000_000)).toBe(500);
    expect(codeOf(() => pageSize(0))).toBe("invalid_request");
    expect(codeOf(() => pageSize(-3))).toBe("invalid_request");
  });
});
