// The docs people navigate: every relative link of README.md, CONTRIBUTING.md, CHANGELOG.md and
// docs/*.md names a file that exists and, with `#anchor`, a heading of that file (GitHub's anchors).
// Nothing points out of the checkout (a clone has only itself): a link is an http(s) URL, a path
// of the service (`/docs`) or a file inside the repository, and no path in the text climbs out of
// it (`../shared/…`). The README stays a page: at most 150 lines.
import { existsSync, readdirSync, readFileSync } from "node:fs";
import path from "node:path";

const ROOT = path.resolve(__dirname, "../..");
const FILES = ["README.md", "CONTRIBUTING.md", "CHANGELOG.md", ...readdirSync(path.join(ROOT, "docs")).filter((f) => f.endsWith(".md")).map((f) => `docs/${f}`)];
const read = (file: string) => readFileSync(path.join(ROOT, file), "utf8");

/** GitHub's heading anchors: lower case, punctuation dropped, spaces become hyphens. */
const slug = (heading: string) =>
  heading
    .toLowerCase()
    .replace(/[^\p{L}\p{N}\s_-]/gu, "")
    .replace(/\s/g, "-");

/** The anchors of a Markdown file's headings (outside code blocks). */
function anchors(text: string): Set<string> {
  const outside = text.replace(/```[\s\S]*?```/g, "");
  return new Set([...outside.matchAll(/^#{1,6} (.+)$/gm)].map((m) => slug(m[1].trim())));
}

describe("docs links", () => {
  it("every relative link resolves to a file and, with an anchor, to one of its headings", () => {
    const broken: string[] = [];
    for (const file of FILES) {
      const text = read(file).replace(/```[\s\S]*?```/g, "");
      for (const [, target] of text.matchAll(/\]\(([^)\s]+)\)/g)) {
        if (/^[a-z]+:/.test(target) || target.startsWith("/")) continue; // URLs and the service's own paths
        const [file2, anchor] = target.split("#");
        const resolved = file2 ? path.join(path.dirname(file), file2) : file;
        if (!existsSync(path.join(ROOT, resolved))) broken.push(`${file}: ${target} (no file)`);
        else if (anchor && resolved.endsWith(".md") && !anchors(read(resolved)).has(anchor)) broken.push(`${file}: ${target} (no heading)`);
      }
    }
    expect(broken).toEqual([]);
  });

  it("no link or path leaves the repository, except http(s) URLs", () => {
    const outside: string[] = [];
    for (const file of FILES) {
      const text = read(file);
      for (const [, target] of text.replace(/```[\s\S]*?```/g, "").matchAll(/\]\(([^)\s]+)\)/g)) {
        if (/^https?:\/\//.test(target) || target.startsWith("#")) continue;
        if (/^[a-z]+:/.test(target)) outside.push(`${file}: ${target} (not http(s))`);
        else if (!target.startsWith("/") && path.relative(ROOT, path.join(ROOT, path.dirname(file), target.split("#")[0])).startsWith("..")) outside.push(`${file}: ${target}`);
      }
      // Paths named in the text or code (`../shared/spec/…`), resolved from the file's folder and from the root.
      for (const [word] of text.matchAll(/(?:\.\.\/)+[\w.-]+(?:\/[\w.-]+)*/g)) {
        const fromFile = path.relative(ROOT, path.join(ROOT, path.dirname(file), word));
        if (fromFile.startsWith("..")) outside.push(`${file}: ${word}`);
      }
    }
    expect(outside).toEqual([]);
  });

  it("README.md is at most 150 lines", () => {
    expect(read("README.md").split("\n").length).toBeLessThanOrEqual(150);
  });
});
