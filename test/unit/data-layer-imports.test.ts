// Issue 15: src/data (over src/db, the connection layer) is the only code that imports the Prisma
// client, its generated types or the SQL statement runner, and the only code that runs a query. The
// fixture loader (src/fixtures) is a writer of its own and stays outside the rule.
import { readdirSync, readFileSync } from "node:fs";
import path from "node:path";

const SRC = path.resolve(__dirname, "../../src");
const ALLOWED = ["data", "db", "generated", "fixtures"];
const DATA_ACCESS = /^\s*(?:import|export)\b[^;]*?\bfrom\s+"([^"]*(?:\/generated\/prisma\/[^"]*|\/db\/sql-count|@prisma\/[^"]*))"/gm;

function sourceFiles(dir: string): string[] {
  return readdirSync(dir, { withFileTypes: true }).flatMap((e) =>
    e.isDirectory() ? sourceFiles(path.join(dir, e.name)) : e.name.endsWith(".ts") ? [path.join(dir, e.name)] : [],
  );
}

const outside = sourceFiles(SRC)
  .map((file) => path.relative(SRC, file).split(path.sep).join("/"))
  .filter((file) => !ALLOWED.includes(file.split("/")[0]));

// Statements and Prisma-only query methods (create, update and count are too common a name to tell).
const DATA_CALL = /\.\$(?:queryRaw|executeRaw|queryRawUnsafe|executeRawUnsafe|transaction)\b|\.(?:findMany|findUnique|findUniqueOrThrow|findFirst|findFirstOrThrow|createMany|createManyAndReturn|updateMany|deleteMany|upsert|aggregate|groupBy)\(/g;

const callsOf = (file: string) => [...readFileSync(path.join(SRC, file), "utf8").matchAll(DATA_CALL)].map((m) => m[0]);
const importsOf = (file: string) => [...readFileSync(path.join(SRC, file), "utf8").matchAll(DATA_ACCESS)].map((m) => m[1]);

describe("the data layer is the only door to the database", () => {
  it("has no Prisma or SQL-runner import outside src/data and src/db", () => {
    const offenders = outside.flatMap((file) => importsOf(file).map((spec) => `${file}: ${spec}`));
    expect(offenders).toEqual([]);
  });

  it("has no raw statement, transaction or Prisma query outside src/data and src/db", () => {
    const offenders = outside.flatMap((file) => callsOf(file).map((call) => `${file}: ${call}`));
    expect(offenders).toEqual([]);
  });

  it("sees an import and a query where there are some", () => {
    expect(importsOf("data/sql.ts")).toContain("../generated/prisma/client");
    expect(callsOf("data/stores/oauth.ts")).toEqual(expect.arrayContaining([".$transaction", ".updateMany("]));
  });
});
