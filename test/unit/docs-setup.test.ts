// The set-up a fresh clone goes through (README.md "Set-up"): the Node it names is package.json's,
// it says what `npm ci` prints on an older Node (21 EBADENGINE lines on Node 20, counted by hand
// from the lockfile's engines when this was written), and `.npmrc`
// approves exactly the dependencies with install scripts, so npm 11 prints no install-scripts warning.
import { readFileSync } from "node:fs";
import path from "node:path";
import { requiredMajor } from "../../src/cli/node-version";

const ROOT = path.resolve(__dirname, "../..");
const read = (file: string) => readFileSync(path.join(ROOT, file), "utf8");
type LockEntry = { hasInstallScript?: boolean };
const lock = JSON.parse(read("package-lock.json")) as { packages: Record<string, LockEntry> };
/** A lockfile key's package name (`node_modules/a/node_modules/@b/c` → `@b/c`). */
const nameOf = (key: string) => key.slice(key.lastIndexOf("node_modules/") + "node_modules/".length);
const setUp = /## Set-up[^\n]*\n([\s\S]*?)\n## /.exec(read("README.md"))![1].replace(/\s+/g, " ");

describe("set-up", () => {
  it("README.md names package.json's Node version and what npm ci does on an older one", () => {
    const engines = (JSON.parse(read("package.json")) as { engines: { node: string } }).engines.node;
    expect(setUp).toContain(`Node.js ${requiredMajor(engines)} or later`);
    expect(setUp).toMatch(/On an older Node, `npm ci` still installs everything, but prints one `EBADENGINE` warning for each package/);
    expect(setUp).toContain("run on the Node 24 that `npm ci` installs (the `node` dev dependency)");
    expect(setUp).toContain("[.npmrc](.npmrc)");
  });

  it(".npmrc approves, by name, exactly the dependencies package-lock.json marks hasInstallScript", () => {
    const withScripts = Object.entries(lock.packages)
      .filter(([key, p]) => key !== "" && p.hasInstallScript)
      .map(([key]) => nameOf(key));
    const approved = read(".npmrc")
      .split("\n")
      .filter((line) => line.startsWith("allow-scripts"))
      .map((line) => /^allow-scripts\[\]=(\S+)$/.exec(line)![1]);
    expect([...approved].sort()).toEqual([...new Set(withScripts)].sort());
    // By name: the lockfile records no resolved URL, and npm matches a pinned entry only against one.
    expect(approved.filter((name) => name.slice(1).includes("@"))).toEqual([]);
    expect(read("package-lock.json")).not.toContain('"resolved"');
    // The file says what each one does.
    const comments = read(".npmrc").split("\n").filter((line) => line.startsWith("#")).join("\n");
    for (const name of approved) expect({ name, explained: comments.includes(name.replace(/\/.*/, "/")) || comments.includes(` ${name} `) }).toEqual({ name, explained: true });
  });
});
