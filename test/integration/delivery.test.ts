// Table delivery on real PostgreSQL: pause/resume, consent precedence at flush time, transient and
// permanent destination failures, several engines at once. The destinations are the local stand-in;
// group A's connections are re-sealed under the test key, group B's stay sealed under the fixture's
// generated key, which the engine here does not hold.
import { randomUUID } from "node:crypto";
import { createData } from "../../src/data";
import { scopedPrisma } from "../../src/data/tenant";
import { createPrismaClient } from "../../src/db/database";
import { bindingView, pauseBinding, resumeBinding } from "../../src/delivery/bindings";
import { flushDue, startDeliveryWorker, type FlushOptions, type FlushReport } from "../../src/delivery/engine";
import { addTableMembers, removeTableMembers } from "../../src/data/stores/table-membership";
import { loadKeyring, seal } from "../../src/delivery/secret-box";
import { startStandIn, type ReceivedOperation, type StandIn } from "../../src/delivery/standin";
import type { PrismaClient } from "../../src/generated/prisma/client";
import { createLogger } from "../../src/logger";
import { startTestApp, type TestApp } from "../helpers/app";

const PASSPHRASE = "delivery-test-passphrase";
const KEYS = { mailchimp: "0123456789abcdef0123456789abcdef-us21", klaviyo: "pk_test_delivery_0123456789" };
type Provider = keyof typeof KEYS;

let t: TestApp;
let standIn: StandIn;
let db: PrismaClient;
let engineOpts: FlushOptions;
let catchUp: { reports: FlushReport[]; received: ReceivedOperation[] };

const A = () => t.manifest.groups.A;
const tableId = () => A().tables.bound;
const scoped = (groupId = A().id) => scopedPrisma(t.db.primary, { propertyGroupId: groupId, propertyId: null });

beforeAll(async () => {
  // No background worker: each test runs the engine itself.
  t = await startTestApp({ GCS_DELIVERY_WORKER: "false" });
  db = t.admin;
  standIn = await startStandIn({ apiKeys: Object.values(KEYS) });
  engineOpts = {
    secretKey: await loadKeyring({ current: PASSPHRASE, salt: "delivery-test-salt" }),
    destinations: { mailchimp: { baseUrl: standIn.url }, klaviyo: { baseUrl: standIn.url } },
  };
  for (const provider of Object.keys(KEYS) as Provider[]) {
    const connection = await db.destinationConnection.findFirstOrThrow({ where: { propertyGroupId: A().id, provider } });
    await db.destinationConnection.update({
      where: { id: connection.id },
      data: { secretCiphertext: seal(KEYS[provider], connection.id, engineOpts.secretKey) },
    });
  }
  // The fixture bindings lag behind their log: the first flush catches up (checked in a test).
  catchUp = { reports: await flush(), received: standIn.received() };
});

// Every test starts with the bound table's bindings active and caught up, and a quiet stand-in.
beforeEach(async () => {
  standIn.reset();
  await db.destinationBinding.updateMany({ where: { tableId: tableId() }, data: { state: "active", failureCount: 0, nextAttemptAt: null } });
  await flush();
  standIn.reset();
});
afterAll(async () => {
  await standIn.close();
  await t.close();
});

// ---------------------------------------------------------------------------------------------
// Helpers
// ---------------------------------------------------------------------------------------------

const flush = (extra: Partial<FlushOptions> = {}) => flushDue(db, { ...engineOpts, ...extra });
const reportOf = (reports: FlushReport[], provider: Provider) =>
  reports.find((r) => r.provider === provider && r.tableId === tableId());
