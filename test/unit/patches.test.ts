// scripts/patches.js applies patches/ at every install, production installs included (no
// patch-package there). It works on copies here: never on this checkout's node_modules.
import { cpSync, linkSync, mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import os from "node:os";
import path from "node:path";

interface Hunk {
  before: string;
  after: string;
}
// Plain JavaScript (it runs before any build, on whatever Node npm runs): required, with its shape.
const { applyHunks, applyPatches, parsePatch } = require("../../scripts/patches") as {
  applyHunks(source: string, hunks: Hunk[], label: string): string;
  applyPatches(root: string): string[];
  parsePatch(text: string): { file: string; hunks: Hunk[] }[];
};

const ROOT = path.resolve(__dirname, "../..");
const PATCH = path.join(ROOT, "patches/graphql-jit+0.8.9.patch");
const files = parsePatch(readFileSync(PATCH, "utf8"));
const installed = (file: string) => readFileSync(path.join(ROOT, file), "utf8");
const reverse = (hunks: Hunk[]) => hunks.map((h) => ({ before: h.after, after: h.before }));

describe("applying patches without patch-package", () => {
  it("reads the patch: both graphql-jit builds, the leaf code and the __proto__ member in each", () => {
    expect(files.map((f) => [f.file, f.hunks.length])).toEqual([
      ["node_modules/graphql-jit/dist/execution.js", 2],
      ["node_modules/graphql-jit/dist/execution.mjs", 2],
    ]);
    expect(files[0].hunks[0].after).toContain("// patched: error metadata only on the null/Error path");
    expect(files[0].hunks[1].after).toContain('["__proto__"]');
  });

  it("turns the released file into the installed, patched one, and leaves a patched file as it is", () => {
    for (const { file, hunks } of files) {
      const patched = installed(file);
      const pristine = applyHunks(patched, reverse(hunks), file);
      expect(pristine).not.toContain("patched:");
      expect(applyHunks(pristine, hunks, file)).toBe(patched);
      expect(applyHunks(patched, hunks, file)).toBe(patched);
    }
  });

  it("refuses a file the patch does not match, naming it", () => {
    expect(() => applyHunks("module.exports = {};\n", files[0].hunks, "patches/x.patch on y.js")).toThrow(
      "patches/x.patch on y.js: hunk 1 does not match the installed file",
    );
  });

  describe("on a copy of the package", () => {
    let root: string;
    const target = (f: string) => path.join(root, f);

    beforeEach(() => {
      root = mkdtempSync(path.join(os.tmpdir(), "gcs-patches-"));
      mkdirSync(target("patches"));
      cpSync(PATCH, target(path.join("patches", path.basename(PATCH))));
      mkdirSync(target("node_modules/graphql-jit/dist"), { recursive: true });
      writeFileSync(target("node_modules/graphql-jit/package.json"), JSON.stringify({ name: "graphql-jit", version: "0.8.9" }));
      for (const { file, hunks } of files) writeFileSync(target(file), applyHunks(installed(file), reverse(hunks), file));
    });
    afterEach(() => rmSync(root, { recursive: true, force: true }));

    it("patches the installed files, and replaces them rather than write through a hard link", () => {
      const [{ file }] = files;
      linkSync(target(file), target("shared-link.js")); // as in a tree whose node_modules is hard-linked
      expect(applyPatches(root)).toEqual(["graphql-jit@0.8.9 patched (patches/graphql-jit+0.8.9.patch)"]);
      for (const f of files) expect(readFileSync(target(f.file), "utf8")).toBe(installed(f.file));
      expect(readFileSync(target("shared-link.js"), "utf8")).not.toContain("patched:");
      expect(applyPatches(root)).toHaveLength(1); // a second install: nothing left to do, no error
    });

    it("refuses another version of the package than the patch was made for", () => {
      writeFileSync(target("node_modules/graphql-jit/package.json"), JSON.stringify({ name: "graphql-jit", version: "0.8.10" }));
      expect(() => applyPatches(root)).toThrow(
        "patches/graphql-jit+0.8.9.patch was made for graphql-jit 0.8.9, installed is 0.8.10: pin graphql-jit to 0.8.9",
      );
    });
  });
});
