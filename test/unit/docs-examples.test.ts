// Examples in docs/ that a test cannot run as written hold to the code that does run them:
// scaling.md's pgbouncer.ini lines are the settings the PgBouncer tests run with
// (test/helpers/pgbouncer.ts, `npm run test:pgbouncer`), and its SQL is what pgbouncer.test.ts sets.
import { readFileSync } from "node:fs";
import path from "node:path";

const ROOT = path.resolve(__dirname, "../..");
const read = (file: string) => readFileSync(path.join(ROOT, file), "utf8");

const block = (text: string, lang: string) => [...text.matchAll(new RegExp("```" + lang + "\\n([\\s\\S]*?)```", "g"))].map((m) => m[1]);

describe("docs/scaling.md's PgBouncer examples", () => {
  it("every pgbouncer.ini setting shown is one the tests' PgBouncer runs with", () => {
    const [ini] = block(read("docs/scaling.md"), "ini");
    const settings = ini.split("\n").filter((l) => l.includes("="));
    expect(settings.length).toBeGreaterThanOrEqual(2);
    const helper = read("test/helpers/pgbouncer.ts");
    for (const setting of settings) expect({ setting, inHelper: helper.includes(`"${setting.trim()}"`) }).toEqual({ setting, inHelper: true });
    expect(ini).toContain("[pgbouncer]");
  });

  it("the role settings shown are the ones pgbouncer.test.ts gives the database before it checks them", () => {
    const [sql] = block(read("docs/scaling.md"), "sql");
    const test = read("test/integration/pgbouncer.test.ts");
    for (const name of [...sql.matchAll(/SET (\w+) =/g)].map((m) => m[1])) expect({ name, set: new RegExp(`SET ${name}\\b`).test(test) }).toEqual({ name, set: true });
  });
});
