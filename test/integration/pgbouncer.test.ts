// The service through PgBouncer in transaction pooling mode (test/helpers/pgbouncer.ts, in front of
// the run's PostgreSQL). Two instances migrate an empty database at once through it, the fixtures
// load through it, and both instances answer every REST route of the route table, GraphQL queries
// and mutations, and every MCP task tool with the fixture credentials; so does `gcs serve`. The
// pools' startup settings, which PgBouncer drops, are reported (a warning at `gcs serve`), and come
// from the database once it carries them.
// Not part of `npm test` (PgBouncer is not on npm): `npm run test:pgbouncer` runs this file, and the
// whole integration suite through PgBouncer as well.
import { randomBytes } from "node:crypto";
import { existsSync, readdirSync } from "node:fs";
import path from "node:path";
import { Client } from "pg";
import { openDatabase } from "../../src/db/database";
import { MIGRATIONS_DIR, MIGRATORS_LOCK, migrate, type MigrationResult } from "../../src/db/migrate";
import type { FixtureManifest } from "../../src/fixtures";
import { UNBOUND_FILTER } from "../../src/fixtures/tables";
import { taskTools } from "../../src/api/tools/task-tools";
import { routes, type RouteSpec } from "../../src/api/routes";
import { startAppOn, type TestApp } from "../helpers/app";
import { withDatabase } from "../helpers/database-url";
import { loadTestFixtures } from "../helpers/own-postgres";
import { startPgBouncer, type TestPgBouncer } from "../helpers/pgbouncer";
import { serve } from "../helpers/serve";

/** The run's PostgreSQL itself (not through the run's own PgBouncer, under GCS_TEST_PGBOUNCER=1). */
const serverUrl = (database = "postgres") => withDatabase(process.env.GCS_TEST_SERVER_URL!, database);

let bouncer: TestPgBouncer;
const created: string[] = [];

async function direct<T>(database: string, work: (c: Client) => Promise<T>): Promise<T> {
  const c = new Client({ connectionString: serverUrl(database) });
  await c.connect();
  try {
    return await work(c);
  } finally {
    await c.end();
  }
}

/** An empty database on the server; dropped after the file. */
async function createDatabase(): Promise<string> {
  const name = `gcs_pgb_${randomBytes(5).toString("hex")}`;
  await direct("postgres", (c) => c.query(`CREATE DATABASE ${name}`));
  created.push(name);
  return name;
}

const allMigrations = () =>
  readdirSync(MIGRATIONS_DIR)
    .filter((d) => existsSync(path.join(MIGRATIONS_DIR, d, "migration.sql")))
    .sort();

let database: string;
let migrations: MigrationResult[];
let manifest: FixtureManifest;
let instances: TestApp[] = [];

beforeAll(async () => {
  bouncer = await startPgBouncer(serverUrl());
  database = await createDatabase();
  const url = bouncer.url(database);
  // What two instances starting at once do first (openDatabase → migrate), on an empty database.
  migrations = await Promise.all([migrate(url), migrate(url)]);
  manifest = await loadTestFixtures(url, 12);
  // Webhook endpoints on 127.0.0.1 (the walk's test ping finds nothing listening there and says so).
  // The per-credential gate queues for 30 s, not 1: the concurrent pages below come from one
  // credential, and on a loaded host their turn for its slots could pass 1 s (a 429 that is not
  // what these tests are about).
  const env = { GCS_WEBHOOKS_ALLOW_PRIVATE: "true", GCS_CREDENTIAL_QUEUE_MS: "30000" };
  instances = await Promise.all([startAppOn(url, manifest, env), startAppOn(url, manifest, env)]);
}, 120_000);

afterAll(async () => {
  await Promise.all(instances.map((t) => t.close()));
  bouncer?.stop();
  for (const name of created) await direct("postgres", (c) => c.query(`DROP DATABASE IF EXISTS ${name} WITH (FORCE)`));
});

