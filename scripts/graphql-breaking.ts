// `npm run check:graphql` (and .ci/run): schema.graphql against the released schema, with
// @graphql-inspector/core. Fails on a breaking change that CHANGELOG.md does not record under its
// "Unreleased" heading by the change's path (e.g. `Query.guests`, `EventMode.rollup`).
// The released schema is schema.graphql at the newest release tag (v1.2.3) reachable from HEAD, or,
// without tags (a fresh clone may have none), the committed copy graphql/baseline.graphql.
import { execFileSync } from "node:child_process";
import { readFileSync } from "node:fs";
import path from "node:path";
import { CriticalityLevel, diff, type Change } from "@graphql-inspector/core";
import { buildSchema } from "graphql";

const ROOT = path.resolve(__dirname, "..");

export interface BreakingReport {
  breaking: Change[];
  /** Breaking changes the changelog's Unreleased section does not mention. */
  unrecorded: Change[];
}

export async function breakingChanges(releasedSdl: string, currentSdl: string, changelog: string): Promise<BreakingReport> {
  const changes = await diff(buildSchema(releasedSdl), buildSchema(currentSdl));
  const breaking = changes.filter((c) => c.criticality.level === CriticalityLevel.Breaking);
  const unreleased = unreleasedSection(changelog);
  return { breaking, unrecorded: breaking.filter((c) => !unreleased.includes(c.path ?? c.message)) };
}

/** The text under the changelog's "## Unreleased" heading, up to the next "## " heading. */
export function unreleasedSection(changelog: string): string {
  const match = /^## \[?Unreleased\]?[^\n]*\n([\s\S]*?)(?=^## |(?![\s\S]))/im.exec(changelog);
  return match ? match[1] : "";
}

export function releasedSchema(): { sdl: string; source: string } {
  try {
    const tag = git("describe", "--tags", "--abbrev=0", "--match", "v[0-9]*").trim();
    return { sdl: git("show", `${tag}:schema.graphql`), source: `schema.graphql at ${tag}` };
  } catch {
    return { sdl: readFileSync(path.join(ROOT, "graphql/baseline.graphql"), "utf8"), source: "graphql/baseline.graphql" };
  }
}

const git = (...args: string[]) => execFileSync("git", args, { cwd: ROOT, encoding: "utf8", stdio: ["ignore", "pipe", "ignore"] });

async function main() {
  const released = releasedSchema();
  const current = readFileSync(path.join(ROOT, "schema.graphql"), "utf8");
  const changelog = readFileSync(path.join(ROOT, "CHANGELOG.md"), "utf8");
  const { breaking, unrecorded } = await breakingChanges(released.sdl, current, changelog);
  console.log(`schema.graphql against ${released.source}: ${breaking.length} breaking change(s), ${unrecorded.length} not in CHANGELOG.md`);
  for (const c of breaking) console.log(`  ${unrecorded.includes(c) ? "UNRECORDED" : "recorded  "} ${c.path ?? "(schema)"}: ${c.message}`);
  if (unrecorded.length > 0) {
    console.error("Record each breaking change under '## Unreleased' in CHANGELOG.md with its path (as listed above), or undo it.");
    process.exit(1);
  }
}

if (require.main === module) {
  main().catch((err) => {
    console.error(err);
    process.exit(1);
  });
}
