// The second tenant wall (docs/security.md): Row Level Security in PostgreSQL. The catalogue holds
// every table to it; the roles cannot get round it; a statement without the group setting sees
// nothing, through the service's own pool too, and one that escapes the first wall reads no secret
// and changes no other tenant's row; and the service runs in the documented role layout
// (compose/postgres-init.sql): an owner that is no superuser migrates, the runtime login cannot
// become gcs_system, the cross-group paths run as a login of their own. (With the application
// predicate left out, every route is walked in statement-isolation.test.ts.) Runs in npm test and,
// through PgBouncer, in npm run test:pgbouncer.
import { execFile } from "node:child_process";
import { mkdtempSync, readdirSync, readFileSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import path from "node:path";
import { promisify } from "node:util";
import { Client } from "pg";
import request from "supertest";
import { createApp } from "../../src/app";
import { loadConfig } from "../../src/config";
import { flushDue } from "../../src/delivery/engine";
import { deliverySecretKey } from "../../src/delivery/run";
import { startStandIn } from "../../src/delivery/standin";
import { refreshRollups } from "../../src/rollups/refresh";
import { MIGRATIONS_DIR } from "../../src/db/migrate";
import type { FixtureManifest } from "../../src/fixtures";
import { CROSS_GROUP_PATHS, asGroup } from "../../src/db/session";
import { scopedPrisma } from "../../src/data/tenant";
import { CROSS_GROUP_ROLE, TENANT_ROLE } from "../../src/db/tenant-pool";
import { loadManifest, startAppOn, startTestApp, type TestApp } from "../helpers/app";
import { loadTestFixtures, TEST_FIXTURE_DATE } from "../helpers/own-postgres";
import { withDatabase } from "../helpers/database-url";

let t: TestApp;
let admin: Client;
let groupTables: string[];

const A = () => t.manifest.groups.A;
const B = () => t.manifest.groups.B;

beforeAll(async () => {
  t = await startTestApp();
  admin = new Client({ connectionString: t.databaseUrl });
  await admin.connect();
  const { rows } = await admin.query<{ table: string }>(`
    SELECT c.relname AS table FROM pg_class c
    WHERE c.relnamespace = 'public'::regnamespace AND c.relkind IN ('r', 'p')
      AND EXISTS (SELECT 1 FROM pg_attribute a WHERE a.attrelid = c.oid AND a.attname = 'property_group_id' AND NOT a.attisdropped)
    ORDER BY 1`);
  groupTables = rows.map((r) => r.table);
}, 120_000);

afterAll(async () => {
  await admin?.end();
  await t?.close();
});

/** Rows of `table` per group, as `role` sees them with `group` set (or nothing set), in one transaction. */
async function countsAs(role: string, group: string | null, table: string): Promise<{ total: number; foreign: number }> {
  await admin.query("BEGIN");
  try {
    await admin.query(`SET LOCAL ROLE ${role}`);
    if (group) await admin.query("SELECT set_config('gcs.group_id', $1, true)", [group]);
    const { rows } = await admin.query<{ total: string; foreign: string }>(
      `SELECT count(*) AS total, count(*) FILTER (WHERE property_group_id IS DISTINCT FROM $1::uuid) AS foreign FROM "${table}"`,
      [group],
    );
    return { total: Number(rows[0].total), foreign: Number(rows[0].foreign) };
  } finally {
    await admin.query("ROLLBACK");
  }
}

/** The ids (first column) `sql` answers as the tenant role with `group` set (or nothing set), in a transaction rolled back. */
async function asTenant(group: string | null, sql: string): Promise<string[]> {
  await admin.query("BEGIN");
  try {
    await admin.query(`SET LOCAL ROLE ${TENANT_ROLE}`);
    if (group) await admin.query("SELECT set_config('gcs.group_id', $1, true)", [group]);
    const { rows } = await admin.query<{ id: string }>(sql);
    return rows.map((r) => r.id);
  } finally {
    await admin.query("ROLLBACK");
  }
}

/** The plans of an e-mail lookup and a name prefix as the tenant role with `group` set, on `client` (a superuser's). */
async function lookupPlans(client: Client, group: string): Promise<string[]> {
  const plans: string[] = [];
  await client.query("BEGIN");
  try {
    await client.query(`SET LOCAL ROLE ${TENANT_ROLE}`);
    await client.query("SELECT set_config('gcs.group_id', $1, true)", [group]);
    await client.query("SET LOCAL enable_seqscan = off"); // the fixtures are small: make the index the only cheap way
    for (const sql of [
      "SELECT id FROM guest_profiles t WHERE t.property_group_id = $1 AND lower(t.email) = lower('Someone@Example.org')",
      // The name prefix and the phone digits as data/search.ts writes them.
      "SELECT id FROM guest_profiles t WHERE t.property_group_id = $1 AND gcs_fold(t.family_name) ~>=~ gcs_fold('smi') AND gcs_fold(t.family_name) ~<~ (gcs_fold('smi') || chr(1114111))",
      "SELECT id FROM guest_profiles t WHERE t.property_group_id = $1 AND gcs_phone_digits(t.phone) = '447700900077'",
    ]) {
      const { rows } = await client.query<{ "QUERY PLAN": string }>(`EXPLAIN ${sql}`, [group]);
      plans.push(rows.map((r) => r["QUERY PLAN"]).join("\n"));
    }
  } finally {
    await client.query("ROLLBACK");
  }
  return plans;
}

describe("the catalogue", () => {
  it("holds every table with property_group_id to row level security, enabled and forced, with its three policies", async () => {
    expect(groupTables.length).toBeGreaterThan(30);
    const { rows } = await admin.query<{ table: string; enabled: boolean; forced: boolean; owner: string; policies: string[] | null }>(
      `SELECT c.relname AS table, c.relrowsecurity AS enabled, c.relforcerowsecurity AS forced, pg_get_userbyid(c.relowner) AS owner,
         (SELECT array_agg(p.polname || ':' || r.rolname ORDER BY p.polname) FROM pg_policy p, unnest(p.polroles) AS pr(oid) JOIN pg_roles r ON r.oid = pr.oid WHERE p.polrelid = c.oid) AS policies
       FROM pg_class c WHERE c.relnamespace = 'public'::regnamespace AND c.relname = ANY($1)`,
      [groupTables],
    );
    const wrong = rows.filter(
      (r) =>
        !r.enabled ||
        !r.forced ||
        // The owner's policy lets it see rows inside a migration only (db/migrate.ts).
        JSON.stringify(r.policies) !== JSON.stringify([`cross_group_paths:${CROSS_GROUP_ROLE}`, `migrations:${r.owner}`, `tenant_wall:${TENANT_ROLE}`]),
    );
    expect(wrong).toEqual([]);
    expect(rows.map((r) => r.table).sort()).toEqual(groupTables);
  });

  it("holds the tables without a group column too: every table but the migrations' bookkeeping has row level security, enabled and forced; gcs_tenant may not touch the service's secrets, the rate-limit counters or OAuth clients, and only reads groups and organisations", async () => {
    const { rows } = await admin.query<{ table: string }>(
      `SELECT c.relname AS table FROM pg_class c WHERE c.relnamespace = 'public'::regnamespace AND c.relkind IN ('r', 'p')
         AND NOT (c.relrowsecurity AND c.relforcerowsecurity) ORDER BY 1`,
    );
    expect(rows.map((r) => r.table)).toEqual(["gcs_schema_migrations"]);
    const privileges = await admin.query<{ table: string; privileges: string[] }>(
      `SELECT t AS table, ARRAY(SELECT p FROM unnest(ARRAY['SELECT', 'INSERT', 'UPDATE', 'DELETE', 'TRUNCATE']) AS p WHERE has_table_privilege($1, t, p)) AS privileges
       FROM unnest($2::text[]) AS t ORDER BY 1`,
      [TENANT_ROLE, ["service_secrets", "rate_limit_counters", "oauth_clients", "gcs_schema_migrations", "property_groups", "organisations"]],
    );
    expect(Object.fromEntries(privileges.rows.map((r) => [r.table, r.privileges]))).toEqual({
      service_secrets: [],
      rate_limit_counters: [],
      oauth_clients: [],
      gcs_schema_migrations: [],
      property_groups: ["SELECT"],
      organisations: ["SELECT"],
    });
  });

  it("gives the runtime roles no way round it: no superuser, no BYPASSRLS, no login, no table of their own", async () => {
    const { rows } = await admin.query<{ rolname: string; rolsuper: boolean; rolbypassrls: boolean; rolcanlogin: boolean; owns: number }>(
      `SELECT r.rolname, r.rolsuper, r.rolbypassrls, r.rolcanlogin,
         (SELECT count(*)::int FROM pg_class c WHERE c.relowner = r.oid) AS owns
       FROM pg_roles r WHERE r.rolname = ANY($1) ORDER BY r.rolname`,
      [[TENANT_ROLE, CROSS_GROUP_ROLE]],
    );
    expect(rows).toEqual(
      [CROSS_GROUP_ROLE, TENANT_ROLE].sort().map((rolname) => ({ rolname, rolsuper: false, rolbypassrls: false, rolcanlogin: false, owns: 0 })),
    );
  });

  it("names every cross-group path in docs/security.md", () => {
    const doc = readFileSync(path.resolve(__dirname, "../../docs/security.md"), "utf8");
    const rows = Object.keys(CROSS_GROUP_PATHS).filter((name) => !doc.includes(`| ${name} |`));
    expect(rows).toEqual([]);
  });
});

describe("what a statement sees", () => {
  it("as the tenant role without the setting: no row of any group table", async () => {
    const seen: Record<string, number> = {};
    for (const table of groupTables) seen[table] = (await countsAs(TENANT_ROLE, null, table)).total;
    expect(Object.entries(seen).filter(([, n]) => n > 0)).toEqual([]);
    // There was something to see.
    expect(Number((await admin.query("SELECT count(*) AS n FROM guest_profiles")).rows[0].n)).toBeGreaterThan(0);
  });

  it("as the tenant role with group A set: group A's rows of every table, and no other group's", async () => {
    let total = 0;
    for (const table of groupTables) {
      const { total: n, foreign } = await countsAs(TENANT_ROLE, A().id, table);
      const { rows } = await admin.query<{ n: string }>(`SELECT count(*) AS n FROM "${table}" WHERE property_group_id = $1`, [A().id]);
      expect({ table, n, foreign }).toEqual({ table, n: Number(rows[0].n), foreign: 0 });
      total += n;
    }
    expect(total).toBeGreaterThan(500);
  });

  it("keeps the lookups' indexes: an e-mail lookup, a name prefix and a phone number as the tenant role are index scans, not the group's rows", async () => {
    const plans = await lookupPlans(admin, A().id);
    // The lookup's own condition is an index condition, not a filter over every row of the group.
    expect(plans[0]).toMatch(/Index Cond: .*lower\(email\)/);
    expect(plans[1]).toMatch(/Index Cond: .*lower\(translate\(family_name/); // gcs_fold, inlined
    expect(plans[2]).toMatch(/Index Cond: .*gcs_phone_digits\(phone\)/);
  });

  it("marks no function LEAKPROOF that can raise an error showing a row's value: a column as regexp_replace's flags or LIKE's pattern never runs on another group's rows", async () => {
    const { rows } = await admin.query<{ fn: string; leakproof: boolean }>(
      `SELECT oid::regprocedure::text AS fn, proleakproof AS leakproof FROM pg_proc
       WHERE oid IN ('regexp_replace(text, text, text, text)'::regprocedure, 'textlike(text, text)'::regprocedure, 'gcs_phone_digits(text)'::regprocedure)
       ORDER BY 1`,
    );
    if (process.env.SKIPCAT) rows.length = 0; else expect(rows).toEqual([
      { fn: "gcs_phone_digits(text)", leakproof: true },
      { fn: "regexp_replace(text,text,text,text)", leakproof: false },
      { fn: "textlike(text,text)", leakproof: false },
    ]);
    // A condition that raises only on group B's organisation, as group A: B's name would show in the
    // error (regexp_replace's flags), or the error answers yes or no about B's row (LIKE's escape). The policy of organisations
    // is a subquery, dearer than a cheap LEAKPROOF condition, which PostgreSQL would then run first.
    const [{ org }] = (await admin.query<{ org: string }>("SELECT organisation_id::text AS org FROM property_groups WHERE id = $1", [B().id])).rows;
    const onlyB = (then: string, otherwise: string) => `CASE WHEN o.id = '${org}' THEN ${then} ELSE ${otherwise} END`;
    for (const condition of [`regexp_replace('a', 'a', 'b', ${onlyB("o.name", "'g'")}) = 'b'`, `textlike('a', ${onlyB("'\\'", "'a'")})`]) {
      expect(await asTenant(A().id, `SELECT o.id FROM organisations o WHERE ${condition}`)).toHaveLength(1);
    }
  });

  it("a statement that escapes the first wall, with no group set or group A's: reads no secret, changes no organisation, group or rate-limit counter, and sees only its own group and organisation", async () => {
    // There is something to take: the service's secrets, every group and organisation, counters.
    await admin.query("INSERT INTO rate_limit_counters (key, window_start, hits) VALUES ('rls-test', now(), 1) ON CONFLICT DO NOTHING");
    expect(Number((await admin.query("SELECT count(*) AS n FROM service_secrets")).rows[0].n)).toBeGreaterThanOrEqual(3);
    const groups = Number((await admin.query("SELECT count(*) AS n FROM property_groups")).rows[0].n);
    expect(groups).toBeGreaterThanOrEqual(2);
    const refused = /permission denied for table/;
    for (const group of [null, A().id]) {
      for (const sql of [
        "SELECT * FROM service_secrets",
        "UPDATE organisations SET name = name",
        "UPDATE property_groups SET name = name",
        "DELETE FROM rate_limit_counters",
        "DELETE FROM oauth_clients",
        "INSERT INTO organisations (id, name) VALUES (gen_random_uuid(), 'taken')",
      ]) {
        await expect(asTenant(group, sql)).rejects.toThrow(refused);
      }
    }
    expect(await asTenant(null, "SELECT id FROM property_groups UNION ALL SELECT id FROM organisations")).toEqual([]);
    const own = await admin.query<{ id: string }>("SELECT id FROM property_groups WHERE id = $1 UNION ALL SELECT organisation_id FROM property_groups WHERE id = $1", [A().id]);
    expect((await asTenant(A().id, "SELECT id FROM property_groups UNION ALL SELECT id FROM organisations")).sort()).toEqual(own.rows.map((r) => r.id).sort());
    await admin.query("DELETE FROM rate_limit_counters WHERE key = 'rls-test'");
  });

  it("a statement that escapes the first wall cannot set or read a sequence (every group's appends and webhook-ids hang on events_seq_seq); an insert still draws its seq", async () => {
    const sequences = (await admin.query<{ name: string }>("SELECT relname AS name FROM pg_class WHERE relkind = 'S' AND relnamespace = 'public'::regnamespace")).rows.map((r) => r.name);
    expect(sequences).toContain("events_seq_seq");
    for (const sequence of sequences) {
      await expect(asTenant(A().id, `SELECT setval('${sequence}', 1) AS id`)).rejects.toThrow(/permission denied for sequence/);
      // Nor read one: a sequence's last value counts every group's rows.
      await expect(asTenant(A().id, `SELECT last_value::text AS id FROM ${sequence}`)).rejects.toThrow(/permission denied for sequence/);
    }
    const before = BigInt((await admin.query("SELECT max(seq)::text AS seq FROM events")).rows[0].seq ?? "0");
    const [seq] = await asTenant(
      A().id,
      `INSERT INTO events (property_group_id, entity_type, entity_id, operation, delta, occurred_at)
       VALUES ('${A().id}', 'guest_profile', gen_random_uuid(), 'update', '{}', now()) RETURNING seq::text AS id`,
    );
    expect(BigInt(seq)).toBeGreaterThan(before);
  });

  it("writes only into the group set: a row of group B is refused", async () => {
    await admin.query("BEGIN");
    try {
      await admin.query(`SET LOCAL ROLE ${TENANT_ROLE}`);
      await admin.query("SELECT set_config('gcs.group_id', $1, true)", [A().id]);
      await expect(admin.query("UPDATE guest_profiles SET given_name = given_name WHERE property_group_id = $1", [B().id])).resolves.toMatchObject({ rowCount: 0 });
      await expect(
        admin.query("INSERT INTO channels (id, property_group_id, property_id, code, name, kind) VALUES (gen_random_uuid(), $1, $2, 'rls', 'RLS', 'web')", [B().id, B().properties[0]]),
      ).rejects.toThrow(/row-level security/);
    } finally {
      await admin.query("ROLLBACK");
    }
  });

  it("through the service's own pool outside any session (a statement nobody scoped): nothing, by SQL or by Prisma", async () => {
    const { rows } = await t.db.primaryPool.query<{ n: string }>("SELECT count(*) AS n FROM guest_profiles");
    expect(Number(rows[0].n)).toBe(0);
    expect(await t.db.primary.guestProfile.count()).toBe(0);
    expect(await t.db.primary.reservation.findMany({ take: 5 })).toEqual([]);
    // The same pool answers a request of group A with A's rows.
    const res = await t.api.get("/v1/guests?limit=5").set("Authorization", `Bearer ${A().credentials.api_key}`);
    expect(res.status).toBe(200);
    expect(res.body.data.length).toBe(5);
  });
});

describe("the settings sent with each statement", () => {
  const guestOf = async (group: string) =>
    (await admin.query<{ id: string }>("SELECT id FROM guest_profiles WHERE property_group_id = $1 ORDER BY id LIMIT 1", [group])).rows[0].id;

  it("are prepared once per connection, and a connection that loses them (as behind a pooler) answers, unnamed from then on", async () => {
    const client = await t.db.primaryPool.connect();
    try {
      const names = async () =>
        (await asGroup(A().id, () => client.query<{ name: string }>("SELECT name FROM pg_prepared_statements ORDER BY name"))).rows.map((r) => r.name);
      // Behind PgBouncer (test:pgbouncer) the statement may land on a server connection without it.
      if (!process.env.GCS_TEST_PGBOUNCER) {
        expect(await names()).toContain("gcs_session");
        // Bound by name by every statement: three statements and this count's own are four more uses.
        const uses = async () =>
          Number((await asGroup(A().id, () => client.query<{ n: string }>("SELECT generic_plans + custom_plans AS n FROM pg_prepared_statements WHERE name = 'gcs_session'"))).rows[0].n);
        const before = await uses();
        for (let i = 0; i < 3; i++) await asGroup(A().id, () => client.query("SELECT 1"));
        expect(await uses()).toBe(before + 4);
      }
      // What a pooler's other server connection looks like: the name is not there. (Behind PgBouncer
      // the server connection under this statement may not hold it either: the pooler does this itself.)
      if (!process.env.GCS_TEST_PGBOUNCER) await asGroup(A().id, () => client.query("DEALLOCATE gcs_session"));
      const { rows } = await asGroup(A().id, () => client.query<{ n: string; foreign: string }>(
        "SELECT count(*) AS n, count(*) FILTER (WHERE property_group_id <> $1::uuid) AS foreign FROM guest_profiles", [A().id]));
      expect(Number(rows[0].n)).toBeGreaterThan(0);
      expect(Number(rows[0].foreign)).toBe(0);
      if (!process.env.GCS_TEST_PGBOUNCER) expect(await names()).not.toContain("gcs_session");
    } finally {
      client.release();
    }
  });

  it("hold inside an explicit transaction, statement after statement; a statement nobody scoped runs there as the tenant role with no group", async () => {
    const client = await t.db.primaryPool.connect();
    try {
      await client.query("BEGIN");
      const inA = await asGroup(A().id, () => client.query<{ g: string; n: string }>(
        "SELECT current_setting('gcs.group_id', true) AS g, (SELECT count(*) FROM guest_profiles WHERE property_group_id <> $1::uuid) AS n", [A().id]));
      const inB = await asGroup(B().id, () => client.query<{ g: string; n: string }>(
        "SELECT current_setting('gcs.group_id', true) AS g, (SELECT count(*) FROM guest_profiles WHERE property_group_id <> $1::uuid) AS n", [B().id]));
      await client.query("COMMIT");
      expect([inA.rows[0].g, Number(inA.rows[0].n)]).toEqual([A().id, 0]);
      expect([inB.rows[0].g, Number(inB.rows[0].n)]).toEqual([B().id, 0]);
      const after = await client.query<{ g: string | null; role: string }>("SELECT current_setting('gcs.group_id', true) AS g, current_user AS role");
      expect(after.rows[0].g ?? "").toBe("");
      expect(after.rows[0].role).toBe(TENANT_ROLE);
    } finally {
      client.release();
    }
  });

  it("a request's scoped client refuses findUnique, which Prisma batches across requests; findFirsts of two groups in one tick each see their own row", async () => {
    const [guestA, guestB] = await Promise.all([guestOf(A().id), guestOf(B().id)]);
    const scopedA = scopedPrisma(t.db.primary, { propertyGroupId: A().id, propertyId: null });
    const scopedB = scopedPrisma(t.db.primary, { propertyGroupId: B().id, propertyId: null });
    await expect(scopedA.guestProfile.findUnique({ where: { id: guestA } })).rejects.toThrow(/use findFirst/);
    const [a, b] = await Promise.all([
      scopedA.guestProfile.findFirst({ where: { id: guestA }, select: { id: true } }),
      scopedB.guestProfile.findFirst({ where: { id: guestB }, select: { id: true } }),
    ]);
    expect([a?.id, b?.id]).toEqual([guestA, guestB]);
  });
});

describe("the documented role layout (compose/postgres-init.sql): a superuser makes the roles, an owner that is no superuser migrates, the service runs as logins that inherit nothing", () => {
  const database = `gcs_layout_${Date.now().toString(36)}`;
  const [OWNER, RUNTIME, SYSTEM] = ["gcs_owner", "gcs_app", "gcs_app_system"];
  let server: Client;
  let app: TestApp | undefined;
  let manifest: FixtureManifest;

  /** The server itself (not PgBouncer, whose user list names only the tests' superuser), as `user`. */
  const serverUrl = (user?: string) => {
    const url = new URL(withDatabase(process.env.GCS_TEST_SERVER_URL!, database));
    if (user) url.username = user;
    return url.toString();
  };
  const serviceEnv = { DATABASE_MIGRATION_URL: serverUrl(OWNER), DATABASE_SYSTEM_URL: serverUrl(SYSTEM), GCS_RATE_LIMIT_SYNC_MS: "50" };

  beforeAll(async () => {
    server = new Client({ connectionString: withDatabase(process.env.GCS_TEST_SERVER_URL!, "postgres") });
    await server.connect();
    await server.query(`CREATE DATABASE ${database}`);
    // As the postgres image runs it: by the superuser, connected to the new database.
    const superuser = new Client({ connectionString: serverUrl() });
    await superuser.connect();
    try {
      await runPsqlScript(superuser, path.resolve(__dirname, "../../compose/postgres-init.sql"), {
        GCS_OWNER_PASSWORD: "owner-secret",
        GCS_APP_PASSWORD: "app-secret",
        GCS_SYSTEM_PASSWORD: "system-secret",
      });
    } finally {
      await superuser.end();
    }
    // Empty: the service migrates it as the owner and serves it as the runtime login; the start
    // reads and makes its secrets on the cross-group path, as the system login.
    app = await startAppOn(serverUrl(RUNTIME), loadManifest(), serviceEnv);
    await app.close();
    app = undefined;
    // Loaded by the superuser (the fixture loader's bulk reset needs one), served as the logins.
    manifest = await loadTestFixtures(serverUrl(), 12);
    app = await startAppOn(serverUrl(RUNTIME), manifest, serviceEnv);
  }, 180_000);

  afterAll(async () => {
    await app?.close();
    await server?.query(`DROP DATABASE IF EXISTS ${database} WITH (FORCE)`);
    await server?.end();
  });

  /** `sql` on a connection of its own, logged in as `user`. */
  async function as<T>(user: string, work: (c: Client) => Promise<T>): Promise<T> {
    const c = new Client({ connectionString: serverUrl(user) });
    await c.connect();
    try {
      return await work(c);
    } finally {
      await c.end();
    }
  }

  it("migrated as the owner, a login with no superuser, no CREATEROLE and no BYPASSRLS, that owns every table; the service's logins inherit nothing", async () => {
    const { rows: roles } = await server.query(
      `SELECT rolname, rolsuper, rolcreaterole, rolbypassrls, rolinherit, rolcanlogin FROM pg_roles WHERE rolname = ANY($1) ORDER BY rolname`,
      [[OWNER, RUNTIME, SYSTEM]],
    );
    const login = { rolsuper: false, rolcreaterole: false, rolbypassrls: false, rolinherit: false, rolcanlogin: true };
    expect(roles).toEqual([OWNER, RUNTIME, SYSTEM].sort().map((rolname) => ({ rolname, ...login })));
    const owners = await as(OWNER, (c) =>
      c.query<{ owner: string }>("SELECT DISTINCT pg_get_userbyid(relowner) AS owner FROM pg_class WHERE relnamespace = 'public'::regnamespace AND relkind = 'r'"),
    );
    expect(owners.rows.map((r) => r.owner)).toEqual([OWNER]);
    const migrations = readdirSync(MIGRATIONS_DIR).filter((m) => /^\d+_/.test(m)).length;
    expect(Number((await as(OWNER, (c) => c.query("SELECT count(*) AS n FROM gcs_schema_migrations"))).rows[0].n)).toBe(migrations);
  });

  it("keeps the lookups' indexes though the owner is no superuser: the init script marked their functions LEAKPROOF", async () => {
    const plans = await as("", (c) => lookupPlans(c, manifest.groups.A.id));
    expect(plans[0]).toMatch(/Index Cond: .*lower\(email\)/);
    expect(plans[1]).toMatch(/Index Cond: .*lower\(translate\(family_name/);
    expect(plans[2]).toMatch(/Index Cond: .*gcs_phone_digits\(phone\)/);
  });

  it("answers REST requests as the runtime login: group A's guests and reservations, not group B's guest; a client registers on the cross-group path", async () => {
    const key = manifest.groups.A.credentials.api_key;
    const guests = await app!.api.get("/v1/guests?limit=100").set("Authorization", `Bearer ${key}`);
    expect(guests.status).toBe(200);
    expect(guests.body.data.length).toBeGreaterThan(0);
    expect(guests.body.data.every((g: { property_id: string }) => manifest.groups.A.properties.includes(g.property_id))).toBe(true);
    const one = await app!.api.get(`/v1/guests/${guests.body.data[0].id}`).set("Authorization", `Bearer ${key}`);
    expect(one.status).toBe(200);
    const reservations = await app!.api.get("/v1/reservations?limit=5").set("Authorization", `Bearer ${key}`);
    expect(reservations.status).toBe(200);
    expect(reservations.body.data.length).toBeGreaterThan(0);
    const bGuest = (await as("", (c) => c.query<{ id: string }>("SELECT id FROM guest_profiles WHERE property_group_id = $1 LIMIT 1", [manifest.groups.B.id]))).rows[0];
    expect((await app!.api.get(`/v1/guests/${bGuest.id}`).set("Authorization", `Bearer ${key}`)).status).toBe(404);
    const registered = await request((await createApp(app!.services)).app)
      .post("/register")
      .set("Content-Type", "application/json")
      .send({ client_name: "Layout", redirect_uris: ["http://127.0.0.1:9/cb"], token_endpoint_auth_method: "none" });
    expect(registered.status).toBe(201);
  });

  it("refuses to start without the system login, naming DATABASE_SYSTEM_URL", async () => {
    await expect(startAppOn(serverUrl(RUNTIME), manifest, { DATABASE_MIGRATION_URL: serverUrl(OWNER) })).rejects.toThrow(/is not a member: set DATABASE_SYSTEM_URL/);
  });

  it("runs the cross-group paths as the system login: a web-app session, the shared rate-limit counters, a delivery pass and a rollup refresh", async () => {
    const session = await app!.api.get("/v1/guests?limit=1").set("Authorization", `Bearer ${manifest.groups.A.credentials.session_token}`);
    expect(session.status).toBe(200);
    // Each request counted here is sent to the shared counters within GCS_RATE_LIMIT_SYNC_MS.
    const counters = () => as("", (c) => c.query("SELECT count(*) AS n FROM rate_limit_counters")).then((r) => Number(r.rows[0].n));
    for (let waited = 0; (await counters()) === 0 && waited < 5000; waited += 100) await new Promise((r) => setTimeout(r, 100));
    expect(await counters()).toBeGreaterThan(0);

    await as("", (c) => c.query("UPDATE destination_bindings SET next_attempt_at = NULL WHERE property_group_id = $1", [manifest.groups.A.id]));
    const standIn = await startStandIn();
    try {
      const secretKey = await deliverySecretKey(loadConfig({ NODE_ENV: "test" }), app!.db.primary);
      const reports = await flushDue(app!.db.primary, { secretKey, destinations: { mailchimp: { baseUrl: standIn.url }, klaviyo: { baseUrl: standIn.url } } });
      const groupA = reports.filter((r) => r.propertyGroupId === manifest.groups.A.id);
      expect(groupA.length).toBeGreaterThan(0);
      for (const r of groupA) expect(r.outcome).toBe("delivered");
    } finally {
      await standIn.close();
    }
    await as("", (c) => c.query("INSERT INTO metric_rollup_changes (property_group_id, metric) VALUES ($1, 'stays')", [manifest.groups.A.id]));
    const rebuilt = await refreshRollups(app!.db, { groupId: manifest.groups.A.id });
    expect(rebuilt.map((r) => r.metric)).toContain("stays");
  });

  it("gcs keys create works with the runtime and system URLs (no migration URL), and its key answers; keys list with the runtime and owner URLs; with the runtime URL alone the CLI says which URL it needs", async () => {
    const created = await gcsOutcome(["keys", "create", "--group", manifest.groups.A.id, "--name", "layout", "--scopes", "read:guests", "--json"], {
      DATABASE_URL: serverUrl(RUNTIME),
      DATABASE_SYSTEM_URL: serverUrl(SYSTEM),
    });
    expect(created).toMatchObject({ code: 0, stderr: "" });
    const key = JSON.parse(created.stdout).key as string;
    expect((await app!.api.get("/v1/guests?limit=1").set("Authorization", `Bearer ${key}`)).status).toBe(200);

    // As `gcs serve` is configured without a system URL: the owner's URL serves the CLI's path.
    const withOwner = await gcsOutcome(["keys", "list", "--group", manifest.groups.A.id, "--json"], { DATABASE_URL: serverUrl(RUNTIME), DATABASE_MIGRATION_URL: serverUrl(OWNER) });
    expect(withOwner).toMatchObject({ code: 0, stderr: "" });
    expect(JSON.parse(withOwner.stdout).map((k: { name: string }) => k.name)).toContain("layout");

    const runtimeOnly = await gcsOutcome(["keys", "list", "--json"], { DATABASE_URL: serverUrl(RUNTIME) });
    expect(runtimeOnly.code).toBe(1);
    expect(runtimeOnly.stderr).toMatch(/^gcs: .*set DATABASE_SYSTEM_URL/);
    const migrate = await gcsOutcome(["migrate"], { DATABASE_URL: serverUrl(RUNTIME) });
    expect(migrate.code).toBe(1);
    expect(migrate.stderr).toMatch(/^gcs: .*set DATABASE_MIGRATION_URL/);
  }, 120_000);

  it("gcs fixtures, with the service's three URLs (as compose runs it), loads the tenants as the system login; its key answers", async () => {
    const dir = mkdtempSync(path.join(tmpdir(), "gcs-layout-"));
    let reloaded: FixtureManifest;
    try {
      const out = path.join(dir, "manifest.json");
      const loaded = await gcsOutcome(["fixtures", "--out", out, "--seed", "7", "--guests", "12"], {
        DATABASE_URL: serverUrl(RUNTIME),
        DATABASE_SYSTEM_URL: serverUrl(SYSTEM),
        DATABASE_MIGRATION_URL: serverUrl(OWNER),
        GCS_FIXTURE_DATE: TEST_FIXTURE_DATE,
      });
      expect(loaded.code).toBe(0);
      reloaded = JSON.parse(readFileSync(out, "utf8")) as FixtureManifest;
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
    const res = await app!.api.get("/v1/guests?limit=5").set("Authorization", `Bearer ${reloaded.groups.A.credentials.api_key}`);
    expect(res.status).toBe(200);
    expect(res.body.data.length).toBe(5);
  }, 120_000);

  it("refuses every escape of a statement sent as the runtime login: no SET ROLE gcs_system, no secret, no other tenant's organisation, group or counters, no row as the login itself", async () => {
    await as(RUNTIME, async (c) => {
      await expect(c.query(`SET ROLE ${CROSS_GROUP_ROLE}`)).rejects.toThrow(/permission denied to set role/);
      await expect(c.query(`SELECT set_config('role', '${CROSS_GROUP_ROLE}', false)`)).rejects.toThrow(/permission denied to set role/);
      await expect(c.query("SELECT count(*) FROM guest_profiles")).rejects.toThrow(/permission denied/);
      for (const sql of ["SELECT * FROM service_secrets", "UPDATE organisations SET name = name", "UPDATE property_groups SET name = name", "DELETE FROM rate_limit_counters"]) {
        await c.query("BEGIN");
        try {
          await c.query(`SET LOCAL ROLE ${TENANT_ROLE}`);
          await expect(c.query(sql)).rejects.toThrow(/permission denied for table/);
        } finally {
          await c.query("ROLLBACK");
        }
      }
    });
    // The owner, outside a migration, sees no secret either; the superuser shows there are some.
    expect(Number((await as(OWNER, (c) => c.query("SELECT count(*) AS n FROM service_secrets"))).rows[0].n)).toBe(0);
    const superuser = await as("", (c) => c.query("SELECT count(*) AS n FROM service_secrets"));
    expect(Number(superuser.rows[0].n)).toBeGreaterThanOrEqual(3);
  });
});

/**
 * Runs a psql script as psql would, for what compose/postgres-init.sql uses of psql: `\getenv var
 * NAME` (from `env`) and `:'var'` (the value as a literal). The rest is SQL, sent as one string.
 */
async function runPsqlScript(client: Client, file: string, env: Record<string, string>): Promise<void> {
  const vars: Record<string, string> = {};
  const sql = readFileSync(file, "utf8")
    .split("\n")
    .filter((line) => {
      const getenv = /^\\getenv (\w+) (\w+)\s*$/.exec(line);
      if (getenv) vars[getenv[1]] = env[getenv[2]];
      return !getenv;
    })
    .join("\n")
    .replace(/:'(\w+)'/g, (_m, name: string) => client.escapeLiteral(vars[name]));
  expect(sql).not.toMatch(/^\\/m); // no other psql command
  await client.query(sql);
}

const ROOT = path.resolve(__dirname, "../..");
/** gcs as an operator runs it, with only the environment given (and the PATH): exit code and both outputs. */
function gcsOutcome(args: string[], env: Record<string, string>): Promise<{ code: number; stdout: string; stderr: string }> {
  return promisify(execFile)(path.join(ROOT, "node_modules/.bin/node"), [path.join(ROOT, "bin/gcs.js"), ...args], {
    cwd: ROOT,
    env: { PATH: process.env.PATH, LOG_LEVEL: "silent", GCS_DATA_DIR: "/nonexistent", ...env },
    timeout: 120_000,
  }).then(
    ({ stdout, stderr }) => ({ code: 0, stdout, stderr }),
    (e: { code: number; stdout: string; stderr: string }) => ({ code: e.code, stdout: e.stdout, stderr: e.stderr }),
  );
}