const view = async (provider: Provider) => {
  const rows = await createData(t.db, { propertyGroupId: A().id, propertyId: null }).destinations.ofTables([tableId()]);
  return bindingView(rows.find((row) => row.provider === provider)!);
};
const add = (ids: string[]) => addTableMembers(db, { tableId: tableId(), propertyGroupId: A().id, memberIds: ids });
const remove = (ids: string[]) => removeTableMembers(db, { tableId: tableId(), propertyGroupId: A().id, memberIds: ids });
const ops = (provider: Provider, op?: ReceivedOperation["op"]) =>
  standIn.received().filter((r) => r.provider === provider && (!op || r.op === op)).map((r) => r.email);

/** Changes of the bound table the binding has not confirmed yet. */
async function pendingChanges(provider: Provider): Promise<number> {
  const v = await view(provider);
  return db.tableMembershipChange.count({ where: { tableId: tableId(), seq: { gt: BigInt(v.confirmed_seq) } } });
}

let guestNumber = 0;
/** A new guest of group A with these email-marketing observations, oldest first. */
async function newGuest(consent: ("granted" | "withdrawn" | "denied")[] = ["granted"], withEmail = true) {
  const n = ++guestNumber;
  const email = withEmail ? `delivery.guest.${n}@example.org` : null;
  const source = await db.guestProfile.findUniqueOrThrow({ where: { id: A().guest_lookup.guest_id } });
  const id = randomUUID();
  await db.guestProfile.create({
    data: {
      id, propertyGroupId: A().id, propertyId: source.propertyId, integrationId: source.integrationId,
      sourceId: `delivery-${n}`, email, givenName: "Test", familyName: `Guest ${n}`,
    },
  });
  if (!email) return { id, email: "" };
  await db.consentObservation.createMany({
    data: consent.map((status, i) => ({
      id: randomUUID(), propertyGroupId: A().id, propertyId: source.propertyId, contactType: "email" as const,
      contactValue: email, purpose: "email_marketing", channel: "email", status, source: "test",
      observedAt: new Date(Date.UTC(2024, 0, 1 + i)),
    })),
  });
  return { id, email };
}

/** A guest of group A with this address that is not a member of the bound table. */
async function nonMemberWithEmail(email: string): Promise<string> {
  const members = await db.tableMember.findMany({ where: { tableId: tableId() }, select: { memberId: true } });
  const guest = await db.guestProfile.findFirstOrThrow({
    where: { propertyGroupId: A().id, email: { equals: email, mode: "insensitive" }, id: { notIn: members.map((m) => m.memberId) } },
  });
  return guest.id;
}

// ---------------------------------------------------------------------------------------------

