// POST /v1/tables/{id}/destinations/{provider}/pause|resume (spec 3.2, 4.2, 4.3).
import { randomUUID } from "node:crypto";
import { Client } from "pg";
import { addTableMembers } from "../../../src/data/stores/table-membership";
import { flushDue } from "../../../src/delivery/engine";
import { deliverySecretKey } from "../../../src/delivery/run";
import { startStandIn } from "../../../src/delivery/standin";
import { startTestApp, type TestApp } from "../../helpers/app";

let t: TestApp;
beforeAll(async () => {
  // No per-credential cap here: the concurrency tests send 100 calls of one key at once (the cap has
  // its own test, credential-gate.test.ts).
  t = await startTestApp({ GCS_CREDENTIAL_MAX_CONCURRENCY: "0" });
});
afterAll(() => t.close());

const A = () => t.manifest.groups.A;
const B = () => t.manifest.groups.B;
const post = (path: string, token = A().credentials.api_key) => t.api.post(path).set("Authorization", `Bearer ${token}`);
const action = (op: "pause" | "resume", provider: string, table = A().tables.bound, token?: string) =>
  post(`/v1/tables/${table}/destinations/${provider}/${op}`, token);

const BINDING_FIELDS = [
  "id", "table_id", "connection_id", "provider", "remote_list_id", "state", "confirmed_seq", "log_head", "lag",
  "last_flush_at", "last_error", "last_flush_counts", "last_resync_run_handle", "guidance",
].sort();

