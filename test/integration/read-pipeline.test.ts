// TenantPool.read (db/tenant-pool.ts): one request's reads of one turn of the event loop go out
// together in one round trip (ReadBatch): one settings statement, their statements, one Sync. What a
// caller sees must not change: each read its own rows or its own error, in its own group's session.
// What changes is how many connections, writes and settings statements they take. Run through
// PgBouncer too (npm run test:pgbouncer).
import fc from "fast-check";
import { asGroup } from "../../src/db/session";
import { readOn, TenantPool, type ReadConfig } from "../../src/db/tenant-pool";
import { inRecord, type RequestRecord } from "../../src/observability/request";
import { startTestApp, type TestApp } from "../helpers/app";

let t: TestApp;
const A = () => t.manifest.groups.A;
const B = () => t.manifest.groups.B;
const behindPooler = Boolean(process.env.GCS_TEST_PGBOUNCER);

beforeAll(async () => {
  t = await startTestApp();
}, 120_000);

afterAll(async () => {
  await t?.close();
});

const pool = () => t.db.primaryPool as TenantPool;
/** Runs `fn` as one request would: its reads share that request's turn. */
const inRequest = <T>(fn: () => T): T => inRecord({ statements: 0, sqlMs: 0 } satisfies RequestRecord, fn);

const SEEN = `SELECT pg_backend_pid() AS pid, now()::text AS began, current_setting('gcs.group_id', true) AS "group",
  (SELECT count(*) FROM guest_profiles)::int AS visible,
  (SELECT count(*) FROM guest_profiles WHERE property_group_id <> $1::uuid)::int AS "foreign"`;

describe("a request's reads of one turn", () => {
  it("run in one transaction per group, each in its own group's session", async () => {
    const groups = [A(), B(), A(), B(), A(), A()];
    const results = await inRequest(() => Promise.all(groups.map((g) => asGroup(g.id, () => pool().read({ text: SEEN, values: [g.id] })))));
    results.forEach((r, i) => {
      expect(r.rows[0].group).toBe(groups[i].id);
      expect(r.rows[0].visible).toBeGreaterThan(0);
      expect(r.rows[0].foreign).toBe(0);
    });
    // One batch per group: one transaction (one now()) on one backend each. Behind a pooler that
    // refuses the settings' name, a batch goes again read by read until naming is off (db/errors.ts).
    if (behindPooler) return;
    for (const g of [A(), B()]) {
      const mine = results.filter((_, i) => groups[i] === g).map((r) => r.rows[0]);
      expect(new Set(mine.map((r) => r.began)).size).toBe(1);
      expect(new Set(mine.map((r) => r.pid)).size).toBe(1);
    }
  });

  it("outside a request, or off, each take their own connection as before", async () => {
    const groups = [A(), B(), A()];
    const results = await Promise.all(groups.map((g) => asGroup(g.id, () => readOn(pool(), { text: SEEN, values: [g.id] }))));
    results.forEach((r, i) => expect([r.rows[0].group, r.rows[0].foreign]).toEqual([groups[i].id, 0]));
    if (!behindPooler) expect(new Set(results.map((r) => r.rows[0].pid)).size).toBe(groups.length);
  });

  // Each read is one of these; a batch mixes them in any order.
  type Read = { kind: "value"; n: number } | { kind: "zero" } | { kind: "named"; n: number } | { kind: "badNamed" } | { kind: "otherGroup" };
  const kinds: fc.Arbitrary<Read>[] = [
    fc.integer({ min: -1000, max: 1000 }).map((n) => ({ kind: "value" as const, n })),
    fc.constant({ kind: "zero" as const }),
    fc.constant({ kind: "otherGroup" as const }),
    // A pooler before PgBouncer 1.21 refuses names: runStatement's fallback handles that, not read.
    ...(behindPooler ? [] : [fc.integer({ min: -1000, max: 1000 }).map((n) => ({ kind: "named" as const, n })), fc.constant({ kind: "badNamed" as const })]),
  ];
  const configOf = (r: Read): ReadConfig => {
    switch (r.kind) {
      case "value":
        return { text: "SELECT $1::int AS n", values: [r.n] };
      case "zero":
        return { text: "SELECT 1 / $1::int AS n", values: [0] };
      case "named":
        return { name: "gcs_test_pipelined", text: "SELECT $1::int + 1 AS n", values: [r.n] };
      case "badNamed":
        return { name: "gcs_test_pipelined_bad", text: "SELEC $1::int AS n", values: [1] };
      case "otherGroup":
        return { text: SEEN, values: [B().id] };
    }
  };

  it("each get their own answer or their own error, whatever fails beside them (property)", async () => {
    await fc.assert(
      fc.asyncProperty(fc.array(fc.oneof(...kinds), { minLength: 1, maxLength: 12 }), async (reads) => {
        const settled = await inRequest(() =>
          Promise.allSettled(reads.map((r) => (r.kind === "otherGroup" ? asGroup(B().id, () => pool().read(configOf(r))) : asGroup(A().id, () => pool().read(configOf(r)))))),
        );
        settled.forEach((s, i) => {
          const r = reads[i];
          if (r.kind === "zero") return expect(s.status === "rejected" && (s.reason as { code?: string }).code).toBe("22012");
          if (r.kind === "badNamed") return expect(s.status === "rejected" && (s.reason as { code?: string }).code).toBe("42601");
          expect(s.status).toBe("fulfilled");
          const row = (s as PromiseFulfilledResult<{ rows: Record<string, unknown>[] }>).value.rows[0];
          if (r.kind === "value") expect(row.n).toBe(r.n);
          else if (r.kind === "named") expect(row.n).toBe(r.n + 1);
          else expect([row.group, row.foreign]).toEqual([B().id, 0]);
        });
      }),
      { numRuns: 40 },
    );
    // Every connection went back: none is held by a batch that lost count.
    expect(pool().totalCount - pool().idleCount).toBe(0);
    expect(pool().waitingCount).toBe(0);
  });
});