describe("migrations through PgBouncer (transaction pooling)", () => {
  it("two instances migrating an empty database at once apply each migration exactly once and leave no lock held", async () => {
    const [one, two] = migrations;
    expect([...one.applied, ...two.applied].sort()).toEqual(allMigrations());
    const recorded = await direct(database, (c) => c.query("SELECT name FROM gcs_schema_migrations ORDER BY name"));
    expect(recorded.rows.map((r) => r.name)).toEqual(allMigrations());
    // The migrators' lock went with their transactions: no pooled server connection still holds it.
    const held = await direct(database, (c) =>
      c.query("SELECT count(*)::int AS n FROM pg_locks WHERE locktype = 'advisory' AND database = (SELECT oid FROM pg_database WHERE datname = current_database())"),
    );
    expect(held.rows[0].n).toBe(0);
    // And the next instance's start finds everything applied.
    expect(await migrate(bouncer.url(database))).toEqual({ applied: [], alreadyApplied: allMigrations().length });
  });

  it("migrations ignore the role's or database's statement timeout: an instance waits for another's migration as long as it takes", async () => {
    const name = await createDatabase();
    await direct(name, (c) => c.query(`ALTER DATABASE ${name} SET statement_timeout = '200ms'`));
    // Another migrator holds the lock (in a transaction, as migrate() does) for longer than the timeout.
    const other = new Client({ connectionString: serverUrl(name) });
    await other.connect();
    await other.query("BEGIN");
    await other.query("SELECT pg_advisory_xact_lock($1)", [MIGRATORS_LOCK]);
    const released = new Promise((resolve) => setTimeout(resolve, 600)).then(() => other.query("COMMIT")).finally(() => other.end());
    const result = await migrate(bouncer.url(name));
    await released;
    expect(result.applied).toEqual(allMigrations());
  });
});

