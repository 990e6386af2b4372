// The gcs command as an operator runs it: keys, fixtures, and a clear one-line failure.
import { execFile } from "node:child_process";
import { createCipheriv, createHash, randomBytes } from "node:crypto";
import { mkdtempSync, readFileSync } from "node:fs";
import os from "node:os";
import path from "node:path";
import { promisify } from "node:util";
import { flushDue } from "../../src/delivery/engine";
import { deliverySecretKey } from "../../src/delivery/run";
import { loadKeyring, open } from "../../src/delivery/secret-box";
import { startStandIn } from "../../src/delivery/standin";
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

describe("gcs secrets rotate", () => {
  const NEW_KEY = `base64:${Buffer.alloc(32, 0x5a).toString("base64")}`;
  const NEWER_KEY = "ab".repeat(32);

  /** gcs with these variables instead of the test run's NODE_ENV and delivery keys. */
  function gcsWith(env: Record<string, string>, args: string[]) {
    const base: NodeJS.ProcessEnv = { ...process.env, DATABASE_URL: t.databaseUrl, LOG_LEVEL: "silent" };
    delete base.GCS_DELIVERY_SECRET_KEY;
    delete base.GCS_DELIVERY_SECRET_KEY_PREVIOUS;
    return run(NODE, [path.join(ROOT, "bin/gcs.js"), ...args], { cwd: ROOT, env: { ...base, ...env }, timeout: 120_000 });
  }

  /** A v1 ciphertext as the old box made it: key SHA-256(passphrase), no associated data. */
  function sealV1(plaintext: string, passphrase: string): string {
    const iv = randomBytes(12);
    const cipher = createCipheriv("aes-256-gcm", createHash("sha256").update(passphrase).digest(), iv);
    const body = Buffer.concat([cipher.update(plaintext, "utf8"), cipher.final()]);
    return "v1:aes256gcm:" + Buffer.concat([iv, cipher.getAuthTag(), body]).toString("base64");
  }

  it("re-seals every secret under the current key, v1 included, prints counts and no secret; the engine then opens them", async () => {
    const db = t.db.primary;
    const generatedRing = await deliverySecretKey(t.services.config, db); // no key configured: the generated one
    const connections = await db.destinationConnection.findMany({ orderBy: { id: "asc" } });
    expect(connections.length).toBeGreaterThanOrEqual(4);
    // Group B's two no key opens: a placeholder, and a ciphertext copied from another connection's row.
    const [placeholder, moved] = connections.filter((c) => c.propertyGroupId === t.manifest.groups.B.id);
    const copied = connections.find((c) => c.propertyGroupId === t.manifest.groups.A.id)!;
    await db.destinationConnection.update({ where: { id: placeholder.id }, data: { secretCiphertext: "v1:fixture:cGxhY2Vob2xkZXI=" } });
    await db.destinationConnection.update({ where: { id: moved.id }, data: { secretCiphertext: copied.secretCiphertext } });
    const placeholders = [placeholder.id, moved.id].sort();
    const sealed = connections.filter((c) => !placeholders.includes(c.id));
    const plaintexts = new Map(sealed.map((c) => [c.id, open(c.secretCiphertext, c.id, generatedRing)]));
    // One secret still in the v1 format, under the generated key.
    const generated = (await db.serviceSecret.findUniqueOrThrow({ where: { name: "delivery_secret_box" } })).value;
    await db.destinationConnection.update({ where: { id: sealed[0].id }, data: { secretCiphertext: sealV1(plaintexts.get(sealed[0].id)!, generated) } });

    // In production, with the key configured: the generated key still opens (open-only) until rotated.
    const first = await gcsWith({ NODE_ENV: "production", GCS_DELIVERY_SECRET_KEY: NEW_KEY }, ["secrets", "rotate", "--json"]);
    const salt = (await db.serviceSecret.findUniqueOrThrow({ where: { name: "delivery_secret_box_salt" } })).value;
    const newRing = await loadKeyring({ current: NEW_KEY, salt });
    expect(JSON.parse(first.stdout)).toEqual({
      rotated: sealed.length, current: 0, failed: placeholders.length, failedConnectionIds: placeholders, kid: newRing.current.kid,
    });
    for (const text of [first.stdout, first.stderr]) for (const secret of [...plaintexts.values(), generated]) expect(text).not.toContain(secret);

    const after = await db.destinationConnection.findMany({ where: { id: { in: sealed.map((c) => c.id) } } });
    for (const c of after) {
      expect(c.secretCiphertext.startsWith(`v2:${newRing.current.kid}:`)).toBe(true);
      expect(open(c.secretCiphertext, c.id, newRing)).toBe(plaintexts.get(c.id)); // the new key alone opens it
    }

    const again = await gcsWith({ GCS_DELIVERY_SECRET_KEY: NEW_KEY }, ["secrets", "rotate"]);
    expect(again.stdout).toContain(`under key ${newRing.current.kid}: 0 rotated, ${sealed.length} already current, ${placeholders.length} failed to open`);

    // The next key, the previous one listed: rotated again.
    const next = await gcsWith({ GCS_DELIVERY_SECRET_KEY: NEWER_KEY, GCS_DELIVERY_SECRET_KEY_PREVIOUS: `some retired passphrase,${NEW_KEY}` }, ["secrets", "rotate", "--json"]);
    expect(JSON.parse(next.stdout)).toMatchObject({ rotated: sealed.length, current: 0, failed: placeholders.length });

    // The delivery engine, with only the newest key, opens group A's secrets and delivers.
    const standIn = await startStandIn();
    try {
      const newestRing = await loadKeyring({ current: NEWER_KEY, salt });
      const reports = await flushDue(db, { secretKey: newestRing, destinations: { mailchimp: { baseUrl: standIn.url }, klaviyo: { baseUrl: standIn.url } } });
      const groupA = reports.filter((r) => r.propertyGroupId === t.manifest.groups.A.id);
      expect(groupA.length).toBeGreaterThan(0);
      for (const r of groupA) expect(r.outcome).toBe("delivered");
    } finally {
      await standIn.close();
    }
  });

  it("refuses to serve, deliver or rotate in production without GCS_DELIVERY_SECRET_KEY: one line, exit code 1", async () => {
    for (const args of [["serve"], ["deliver"], ["deliver", "--once"], ["secrets", "rotate"]]) {
      const err = await gcsWith({ NODE_ENV: "production" }, args).catch((e) => e);
      expect(err.code).toBe(1);
      const lines = String(err.stderr).trim().split("\n");
      expect(lines).toEqual([expect.stringMatching(/^gcs: GCS_DELIVERY_SECRET_KEY must be set when NODE_ENV=production/)]);
    }
    const malformed = await gcsWith({ NODE_ENV: "production", GCS_DELIVERY_SECRET_KEY: "base64:dG9vIHNob3J0IGZvciBhIGtleQ==" }, ["deliver", "--once"]).catch((e) => e);
    expect(malformed.code).toBe(1);
    expect(String(malformed.stderr).trim()).toBe("gcs: invalid configuration: GCS_DELIVERY_SECRET_KEY: a base64: key must be exactly 32 bytes in standard base64");
  });
});
