// The set-up a fresh clone goes through (README.md "Set-up"): the Node it names is package.json's,
// it says what `npm ci` prints on an older Node (21 EBADENGINE lines on Node 20, counted by hand
// from the lockfile's engines when this was written), and package.json's `allowScripts`
// approves exactly the dependencies with install scripts, so npm 11 prints no install-scripts warning.
import { existsSync, readFileSync } from "node:fs";
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
    expect(setUp).toContain("approved in `package.json` (`allowScripts`)");
  });

  it("package.json's allowScripts approves, by name, exactly the dependencies package-lock.json marks hasInstallScript", () => {
    const withScripts = Object.entries(lock.packages)
      .filter(([key, p]) => key !== "" && p.hasInstallScript)
      .map(([key]) => nameOf(key));
    const { allowScripts } = JSON.parse(read("package.json")) as { allowScripts: Record<string, boolean> };
    expect(Object.keys(allowScripts).sort()).toEqual([...new Set(withScripts)].sort());
    expect(Object.values(allowScripts).every((v) => v === true)).toBe(true);
    // By name: the lockfile records no resolved URL, and npm matches a pinned entry only against one.
    expect(Object.keys(allowScripts).filter((name) => name.slice(1).includes("@"))).toEqual([]);
    expect(read("package-lock.json")).not.toContain('"resolved"');
    // Not in .npmrc, whose settings reach npm scripts' environment and break a nested npm ci (EALLOWSCRIPTS).
    expect(existsSync(path.join(ROOT, ".npmrc")) && /allow-scripts/.test(read(".npmrc"))).toBe(false);
    // CONTRIBUTING.md says what each one does.
    const table = /### Install scripts\n([\s\S]*?)\n### /.exec(read("CONTRIBUTING.md"))![1];
    for (const name of Object.keys(allowScripts)) {
      const explained = table.includes(`\`${name}\``) || table.includes(`\`${name.replace(/\/.*/, "/*")}\``);
      expect({ name, explained }).toEqual({ name, explained: true });
    }
  });
});
