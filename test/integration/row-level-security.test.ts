// The second tenant wall (docs/security.md): Row Level Security in PostgreSQL. The catalogue holds
// every group table to it; the roles cannot get round it; a statement without the group setting sees
// nothing, through the service's own pool too; and the service runs with a login that owns nothing,
// migrations as the owner. (With the application predicate left out, every route is walked in
// statement-isolation.test.ts.) Runs in npm test and, through PgBouncer, in npm run test:pgbouncer.
import { readFileSync } from "node:fs";
import path from "node:path";
import { Client } from "pg";
import { CROSS_GROUP_PATHS, asGroup } from "../../src/db/session";
import { scopedPrisma } from "../../src/data/tenant";
import { CROSS_GROUP_ROLE, TENANT_ROLE } from "../../src/db/tenant-pool";
import { loadManifest, startAppOn, startTestApp, type TestApp } from "../helpers/app";
import { loadTestFixtures } from "../helpers/own-postgres";
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

  it("keeps the lookups' indexes: an e-mail lookup and a name prefix as the tenant role are index scans, not the group's rows", async () => {
    const plans: string[] = [];
    await admin.query("BEGIN");
    try {
      await admin.query(`SET LOCAL ROLE ${TENANT_ROLE}`);
      await admin.query("SELECT set_config('gcs.group_id', $1, true)", [A().id]);
      await admin.query("SET LOCAL enable_seqscan = off"); // the fixtures are small: make the index the only cheap way
      for (const sql of [
        "SELECT id FROM guest_profiles t WHERE t.property_group_id = $1 AND lower(t.email) = lower('Someone@Example.org')",
        "SELECT id FROM guest_profiles t WHERE t.property_group_id = $1 AND gcs_fold(t.family_name) LIKE gcs_fold('smi') || '%'",
      ]) {
        const { rows } = await admin.query<{ "QUERY PLAN": string }>(`EXPLAIN ${sql}`, [A().id]);
        plans.push(rows.map((r) => r["QUERY PLAN"]).join("\n"));
      }
    } finally {
      await admin.query("ROLLBACK");
    }
    // The lookup's own condition is an index condition, not a filter over every row of the group.
    expect(plans[0]).toMatch(/Index Cond: .*lower\(email\)/);
    expect(plans[1]).toMatch(/Index Cond: .*lower\(translate\(family_name/); // gcs_fold, inlined
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

describe("the roles in service", () => {
  const RUNTIME_LOGIN = "gcs_test_runtime";

  /** The server itself (not PgBouncer, whose user list names only the tests' superuser), as `user`. */
  const serverUrl = (database: string, user?: string) => {
    const url = new URL(withDatabase(process.env.GCS_TEST_SERVER_URL!, database));
    if (user) url.username = user;
    return url.toString();
  };

  beforeAll(async () => {
    // Cluster-wide, like the service's roles: made once, kept.
    await admin.query(`DO $$ BEGIN
      CREATE ROLE ${RUNTIME_LOGIN} LOGIN NOINHERIT;
    EXCEPTION WHEN duplicate_object OR unique_violation THEN NULL; END $$`);
    await admin.query(`GRANT ${TENANT_ROLE}, ${CROSS_GROUP_ROLE} TO ${RUNTIME_LOGIN}`);
  });

  it("serves with a login that owns nothing and inherits nothing; migrations ran as the owner; the login alone reads nothing", async () => {
    const database = `gcs_rls_${Date.now().toString(36)}`;
    const server = new Client({ connectionString: serverUrl("postgres") });
    await server.connect();
    await server.query(`CREATE DATABASE ${database}`);
    let app: TestApp | undefined;
    try {
      // Empty: the service migrates it as the owner (DATABASE_MIGRATION_URL) and serves it as the
      // runtime login (DATABASE_URL); the start reads and makes its secrets on the cross-group path.
      app = await startAppOn(serverUrl(database, RUNTIME_LOGIN), loadManifest(), { DATABASE_MIGRATION_URL: serverUrl(database) });
      await app.close();
      app = undefined;
      const owner = new Client({ connectionString: serverUrl(database) });
      await owner.connect();
      try {
        const { rows } = await owner.query<{ owner: string }>(
          "SELECT DISTINCT pg_get_userbyid(relowner) AS owner FROM pg_class WHERE relnamespace = 'public'::regnamespace AND relkind = 'r'",
        );
        expect(rows.map((r) => r.owner)).toEqual(["postgres"]);
        expect(Number((await owner.query("SELECT count(*) AS n FROM gcs_schema_migrations")).rows[0].n)).toBeGreaterThan(10);
      } finally {
        await owner.end();
      }
      // Loaded as the owner, served as the login: a key of group A reads group A's guests.
      const manifest = await loadTestFixtures(serverUrl(database), 12);
      app = await startAppOn(serverUrl(database, RUNTIME_LOGIN), manifest, { DATABASE_MIGRATION_URL: serverUrl(database) });
      const res = await app.api.get("/v1/guests?limit=100").set("Authorization", `Bearer ${manifest.groups.A.credentials.api_key}`);
      expect(res.status).toBe(200);
      expect(res.body.data.length).toBeGreaterThan(0);
      expect(res.body.data.every((g: { property_id: string }) => manifest.groups.A.properties.includes(g.property_id))).toBe(true);
      // A statement sent as the login itself, around the pool: refused outright.
      const login = new Client({ connectionString: serverUrl(database, RUNTIME_LOGIN) });
      await login.connect();
      try {
        await expect(login.query("SELECT count(*) FROM guest_profiles")).rejects.toThrow(/permission denied/);
        const { rows } = await login.query<{ rolbypassrls: boolean; rolsuper: boolean }>("SELECT rolbypassrls, rolsuper FROM pg_roles WHERE rolname = current_user");
        expect(rows[0]).toEqual({ rolbypassrls: false, rolsuper: false });
      } finally {
        await login.end();
      }
    } finally {
      await app?.close();
      await server.query(`DROP DATABASE IF EXISTS ${database} WITH (FORCE)`);
      await server.end();
    }
  }, 180_000);
});
