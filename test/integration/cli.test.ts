// The gcs command as an operator runs it: help, argument errors and exit codes, --json output, keys,
// fixtures, a clear one-line failure, and the embedded database shared with a running `gcs serve`.
import { execFile, spawn, type ChildProcess } from "node:child_process";
import { createCipheriv, createHash, randomBytes, randomUUID } from "node:crypto";
import { existsSync, mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import os from "node:os";
import path from "node:path";
import { promisify } from "node:util";
import { createServer, type IncomingHttpHeaders } from "node:http";
import { Webhook } from "standardwebhooks";
import type { AddressInfo } from "node:net";
import { flushDue } from "../../src/delivery/engine";
import { deliverySecretKey, messageIdKey } from "../../src/delivery/run";
import { messageIdOf } from "../../src/webhooks/sign";
import { loadKeyring, open, seal } from "../../src/delivery/secret-box";
import { startStandIn } from "../../src/delivery/standin";
import { cloneTemplateDatabase, startTestApp, type TestApp } from "../helpers/app";

const run = promisify(execFile);
const ROOT = path.resolve(__dirname, "../..");
const NODE = path.join(ROOT, "node_modules/.bin/node");
const GCS = path.join(ROOT, "bin/gcs.js");
const VERSION = JSON.parse(readFileSync(path.join(ROOT, "package.json"), "utf8")).version;

let t: TestApp;
beforeAll(async () => {
  t = await startTestApp();
});
afterAll(() => t.close());

function gcs(args: string[], databaseUrl = t.databaseUrl) {
  return run(NODE, [GCS, ...args], {
    cwd: ROOT,
    env: { ...process.env, DATABASE_URL: databaseUrl, LOG_LEVEL: "silent" },
    timeout: 120_000,
  });
}

interface Outcome {
  code: number;
  stdout: string;
  stderr: string;
}

/** gcs as a script runs it: the exit code and both outputs, whatever the code. */
function gcsOutcome(args: string[], env: NodeJS.ProcessEnv = { ...process.env, DATABASE_URL: t.databaseUrl, LOG_LEVEL: "silent" }, timeout = 120_000): Promise<Outcome> {
  return run(NODE, [GCS, ...args], { cwd: ROOT, env, timeout }).then(
    ({ stdout, stderr }) => ({ code: 0, stdout, stderr }),
    (e: { code: number; stdout: string; stderr: string }) => ({ code: e.code, stdout: e.stdout, stderr: e.stderr }),
  );
}

/** With a database nobody listens on: a command that reached for it would fail with exit code 1. */
const NO_DATABASE = { ...process.env, DATABASE_URL: "postgresql://postgres@127.0.0.1:1/nothing", LOG_LEVEL: "silent" };

const COMMANDS = ["serve", "deliver", "migrate", "fixtures", "keys", "partners", "secrets"];
const LEAVES = [["serve"], ["deliver"], ["migrate"], ["fixtures"], ["keys", "create"], ["keys", "list"], ["keys", "revoke"], ["partners", "create"], ["partners", "token"], ["secrets", "rotate"]];

describe("gcs help, version and usage errors", () => {
  it("--help, -h and help print every command and the exit codes on stdout, exit code 0", async () => {
    const outcomes = await Promise.all([["--help"], ["-h"], ["help"]].map((args) => gcsOutcome(args, NO_DATABASE)));
    for (const r of outcomes) {
      expect(r).toMatchObject({ code: 0, stderr: "" });
      expect(r.stdout).toMatch(/^Usage: gcs /);
      for (const c of COMMANDS) expect(r.stdout).toMatch(new RegExp(`^  ${c}\\b`, "m"));
      expect(r.stdout).toContain("Exit codes: 0 done, 1 the command failed");
    }
    expect(outcomes[1].stdout).toBe(outcomes[0].stdout);
  });

  it("--version and -V print the package version", async () => {
    for (const flag of ["--version", "-V"]) expect(await gcsOutcome([flag], NO_DATABASE)).toEqual({ code: 0, stdout: `${VERSION}\n`, stderr: "" });
  });

  it("every command has --help with an example; help <command> shows the same", async () => {
    const outcomes = await Promise.all(LEAVES.map((p) => gcsOutcome([...p, "--help"], NO_DATABASE)));
    LEAVES.forEach((p, i) => {
      expect(outcomes[i]).toMatchObject({ code: 0, stderr: "" });
      expect(outcomes[i].stdout).toMatch(new RegExp(`^Usage: gcs ${p.join(" ")}`));
      expect(outcomes[i].stdout).toMatch(new RegExp(`Examples?:\\n  \\$ .*gcs ${p.join(" ")}`));
    });
    const keys = await gcsOutcome(["help", "keys"], NO_DATABASE);
    for (const sub of ["create", "list", "revoke"]) expect(keys.stdout).toMatch(new RegExp(`^  ${sub}\\b`, "m"));
    expect((await gcsOutcome(["help", "serve"], NO_DATABASE)).stdout).toBe(outcomes[0].stdout);
  });

  it("serve --help prints help and does not serve, even with a bad PORT; serve itself names the bad PORT", async () => {
    const env = { ...NO_DATABASE, PORT: "not-a-port" };
    const help = await gcsOutcome(["serve", "--help"], env, 30_000);
    expect(help.code).toBe(0);
    expect(help.stdout).toMatch(/^Usage: gcs serve/);
    const served = await gcsOutcome(["serve"], env, 30_000);
    expect(served.code).toBe(1);
    expect(served.stderr.trim().split("\n")).toEqual([expect.stringMatching(/^gcs: invalid configuration: PORT: /)]);
  });

  it("gcs --help loads no database, server or GraphQL module", async () => {
    const dir = mkdtempSync(path.join(os.tmpdir(), "gcs-help-"));
    const preload = path.join(dir, "loaded.js");
    writeFileSync(preload, `process.on("exit", () => require("fs").writeSync(2, "LOADED " + JSON.stringify(Object.keys(require.cache)) + "\\n"));\n`);
    const { stderr } = await run(NODE, ["--require", preload, GCS, "--help"], { cwd: ROOT, env: NO_DATABASE });
    const loaded: string[] = JSON.parse(/^LOADED (.*)$/m.exec(stderr)![1]);
    expect(loaded).toContainEqual(expect.stringMatching(/(src|dist)\/cli\/program\.[jt]s$/));
    const heavy = loaded.filter((m) => /node_modules\/(@prisma|@apollo|@electric-sql|express|graphql|pg|pino|zod)\//.test(m) || /(src|dist)\/(db|server|config|fixtures|delivery)\b/.test(m));
    expect(heavy).toEqual([]);
    rmSync(dir, { recursive: true, force: true });
  });

  it("argument errors name the argument and the problem, exit code 2, before any database is opened", async () => {
    const cases: [string[], RegExp][] = [
      [["keys", "create", "--group", "not-a-uuid", "--name", "x", "--scopes", "read:guests"], /^gcs: --group must be a uuid$/],
      [["keys", "create", "--group", randomUUID(), "--property", "p1", "--name", "x", "--scopes", "read:guests"], /^gcs: --property must be a uuid$/],
      [["keys", "create", "--name", "x", "--scopes", "read:guests"], /^gcs: required option '--group <uuid>' not specified$/],
      [["keys", "create", "--group", randomUUID(), "--name", "x", "--scopes", " , "], /^gcs: --scopes needs at least one scope/],
      [["keys", "revoke", "nope"], /^gcs: <key-id> must be a uuid$/],
      [["keys", "revoke"], /^gcs: missing required argument 'key-id'$/],
      [["keys", "list", "--colour", "red"], /^gcs: unknown option '--colour'$/],
      // A typo of a required option is the unknown option it is (with a suggestion), not a missing --scopes.
      [["keys", "create", "--group", randomUUID(), "--name", "x", "--scope", "read:guests"], /^gcs: unknown option '--scope'$/],
      [["keys", "create", "--group", randomUUID(), "--name", "x", "--scopes", "read:guests,read:everything"], /^gcs: --scopes: unknown scope\(s\): read:everything; known: read:properties /],
      [["partners", "create", "--group", randomUUID(), "--name", "x", "--scopes", "read:gusts"], /^gcs: --scopes: unknown scope\(s\): read:gusts;/],
      [["fixtures", "--out", "/tmp/never.json", "--guests", "1"], /^gcs: --guests must be an integer ≥ 3$/],
      [["fixtures", "--out", "/tmp/never.json", "--seed", "x"], /^gcs: --seed must be an integer ≥ 0$/],
      [["fixtures"], /^gcs: required option '--out <file>' not specified$/],
      [["partners", "token", "--client-id", "a", "--client-secret", "b", "--ttl", "5"], /^gcs: --ttl must be an integer ≥ 60$/],
      [["nope"], /^gcs: unknown command 'nope'$/],
      [["keys"], /^Usage: gcs keys /],
      [[], /^Usage: gcs /],
    ];
    const outcomes = await Promise.all(cases.map(([args]) => gcsOutcome(args, NO_DATABASE)));
    expect(outcomes[cases.findIndex(([args]) => args.includes("--scope"))].stderr).toContain("(Did you mean --scopes?)");
    cases.forEach(([args, message], i) => {
      const r = outcomes[i];
      expect({ args, code: r.code, stdout: r.stdout, first: r.stderr.split("\n")[0] }).toEqual({ args, code: 2, stdout: "", first: expect.stringMatching(message) });
      expect(r.stderr).not.toContain("[object Object]");
    });
  });

  it("failures of a command are one line with exit code 1: an unknown key id, an unknown group", async () => {
    const id = randomUUID();
    expect(await gcsOutcome(["keys", "revoke", id])).toEqual({
      code: 1,
      stdout: "",
      stderr: `gcs: no active key ${id} (never created, or already revoked: see gcs keys list)\n`,
    });
    const group = randomUUID();
    expect(await gcsOutcome(["keys", "create", "--group", group, "--name", "x", "--scopes", "read:guests"])).toEqual({
      code: 1,
      stdout: "",
      stderr: `gcs: property group ${group} does not exist\n`,
    });
  });
});

describe("gcs --json", () => {
  const oneJsonLine = (r: Outcome) => {
    expect(r).toMatchObject({ code: 0 });
    expect(r.stdout.trimEnd().split("\n")).toHaveLength(1);
    return JSON.parse(r.stdout);
  };

  it("keys create, list and revoke print JSON a script can use, never the secret in a listing", async () => {
    const A = t.manifest.groups.A;
    const created = oneJsonLine(await gcsOutcome(["keys", "create", "--group", A.id, "--name", "json key", "--scopes", "read:guests, read:reservations", "--json"]));
    expect(created).toEqual({ id: expect.any(String), key: expect.stringMatching(/^gcs_/), property_group_id: A.id, property_id: null, scopes: ["read:guests", "read:reservations"] });
    expect((await t.api.get("/v1/guests?limit=1").set("Authorization", `Bearer ${created.key}`)).status).toBe(200);

    const listed = oneJsonLine(await gcsOutcome(["keys", "list", "--group", A.id, "--json"]));
    const mine = listed.find((k: { id: string }) => k.id === created.id);
    expect(mine).toEqual({
      id: created.id, prefix: expect.any(String), name: "json key", property_group_id: A.id, property_id: null,
      scopes: ["read:guests", "read:reservations"], created_at: expect.any(String), revoked_at: null,
    });
    expect(created.key.startsWith(mine.prefix)).toBe(true);
    expect(JSON.stringify(listed)).not.toContain(created.key);

    expect(oneJsonLine(await gcsOutcome(["keys", "revoke", created.id, "--json"]))).toEqual({ id: created.id, revoked: true });
    expect((await t.api.get("/v1/guests?limit=1").set("Authorization", `Bearer ${created.key}`)).status).toBe(401);
    const after = oneJsonLine(await gcsOutcome(["keys", "list", "--json"]));
    expect(after.find((k: { id: string }) => k.id === created.id).revoked_at).toEqual(expect.any(String));
  });

  it("partners create and token, and migrate, print JSON; the token works", async () => {
    const A = t.manifest.groups.A;
    const partner = oneJsonLine(await gcsOutcome(["partners", "create", "--group", A.id, "--name", "json partner", "--scopes", "read:guests", "--json"]));
    expect(partner).toEqual({ id: expect.any(String), client_id: expect.stringMatching(/^partner_/), client_secret: expect.stringMatching(/^gcsps_/) });
    const before = Date.now();
    const token = oneJsonLine(await gcsOutcome(["partners", "token", "--client-id", partner.client_id, "--client-secret", partner.client_secret, "--ttl", "600", "--json"]));
    expect(token).toEqual({ access_token: expect.stringMatching(/^gcsp_/), token_type: "Bearer", expires_at: expect.any(String) });
    expect(Date.parse(token.expires_at) - before).toBeGreaterThan(590_000);
    expect(Date.parse(token.expires_at) - before).toBeLessThan(700_000);
    expect((await t.api.get("/v1/guests?limit=1").set("Authorization", `Bearer ${token.access_token}`)).status).toBe(200);

    const wrong = await gcsOutcome(["partners", "token", "--client-id", partner.client_id, "--client-secret", "gcsps_wrong", "--json"]);
    expect(wrong).toEqual({ code: 1, stdout: "", stderr: "gcs: unknown partner client or wrong secret\n" });

    const migrated = oneJsonLine(await gcsOutcome(["migrate", "--json"]));
    expect(migrated).toEqual({ applied: [], already_applied: expect.any(Number) });
    expect(migrated.already_applied).toBeGreaterThan(0);
  });
});

describe("gcs keys", () => {
  it("creates a key shown once, lists without secrets, revokes", async () => {
    const A = t.manifest.groups.A;
    const created = await gcs(["keys", "create", "--group", A.id, "--name", "ci key", "--scopes", "read:guests"]);
    const token = /key:\s+(gcs_\S+)/.exec(created.stdout)![1];
    const id = /id:\s+(\S+)/.exec(created.stdout)![1];
    expect((await t.api.get("/v1/guests?limit=1").set("Authorization", `Bearer ${token}`)).status).toBe(200);
    expect((await t.api.get("/v1/integrations").set("Authorization", `Bearer ${token}`)).body.scope).toBe("read:properties");

    const listed = await gcs(["keys", "list", "--group", A.id]);
    const [header, ...rows] = listed.stdout.trimEnd().split("\n");
    expect(header.split("\t")).toEqual(["id", "prefix", "name", "group", "property", "scopes", "state"]);
    expect(rows.find((r) => r.startsWith(id))!.split("\t")).toEqual([id, expect.stringMatching(/…$/), "ci key", A.id, "-", "read:guests", "active"]);
    expect(listed.stdout).toContain(id);
    expect(listed.stdout).toContain(token.slice(0, 10));
    expect(listed.stdout).not.toContain(token);

    await gcs(["keys", "revoke", id]);
    expect((await t.api.get("/v1/guests").set("Authorization", `Bearer ${token}`)).status).toBe(401);
  });

  it("refuses a pinned property of another group (exit 1) and an unknown scope (a usage error, exit 2)", async () => {
    const A = t.manifest.groups.A;
    await expect(gcs(["keys", "create", "--group", A.id, "--name", "x", "--scopes", "read:guests", "--property", t.manifest.groups.B.properties[0]])).rejects.toMatchObject({ code: 1 });
    await expect(gcs(["keys", "create", "--group", A.id, "--name", "x", "--scopes", "read:everything"])).rejects.toMatchObject({ code: 2 });
  });
});

describe("gcs deliver --once", () => {
  it("also runs one webhook sending pass: a due endpoint receives the new event, signed, and the pass is reported", async () => {
    const received: { headers: IncomingHttpHeaders; body: string }[] = [];
    const receiver = createServer((req, res) => {
      let body = "";
      req.on("data", (c: Buffer) => (body += c));
      req.on("end", () => {
        received.push({ headers: req.headers, body });
        res.writeHead(204).end();
      });
    });
    await new Promise<void>((r) => receiver.listen(0, "127.0.0.1", r));
    const group = t.manifest.groups.A.id;
    const id = randomUUID();
    try {
      // An endpoint at the log's end, on loopback, its secret sealed as the service seals it.
      const secret = `whsec_${randomBytes(24).toString("base64")}`;
      const sealed = seal(secret, id, await deliverySecretKey(t.services.config, t.db.primary));
      await t.admin.$executeRawUnsafe(
        `INSERT INTO webhook_endpoints (id, property_group_id, url, topics, property_ids, secret_ciphertext, cursor_txid, cursor_seq)
         SELECT $1::uuid, $2::uuid, $3, '{*}', '{}', $4, COALESCE(max(txid), 0), COALESCE(max(seq), 0) FROM events WHERE property_group_id = $2::uuid`,
        id, group, `http://127.0.0.1:${(receiver.address() as AddressInfo).port}/hooks`, sealed,
      );
      const [{ seq }] = await t.admin.$queryRawUnsafe<{ seq: string }[]>(
        `INSERT INTO events (property_group_id, entity_type, entity_id, operation, delta, occurred_at)
         VALUES ($1::uuid, 'reservation', $2::uuid, 'update', '{"status":"checked_in"}', now()) RETURNING seq::text AS seq`,
        group, randomUUID(),
      );
      const { stdout, stderr } = await run(NODE, [GCS, "deliver", "--once"], {
        cwd: ROOT,
        env: { ...process.env, DATABASE_URL: t.databaseUrl, LOG_LEVEL: "silent", GCS_WEBHOOKS_ALLOW_PRIVATE: "true" },
        timeout: 120_000,
      });
      const reports = stdout.trim().split("\n").map((l) => JSON.parse(l) as Record<string, unknown>);
      expect(reports.filter((r) => r.webhook)).toEqual([{ webhook: true, endpointId: id, outcome: "delivered", sent: 1 }]);
      // The fixture bindings went to the local stand-in the command started (stand-in keys), never
      // to Mailchimp or Klaviyo.
      const tables = reports.filter((r) => !r.webhook && r.propertyGroupId === group);
      expect(tables.length).toBeGreaterThan(0);
      expect(tables.map((r) => r.outcome)).toEqual(tables.map(() => "delivered"));
      // What the pass did, for people, on stderr (stdout stays JSON).
      const flushed = reports.filter((r) => !r.webhook);
      const bindings = `${flushed.length} destination binding${flushed.length === 1 ? "" : "s"}`;
      expect(stderr).toBe(`one pass: ${bindings} (${flushed.filter((r) => r.outcome === "delivered").length} delivered), 1 webhook endpoint (1 event sent)\n`);
      expect(received.map((r) => r.headers["webhook-id"])).toEqual([messageIdOf(seq, await messageIdKey(t.db.primary))]);
      // Verified as a receiver would, with the Standard Webhooks library.
      const payload = new Webhook(secret).verify(received[0].body, received[0].headers as Record<string, string>);
      // data is the /v1/events row without seq (it counts every group's events); the webhook-id names it.
      expect(payload).toMatchObject({ type: "reservation.updated", data: { operation: "update" } });
      expect((payload as { data: object }).data).not.toHaveProperty("seq");
    } finally {
      await t.admin.$executeRawUnsafe(`DELETE FROM webhook_endpoints WHERE id = $1::uuid`, id);
      await new Promise((r) => receiver.close(r));
    }
  });
});

describe("gcs fixtures", () => {
  it("is deterministic by seed, replaces its own tenants and leaves others alone", async () => {
    const dir = mkdtempSync(path.join(os.tmpdir(), "gcs-fixtures-"));
    const seed7Guests = await t.admin.guestProfile.count({ where: { propertyGroupId: t.manifest.groups.A.id } });
    await gcs(["fixtures", "--out", path.join(dir, "one.json"), "--seed", "99", "--guests", "12"]);
    const countAfterFirst = await t.admin.guestProfile.count();
    await gcs(["fixtures", "--out", path.join(dir, "two.json"), "--seed", "99", "--guests", "12"]);
    expect(await t.admin.guestProfile.count()).toBe(countAfterFirst);

    const one = JSON.parse(readFileSync(path.join(dir, "one.json"), "utf8"));
    const two = JSON.parse(readFileSync(path.join(dir, "two.json"), "utf8"));
    const withoutSecrets = (m: typeof one) => JSON.stringify(m, (k, v) => (k === "credentials" || /token|key/.test(k) ? undefined : v));
    expect(withoutSecrets(one)).toBe(withoutSecrets(two));
    expect(one.groups.A.id).not.toBe(t.manifest.groups.A.id);
    // The seed-7 tenants of the template are untouched.
    expect(await t.admin.guestProfile.count({ where: { propertyGroupId: t.manifest.groups.A.id } })).toBe(seed7Guests);
    // The new manifest's credentials are real.
    const res = await t.api.get("/v1/guests?limit=1").set("Authorization", `Bearer ${two.groups.A.credentials.api_key}`);
    expect(res.status).toBe(200);
    expect(res.body.data[0].id).toBeDefined();
  });

  it("keeps the API keys and webhook endpoints made outside the fixtures, and says what it could not keep", async () => {
    const dir = mkdtempSync(path.join(os.tmpdir(), "gcs-fixtures-keep-"));
    const out = path.join(dir, "manifest.json");
    await gcs(["fixtures", "--out", out, "--seed", "41", "--guests", "12"]);
    const group = JSON.parse(readFileSync(out, "utf8")).groups.A.id as string;
    const mine = JSON.parse((await gcs(["keys", "create", "--group", group, "--name", "my key", "--scopes", "read:guests,read:webhooks,write:webhooks", "--json"])).stdout);
    const auth = `Bearer ${mine.key}`;
    // An endpoint as POST /v1/webhook-endpoints makes it (inserted here: this app refuses loopback URLs).
    const endpointId = randomUUID();
    await t.admin.$executeRawUnsafe(
      `INSERT INTO webhook_endpoints (id, property_group_id, url, topics, property_ids, secret_ciphertext, cursor_txid, cursor_seq)
       SELECT $1::uuid, $2::uuid, 'http://127.0.0.1:9/hooks', '{*}', '{}', $3, COALESCE(max(txid), 0), COALESCE(max(seq), 0) FROM events WHERE property_group_id = $2::uuid`,
      endpointId, group, seal(`whsec_${randomBytes(24).toString("base64")}`, endpointId, await deliverySecretKey(t.services.config, t.db.primary)),
    );
    // A key pinned to a property made outside the fixtures: the property goes with the group, and the key with it.
    const propertyId = randomUUID();
    await t.admin.$executeRawUnsafe(
      `INSERT INTO properties (id, property_group_id, name, code, kind, timezone, country_code, city, currency)
       VALUES ($1::uuid, $2::uuid, 'My annex', 'MY-ANNEX', 'hotel', 'Europe/London', 'GB', 'London', 'GBP')`,
      propertyId, group,
    );
    await gcs(["keys", "create", "--group", group, "--property", propertyId, "--name", "annex key", "--scopes", "read:guests"]);
    try {
      await gcs(["partners", "create", "--group", group, "--name", "my partner", "--scopes", "read:guests"]);

      const again = await gcsOutcome(["fixtures", "--out", out, "--seed", "41", "--guests", "12"]);
      expect(again.code).toBe(0);
      expect(again.stderr).toContain(
        "kept 1 API key and 1 webhook endpoint made outside the fixtures (they work as before); removed with the replaced groups: 1 API key, 0 webhook endpoints, 1 partner client and 0 MCP connectors (create them again)\n",
      );
      expect((await t.api.get("/v1/guests?limit=1").set("Authorization", auth)).status).toBe(200);
      const endpoint = await t.api.get(`/v1/webhook-endpoints/${endpointId}`).set("Authorization", auth);
      expect(endpoint.status).toBe(200);
      // At the end of the reloaded log: the fixtures' events are not sent to it.
      const [{ behind }] = await t.admin.$queryRawUnsafe<{ behind: number }[]>(
        `SELECT count(*)::int AS behind FROM events e JOIN webhook_endpoints w ON w.id = $1::uuid
         WHERE e.property_group_id = w.property_group_id AND (e.txid, e.seq) > (w.cursor_txid, w.cursor_seq)`,
        endpointId,
      );
      expect(behind).toBe(0);
      // The new manifest's keys are the fixtures' own, new ones.
      const fixtureKey = JSON.parse(readFileSync(out, "utf8")).groups.A.credentials.api_key;
      expect((await t.api.get("/v1/guests?limit=1").set("Authorization", `Bearer ${fixtureKey}`)).status).toBe(200);
    } finally {
      // The secrets rotate test below counts every webhook secret of the database.
      await t.admin.$executeRawUnsafe("DELETE FROM webhook_endpoints WHERE id = $1::uuid", endpointId);
      rmSync(dir, { recursive: true, force: true });
    }
  });

  it("writes its manifest where git ignores it (the README's manifest.json)", async () => {
    const { stdout } = await run("git", ["check-ignore", "-v", "manifest.json"], { cwd: ROOT });
    expect(stdout).toMatch(/^\.gitignore:\d+:\/manifest\.json\tmanifest\.json$/m);
  });

  it("exits non-zero with a one-line reason when the database cannot be reached", async () => {
    const err = await gcs(["fixtures", "--out", "/tmp/never.json"], "postgresql://postgres@127.0.0.1:1/nothing").catch((e) => e);
    expect(err.code).not.toBe(0);
    const lines = String(err.stderr).trim().split("\n");
    expect(lines).toHaveLength(1);
    expect(lines[0]).toMatch(/^gcs: .*database/);
  });
});

describe("gcs says what happened when there was nothing to do", () => {
  it("deliver --once with nothing due, and connectors list with none, each print one line saying so", async () => {
    const clone = await cloneTemplateDatabase();
    try {
      const env = { ...process.env, DATABASE_URL: clone.url, LOG_LEVEL: "silent" };
      const admin = await import("pg").then(({ Client }) => new Client({ connectionString: clone.url }));
      await admin.connect();
      await admin.query("TRUNCATE destination_bindings, webhook_endpoints, oauth_grants CASCADE");
      await admin.end();
      expect(await gcsOutcome(["deliver", "--once"], env)).toEqual({
        code: 0,
        stdout: "",
        stderr: "one pass: nothing was due (no destination binding or webhook endpoint had anything to send)\n",
      });
      const group = t.manifest.groups.A.id;
      const none = "one appears here when someone approves an AI client on the consent page (docs/mcp.md)";
      expect(await gcsOutcome(["connectors", "list"], env)).toEqual({ code: 0, stdout: `no MCP connectors: ${none}\n`, stderr: "" });
      expect(await gcsOutcome(["connectors", "list", "--group", group], env)).toEqual({ code: 0, stdout: `no MCP connectors in group ${group}: ${none}\n`, stderr: "" });
      expect(await gcsOutcome(["connectors", "list", "--json"], env)).toEqual({ code: 0, stdout: "[]\n", stderr: "" });
    } finally {
      await clone.drop();
    }
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
    const db = t.admin;
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
      webhookSecrets: { rotated: 0, current: 0, failed: 0, failedEndpointIds: [] },
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

    // The delivery engine, with only the newest key, opens group A's secrets and delivers. Due now
    // and behind the log again, whatever an earlier test left (gcs deliver --once above delivered).
    await db.$executeRawUnsafe(
      "UPDATE destination_bindings SET next_attempt_at = NULL, confirmed_seq = 0, sent_ahead = NULL, state = 'active', failure_count = 0 WHERE property_group_id = $1::uuid",
      t.manifest.groups.A.id,
    );
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

describe("the embedded database shared with a running gcs serve", () => {
  let dir: string;
  let dataDir: string;
  let server: ChildProcess;
  let serverExit: Promise<number | null>;
  let banner = "";
  let base = "";
  let bannerGroup = "";

  const embeddedEnv = (): NodeJS.ProcessEnv => {
    const env: NodeJS.ProcessEnv = { ...process.env, GCS_DATA_DIR: dataDir, LOG_LEVEL: "warn", PORT: "0", HOST: "127.0.0.1" };
    delete env.DATABASE_URL;
    return env;
  };
  const gcsEmbedded = (args: string[]) => gcsOutcome(args, embeddedEnv(), 180_000);
  const lockFile = () => path.join(dataDir, "gcs.lock");
  const serverFile = () => path.join(dataDir, "gcs-server.json");

  beforeAll(async () => {
    dir = mkdtempSync(path.join(os.tmpdir(), "gcs-shared-"));
    dataDir = path.join(dir, "pglite");
    // No server yet: the command opens the directory itself, and leaves no lock behind.
    const loaded = await gcsEmbedded(["fixtures", "--out", path.join(dir, "m.json"), "--seed", "3", "--guests", "12"]);
    if (loaded.code !== 0) throw new Error(`gcs fixtures failed: ${loaded.stderr}`);
    if (existsSync(lockFile())) throw new Error("gcs fixtures left its lock file behind");

    server = spawn(NODE, [GCS, "serve"], { cwd: ROOT, env: embeddedEnv(), stdio: ["ignore", "pipe", "pipe"] });
    serverExit = new Promise((resolve) => server.once("exit", resolve));
    await new Promise<void>((resolve, reject) => {
      const timer = setTimeout(() => reject(new Error(`serve did not print its banner: ${banner}`)), 120_000);
      server.stdout!.on("data", (chunk) => {
        banner += chunk;
        const curl = /curl -s -H "Authorization: Bearer gcs_\S+" "(http:\/\/localhost:\d+)/.exec(banner);
        const keys = /npx gcs keys create --group ([0-9a-f-]{36}) /.exec(banner);
        if (curl && keys) {
          [base, bannerGroup] = [curl[1], keys[1]];
          clearTimeout(timer);
          resolve();
        }
      });
      void serverExit.then((code) => reject(new Error(`serve exited with ${code}: ${banner}`)));
    });
  }, 400_000);

  afterAll(async () => {
    if (server && server.exitCode === null && server.signalCode === null) {
      server.kill("SIGTERM");
      await serverExit;
    }
    rmSync(dir, { recursive: true, force: true });
  });

  it("the banner shows the group's id beside its name, and a gcs keys create line for it", () => {
    const manifest = JSON.parse(readFileSync(path.join(dir, "m.json"), "utf8"));
    expect([manifest.groups.A.id, manifest.groups.B.id]).toContain(bannerGroup);
    expect(banner).toMatch(new RegExp(`group ".+" \\(id ${bannerGroup}\\)`));
  });

  it("a key made by gcs keys create works against the running server at once; revoked, it stops at once", async () => {
    expect(JSON.parse(readFileSync(lockFile(), "utf8"))).toEqual({ pid: server.pid, role: "server", command: "gcs serve" });
    expect(JSON.parse(readFileSync(serverFile(), "utf8"))).toEqual({ pid: server.pid, url: expect.stringMatching(/^postgresql:\/\/postgres@127\.0\.0\.1:\d+\//) });

    const created = await gcsEmbedded(["keys", "create", "--group", bannerGroup, "--name", "beside the server", "--scopes", "read:guests", "--json"]);
    expect(created.code).toBe(0);
    const { id, key } = JSON.parse(created.stdout);
    const guests = () => fetch(`${base}/v1/guests?limit=1`, { headers: { Authorization: `Bearer ${key}` } }).then((r) => r.status);
    expect(await guests()).toBe(200);

    expect((await gcsEmbedded(["keys", "revoke", id])).code).toBe(0);
    expect(await guests()).toBe(401);
  });

  it("a second gcs serve on the same directory refuses with a one-line reason; the first one keeps serving", async () => {
    const second = await gcsEmbedded(["serve"]);
    expect(second.code).toBe(1);
    expect(second.stderr.trim().split("\n")).toEqual([
      `gcs: the embedded database ${dataDir} is in use by process ${server.pid} (a running gcs serve); stop it first, or set GCS_DATA_DIR to another directory`,
    ]);
    expect((await fetch(`${base}/readyz`)).status).toBe(200);
  });

  it("several clients of the served database never interleave their exchanges or transactions", async () => {
    const sessions = path.join(dir, "sessions");
    mkdirSync(sessions);
    // LOG_LEVEL: the log of the child that prepares its new directory would join the result on stdout.
    const { stdout } = await run(NODE, ["-e", "require('tsx/cjs/api').register(); require('./test/helpers/pglite-sessions.ts')", path.join(sessions, "pglite")], {
      cwd: ROOT,
      env: { ...process.env, LOG_LEVEL: "warn" },
      timeout: 180_000,
    });
    // 150 rounds a client: a transaction every 5th, rolled back every 10th; the dying client's insert rolled back.
    expect(JSON.parse(stdout)).toEqual({ problems: [], committed: { a: 15, b: 15 }, counts: { a: 15, b: 15 } });
  });

  it("with the server stopped, commands open the directory themselves: a live holder is refused, a stale lock taken over", async () => {
    server.kill("SIGTERM");
    expect(await serverExit).toBe(0);
    expect(existsSync(lockFile())).toBe(false);
    expect(existsSync(serverFile())).toBe(false);

    // Another command holding the directory (a live pid: this test's own).
    writeFileSync(lockFile(), JSON.stringify({ pid: process.pid, role: "tool", command: "gcs fixtures" }));
    const refused = await gcsEmbedded(["keys", "list"]);
    expect(refused.code).toBe(1);
    expect(refused.stderr).toBe(
      `gcs: the embedded database ${dataDir} is in use by process ${process.pid} (gcs fixtures); wait for it to finish, or delete ${lockFile()} if no such process uses it\n`,
    );

    // A lock left by a process that has ended.
    const { pid } = await new Promise<ChildProcess>((resolve) => {
      const child = spawn(NODE, ["-e", ""]);
      child.once("exit", () => resolve(child));
    });
    writeFileSync(lockFile(), JSON.stringify({ pid, role: "server", command: "gcs serve" }));
    writeFileSync(serverFile(), JSON.stringify({ pid, url: "postgresql://postgres@127.0.0.1:1/postgres" }));
    const listed = await gcsEmbedded(["keys", "list", "--json"]);
    expect(listed.code).toBe(0);
    expect(JSON.parse(listed.stdout).map((k: { name: string }) => k.name)).toContain("beside the server");
    expect(existsSync(lockFile())).toBe(false);
  });
});