describe("delivery engine", () => {
  it("catches up the fixture backlog; a connection secret that does not open puts the binding in error", async () => {
    const { reports, received } = catchUp;
    // Mailchimp confirmed half the fixture log: six adds (guests 24…39) and guest 1's add + remove
    // remain. One address is granted, guest 30's withdrawn, four have no observation.
    expect(reportOf(reports, "mailchimp")).toMatchObject({
      outcome: "delivered", batches: 1,
      counts: { pushed: 1, subscribed: 1, skipped_no_consent_subscribe: 4, skipped_suppressed: 1, skipped_unresolved: 0, removed: 0, failed: 0 },
    });
    expect(received.filter((r) => r.provider === "mailchimp").map((r) => r.op)).toEqual(["subscribe"]);
    // Klaviyo only missed guest 1's add + remove. Guest 1 shares its address with guest 0, still a
    // member, so no removal is sent; the cursor still moves to the head.
    expect(reportOf(reports, "klaviyo")).toMatchObject({ outcome: "delivered", counts: { pushed: 0, removed: 0 } });
    expect(received.filter((r) => r.provider === "klaviyo")).toEqual([]);
    for (const provider of ["mailchimp", "klaviyo"] as Provider[]) expect((await view(provider)).lag).toBe(0);
    // Guest 0's address (granted, then withdrawn) is neither subscribed nor removed anywhere.
    expect(received.map((r) => r.email)).not.toContain(A().consent_conflict.contact_value);

    // Group B's connections are sealed under a key the engine does not hold.
    const b = reports.filter((r) => r.propertyGroupId === t.manifest.groups.B.id);
    expect(b.length).toBe(2);
    for (const r of b) {
      expect(r).toMatchObject({ outcome: "permanent", error: "cannot decrypt connection secret" });
      const row = await db.destinationBinding.findUniqueOrThrow({ where: { id: r.bindingId } });
      expect(row).toMatchObject({ state: "error", lastError: "cannot decrypt connection secret" });
    }
    expect(await flush()).toEqual([]);
  });

  it("returns the spec's binding view", async () => {
    const v = await view("mailchimp");
    expect(Object.keys(v).sort()).toEqual([
      "confirmed_seq", "connection_id", "guidance", "id", "last_error", "last_flush_at", "last_flush_counts",
      "last_resync_run_handle", "lag", "log_head", "provider", "remote_list_id", "state", "table_id",
    ].sort());
    expect(v).toMatchObject({ table_id: tableId(), provider: "mailchimp", state: "active", lag: 0, last_error: null });
    expect(v.confirmed_seq).toMatch(/^\d+$/);
    expect(v.log_head).toBe(v.confirmed_seq);
    expect(v.last_flush_at).toMatch(/^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}\.\d{3}Z$/);
    expect(Object.keys(v.last_flush_counts).sort()).toEqual(
      ["failed", "pushed", "removed", "skipped_no_consent_subscribe", "skipped_suppressed", "skipped_unresolved", "subscribed"],
    );
    // The bound table is curated: no filter document, so the consent filter is recommended.
    expect(v.guidance).toEqual({
      recommends_consent_filter: true, consent_filter_field: "consent.email_marketing", consent_filter_present: false,
    });
  });

  it("pause keeps the cursor while the log grows; resume delivers exactly the missed changes, once", async () => {
    const paused = await pauseBinding(scoped(), { tableId: tableId(), provider: "mailchimp" });
    expect(paused).toMatchObject({ state: "paused", lag: 0 });
    expect(await pauseBinding(scoped(), { tableId: tableId(), provider: "mailchimp" })).toEqual(paused); // idempotent

    const guests = [await newGuest(), await newGuest()];
    await add(guests.map((g) => g.id));
    const reports = await flush();
    expect(reportOf(reports, "mailchimp")).toBeUndefined();
    expect(reportOf(reports, "klaviyo")).toMatchObject({ outcome: "delivered" });
    expect(ops("mailchimp")).toEqual([]);
    expect(ops("klaviyo", "subscribe").sort()).toEqual(guests.map((g) => g.email).sort());

    const whilePaused = await view("mailchimp");
    expect(whilePaused.confirmed_seq).toBe(paused!.confirmed_seq);
    expect(BigInt(whilePaused.log_head)).toBeGreaterThan(BigInt(paused!.log_head));
    // lag is in log seqs (one sequence for all tables), so other tables' changes can widen it.
    expect(whilePaused.lag).toBe(Number(BigInt(whilePaused.log_head) - BigInt(whilePaused.confirmed_seq)));
    expect(await pendingChanges("mailchimp")).toBe(2);

    const resumed = await resumeBinding(scoped(), { tableId: tableId(), provider: "mailchimp" });
    expect(resumed).toMatchObject({ state: "active", confirmed_seq: paused!.confirmed_seq, lag: whilePaused.lag });
    standIn.reset();
    expect(reportOf(await flush(), "mailchimp")).toMatchObject({ outcome: "delivered", batches: 1 });
    expect(ops("mailchimp", "subscribe").sort()).toEqual(guests.map((g) => g.email).sort());
    expect(ops("klaviyo")).toEqual([]);
    expect((await view("mailchimp")).lag).toBe(0);
    expect(await flush()).toEqual([]);
    expect(standIn.received()).toHaveLength(2);
  });

  it("pause and resume answer null outside the caller's scope or for a provider without a binding", async () => {
    const ref = { tableId: tableId(), provider: "mailchimp" };
    expect(await pauseBinding(scoped(t.manifest.groups.B.id), ref)).toBeNull();
    expect(await resumeBinding(scoped(t.manifest.groups.B.id), ref)).toBeNull();
    expect(await pauseBinding(scoped(), { ...ref, provider: "sendgrid" })).toBeNull();
    expect(await pauseBinding(scoped(), { ...ref, tableId: randomUUID() })).toBeNull();
    expect(await pauseBinding(scoped(), { ...ref, tableId: A().tables.unbound })).toBeNull();
    expect((await view("mailchimp")).state).toBe("active"); // untouched
  });

  it("follows the state table: pause from error, resume from error, resume of an active binding is a no-op", async () => {
    const ref = { tableId: tableId(), provider: "klaviyo" };
    const before = await view("klaviyo");
    await db.destinationBinding.update({ where: { id: before.id }, data: { state: "error", failureCount: 3, nextAttemptAt: new Date(Date.now() + 60_000) } });
    expect(await pauseBinding(scoped(), ref)).toMatchObject({ state: "paused" });
    expect(await resumeBinding(scoped(), ref)).toMatchObject({ state: "active" });
    await db.destinationBinding.update({ where: { id: before.id }, data: { state: "error" } });
    expect(await resumeBinding(scoped(), ref)).toMatchObject({ state: "active", confirmed_seq: before.confirmed_seq });
    const row = await db.destinationBinding.findUniqueOrThrow({ where: { id: before.id } });
    expect(row).toMatchObject({ failureCount: 0, nextAttemptAt: null });
    const again = await resumeBinding(scoped(), ref);
    expect(again).toEqual(await view("klaviyo"));
    expect(again!.confirmed_seq).toBe(before.confirmed_seq);
  });

  it("applies consent precedence per address at flush time, and sends removals", async () => {
    const conflicted = await nonMemberWithEmail(A().consent_conflict.contact_value);
    const grantedOnly = await nonMemberWithEmail(A().consent_granted_only.contact_value);
    const noConsent = await newGuest([]);
    const noEmail = await newGuest(["granted"], false);
    await add([conflicted, grantedOnly, noConsent.id, noEmail.id]);

    const reports = await flush();
    const expected = {
      pushed: 1, subscribed: 1, skipped_suppressed: 1, skipped_no_consent_subscribe: 1, skipped_unresolved: 1, removed: 0, failed: 0,
    };
    for (const provider of ["mailchimp", "klaviyo"] as Provider[]) {
      expect(reportOf(reports, provider)!.counts).toEqual(expected);
      expect((await view(provider)).last_flush_counts).toEqual(expected);
      expect(ops(provider)).toEqual([A().consent_granted_only.contact_value]);
    }

    standIn.reset();
    await remove([grantedOnly]);
    const removal = await flush();
    for (const provider of ["mailchimp", "klaviyo"] as Provider[]) {
      expect(reportOf(removal, provider)!.counts).toMatchObject({ pushed: 1, removed: 1, subscribed: 0 });
      expect(standIn.received().filter((r) => r.provider === provider)).toEqual([
        { provider, listId: (await view(provider)).remote_list_id, op: "remove", email: A().consent_granted_only.contact_value },
      ]);
    }

    // The conflicted guest shares its address with guest 0, still a member: no removal is sent.
    standIn.reset();
    await remove([conflicted]);
    const kept = await flush();
    expect(reportOf(kept, "mailchimp")).toMatchObject({ outcome: "delivered", counts: { removed: 0, pushed: 0 } });
    expect(standIn.received()).toEqual([]);
    expect((await view("mailchimp")).lag).toBe(0);
  });

  it("counts a member the destination rejects as failed and still advances", async () => {
    const [ok, bad] = [await newGuest(), await newGuest()];
    standIn.rejectEmails([bad.email]);
    await add([ok.id, bad.id]);
    const r = reportOf(await flush(), "mailchimp")!;
    expect(r.counts).toMatchObject({ subscribed: 1, pushed: 1, failed: 1 });
    expect((await view("mailchimp")).lag).toBe(0);
  });

  it("transient failure: cursor kept, backoff set, then delivered once on retry", async () => {
    const guest = await newGuest();
    const t0 = new Date();
    standIn.failNext(1, 503, { provider: "mailchimp" });
    await add([guest.id]);
    const before = await view("mailchimp");

    const first = await flush({ now: () => t0, random: () => 1 - Number.EPSILON });
    expect(reportOf(first, "mailchimp")).toMatchObject({ outcome: "transient" });
    let row = await db.destinationBinding.findUniqueOrThrow({ where: { id: before.id } });
    expect(row.confirmedSeq.toString()).toBe(before.confirmed_seq);
    expect(row.failureCount).toBe(1);
    expect(row.nextAttemptAt!.getTime()).toBe(t0.getTime() + 5_000);
    expect(row.lastError).toMatch(/503/);
    expect(row.lastError).not.toContain(KEYS.mailchimp);

    expect(reportOf(await flush({ now: () => t0 }), "mailchimp")).toBeUndefined(); // still backing off
    const retry = await flush({ now: () => new Date(t0.getTime() + 5_001) });
    expect(reportOf(retry, "mailchimp")).toMatchObject({ outcome: "delivered" });
    expect(ops("mailchimp")).toEqual([guest.email]);
    row = await db.destinationBinding.findUniqueOrThrow({ where: { id: before.id } });
    expect(row).toMatchObject({ failureCount: 0, nextAttemptAt: null, lastError: null });
    expect((await view("mailchimp")).lag).toBe(0);
  });

  it("a 429 backs off for at least its Retry-After", async () => {
    const guest = await newGuest();
    const t0 = new Date();
    standIn.failNext(1, 429, { provider: "klaviyo", retryAfter: 60 });
    await add([guest.id]);
    expect(reportOf(await flush({ now: () => t0 }), "klaviyo")).toMatchObject({ outcome: "transient" });
    const row = await db.destinationBinding.findUniqueOrThrow({ where: { tableId_provider: { tableId: tableId(), provider: "klaviyo" } } });
    expect(row.nextAttemptAt!.getTime()).toBe(t0.getTime() + 60_000);
    expect(reportOf(await flush({ now: () => new Date(t0.getTime() + 60_001) }), "klaviyo")).toMatchObject({ outcome: "delivered" });
    expect(ops("klaviyo")).toEqual([guest.email]);
  });

  it("permanent failure: binding in error until resumed, then delivery continues from the cursor", async () => {
    const guest = await newGuest();
    standIn.failNext(1, 401, { provider: "mailchimp" });
    await add([guest.id]);
    expect(reportOf(await flush(), "mailchimp")).toMatchObject({ outcome: "permanent" });
    const failed = await view("mailchimp");
    expect(failed.state).toBe("error");
    expect(await pendingChanges("mailchimp")).toBe(1);
    expect(failed.last_error).toMatch(/401/);
    expect(reportOf(await flush(), "mailchimp")).toBeUndefined();
    expect(ops("mailchimp")).toEqual([]);

    expect(await resumeBinding(scoped(), { tableId: tableId(), provider: "mailchimp" })).toMatchObject({ state: "active", lag: failed.lag });
    expect(reportOf(await flush(), "mailchimp")).toMatchObject({ outcome: "delivered" });
    expect(ops("mailchimp")).toEqual([guest.email]);
    expect(await view("mailchimp")).toMatchObject({ state: "active", lag: 0, last_error: null });
  });

  it("a connection secret copied onto another connection does not open there; a previous key still opens", async () => {
    const [mailchimp, klaviyo] = await Promise.all(
      (["mailchimp", "klaviyo"] as Provider[]).map((provider) => db.destinationConnection.findFirstOrThrow({ where: { propertyGroupId: A().id, provider } })),
    );
    const guest = await newGuest();
    await add([guest.id]);
    try {
      // Klaviyo's row now holds Mailchimp's ciphertext: sealed under the right key, for another connection.
      await db.destinationConnection.update({ where: { id: klaviyo.id }, data: { secretCiphertext: mailchimp.secretCiphertext } });
      const reports = await flush();
      expect(reportOf(reports, "klaviyo")).toMatchObject({ outcome: "permanent", error: "cannot decrypt connection secret" });
      expect(reportOf(reports, "mailchimp")).toMatchObject({ outcome: "delivered" });

      // Sealed under an older key that the engine's keyring still lists as previous: delivered.
      const older = await loadKeyring({ current: "an older delivery passphrase", salt: "delivery-test-salt" });
      await db.destinationConnection.update({ where: { id: klaviyo.id }, data: { secretCiphertext: seal(KEYS.klaviyo, klaviyo.id, older) } });
      await resumeBinding(scoped(), { tableId: tableId(), provider: "klaviyo" });
      const withoutOlder = reportOf(await flush(), "klaviyo");
      expect(withoutOlder).toMatchObject({ outcome: "permanent" });
      await resumeBinding(scoped(), { tableId: tableId(), provider: "klaviyo" });
      const ring = await loadKeyring({ current: PASSPHRASE, previous: ["an older delivery passphrase"], salt: "delivery-test-salt" });
      expect(reportOf(await flush({ secretKey: ring }), "klaviyo")).toMatchObject({ outcome: "delivered" });
      expect(ops("klaviyo")).toEqual([guest.email]);
    } finally {
      await db.destinationConnection.update({ where: { id: klaviyo.id }, data: { secretCiphertext: klaviyo.secretCiphertext } });
    }
  });

  it("a pause mid-flush answers at once; no call starts after it; resume goes on without re-sending", async () => {
    // Twelve members, then their removal: Mailchimp deletes one address per call, four at a time.
    const guests = [];
    for (let i = 0; i < 12; i++) guests.push(await newGuest());
    await add(guests.map((g) => g.id));
    await flush();
    await remove(guests.map((g) => g.id));
    standIn.reset();
    standIn.setDelay(250);
    const starts: number[] = [];
    let fourStarted!: () => void;
    const started = new Promise<void>((resolve) => (fourStarted = resolve));
    const spyFetch: typeof fetch = (url, init) => {
      if (String(url).includes("/3.0/")) {
        starts.push(performance.now());
        if (starts.length === 4) fourStarted();
      }
      return fetch(url, init);
    };
    const before = await view("mailchimp");
    const flushing = flush({ fetch: spyFetch });
    await started;
    const asked = performance.now();
    const paused = await pauseBinding(scoped(), { tableId: tableId(), provider: "mailchimp" });
    const answered = performance.now();
    expect(answered - asked).toBeLessThan(1000);
    expect(paused).toMatchObject({ state: "paused" });
    const report = reportOf(await flushing, "mailchimp")!;
    expect(report.outcome).toBe("stopped");
    expect(starts.every((at) => at < answered)).toBe(true);
    expect(starts.length).toBeLessThan(12);
    // The calls in flight finished and were recorded: the cursor moved, but not to the end.
    const stopped = await view("mailchimp");
    expect(BigInt(stopped.confirmed_seq)).toBeGreaterThan(BigInt(before.confirmed_seq));
    expect(stopped.lag).toBeGreaterThan(0);
    expect(ops("mailchimp", "remove")).toHaveLength(starts.length);

    standIn.setDelay(0);
    await resumeBinding(scoped(), { tableId: tableId(), provider: "mailchimp" });
    expect(reportOf(await flush(), "mailchimp")).toMatchObject({ outcome: "delivered" });
    expect(ops("mailchimp", "remove").sort()).toEqual(guests.map((g) => g.email).sort()); // each once
    expect((await view("mailchimp")).lag).toBe(0);
  });

  it("a slow destination makes steady progress: confirmed_seq moves while the flush runs", async () => {
    const guests = [];
    for (let i = 0; i < 16; i++) guests.push(await newGuest());
    await add(guests.map((g) => g.id));
    await flush();
    await remove(guests.map((g) => g.id));
    standIn.reset();
    standIn.setDelay(150);
    const seen = new Set<string>();
    const flushing = flush();
    let done = false;
    void flushing.finally(() => (done = true));
    while (!done) {
      seen.add((await view("mailchimp")).confirmed_seq);
      await new Promise((r) => setTimeout(r, 40));
    }
    expect(reportOf(await flushing, "mailchimp")).toMatchObject({ outcome: "delivered" });
    // Sixteen deletes, four at a time: the cursor was seen at several positions on the way.
    expect(seen.size).toBeGreaterThanOrEqual(3);
    expect(ops("mailchimp", "remove").sort()).toEqual(guests.map((g) => g.email).sort());
  });

  it("a failure mid-batch keeps what the destination confirmed; the retry sends only the rest", async () => {
    const guests = [];
    for (let i = 0; i < 10; i++) guests.push(await newGuest());
    await add(guests.map((g) => g.id));
    await flush();
    await remove(guests.map((g) => g.id));
    standIn.reset();
    const before = await view("mailchimp");
    // Deletes run four at a time: the third call fails slowly while the calls after it go through,
    // so the destination confirms addresses beyond the first one it did not.
    let calls = 0;
    const failingFetch: typeof fetch = async (url, init) => {
      if (String(url).includes("/3.0/") && ++calls === 3) {
        await new Promise((r) => setTimeout(r, 300));
        return new Response(JSON.stringify({ title: "Service Unavailable" }), { status: 503 });
      }
      return fetch(url, init);
    };
    const t0 = new Date();
    const first = reportOf(await flush({ fetch: failingFetch, now: () => t0 }), "mailchimp")!;
    expect(first.outcome).toBe("transient");
    const failed = await view("mailchimp");
    expect(failed.last_error).toMatch(/503/);
    expect(failed.lag).toBeGreaterThan(0);
    expect(BigInt(failed.confirmed_seq)).toBeGreaterThan(BigInt(before.confirmed_seq));
    const sentFirst = ops("mailchimp", "remove");
    expect(sentFirst.length).toBeGreaterThanOrEqual(5);
    const row = await db.destinationBinding.findUniqueOrThrow({ where: { id: before.id } });
    expect(Object.keys(row.sentAhead as object).length).toBe(sentFirst.length - 2); // all but the two before the failure

    const retry = reportOf(await flush({ now: () => new Date(t0.getTime() + 6 * 60_000) }), "mailchimp")!;
    expect(retry.outcome).toBe("delivered");
    // Every address exactly once over both flushes: nothing the destination confirmed went again.
    expect(ops("mailchimp", "remove").sort()).toEqual(guests.map((g) => g.email).sort());
    expect(await view("mailchimp")).toMatchObject({ lag: 0, last_error: null });
  });

  it("flushes a long backlog batch by batch; maxBatches bounds one call", async () => {
    const guests = [];
    for (let i = 0; i < 12; i++) guests.push(await newGuest());
    await add(guests.map((g) => g.id));
    const first = reportOf(await flush({ batchSize: 5, maxBatches: 2 }), "mailchimp")!;
    expect(first).toMatchObject({ outcome: "delivered", batches: 2 });
    expect(first.counts.subscribed).toBe(10);
    expect(await pendingChanges("mailchimp")).toBe(2);
    const rest = reportOf(await flush({ batchSize: 5 }), "mailchimp")!;
    expect(rest).toMatchObject({ outcome: "delivered", batches: 1 });
    expect((await view("mailchimp")).lag).toBe(0);
    expect(ops("mailchimp").sort()).toEqual(guests.map((g) => g.email).sort());
  });

  it("two engines on two clients deliver each change exactly once", async () => {
    const guests = [];
    for (let i = 0; i < 45; i++) guests.push(await newGuest());
    for (let i = 0; i < 45; i += 15) await add(guests.slice(i, i + 15).map((g) => g.id));
    const clients = [createPrismaClient(t.databaseUrl, 2), createPrismaClient(t.databaseUrl, 2)];
    try {
      standIn.setDelay(5);
      const runs = await Promise.all(clients.map((c) => flushDue(c, { ...engineOpts, batchSize: 4 })));
      // Both engines did some of the work.
      expect(runs.every((r) => r.length > 0)).toBe(true);
    } finally {
      await Promise.all(clients.map((c) => c.$disconnect()));
    }
    const expected = guests.map((g) => g.email).sort();
    for (const provider of ["mailchimp", "klaviyo"] as Provider[]) {
      expect(ops(provider, "subscribe").sort()).toEqual(expected);
      expect((await view(provider)).lag).toBe(0);
    }
  });
});

