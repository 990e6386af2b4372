// data/models.ts declares each model data/ reads in SQL; prisma/schema.prisma is what the migrations
// build. They must agree: every declared column exists with a compatible type and the same
// nullability, and every scalar field of the model is either declared or listed as not exposed.
import { readFileSync } from "node:fs";
import { join } from "node:path";
import { MODELS, type ColumnSpec, type Model } from "../../src/data/models";

interface PrismaField {
  name: string;
  type: string;
  optional: boolean;
  list: boolean;
  column: string;
  nativeType: string | undefined;
}

/** The scalar and enum fields of every model, and the table each maps to: a reader of the lines schema.prisma uses. */
function readSchema(text: string) {
  const enums = new Set([...text.matchAll(/^enum (\w+) \{/gm)].map((m) => m[1]));
  const models = new Map<string, { table: string; fields: PrismaField[] }>();
  for (const [, name, body] of text.matchAll(/^model (\w+) \{\n([\s\S]*?)\n\}/gm)) models.set(name, { table: name, fields: [] });
  for (const [, name, body] of text.matchAll(/^model (\w+) \{\n([\s\S]*?)\n\}/gm)) {
    const model = models.get(name)!;
    for (const raw of body.split("\n")) {
      const line = raw.replace(/\/\/.*$/, "").trim();
      const table = /^@@map\("(\w+)"\)/.exec(line);
      if (table) model.table = table[1];
      const field = /^(\w+)\s+(\w+)(\[\])?(\?)?(.*)$/.exec(line);
      if (!field || line.startsWith("@@")) continue;
      const [, fieldName, type, list, optional, attributes] = field;
      if (models.has(type)) continue; // a relation, not a column
      model.fields.push({
        name: fieldName,
        type: enums.has(type) ? "enum" : type,
        optional: optional === "?",
        list: list === "[]",
        column: /@map\("(\w+)"\)/.exec(attributes)?.[1] ?? fieldName,
        nativeType: /@db\.(\w+)/.exec(attributes)?.[1],
      });
    }
  }
  return models;
}

/** Whether a declared column type reads a Prisma field's column unchanged. */
function compatible(spec: ColumnSpec, f: PrismaField): boolean {
  if (f.list) return false;
  switch (spec.replace("?", "")) {
    case "uuid":
      return f.type === "String" && f.nativeType === "Uuid";
    case "text":
      return f.type === "String" && f.nativeType !== "Uuid";
    case "enum":
      return f.type === "enum";
    case "int":
      return f.type === "Int";
    case "bigint":
      return f.type === "BigInt";
    case "decimal":
      return f.type === "Decimal";
    case "boolean":
      return f.type === "Boolean";
    case "date":
      return f.type === "DateTime" && f.nativeType === "Date";
    case "instant":
      return f.type === "DateTime" && f.nativeType !== "Date";
    case "json":
      return f.type === "Json";
    default:
      return false;
  }
}

const prisma = readSchema(readFileSync(join(__dirname, "../../prisma/schema.prisma"), "utf8"));

describe.each(Object.entries(MODELS) as [string, Model][])("data/models.ts %s", (name, model) => {
  const declared = prisma.get(name);

  it("is a model of schema.prisma, on the same table", () => {
    expect(declared).toBeDefined();
    expect(model.table).toBe(declared!.table);
  });

  it("declares only columns of the model, with their column name, a compatible type and the same nullability", () => {
    const byName = new Map(declared!.fields.map((f) => [f.name, f]));
    const problems: string[] = [];
    for (const [field, spec] of Object.entries(model.specs)) {
      const f = byName.get(field);
      if (!f) {
        problems.push(`${field}: no such scalar field`);
        continue;
      }
      if (model.columns[field] !== f.column) problems.push(`${field}: column ${model.columns[field]}, schema.prisma maps ${f.column}`);
      if (!compatible(spec, f)) problems.push(`${field}: declared ${spec}, schema.prisma has ${f.type}${f.nativeType ? ` @db.${f.nativeType}` : ""}`);
      if (spec.endsWith("?") !== f.optional) problems.push(`${field}: declared ${spec}, schema.prisma says ${f.optional ? "optional" : "required"}`);
    }
    expect(problems).toEqual([]);
  });

  it("declares every scalar field, or lists it as not exposed", () => {
    const fields = declared!.fields.map((f) => f.name);
    const missing = fields.filter((f) => !Object.hasOwn(model.specs, f) && !model.notExposed.includes(f));
    expect(missing).toEqual([]);
    // A field listed as not exposed exists and is not declared as well.
    expect(model.notExposed.filter((f) => !fields.includes(f) || Object.hasOwn(model.specs, f))).toEqual([]);
  });

  it("keeps internal columns out of the API row and filters only row columns", () => {
    for (const field of model.internal) expect(model.row).not.toHaveProperty(field);
    for (const f of model.filterable) expect(model.row).toHaveProperty(f.field);
  });
});

describe("the reader of schema.prisma", () => {
  it("sees a model's columns, enums and native types", () => {
    const guest = prisma.get("GuestProfile")!;
    expect(guest.table).toBe("guest_profiles");
    expect(guest.fields.find((f) => f.name === "birthDate")).toMatchObject({ type: "DateTime", optional: true, column: "birth_date", nativeType: "Date" });
    expect(prisma.get("Reservation")!.fields.find((f) => f.name === "status")).toMatchObject({ type: "enum", optional: false });
    // Relations are not columns.
    expect(guest.fields.map((f) => f.name)).not.toContain("reservations");
  });
});
