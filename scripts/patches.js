// Applies patches/<package>+<version>.patch (made with `npx patch-package <package>`) to node_modules
// with no dependency of its own, so that a production install (`npm ci --omit=dev`, where
// patch-package is absent) is patched too. Plain CommonJS: it runs on whatever Node npm runs.
//
// Each hunk must match the installed file exactly by its text (line numbers are not trusted); a hunk
// already applied is skipped, so running twice is harmless. Anything else, or an installed version
// other than the one the patch was made for, throws: the install fails rather than run unpatched.
"use strict";
const fs = require("node:fs");
const path = require("node:path");

/** `graphql-jit+0.8.9.patch` → { name: "graphql-jit", version: "0.8.9" }; `@a+b+1.0.0.patch` → "@a/b". */
function patchTarget(fileName) {
  const base = fileName.replace(/\.patch$/, "");
  const at = base.lastIndexOf("+");
  if (at <= 0) throw new Error(`patches/${fileName}: expected <package>+<version>.patch`);
  return { name: base.slice(0, at).replace(/\+/g, "/"), version: base.slice(at + 1) };
}

/** A git-style unified diff → [{ file, hunks: [{ before, after }] }], paths relative to the project. */
function parsePatch(text) {
  const files = [];
  let file;
  let hunk;
  for (const line of text.split("\n")) {
    if (line.startsWith("diff --git ")) {
      file = { file: "", hunks: [] };
      files.push(file);
      hunk = undefined;
    } else if (file && !hunk && line.startsWith("+++ ")) {
      file.file = line.slice(4).replace(/^b\//, "");
    } else if (file && line.startsWith("@@")) {
      hunk = { before: [], after: [] };
      file.hunks.push(hunk);
    } else if (hunk) {
      const mark = line[0];
      const body = line.slice(1);
      if (mark === " " || line === "") {
        hunk.before.push(body);
        hunk.after.push(body);
      } else if (mark === "-") hunk.before.push(body);
      else if (mark === "+") hunk.after.push(body);
      // "\ No newline at end of file" and anything else outside the diff body: nothing to apply
    }
  }
  for (const f of files) {
    for (const h of f.hunks) {
      // The blank line that ends the patch text is not part of the last hunk.
      while (h.before.length && h.after.length && h.before.at(-1) === "" && h.after.at(-1) === "") {
        h.before.pop();
        h.after.pop();
      }
      h.before = h.before.join("\n");
      h.after = h.after.join("\n");
    }
  }
  return files.filter((f) => f.file && f.hunks.length);
}

const occurrences = (haystack, needle) => haystack.split(needle).length - 1;

/** The source with every hunk applied; `label` names the file in errors. */
function applyHunks(source, hunks, label) {
  let text = source;
  hunks.forEach((h, i) => {
    const isApplied = () => occurrences(text, h.after) === 1;
    const canApply = () => occurrences(text, h.before) === 1;
    // A hunk that only deletes lines leaves text its "before" contains: test "before" first then.
    if (h.before.includes(h.after) ? !canApply() && isApplied() : isApplied()) return;
    if (!canApply()) throw new Error(`${label}: hunk ${i + 1} does not match the installed file`);
    text = text.replace(h.before, () => h.after);
  });
  return text;
}

/** Applies every patch in <root>/patches to <root>/node_modules; returns one line per patch. */
function applyPatches(root) {
  const dir = path.join(root, "patches");
  if (!fs.existsSync(dir)) return [];
  const report = [];
  for (const fileName of fs.readdirSync(dir).filter((f) => f.endsWith(".patch")).sort()) {
    const { name, version } = patchTarget(fileName);
    const manifest = path.join(root, "node_modules", name, "package.json");
    if (!fs.existsSync(manifest)) throw new Error(`patches/${fileName}: ${name} is not installed`);
    const installed = JSON.parse(fs.readFileSync(manifest, "utf8")).version;
    if (installed !== version) {
      throw new Error(
        `patches/${fileName} was made for ${name} ${version}, installed is ${installed}: ` +
          `pin ${name} to ${version} in package.json, or remake the patch (npx patch-package ${name})`,
      );
    }
    for (const { file, hunks } of parsePatch(fs.readFileSync(path.join(dir, fileName), "utf8"))) {
      const target = path.join(root, file);
      const source = fs.readFileSync(target, "utf8");
      const patched = applyHunks(source, hunks, `patches/${fileName} on ${file}`);
      // Replace, never write in place: an install may hard-link files shared with other trees.
      if (patched !== source) {
        fs.writeFileSync(`${target}.patching`, patched);
        fs.renameSync(`${target}.patching`, target);
      }
    }
    report.push(`${name}@${version} patched (patches/${fileName})`);
  }
  return report;
}

module.exports = { applyPatches, applyHunks, parsePatch, patchTarget };
