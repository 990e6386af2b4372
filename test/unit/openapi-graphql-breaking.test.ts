// GraphQL governance (scripts/graphql-breaking.ts, run by CI): a breaking change to schema.graphql
// fails unless CHANGELOG.md records it under "Unreleased" by its path.
import { readFileSync } from "node:fs";
import path from "node:path";
import { breakingChanges, releasedSchema, unreleasedSection } from "../../scripts/graphql-breaking";

const released = `
type Query { guests(limit: Int): [Guest!]! guest(id: ID!): Guest }
type Guest { id: ID! email: String }
enum EventMode { timeline latest rollup }
type Extra { mode: EventMode }
`;
const changelog = (unreleased: string) => `# Changelog\n\n## Unreleased\n\n${unreleased}\n\n## 1.0.0 — 2026-11-23\n\n- \`Guest.email\` was here.\n`;

describe("breaking changes to schema.graphql", () => {
  it("adding a field is not breaking", async () => {
    const report = await breakingChanges(released, released.replace("email: String", "email: String phone: String"), changelog(""));
    expect(report.breaking).toEqual([]);
  });

  it("removing a field is breaking, and unrecorded unless Unreleased names its path", async () => {
    const current = released.replace("email: String", "");
    const unrecorded = await breakingChanges(released, current, changelog("Nothing yet."));
    expect(unrecorded.breaking.map((c) => c.path)).toEqual(["Guest.email"]);
    expect(unrecorded.unrecorded).toHaveLength(1); // the 1.0.0 section does not count
    const recorded = await breakingChanges(released, current, changelog("- Removed `Guest.email`: use master profiles."));
    expect(recorded.unrecorded).toEqual([]);
  });

  it("removing an enum value or making an argument required is breaking", async () => {
    const current = released.replace("latest rollup", "latest").replace("guests(limit: Int)", "guests(limit: Int!)");
    const report = await breakingChanges(released, current, changelog(""));
    expect(report.breaking.map((c) => c.path).sort()).toEqual(["EventMode.rollup", "Query.guests.limit"]);
  });

  it("reads the Unreleased section up to the next version", () => {
    expect(unreleasedSection(changelog("- `Query.guests` changed")).trim()).toBe("- `Query.guests` changed");
    expect(unreleasedSection("# Changelog\n\n## 1.0.0\n- `Query.guests`")).toBe("");
  });
});

describe("this repository", () => {
  it("has a released schema to compare with, and a CHANGELOG.md that starts with 1.0.0", () => {
    expect(releasedSchema().sdl).toContain("type Query");
    const text = readFileSync(path.resolve(__dirname, "../../CHANGELOG.md"), "utf8");
    expect(text).toMatch(/^## Unreleased$/m);
    expect(text).toMatch(/^## 1\.0\.0 /m);
  });
});
