// graphql-jit is patched (patches/graphql-jit+0.8.9.patch, applied by `patch-package` at install) so
// a present leaf value goes straight to its serializer and the error's locations and path are built
// only when a value is null or an Error. These tests hold the patched executor to graphql-js's
// answers for every leaf outcome, and fail if the install left the patch out.
import { readFileSync } from "node:fs";
import { execute, GraphQLError, GraphQLScalarType, parse, type ExecutionResult } from "graphql";
import { makeExecutableSchema } from "@graphql-tools/schema";
import { isCompiledQuery } from "graphql-jit";
import { compileOperation } from "../../src/graphql/compiled";

const Code = new GraphQLScalarType({
  name: "Code",
  serialize(value) {
    if (typeof value !== "string" || !/^[A-Z]+$/.test(value)) throw new GraphQLError(`Code cannot represent ${String(value)}`);
    return value.toLowerCase();
  },
});

const rows = [
  { id: "1", code: "ABC", optional: "DEF" },
  { id: "2", code: null, optional: null },
  { id: "3", code: "ok", optional: new Error("the source failed") },
];

const schema = makeExecutableSchema({
  typeDefs: `
    scalar Code
    type Row { id: ID! code: Code! optional: Code }
    type Query { rows: [Row]! row(id: ID!): Row }
  `,
  resolvers: { Code, Query: { rows: () => rows, row: (_: unknown, { id }: { id: string }) => rows.find((r) => r.id === id) } },
});

async function bothExecutors(query: string): Promise<[ExecutionResult, ExecutionResult]> {
  const document = parse(query);
  const compiled = compileOperation(schema, document);
  if (!isCompiledQuery(compiled)) throw new Error("did not compile");
  const jit = await compiled.query(undefined, {}, {});
  const reference = await execute({ schema, document });
  return [JSON.parse(JSON.stringify(jit)), JSON.parse(JSON.stringify(reference))];
}

describe("compiled leaves (patched graphql-jit)", () => {
  it("the install applied the patch", () => {
    const source = readFileSync(require.resolve("graphql-jit/dist/execution.js"), "utf8");
    expect(source).toContain("patched: error metadata only on the null/Error path");
  });

  it("serializes present values through the scalar", async () => {
    const [jit, reference] = await bothExecutors(`{ row(id: "1") { id code optional } }`);
    expect(jit).toEqual({ data: { row: { id: "1", code: "abc", optional: "def" } } });
    expect(jit).toEqual(reference);
  });

  it("a null non-null leaf nulls its parent with graphql-js's error, path and locations", async () => {
    const [jit, reference] = await bothExecutors(`{ row(id: "2") { id code optional } }`);
    expect(jit.data).toEqual({ row: null });
    expect(jit.errors).toEqual([
      expect.objectContaining({ message: "Cannot return null for non-nullable field Row.code.", path: ["row", "code"], locations: [{ line: 1, column: 21 }] }),
    ]);
    expect(jit.errors?.[0]).toMatchObject({ message: reference.errors?.[0].message, path: reference.errors?.[0].path, locations: reference.errors?.[0].locations });
  });

  it("an Error value and a failing serializer report where they happened, list indexes included", async () => {
    const [jit] = await bothExecutors(`{ rows { id optional code } }`);
    expect(jit.data?.rows).toEqual([{ id: "1", optional: "def", code: "abc" }, null, null]);
    const errors = (jit.errors ?? []).map(({ message, path }) => ({ message, path }));
    expect(errors).toEqual(
      expect.arrayContaining([
        { message: "Cannot return null for non-nullable field Row.code.", path: ["rows", 1, "code"] },
        { message: "the source failed", path: ["rows", 2, "optional"] },
        { message: "Code cannot represent ok", path: ["rows", 2, "code"] },
      ]),
    );
    expect(errors).toHaveLength(3);
  });
});
