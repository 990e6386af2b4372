// The gcs command as an operator runs it: keys, fixtures, and a clear one-line failure.
import { execFile } from "node:child_process";
import { mkdtempSync, readFileSync } from "node:fs";
import os from "node:os";
import path from "node:path";
import { promisify } from "node:util";
import { startTestApp, type TestApp } from "../helpers/app";

const run = promisify(execFile);
const ROOT = path.resolve(__dirname, "../..");
const NODE = path.join(ROOT, "node_modules/.bin/node");

let t: TestApp;
beforeAll(async () => {
  t = await startTestApp();
});
afterAll(() => t.close());

function gcs(args: string[], databaseUrl = t.databaseUrl) {
  return run(NODE, [path.join(ROOT, "bin/gcs.js"), ...args], {
    cwd: ROOT,
    env: { ...process.env, DATABASE_URL: databaseUrl, LOG_LEVEL: "silent" },
    timeout: 120_000,
  });
}

describe("gcs keys", () => {
  it("creates a key shown once, lists without secrets, revokes", async () => {
    const A = t.manifest.groups.A;
    const created = await gcs(["keys", "create", "--group", A.id, "--name", "ci key", "--scopes", "read:guests"]);
    const token = /key:\s+(gcs_\S+)/.exec(created.stdout)![1];
    const id = /id:\s+(\S+)/.exec(created.stdout)![1];
    expect((await t.api.get("/v1/guests?limit=1").set("Authorization", `Bearer ${token}`)).status).toBe(200);
    expect((await t.api.get("/v1/integrations").set("Authorization", `Bearer ${token}`)).body.scope).toBe("read:properties");

    const listed = await gcs(["keys", "list", "--group", A.id]);
    expect(listed.stdout).toContain(id);
    expect(listed.stdout).toContain(token.slice(0, 10));
    expect(listed.stdout).not.toContain(token);

    await gcs(["keys", "revoke", id]);
    expect((await t.api.get("/v1/guests").set("Authorization", `Bearer ${token}`)).status).toBe(401);
  });

  it("refuses a pinned property of another group and an unknown scope", async () => {
    const A = t.manifest.groups.A;
    await expect(gcs(["keys", "create", "--group", A.id, "--name", "x", "--scopes", "read:guests", "--property", t.manifest.groups.B.properties[0]])).rejects.toMatchObject({ code: 1 });
    await expect(gcs(["keys", "create", "--group", A.id, "--name", "x", "--scopes", "read:everything"])).rejects.toMatchObject({ code: 1 });
  });
});

describe("gcs fixtures", () => {
  it("is deterministic by seed, replaces its own tenants and leaves others alone", async () => {
    const dir = mkdtempSync(path.join(os.tmpdir(), "gcs-fixtures-"));
    const seed7Guests = await t.db.primary.guestProfile.count({ where: { propertyGroupId: t.manifest.groups.A.id } });
    await gcs(["fixtures", "--out", path.join(dir, "one.json"), "--seed", "99", "--guests", "12"]);
    const countAfterFirst = await t.db.primary.guestProfile.count();
    await gcs(["fixtures", "--out", path.join(dir, "two.json"), "--seed", "99", "--guests", "12"]);
    expect(await t.db.primary.guestProfile.count()).toBe(countAfterFirst);

    const one = JSON.parse(readFileSync(path.join(dir, "one.json"), "utf8"));
    const two = JSON.parse(readFileSync(path.join(dir, "two.json"), "utf8"));
    const withoutSecrets = (m: typeof one) => JSON.stringify(m, (k, v) => (k === "credentials" || /token|key/.test(k) ? undefined : v));
    expect(withoutSecrets(one)).toBe(withoutSecrets(two));
    expect(one.groups.A.id).not.toBe(t.manifest.groups.A.id);
    // The seed-7 tenants of the template are untouched.
    expect(await t.db.primary.guestProfile.count({ where: { propertyGroupId: t.manifest.groups.A.id } })).toBe(seed7Guests);
    // The new manifest's credentials are real.
    const res = await t.api.get("/v1/guests?limit=1").set("Authorization", `Bearer ${two.groups.A.credentials.api_key}`);
    expect(res.status).toBe(200);
    expect(res.body.data[0].id).toBeDefined();
  });

  it("exits non-zero with a one-line reason when the database cannot be reached", async () => {
    const err = await gcs(["fixtures", "--out", "/tmp/never.json"], "postgresql://postgres@127.0.0.1:1/nothing").catch((e) => e);
    expect(err.code).not.toBe(0);
    const lines = String(err.stderr).trim().split("\n");
    expect(lines).toHaveLength(1);
    expect(lines[0]).toMatch(/^gcs: .*database/);
  });
});
