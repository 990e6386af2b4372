// Issue 15: src/data (over src/db, the connection layer) is the only code that imports the Prisma
// client, its generated types or the SQL statement runner. The fixture loader (src/fixtures) is a
// writer of its own and stays outside the rule.
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

const importsOf = (file: string) => [...readFileSync(path.join(SRC, file), "utf8").matchAll(DATA_ACCESS)].map((m) => m[1]);

describe("the data layer is the only door to the database", () => {
  it("has no Prisma or SQL-runner import outside src/data and src/db", () => {
    const offenders = outside.flatMap((file) => importsOf(file).map((spec) => `${file}: ${spec}`));
    expect(offenders).toEqual([]);
  });

  it("sees an import where there is one", () => {
    expect(importsOf("data/sql.ts")).toContain("../generated/prisma/client");
  });
});
