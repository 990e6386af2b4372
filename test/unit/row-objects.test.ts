// db/row-objects.ts: the object a made-up literal builds is the row pg would have built, for any
// column names (quotes, backslashes, line separators, __proto__, numbers, repeats) and values.
import fc from "fast-check";
import type { FieldDef } from "pg";
import { rowObjectBuilder } from "../../src/db/row-objects";

/** What pg's object mode gives: each column assigned in order as an own member (a later repeat wins). */
function reference(names: string[], values: unknown[]): Record<string, unknown> {
  const row: Record<string, unknown> = {};
  names.forEach((name, i) => Object.defineProperty(row, name, { value: values[i], enumerable: true, writable: true, configurable: true }));
  return row;
}

const fieldsOf = (names: string[]) => names.map((name) => ({ name }) as FieldDef);
const name = fc.oneof(fc.string(), fc.constantFrom("__proto__", "constructor", "toString", "0", "12", '"', "\\", "\u2028", "a\nb", "hasOwnProperty"));

describe("row objects from array rows", () => {
  it("builds the row pg builds, keys in the same order, for any names and values", () => {
    fc.assert(
      fc.property(fc.array(name, { maxLength: 12 }), fc.array(fc.oneof(fc.string(), fc.integer(), fc.boolean(), fc.constant(null)), { minLength: 12, maxLength: 12 }), (names, values) => {
        const built = rowObjectBuilder(fieldsOf(names))(values);
        const expected = reference(names, values);
        expect(Object.entries(built)).toEqual(Object.entries(expected));
        expect(Object.getPrototypeOf(built)).toBe(Object.prototype);
        expect(JSON.stringify(built)).toBe(JSON.stringify(expected));
      }),
      { numRuns: 300 },
    );
  });

  it("keeps __proto__ a member, whatever its value", () => {
    const row = rowObjectBuilder(fieldsOf(["__proto__", "id"]))([{ polluted: true }, "x"]);
    expect(Object.keys(row)).toEqual(["__proto__", "id"]);
    expect((row as { polluted?: boolean }).polluted).toBeUndefined();
    expect(({} as { polluted?: boolean }).polluted).toBeUndefined();
  });

  it("reuses one builder per column list", () => {
    expect(rowObjectBuilder(fieldsOf(["a", "b"]))).toBe(rowObjectBuilder(fieldsOf(["a", "b"])));
    expect(rowObjectBuilder(fieldsOf(["a", "b"]))).not.toBe(rowObjectBuilder(fieldsOf(["b", "a"])));
  });

  it("finds a named statement's builder by its name; a name seen with another column count is built again", () => {
    const first = rowObjectBuilder(fieldsOf(["id", "name"]), "gcs_test_statement");
    expect(rowObjectBuilder(fieldsOf(["id", "name"]), "gcs_test_statement")).toBe(first);
    expect(first(["1", "x"])).toEqual({ id: "1", name: "x" });
    const wider = rowObjectBuilder(fieldsOf(["id", "name", "kind"]), "gcs_test_statement");
    expect(wider(["1", "x", "k"])).toEqual({ id: "1", name: "x", kind: "k" });
    expect(rowObjectBuilder(fieldsOf(["id", "name", "kind"]), "gcs_test_statement")).toBe(wider);
  });
});