describe("delivery worker", () => {
  it("polls until stopped, and does nothing after stop() resolves", async () => {
    const worker = startDeliveryWorker({ ...engineOpts, prisma: db, logger: createLogger("silent"), intervalMs: 20 });
    const first = await newGuest();
    await add([first.id]);
    const deadline = Date.now() + 10_000;
    while (ops("mailchimp").length === 0 && Date.now() < deadline) await new Promise((r) => setTimeout(r, 20));
    await worker.stop();
    expect(ops("mailchimp")).toEqual([first.email]);
    const second = await newGuest();
    await add([second.id]);
    await new Promise((r) => setTimeout(r, 200));
    expect(ops("mailchimp")).toEqual([first.email]);
  });
});

describe("membership write path", () => {
  it("two concurrent adds of one member log one change", async () => {
    const g = await newGuest();
    const other = createPrismaClient(t.databaseUrl, 1);
    try {
      const input = { tableId: tableId(), propertyGroupId: A().id, memberIds: [g.id] };
      const results = await Promise.all([addTableMembers(db, input), addTableMembers(other, input)]);
      expect(results.map((r) => r.changed.length).sort()).toEqual([0, 1]);
    } finally {
      await other.$disconnect();
    }
    expect(await db.tableMembershipChange.count({ where: { tableId: tableId(), memberId: g.id } })).toBe(1);
  });

  it("logs one change per real add or remove, none for no-ops", async () => {
    const g = await newGuest();
    const count = () => db.tableMembershipChange.count({ where: { tableId: tableId(), memberId: g.id } });
    expect((await add([g.id, g.id])).changed).toEqual([g.id]);
    expect((await add([g.id])).changed).toEqual([]);
    expect(await count()).toBe(1);
    expect((await remove([g.id])).changed).toEqual([g.id]);
    expect((await remove([g.id])).changed).toEqual([]);
    const log = await db.tableMembershipChange.findMany({ where: { tableId: tableId(), memberId: g.id }, orderBy: { seq: "asc" } });
    expect(log.map((c) => c.op)).toEqual(["add", "remove"]);
    expect(await db.tableMember.count({ where: { tableId: tableId(), memberId: g.id } })).toBe(0);
  });

  it("refuses a table of another group and members that are not the group's profiles", async () => {
    const g = await newGuest();
    const B = t.manifest.groups.B;
    await expect(addTableMembers(db, { tableId: tableId(), propertyGroupId: B.id, memberIds: [g.id] })).rejects.toThrow(/not found/);
    await expect(addTableMembers(db, { tableId: B.tables.bound, propertyGroupId: B.id, memberIds: [g.id] })).rejects.toThrow(/not guest_profiles/);
  });
});
