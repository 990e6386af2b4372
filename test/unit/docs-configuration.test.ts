// Every environment variable the service reads (src/, bin/) is in the configuration of
// docs/operations.md, so an operator finds each setting in one place.
import { readdirSync, readFileSync, statSync } from "node:fs";
import path from "node:path";

const ROOT = path.resolve(__dirname, "../..");

function sources(dir: string): string[] {
  return readdirSync(dir).flatMap((name) => {
    const file = path.join(dir, name);
    if (statSync(file).isDirectory()) return name === "generated" ? [] : sources(file);
    return /\.(ts|js)$/.test(name) ? [file] : [];
  });
}

describe("docs/operations.md configuration", () => {
  it("names every environment variable the code reads", () => {
    const names = new Set(
      [...sources(path.join(ROOT, "src")), ...sources(path.join(ROOT, "bin"))].flatMap((file) =>
        [...readFileSync(file, "utf8").matchAll(/\b(GCS_[A-Z0-9_]+|DATABASE_[A-Z_]+|OTEL_[A-Z_]+|LOG_(?:LEVEL|FORMAT))\b/g)].map((m) => m[1]),
      ),
    );
    expect(names.size).toBeGreaterThan(40);
    const doc = readFileSync(path.join(ROOT, "docs/operations.md"), "utf8");
    // The GraphQL bounds share one row: `GCS_GRAPHQL_MAX_DEPTH`, `_COST`, …
    const documented = (name: string) => doc.includes(name) || doc.includes("`" + name.replace(/^GCS_GRAPHQL_MAX/, "") + "`");
    expect([...names].filter((name) => !documented(name))).toEqual([]);
  });
});