describe("the service through PgBouncer (transaction pooling), two instances", () => {
  const A = () => manifest.groups.A;
  const BODY_VALUES: Record<string, unknown> = { member_type: "guest_profile", filter_doc: UNBOUND_FILTER, url: "http://127.0.0.1:9/pgbouncer", topics: ["*"] };
  /** Routes whose members are all optional but one is due (replay: cursor or since). */
  const ROUTE_BODIES: Record<string, () => Record<string, unknown>> = {
    "POST /v1/webhook-endpoints/:id/replay": () => ({ since: "2020-01-01T00:00:00Z" }),
    "POST /v1/guests/lookup": () => ({ table_id: A().tables.bound, purpose: "email_marketing" }),
  };

  /** Every route of the route table, collections first (their first rows give the ids the others take). */
  async function walkRoutes(t: TestApp): Promise<string[]> {
    const ids = new Map<string, string>([["/v1/tables", A().tables.bound]]);
    const failed: string[] = [];
    const ordered = [...routes].sort((a, b) => Number(a.path.includes(":")) - Number(b.path.includes(":")));
    for (const route of ordered) {
      const url = route.path.replace(/:(\w+)/g, (_, name: string) =>
        name === "provider" ? manifest.destinations[0] : (ids.get(route.path.slice(0, route.path.indexOf(`/:${name}`))) ?? `no-row-for-${name}`),
      ) + (Object.values(route.query ?? {}).some((q) => q.required) ? "?purpose=email_marketing" : ""); // the one required query parameter: a reachability's purpose
      const send = (token: string) => {
        const req = (route.method === "GET" ? t.api.get(url) : route.method === "DELETE" ? t.api.delete(url) : t.api.post(url)).set("Authorization", `Bearer ${token}`);
        return route.body ? req.send(bodyFor(route)) : req;
      };
      let res = await send(A().credentials.api_key_admin);
      // Connection details are for a signed-in web-app session only.
      if (res.status === 403 && res.body.error === "session_required") res = await send(A().credentials.session_token);
      if (res.status !== (route.status ?? 200)) failed.push(`${route.method} ${url}: ${res.status} ${JSON.stringify(res.body).slice(0, 200)}`);
      const first =
        route.method === "GET" && Array.isArray(res.body?.data)
          ? (res.body.data as { id?: string }[])[0]?.id
          : route.status === 201 ? (res.body?.data as { id?: string } | undefined)?.id : undefined; // what a POST created
      if (first && !ids.has(route.path)) ids.set(route.path, first);
    }
    return failed;
  }

  function bodyFor(route: RouteSpec): Record<string, unknown> {
    if (ROUTE_BODIES[`${route.method} ${route.path}`]) return ROUTE_BODIES[`${route.method} ${route.path}`]();
    const required = Object.entries(route.body!).filter(([, spec]) => spec.required);
    return Object.fromEntries(required.map(([name]) => [name, BODY_VALUES[name] ?? `no value for ${name}`]));
  }

  const graphql = (t: TestApp, query: string, variables: Record<string, unknown> = {}) =>
    t.api.post("/graphql").set("Authorization", `Bearer ${A().credentials.api_key}`).send({ query, variables });

  it.each([0, 1])("instance %i answers every REST route of the route table with the fixture credentials", async (i) => {
    expect(await walkRoutes(instances[i])).toEqual([]);
  });

  it.each([0, 1])("instance %i answers nested GraphQL, the table preview, and pause and resume (writes in transactions)", async (i) => {
    const t = instances[i];
    const nested = await graphql(
      t,
      `{ viewer { propertyGroupId } guests(limit: 10) { nodes { id property { id } masterProfile { id guests { id } }
         reservations { id transactions { id } } consents { id } loyaltyMemberships { id } } }
         events(limit: 5) { nodes { __typename } } tables { nodes { id } } }`,
    );
    expect(nested.body.errors).toBeUndefined();
    expect(nested.body.data.viewer.propertyGroupId).toBe(A().id);
    expect(nested.body.data.guests.nodes).toHaveLength(10);

    const preview = await graphql(t, `query($doc: JSON!) { tablePreview(memberType: guest_profile, filterDoc: $doc, includeTotal: true) { totalCount } }`, {
      doc: UNBOUND_FILTER,
    });
    expect(preview.body.errors).toBeUndefined();
    expect(preview.body.data.tablePreview.totalCount).toBeGreaterThan(0);

    const vars = { tableId: A().tables.bound, provider: manifest.destinations[0] };
    const paused = await graphql(t, `mutation($tableId: UUID!, $provider: String!) { pauseDestination(tableId: $tableId, provider: $provider) { state } }`, vars);
    expect(paused.body).toEqual({ data: { pauseDestination: { state: "paused" } } });
    const resumed = await graphql(t, `mutation($tableId: UUID!, $provider: String!) { resumeDestination(tableId: $tableId, provider: $provider) { state } }`, vars);
    expect(resumed.body.errors).toBeUndefined();
    expect(resumed.body.data.resumeDestination.state).not.toBe("paused");
  });

  it("answers concurrent nested pages whose statement is prepared, though the pooler moves each transaction to another server connection", async () => {
    // The JSON read path prepares its statement on a connection; behind PgBouncer 1.18 in transaction
    // mode the next use lands on a server connection that never parsed it (or already has it).
    const query = `{ guests(limit: 20) { nodes { id givenName reservations { id status } transactions { id amountMinor } } hasMore } }`;
    const expected = (await graphql(instances[0], query)).body;
    expect(expected.errors).toBeUndefined();
    for (let round = 0; round < 3; round++) {
      const answers = await Promise.all(Array.from({ length: 24 }, (_, k) => graphql(instances[k % 2], query)));
      expect(answers.map((a) => a.status)).toEqual(answers.map(() => 200));
      for (const a of answers) expect(a.body).toEqual(expected);
    }
  });

  it.each([0, 1])("instance %i answers every MCP task tool", async (i) => {
    const t = instances[i];
    const people = await graphql(t, "{ guests(limit: 100) { nodes { givenName familyName email masterProfileId } } }");
    const person = (people.body.data.guests.nodes as Record<string, string | null>[]).find((g) => g.givenName && g.familyName && g.email && g.masterProfileId)!;
    const args: Record<string, Record<string, unknown>> = {
      find_guests: { query: `${person.givenName} ${person.familyName}` },
      guest_context: { master_profile_id: person.masterProfileId },
      check_contact_permission: { email: person.email, purpose: "email_marketing" },
      explain_merge: { guest_profile_id: A().guest_lookup.guest_id, other_guest_profile_id: A().unclustered_guest },
      stay_performance: { from: "2024-01-01", to: "2025-12-31" },
    };
    const endpoint = await t.api
      .post("/v1/webhook-endpoints")
      .set("Authorization", `Bearer ${A().credentials.api_key_admin}`)
      .send({ url: "http://127.0.0.1:9/pgbouncer-tools", topics: ["*"] });
    expect(endpoint.status).toBe(201);
    args.list_webhook_deliveries = { endpoint_id: endpoint.body.data.id };
    const failed: string[] = [];
    for (const tool of taskTools) {
      const res = await t.api
        .post("/mcp")
        .set("Authorization", `Bearer ${A().credentials.api_key}`)
        .set("Accept", "application/json, text/event-stream")
        .send({ jsonrpc: "2.0", id: 1, method: "tools/call", params: { name: tool.name, arguments: args[tool.name] ?? {} } });
      if (res.status !== 200 || !res.body.result || res.body.result.isError) failed.push(`${tool.name}: ${res.status} ${JSON.stringify(res.body).slice(0, 200)}`);
    }
    expect(failed).toEqual([]);
  });

  it("gcs serve through PgBouncer warns that the statement timeout is the role's to set, and answers", async () => {
    const server = await serve({ DATABASE_URL: bouncer.url(database), GCS_STATEMENT_TIMEOUT_MS: "5000" });
    try {
      const warning = server.log.find((l) => l.msg.startsWith("database did not apply the connection settings"));
      expect(warning).toMatchObject({ level: 40, notApplied: expect.arrayContaining(["statement_timeout is 0 ms, not 5000 ms"]) });
      const res = await fetch(`${server.url}/v1/properties`, { headers: { Authorization: `Bearer ${A().credentials.api_key}` } });
      expect(res.status).toBe(200);
    } finally {
      server.child.kill("SIGTERM");
      await server.exited;
    }
  });

  it("the requests went through PgBouncer, in transaction mode", async () => {
    const pools = (await bouncer.admin("SHOW POOLS")).filter((p) => p.database === database);
    expect(pools.map((p) => p.pool_mode)).toEqual(["transaction"]);
    const stats = (await bouncer.admin("SHOW STATS")).find((s) => s.database === database)!;
    expect(Number(stats.total_xact_count)).toBeGreaterThan(100);
  });
});

