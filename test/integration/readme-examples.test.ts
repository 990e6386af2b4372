// The README's examples, run as a reader would run them against the test data (the demo's world:
// the same names and addresses). What runs here: the typed client example verbatim (its own process,
// through tsx, with `localhost:3000` pointed at a listening test server), and the two statements
// about GET /graphql (Apollo's CSRF refusal without a preflight header; the header that lifts it).
import { execFile } from "node:child_process";
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import path from "node:path";
import { promisify } from "node:util";
import { listenTestApp, startTestApp, type TestApp } from "../helpers/app";

const ROOT = path.resolve(__dirname, "../..");
const README = readFileSync(path.join(ROOT, "README.md"), "utf8");

/** The first fenced block of `lang` after the heading `heading`. */
function codeBlock(heading: string, lang: string): string {
  const at = README.indexOf(`\n${heading}\n`);
  if (at < 0) throw new Error(`README has no heading ${heading}`);
  const m = new RegExp("```" + lang + "\\n([\\s\\S]*?)```").exec(README.slice(at));
  if (!m) throw new Error(`no ${lang} block under ${heading}`);
  return m[1];
}

let t: TestApp;
let server: Awaited<ReturnType<typeof listenTestApp>>;
beforeAll(async () => {
  t = await startTestApp();
  server = await listenTestApp(t);
});
afterAll(async () => {
  await server.close();
  await t.close();
});

describe("README examples", () => {
  it("the typed client example runs as written and finds the demo guest it names, with her stays", async () => {
    const example = codeBlock("### A typed TypeScript client", "ts");
    const email = /email: "([^"]+)"/.exec(example)?.[1];
    expect(email).toBe("olivia.smith.0@example.com");
    // Run from a scratch directory inside the checkout, so `./client` and its dependencies resolve.
    const dir = mkdtempSync(path.join(ROOT, "test", ".readme-"));
    try {
      const file = path.join(dir, "example.ts");
      const source = example.replace('from "./client"', `from ${JSON.stringify(path.join(ROOT, "client"))}`).replace("http://localhost:3000", server.base);
      // The snippet is a module body with top-level await; tsx runs .ts as CommonJS here, so wrap it.
      const [imports, ...body] = source.split("\n\n");
      writeFileSync(file, `${imports}\n\n(async () => {\n${body.join("\n\n")}\n})().catch((e) => { console.error(e); process.exit(1); });\n`);
      const { stdout } = await promisify(execFile)(path.join(ROOT, "node_modules/.bin/tsx"), [file], {
        cwd: ROOT,
        env: { ...process.env, GCS_API_KEY: t.manifest.groups.A.credentials.api_key },
        timeout: 60_000,
      });
      const lines = stdout.trim().split("\n");
      expect(lines.length).toBeGreaterThan(0);
      expect(lines[0]).toMatch(/^Olivia \[/); // given_name, then her reservations' statuses
      expect(stdout).toMatch(/'(checked_out|confirmed|cancelled|checked_in|no_show|tentative)'/);
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  });

  it("a plain GET /graphql is refused by Apollo's CSRF prevention, as the README says; apollo-require-preflight lifts it", async () => {
    expect(README).toContain("apollo-require-preflight: 1");
    const key = t.manifest.groups.A.credentials.api_key;
    const url = `${server.base}/graphql?query=${encodeURIComponent("{ __typename }")}`;
    const plain = await fetch(url, { headers: { Authorization: `Bearer ${key}`, Accept: "application/json" } });
    expect(plain.status).toBe(400);
    expect(await plain.text()).toContain("This operation has been blocked as a potential Cross-Site Request Forgery");
    const preflight = await fetch(url, { headers: { Authorization: `Bearer ${key}`, Accept: "application/json", "apollo-require-preflight": "1" } });
    expect(preflight.status).toBe(200);
    expect(await preflight.json()).toEqual({ data: { __typename: "Query" } });
    const json = await fetch(url, { headers: { Authorization: `Bearer ${key}`, Accept: "application/json", "Content-Type": "application/json" } });
    expect(json.status).toBe(200);
  });
});