describe("through the app", () => {
  let off: TestApp;
  beforeAll(async () => {
    off = await startTestApp({ GCS_PIPELINE_READS: "false" });
  }, 120_000);
  afterAll(async () => {
    await off?.close();
  });
  const bearer = () => `Bearer ${A().credentials.api_key}`;

  it("the MCP guest context answers the same with reads pipelined and not", async () => {
    const call = (app: TestApp) =>
      app.api
        .post("/mcp")
        .set("Authorization", bearer())
        .set("Accept", "application/json, text/event-stream")
        .send({ jsonrpc: "2.0", id: 1, method: "tools/call", params: { name: "guest_context", arguments: { master_profile_id: A().master_with_two_guests } } });
    const [on, plain] = [await call(t), await call(off)];
    expect(on.status).toBe(200);
    expect(on.body.result.structuredContent.found).toBe(true);
    expect(on.body).toEqual(plain.body);
    expect(on.headers["x-sql-statements"]).toBe(plain.headers["x-sql-statements"]);
  });

  // The page and its total are read side by side (graphql/resolvers/master-profiles.ts), so they
  // share a batch: the kept total, a filtered count, and a later page that carries no total. Each app
  // signs its cursors with its own secret: compare what they carry.
  it("master profiles with their total answer the same with reads pipelined and not", async () => {
    const get = (app: TestApp, query: string) => app.api.get(`/v1/master-profiles?${query}`).set("Authorization", bearer());
    const unsigned = (body: { next_cursor?: string | null }) => ({ ...body, next_cursor: body.next_cursor?.split(".")[0] ?? null });
    const first = await get(t, "limit=5&include_total=true");
    expect(first.status).toBe(200);
    expect(first.body.total_count).toBeGreaterThan(5);
    expect(first.body.data).toHaveLength(5);
    const given = encodeURIComponent(first.body.data[0].given_name);
    for (const query of ["limit=5&include_total=true", `limit=100&include_total=true&q=${given}`]) {
      const [on, plain] = [await get(t, query), await get(off, query)];
      expect(on.status).toBe(200);
      expect(unsigned(on.body)).toEqual(unsigned(plain.body));
      expect(on.headers["x-sql-statements"]).toBe(plain.headers["x-sql-statements"]);
    }
    const filtered = await get(t, `limit=100&include_total=true&q=${given}`);
    expect(filtered.body.total_count).toBeGreaterThanOrEqual(1);
    expect(filtered.body.total_count).toBeLessThan(first.body.total_count);
    const later = async (app: TestApp) => {
      const page = await get(app, "limit=5&include_total=true");
      return get(app, `limit=5&include_total=true&cursor=${encodeURIComponent(page.body.next_cursor)}`);
    };
    const [on, plain] = [await later(t), await later(off)];
    expect(on.status).toBe(200);
    expect(on.body).not.toHaveProperty("total_count");
    expect(on.body.data.length).toBeGreaterThan(0);
    expect(unsigned(on.body)).toEqual(unsigned(plain.body));
  });
});