describe("connection settings behind PgBouncer", () => {
  const open = (url: string, reported: string[][]) =>
    openDatabase({ databaseUrl: url, dataDir: "", poolSize: 2, migrate: false, statementTimeoutMs: 300, onSettingsNotApplied: (_url, n) => reported.push(n) });

  it("reports the settings PgBouncer dropped (jit, statement_timeout), and none when connecting directly", async () => {
    const name = await createDatabase();
    // JIT on here whatever the role says (npm run test:pgbouncer sets it off on the role).
    await direct(name, (c) => c.query(`ALTER ROLE CURRENT_USER IN DATABASE ${name} SET jit = on`));
    const reported: string[][] = [];
    await (await open(serverUrl(name), reported)).close();
    expect(reported).toEqual([]);
    await (await open(bouncer.url(name), reported)).close();
    expect(reported.map((r) => [...r].sort())).toEqual([["jit is on, not off", "statement_timeout is 0 ms, not 300 ms"]]);
  });

  it("takes them from the database once it carries them: no report, and a blocked statement is cancelled by its timeout", async () => {
    const name = await createDatabase();
    await direct(name, async (c) => {
      await c.query(`ALTER DATABASE ${name} SET jit = off`);
      await c.query(`ALTER DATABASE ${name} SET statement_timeout = '300ms'`);
      await c.query("CREATE TABLE held (id int)");
    });
    const reported: string[][] = [];
    const db = await open(bouncer.url(name), reported);
    const locker = new Client({ connectionString: serverUrl(name) });
    await locker.connect();
    try {
      expect(reported).toEqual([]);
      await locker.query("BEGIN; LOCK TABLE held IN ACCESS EXCLUSIVE MODE");
      const started = Date.now();
      await expect(db.primaryPool.query("SELECT * FROM held")).rejects.toThrow(/statement timeout/);
      expect(Date.now() - started).toBeLessThan(5000);
    } finally {
      await locker.end();
      await db.close();
    }
  });
});