describe("pause and resume", () => {
  it.each(["mailchimp", "klaviyo"])("%s: pause → paused, resume → active, the cursor kept, both idempotent", async (provider) => {
    const paused = await action("pause", provider);
    expect(paused.status).toBe(200);
    expect(Object.keys(paused.body)).toEqual(["data"]);
    expect(Object.keys(paused.body.data).sort()).toEqual(BINDING_FIELDS);
    expect(paused.body.data).toMatchObject({ table_id: A().tables.bound, provider, state: "paused" });
    expect(Object.keys(paused.body.data.last_flush_counts).sort()).toEqual(
      ["failed", "pushed", "removed", "skipped_no_consent_subscribe", "skipped_suppressed", "skipped_unresolved", "subscribed"],
    );
    expect(paused.body.data.guidance).toMatchObject({ consent_filter_field: "consent.email_marketing", recommends_consent_filter: true });

    const again = await action("pause", provider);
    expect(again.body.data.state).toBe("paused");
    expect(again.body.data.confirmed_seq).toBe(paused.body.data.confirmed_seq);

    const resumed = await action("resume", provider);
    expect(resumed.status).toBe(200);
    expect(resumed.body.data).toMatchObject({ state: "active", confirmed_seq: paused.body.data.confirmed_seq });
    expect((await action("resume", provider)).body.data.state).toBe("active");
  });

  it("while paused, log_head grows with membership changes and lag rises; confirmed_seq stays", async () => {
    const paused = (await action("pause", "mailchimp")).body.data;
    const guests = await t.admin.guestProfile.findMany({ where: { propertyGroupId: A().id }, orderBy: { createdAt: "desc" }, take: 3 });
    const added = await addTableMembers(t.db.primary, { tableId: A().tables.bound, propertyGroupId: A().id, memberIds: guests.map((g) => g.id) });
    expect(added.changed.length).toBeGreaterThan(0);
    const after = (await action("pause", "mailchimp")).body.data;
    expect(after.confirmed_seq).toBe(paused.confirmed_seq);
    expect(BigInt(after.log_head)).toBeGreaterThan(BigInt(paused.log_head));
    expect(after.lag).toBe(paused.lag + (Number(BigInt(after.log_head) - BigInt(paused.log_head))));
    expect(after.lag).toBe(Number(BigInt(after.log_head) - BigInt(after.confirmed_seq)));
    // Positions are per table, so lag counts exactly the changes not yet delivered.
    expect(after.lag - paused.lag).toBe(added.changed.length);
    const resumed = (await action("resume", "mailchimp")).body.data;
    expect(resumed).toMatchObject({ state: "active", confirmed_seq: paused.confirmed_seq, lag: after.lag });
  });

  it("50 concurrent pauses and 50 concurrent resumes: each answers the state it produced; the row ends in the last committed one", async () => {
    const binding = await t.admin.destinationBinding.findFirstOrThrow({ where: { tableId: A().tables.bound, provider: "klaviyo" } });
    // A trigger numbers every committed UPDATE of this row: the row lock is held from the UPDATE to
    // its commit, so the numbering is the commit order.
    const pg = new Client({ connectionString: t.databaseUrl });
    await pg.connect();
    try {
      await pg.query(`CREATE TABLE test_transitions (seq bigserial PRIMARY KEY, state text NOT NULL)`);
      await pg.query(`CREATE FUNCTION test_log_transition() RETURNS trigger LANGUAGE plpgsql AS $$
        BEGIN INSERT INTO test_transitions (state) VALUES (NEW.state); RETURN NEW; END $$`);
      await pg.query(`CREATE TRIGGER test_log_transition AFTER UPDATE ON destination_bindings FOR EACH ROW
        WHEN (NEW.id = '${binding.id}') EXECUTE FUNCTION test_log_transition()`);

      const ops = Array.from({ length: 100 }, (_, i) => (i % 2 ? "resume" : "pause") as "pause" | "resume");
      const results = await Promise.all(ops.map((op) => action(op, "klaviyo")));
      const expected = { pause: "paused", resume: "active" };
      const wrong = results.flatMap((r, i) => (r.status === 200 && r.body.data.state === expected[ops[i]] ? [] : [`${ops[i]} → ${r.status} ${r.body.data?.state}`]));
      expect(wrong).toEqual([]);

      const log = (await pg.query<{ state: string }>(`SELECT state FROM test_transitions ORDER BY seq`)).rows.map((r) => r.state);
      expect(log).toHaveLength(100); // one statement per request, each applied exactly once
      expect(log.filter((s) => s === "paused")).toHaveLength(50);
      const row = await t.admin.destinationBinding.findUniqueOrThrow({ where: { id: binding.id } });
      expect(row.state).toBe(log[log.length - 1]);
      expect(row.confirmedSeq).toBe(binding.confirmedSeq);
    } finally {
      await pg.query(`DROP TRIGGER IF EXISTS test_log_transition ON destination_bindings; DROP FUNCTION IF EXISTS test_log_transition(); DROP TABLE IF EXISTS test_transitions`);
      await pg.end();
    }
  });

  it("a pause or resume waits for a flush holding the row lock, then applies to the row the flush committed", async () => {
    const binding = await t.admin.destinationBinding.findFirstOrThrow({ where: { tableId: A().tables.bound, provider: "klaviyo" } });
    await action("resume", "klaviyo");
    const flushLike = new Client({ connectionString: t.databaseUrl });
    await flushLike.connect();
    try {
      // As the engine does: lock the binding, then record a permanent failure (state error, backoff).
      await flushLike.query("BEGIN");
      await flushLike.query("SELECT 1 FROM destination_bindings WHERE id = $1 FOR UPDATE", [binding.id]);
      await flushLike.query("UPDATE destination_bindings SET state = 'error', failure_count = 4, next_attempt_at = now() + interval '1 hour' WHERE id = $1", [binding.id]);
      let settled = false;
      const resume = action("resume", "klaviyo").then((r) => ((settled = true), r));
      await new Promise((r) => setTimeout(r, 300));
      expect(settled).toBe(false); // waiting for the lock
      await flushLike.query("COMMIT");
      expect((await resume).body.data).toMatchObject({ state: "active", last_error: null });
      const row = await t.admin.destinationBinding.findUniqueOrThrow({ where: { id: binding.id } });
      expect(row).toMatchObject({ state: "active", failureCount: 0, nextAttemptAt: null });

      // Resuming a binding that is already active keeps its backoff (a transient failure's retry time).
      const retryAt = new Date(Date.now() + 60_000);
      await t.admin.destinationBinding.update({ where: { id: binding.id }, data: { failureCount: 2, nextAttemptAt: retryAt } });
      expect((await action("resume", "klaviyo")).body.data.state).toBe("active");
      expect(await t.admin.destinationBinding.findUniqueOrThrow({ where: { id: binding.id } })).toMatchObject({ failureCount: 2, nextAttemptAt: retryAt });

      await flushLike.query("BEGIN");
      await flushLike.query("SELECT 1 FROM destination_bindings WHERE id = $1 FOR UPDATE", [binding.id]);
      const pause = action("pause", "klaviyo");
      await new Promise((r) => setTimeout(r, 100));
      await flushLike.query("UPDATE destination_bindings SET state = 'error' WHERE id = $1", [binding.id]);
      await flushLike.query("COMMIT");
      expect((await pause).body.data.state).toBe("paused");
    } finally {
      await flushLike.query("ROLLBACK").catch(() => undefined);
      await flushLike.end();
      await action("resume", "klaviyo");
    }
  });

  it("404 not_found for a table without a binding, an unknown provider, another group's table or a missing table", async () => {
    for (const res of [
      await action("pause", "mailchimp", A().tables.unbound),
      await action("pause", "hubspot"),
      await action("resume", "mailchimp", B().tables.bound),
      await action("resume", "klaviyo", "00000000-0000-4000-8000-000000000000"),
    ]) {
      expect(res.status).toBe(404);
      expect(res.body.error).toBe("not_found");
    }
    const foreign = await t.admin.destinationBinding.findFirstOrThrow({ where: { tableId: B().tables.bound, provider: "mailchimp" } });
    expect(foreign.state).toBe("active");
    expect((await action("pause", "mailchimp", "not-a-uuid")).status).toBe(400);
  });

  it("403 forbidden with scope write:tables for credentials that only read", async () => {
    for (const token of [A().credentials.api_key_pinned.token, A().credentials.api_key_limited]) {
      const res = await action("pause", "mailchimp", A().tables.bound, token);
      expect(res.status).toBe(403);
      expect(res.body).toMatchObject({ error: "forbidden", scope: "write:tables" });
    }
    for (const token of [A().credentials.partner_token, A().credentials.session_token, A().credentials.static_token]) {
      expect((await action("resume", "mailchimp", A().tables.bound, token)).status).toBe(200);
    }
    const res = await action("pause", "mailchimp", A().tables.bound, A().credentials.mcp_token);
    expect(res.body).toMatchObject({ error: "forbidden", scope: "write:tables" });
  });

  it("GET /v1/tables/{id} shows the bindings; a GET on the action path is 405 or 404, never a change", async () => {
    const res = await t.api.get(`/v1/tables/${A().tables.bound}`).set("Authorization", `Bearer ${A().credentials.api_key}`);
    expect(res.body.data.bindings.map((b: { provider: string }) => b.provider).sort()).toEqual(["klaviyo", "mailchimp"]);
    const get = await t.api.get(`/v1/tables/${A().tables.bound}/destinations/mailchimp/pause`).set("Authorization", `Bearer ${A().credentials.api_key}`);
    expect(get.status).toBe(405);
  });

  it("end to end: pause over REST holds deliveries back; resume delivers exactly the missed changes, once", async () => {
    const standIn = await startStandIn();
    try {
      const destinations = { mailchimp: { baseUrl: standIn.url }, klaviyo: { baseUrl: standIn.url } };
      const secretKey = await deliverySecretKey(t.services.config, t.db.primary);
      const flush = () => flushDue(t.db.primary, { secretKey, destinations });
      await action("resume", "mailchimp");
      await action("resume", "klaviyo");
      await flush(); // the fixture's backlog: catch up first
      standIn.reset();

      // Two new guests who granted e-mail marketing, one who withdrew after granting.
      const lookup = await t.admin.guestProfile.findUniqueOrThrow({ where: { id: A().guest_lookup.guest_id } });
      const guests = ["granted", "granted", "withdrawn"].map((last, i) => ({ id: randomUUID(), email: `e2e.${i}.${randomUUID()}@example.org`, last }));
      for (const g of guests) {
        await t.admin.guestProfile.create({
          data: { id: g.id, propertyGroupId: A().id, propertyId: lookup.propertyId, integrationId: lookup.integrationId, sourceId: `e2e-${g.id}`, email: g.email },
        });
        const statuses = g.last === "granted" ? ["granted"] : ["granted", "withdrawn"];
        await t.admin.consentObservation.createMany({
          data: statuses.map((status, k) => ({
            id: randomUUID(), propertyGroupId: A().id, contactType: "email" as const, contactValue: g.email, purpose: "email_marketing",
            channel: "email", status: status as "granted" | "withdrawn", source: "test", observedAt: new Date(Date.UTC(2026, 0, 1 + k)),
          })),
        });
      }

      const paused = (await action("pause", "mailchimp")).body.data;
      await addTableMembers(t.db.primary, { tableId: A().tables.bound, propertyGroupId: A().id, memberIds: guests.map((g) => g.id) });
      await flush();
      const toMailchimp = () => standIn.received().filter((r) => r.provider === "mailchimp");
      expect(toMailchimp()).toEqual([]);
      const klaviyo = standIn.received().filter((r) => r.provider === "klaviyo").map((r) => r.email).sort();
      expect(klaviyo).toEqual([guests[0].email, guests[1].email].sort());
      const stillPaused = (await action("pause", "mailchimp")).body.data;
      expect(stillPaused.confirmed_seq).toBe(paused.confirmed_seq);
      expect(stillPaused.lag).toBeGreaterThan(0);

      const resumed = (await action("resume", "mailchimp")).body.data;
      expect(resumed).toMatchObject({ state: "active", confirmed_seq: paused.confirmed_seq });
      await flush();
      await flush();
      expect(toMailchimp().map((r) => ({ op: r.op, email: r.email })).sort((a, b) => a.email.localeCompare(b.email))).toEqual(
        [guests[0], guests[1]].map((g) => ({ op: "subscribe", email: g.email })).sort((a, b) => a.email.localeCompare(b.email)),
      );
      const done = (await action("resume", "mailchimp")).body.data;
      expect(done.lag).toBe(0);
      expect(done.last_flush_counts.skipped_suppressed).toBe(1);
      expect(done.last_flush_counts.subscribed).toBe(2);
    } finally {
      await standIn.close();
    }
  });
});
