// Issue 29: webhook endpoints and the sender. Receivers verify with the `standardwebhooks` library;
// retries, 410 and auto-disable run on a moved clock; SSRF refusals use an injected resolver.
//
// Traffic: only to 127.0.0.1. Names (receiver.test, rebind.test, …) "resolve" through the injected
// resolver, never DNS, and a guard on net.Socket refuses, before any packet, a connection whose
// resolved address is not loopback, and records every webhook connection attempt.
import net from "node:net";
import { createServer, type IncomingHttpHeaders, type Server } from "node:http";
import type { AddressInfo } from "node:net";
import { randomUUID } from "node:crypto";
import { Client } from "pg";
import { Webhook } from "standardwebhooks";
import { startAppOn, type TestApp } from "../helpers/app";
import { startOwnPostgres } from "../helpers/own-postgres";
import { startPgBouncer, type TestPgBouncer } from "../helpers/pgbouncer";
import type { TestPostgres } from "../helpers/postgres";
import { deliverySecretKey, messageIdKey } from "../../src/delivery/run";
import { messageIdOf } from "../../src/webhooks/sign";
import { sendDue, startWebhookWorker, GIVE_UP_AFTER_MS, DELIVERY_RETENTION_MS, type SendOptions } from "../../src/webhooks/sender";
import type { ResolvedAddress, Resolver } from "../../src/webhooks/ssrf";
import { postWebhook, RESPONSE_LIMIT } from "../../src/webhooks/http";
import { loadKeyring, type Keyring } from "../../src/delivery/secret-box";
import { rotateSecrets } from "../../src/delivery/rotate";
import { existingServiceSecret } from "../../src/data/stores/delivery";
import * as store from "../../src/data/stores/webhook-sender";
import type { ClaimedEndpoint } from "../../src/data/stores/webhook-sender";
import { eventLogEnd } from "../../src/data/webhooks";
import { GroupFeed } from "../../src/webhooks/feed";
import { seal } from "../../src/delivery/secret-box";
import { newSecret } from "../../src/webhooks/sign";

// ---------------------------------------------------------------------------------------------
// The loopback guard: every socket connect whose host is not the database's is recorded; one that
// would reach a non-loopback address is failed before it connects.
// ---------------------------------------------------------------------------------------------
const LOOPBACK = (a: string) => /^127\./.test(a) || a === "::1" || a === "::ffff:127.0.0.1";
const attempts: string[] = [];
const originalConnect = net.Socket.prototype.connect;
type LookupCb = (err: Error | null, address?: string | { address: string; family: number }[], family?: number) => void;
beforeAll(() => {
  net.Socket.prototype.connect = function guarded(this: net.Socket, ...args: unknown[]) {
    const opts = (Array.isArray(args[0]) ? args[0][0] : args[0]) as { host?: string; lookup?: (h: string, o: object, cb: LookupCb) => void } | undefined;
    const host = opts && typeof opts === "object" ? opts.host : undefined;
    if (opts && host && !/^(localhost|127\.\d+\.\d+\.\d+|::1)$/.test(host)) {
      attempts.push(host);
      const inner = opts.lookup;
      if (!inner) {
        process.nextTick(() => this.destroy(new Error(`test guard: refused a connection to ${host}`)));
        return this;
      }
      opts.lookup = (h, o, cb) =>
        inner(h, o, (err, address, family) => {
          const list = Array.isArray(address) ? address.map((a) => a.address) : [address ?? ""];
          if (!err && !list.every(LOOPBACK)) return cb(new Error(`test guard: ${h} resolved to ${list.join(",")}`));
          cb(err, address, family);
        });
    }
    return (originalConnect as (...a: unknown[]) => net.Socket).apply(this, args);
  } as typeof net.Socket.prototype.connect;
});
afterAll(() => {
  net.Socket.prototype.connect = originalConnect;
});

// ---------------------------------------------------------------------------------------------
// A receiver on 127.0.0.1 and the names that resolve to it.
// ---------------------------------------------------------------------------------------------
interface Received {
  headers: IncomingHttpHeaders;
  body: string;
  path: string;
  /** The sender's end of the connection, and when the request had arrived. */
  remotePort: number;
  at: number;
}
let receiver: Server;
let port: number;
const received: Received[] = [];
/** The status the receiver answers next, by path; 200 otherwise. */
const answers = new Map<string, number[]>();
/** How long the receiver waits before answering, by path. */
const delays = new Map<string, number>();

const names = new Map<string, string[]>();
const resolver: Resolver = async (host) => {
  const a = names.get(host);
  if (!a) throw Object.assign(new Error("not found"), { code: "ENOTFOUND" });
  return a.map((address): ResolvedAddress => ({ address, family: address.includes(":") ? 6 : 4 }));
};

let pg: TestPostgres;
let bouncer: TestPgBouncer | undefined;
let t: TestApp;
let key: Keyring;
const A = () => t.manifest.groups.A;
const B = () => t.manifest.groups.B;
const auth = (token: string) => ({ Authorization: `Bearer ${token}` });
const policy = { allowPrivate: true, httpsOnly: false };
const setAllowPrivate = (v: boolean) => ((t.services.config.webhooks as { allowPrivate: boolean }).allowPrivate = v);

beforeAll(async () => {
  receiver = createServer((req, res) => {
    const chunks: Buffer[] = [];
    req.on("data", (c: Buffer) => chunks.push(c));
    req.on("end", () => {
      received.push({ headers: req.headers, body: Buffer.concat(chunks).toString("utf8"), path: req.url!, remotePort: req.socket.remotePort!, at: Date.now() });
      if (req.url!.startsWith("/hooks/hang/")) return; // a receiver that hangs (closed with the server)
      if (req.url === "/hooks/long") return res.writeHead(200, { "content-type": "text/plain" }).end("x".repeat(100 * 1024)); // a 2xx over 64 KB
      const queue = answers.get(req.url!) ?? [];
      const status = queue.shift() ?? 200;
      if (status === 0) return; // never answers (the timeout test); closed with the server
      if (status === 302) return res.writeHead(302, { location: `http://127.0.0.1:${port}/hooks/elsewhere` }).end();
      setTimeout(() => res.writeHead(status, { "content-type": "text/plain" }).end(status === 200 ? "ok" : "x".repeat(5000)), delays.get(req.url!) ?? 0);
    });
  });
  await new Promise<void>((r) => receiver.listen(0, "127.0.0.1", r));
  port = (receiver.address() as AddressInfo).port;
  names.set("receiver.test", ["127.0.0.1"]);
  // A server of this file's own: the sender shows a commit once every older transaction of the
  // cluster has ended, and on the shared server other files' transactions would pace these tests.
  const own = await startOwnPostgres();
  pg = own.pg;
  // Under `npm run test:pgbouncer`, reached through a PgBouncer in transaction mode as the rest of the suite.
  if (process.env.GCS_TEST_PGBOUNCER === "1") {
    bouncer = await startPgBouncer(pg.adminUrl());
    const admin = new Client({ connectionString: pg.adminUrl() }); // the role carries jit=off, as global-setup.ts sets it
    await admin.connect();
    await admin.query("ALTER ROLE CURRENT_USER SET jit = off");
    await admin.end();
  }
  t = await startAppOn(bouncer ? bouncer.url() : pg.adminUrl(), own.manifest, { GCS_WEBHOOKS_ALLOW_PRIVATE: "true", GCS_DELIVERY_WORKER: "false" });
  t.services.webhookResolver = resolver;
  key = await deliverySecretKey(t.services.config, t.db.primary);
  idKey = await messageIdKey(t.db.primary);
}, 90_000); // a PostgreSQL starts, migrates and loads on a machine the test run shares
afterAll(async () => {
  await t?.close();
  bouncer?.stop();
  pg?.stop();
  receiver.closeAllConnections();
  await new Promise((r) => receiver.close(r));
});

async function createEndpoint(path: string, body: Record<string, unknown> = {}, token = A().credentials.api_key_admin) {
  const res = await t.api.post("/v1/webhook-endpoints").set(auth(token)).send({ url: `http://receiver.test:${port}${path}`, topics: ["*"], ...body });
  expect(res.status).toBe(201);
  return res.body.data as { id: string; secret: string; state: string };
}

/** Appends a guest_profile event to the group (own statement, committed). */
async function appendEvent(groupId: string, guestId: string, propertyId: string | null = null, entityType = "guest_profile"): Promise<string> {
  const rows = await t.admin.$queryRawUnsafe<{ seq: string }[]>(
    `INSERT INTO events (property_group_id, entity_type, entity_id, guest_profile_id, property_id, operation, delta, occurred_at)
     VALUES ($1::uuid, $2::"EntityType", $3::uuid, $3::uuid, $4::uuid, 'update', '{"vip_code":"VIP9"}', now()) RETURNING seq::text AS seq`,
    groupId, entityType, guestId, propertyId,
  );
  return rows[0].seq;
}

let idKey: string;
/** The webhook-id of the event `seq` (sign.ts messageIdOf, under the service's key). */
const idOf = (seq: string) => messageIdOf(seq, idKey);
const opts = (more: Partial<SendOptions> = {}): SendOptions => ({ secretKey: key, messageIdKey: idKey, policy, resolve: resolver, leaseMs: 10_000, ...more });
const ofPath = (p: string) => received.filter((r) => r.path === p);

/** Runs the sender until `check` holds (the timeline shows a commit once older transactions end). */
async function sendUntil(check: () => boolean, more: Partial<SendOptions> = {}, ms = 10_000) {
  const deadline = Date.now() + ms;
  while (!check()) {
    if (Date.now() > deadline) throw new Error("sender did not get there in time");
    await sendDue(t.db.primary, opts(more));
    if (!check()) await new Promise((r) => setTimeout(r, 50));
  }
}

describe("no transaction or lock while a receiver answers", () => {
  it("the sender holds no transaction open while a POST waits for the receiver", async () => {
    const ep = await createEndpoint("/hooks/held");
    answers.set("/hooks/held", [0]); // received, never answered (until the sender's timeout)
    await appendEvent(A().id, A().guest_with_events);
    let sending: Promise<unknown> | undefined;
    const deadline = Date.now() + 10_000;
    while (!ofPath("/hooks/held").length && Date.now() < deadline) {
      sending ??= sendDue(t.db.primary, opts({ timeoutMs: 3_000 }));
      await new Promise((r) => setTimeout(r, 50));
      // The timeline shows a commit once older transactions end: try again after an empty pass.
      if (!ofPath("/hooks/held").length && (await Promise.race([sending.then(() => true), Promise.resolve(false)]))) sending = undefined;
    }
    expect(ofPath("/hooks/held").length).toBe(1);
    const { rows } = await t.adminPool.query<{ n: number }>(
      "SELECT count(*)::int AS n FROM pg_stat_activity WHERE datname = current_database() AND pid <> pg_backend_pid() AND (xact_start IS NOT NULL OR state = 'idle in transaction')",
    );
    await sending;
    expect(rows[0].n).toBe(0);
    await t.api.delete(`/v1/webhook-endpoints/${ep.id}`).set(auth(A().credentials.api_key_admin));
  });
});

describe("delivery, verified as a receiver would", () => {
  it("signs Standard Webhooks, sends the GET /v1/events row as data, in log order, with a stable webhook-id", async () => {
    const ep = await createEndpoint("/hooks/order");
    const guest = A().guest_with_events;
    const seqs = [await appendEvent(A().id, guest), await appendEvent(A().id, guest), await appendEvent(A().id, guest)];
    await sendUntil(() => ofPath("/hooks/order").length >= 3);
    const got = ofPath("/hooks/order");
    const wh = new Webhook(ep.secret);
    const payloads = got.map((r) => wh.verify(r.body, r.headers as Record<string, string>) as { type: string; timestamp: string; data: Record<string, unknown> });
    expect(got.map((r) => r.headers["webhook-id"])).toEqual(seqs.map((s) => idOf(s)));
    expect(payloads[0].type).toBe("guest_profile.updated");
    // A tampered body fails verification.
    expect(() => wh.verify(got[0].body.replace("VIP9", "VIP8"), got[0].headers as Record<string, string>)).toThrow();

    // data is exactly the /v1/events row.
    const page = await t.api.get(`/v1/events?guest_profile_id=${guest}&limit=500`).set(auth(A().credentials.api_key_admin));
    let rows = page.body.data as { seq: string }[];
    let cursor = page.body.next_cursor as string | null;
    while (cursor) {
      const next = await t.api.get(`/v1/events?guest_profile_id=${guest}&limit=500&cursor=${encodeURIComponent(cursor)}`).set(auth(A().credentials.api_key_admin));
      rows = rows.concat(next.body.data);
      cursor = next.body.next_cursor;
    }
    // data is the row without seq (issue 40: it counts every group's events), found by its seq.
    payloads.forEach((p, i) => {
      const { seq, ...row } = rows.find((r) => r.seq === seqs[i])!;
      expect(seq).toBe(seqs[i]);
      expect(p.data).toEqual(row);
    });

    // The attempts are listed.
    const deliveries = await t.api.get(`/v1/webhook-endpoints/${ep.id}/deliveries`).set(auth(A().credentials.api_key_admin));
    expect(deliveries.status).toBe(200);
    expect(deliveries.body.data.map((d: { status: string }) => d.status)).toEqual(["succeeded", "succeeded", "succeeded"]);
    expect(deliveries.body.data[0].response_code).toBe(200);
    await t.api.delete(`/v1/webhook-endpoints/${ep.id}`).set(auth(A().credentials.api_key_admin)).expect(204);
  });

  it("sends only the topics and properties the endpoint chose, and never another group's events", async () => {
    const [p1, p2] = A().properties;
    const ep = await createEndpoint("/hooks/filtered", { topics: ["reservation"], property_ids: [p1] });
    const guest = A().guest_with_events;
    await appendEvent(A().id, guest, p1, "guest_profile"); // other topic
    await appendEvent(A().id, guest, p2, "reservation"); // other property
    await appendEvent(B().id, B().guest_with_events, B().properties[0], "reservation"); // other group
    const wanted = await appendEvent(A().id, guest, p1, "reservation");
    await sendUntil(() => ofPath("/hooks/filtered").length >= 1);
    await sendDue(t.db.primary, opts());
    expect(ofPath("/hooks/filtered").map((r) => r.headers["webhook-id"])).toEqual([idOf(wanted)]);
    await t.api.delete(`/v1/webhook-endpoints/${ep.id}`).set(auth(A().credentials.api_key_admin)).expect(204);
  });

  it("signs with both secrets during a rotation's overlap", async () => {
    const ep = await createEndpoint("/hooks/rotate");
    const rotated = await t.api.post(`/v1/webhook-endpoints/${ep.id}/rotate-secret`).set(auth(A().credentials.api_key_admin));
    expect(rotated.status).toBe(200);
    const secret = rotated.body.data.secret as string;
    expect(secret).toMatch(/^whsec_/);
    expect(secret).not.toBe(ep.secret);
    expect(rotated.body.data.previous_secret_expires_at).not.toBeNull();
    await appendEvent(A().id, A().guest_with_events);
    await sendUntil(() => ofPath("/hooks/rotate").length >= 1);
    const [r] = ofPath("/hooks/rotate");
    expect(String(r.headers["webhook-signature"]).split(" ")).toHaveLength(2);
    for (const s of [secret, ep.secret]) expect(() => new Webhook(s).verify(r.body, r.headers as Record<string, string>)).not.toThrow();
    // The secret is never shown again.
    const got = await t.api.get(`/v1/webhook-endpoints/${ep.id}`).set(auth(A().credentials.api_key_admin));
    expect(got.body.data.secret).toBeUndefined();
    expect(JSON.stringify(got.body)).not.toContain(secret.slice(6));
    await t.api.delete(`/v1/webhook-endpoints/${ep.id}`).set(auth(A().credentials.api_key_admin)).expect(204);
  });

  it("test sends a signed ping and answers with the receiver's status", async () => {
    const ep = await createEndpoint("/hooks/ping");
    const res = await t.api.post(`/v1/webhook-endpoints/${ep.id}/test`).set(auth(A().credentials.api_key_admin));
    expect(res.status).toBe(200);
    expect(res.body.data).toMatchObject({ delivered: true, response_code: 200, error: null });
    const [r] = ofPath("/hooks/ping");
    const payload = new Webhook(ep.secret).verify(r.body, r.headers as Record<string, string>) as { type: string; data: unknown };
    expect(payload).toMatchObject({ type: "webhook.ping", data: { endpoint_id: ep.id } });
    await t.api.delete(`/v1/webhook-endpoints/${ep.id}`).set(auth(A().credentials.api_key_admin)).expect(204);
  });
});

describe("the delivery key's rotation", () => {
  it("gcs secrets rotate re-seals webhook secrets too; the sender opens them under the new key", async () => {
    const ep = await createEndpoint("/hooks/rekey");
    const generated = (await existingServiceSecret(t.db.primary, "delivery_secret_box"))!;
    const salt = (await existingServiceSecret(t.db.primary, "delivery_secret_box_salt"))!;
    const next = await loadKeyring({ current: "a new delivery key for the rotation test", previous: [generated], salt });
    const report = await rotateSecrets(t.db.primary, next);
    expect(report.webhookSecrets.rotated).toBeGreaterThanOrEqual(1);
    expect(report.webhookSecrets.failed).toBe(0);
    // Only the new key now: the old ring no longer opens it, the new one does.
    const onlyNew = await loadKeyring({ current: "a new delivery key for the rotation test", previous: [], salt });
    await appendEvent(A().id, A().guest_with_events);
    await sendUntil(() => ofPath("/hooks/rekey").length >= 1, { secretKey: onlyNew });
    const [r] = ofPath("/hooks/rekey");
    expect(() => new Webhook(ep.secret).verify(r.body, r.headers as Record<string, string>)).not.toThrow();
    // Back under the test's key for the tests that follow.
    await rotateSecrets(t.db.primary, await loadKeyring({ current: generated, previous: ["a new delivery key for the rotation test"], salt }));
    await t.api.delete(`/v1/webhook-endpoints/${ep.id}`).set(auth(A().credentials.api_key_admin)).expect(204);
  });
});

describe("retries, 410 and auto-disable", () => {
  it("disables an endpoint whose signing secret no configured key opens, and sends nothing", async () => {
    const ep = await createEndpoint("/hooks/sealed");
    await t.admin.$executeRawUnsafe(`UPDATE webhook_endpoints SET secret_ciphertext = 'v2:unknownkid:AAAA' WHERE id = $1::uuid`, ep.id);
    await appendEvent(A().id, A().guest_with_events);
    const deadline = Date.now() + 10_000;
    let view = { state: "active", disabled_reason: null as string | null };
    while (view.state === "active" && Date.now() < deadline) {
      await sendDue(t.db.primary, opts());
      view = (await t.api.get(`/v1/webhook-endpoints/${ep.id}`).set(auth(A().credentials.api_key_admin))).body.data;
    }
    expect(view.state).toBe("disabled");
    expect(view.disabled_reason).toMatch(/^cannot decrypt the signing secret/);
    expect(ofPath("/hooks/sealed")).toHaveLength(0);
    await t.api.delete(`/v1/webhook-endpoints/${ep.id}`).set(auth(A().credentials.api_key_admin)).expect(204);
  });

  it("a secret re-sealed under a key the lane cannot open (mid-send): the lane stops, records what was answered, disables with the reason and releases the lease", async () => {
    const ep = await createEndpoint("/hooks/resealed");
    delays.set("/hooks/resealed", 150);
    const seqs: string[] = [];
    for (let i = 0; i < 6; i++) seqs.push(await appendEvent(A().id, A().guest_with_events));
    try {
      // One at a time, a checkpoint before each POST: the lane reads the re-sealed secret at its next one.
      const sending = (async () => {
        const deadline = Date.now() + 10_000;
        while (Date.now() < deadline) {
          const reports = (await sendDue(t.db.primary, opts({ pipeline: 1, checkpointMs: 0 }))).filter((r) => r.endpointId === ep.id);
          if (reports.length > 0) return reports;
          await new Promise((r) => setTimeout(r, 50));
        }
        return [];
      })();
      const deadline = Date.now() + 10_000;
      while (ofPath("/hooks/resealed").length === 0 && Date.now() < deadline) await new Promise((r) => setTimeout(r, 10));
      // As `gcs secrets rotate` on an instance whose key ring lacks the new key would leave it.
      await t.admin.$executeRawUnsafe(`UPDATE webhook_endpoints SET secret_ciphertext = 'v2:unknownkid:AAAA' WHERE id = $1::uuid`, ep.id);
      const reports = await sending;
      const got = ofPath("/hooks/resealed").length;
      expect(got).toBeGreaterThanOrEqual(1);
      expect(got).toBeLessThan(seqs.length);
      expect(reports).toEqual([{ endpointId: ep.id, outcome: "disabled", sent: got, error: expect.stringMatching(/^cannot decrypt the signing secret/) }]);
      const [row] = await t.admin.$queryRawUnsafe<{ state: string; reason: string; lease: string | null; seq: string }[]>(
        `SELECT state::text AS state, disabled_reason AS reason, lease_token::text AS lease, cursor_seq::text AS seq FROM webhook_endpoints WHERE id = $1::uuid`, ep.id);
      expect(row).toEqual({ state: "disabled", reason: expect.stringMatching(/^cannot decrypt the signing secret/), lease: null, seq: seqs[got - 1] });
      // What was answered is recorded, once each.
      const recorded = await t.admin.$queryRawUnsafe<{ message_id: string }[]>(
        `SELECT message_id FROM webhook_deliveries WHERE endpoint_id = $1::uuid AND status = 'succeeded' ORDER BY event_seq`, ep.id);
      expect(recorded.map((r) => r.message_id)).toEqual(seqs.slice(0, got).map(idOf));
    } finally {
      delays.delete("/hooks/resealed");
    }
    await t.api.delete(`/v1/webhook-endpoints/${ep.id}`).set(auth(A().credentials.api_key_admin)).expect(204);
  });

  it("retries a failed event on the jittered schedule with the same webhook-id; one at a time (pipeline 1), later events wait", async () => {
    const ep = await createEndpoint("/hooks/retry");
    answers.set("/hooks/retry", [500, 503]);
    const first = await appendEvent(A().id, A().guest_with_events);
    const second = await appendEvent(A().id, A().guest_with_events);
    const t0 = Date.now();
    await sendUntil(() => ofPath("/hooks/retry").length >= 1, { now: () => new Date(t0), random: () => 0, pipeline: 1 });
    let view = (await t.api.get(`/v1/webhook-endpoints/${ep.id}`).set(auth(A().credentials.api_key_admin))).body.data;
    expect(view.failure_count).toBe(1);
    expect(view.last_error).toBe("HTTP 500");
    // random 0: half of 5 s.
    expect(Date.parse(view.next_attempt_at) - t0).toBe(2_500);
    // Not due yet: nothing is sent.
    await sendDue(t.db.primary, opts({ now: () => new Date(t0 + 2_000), random: () => 0, pipeline: 1 }));
    expect(ofPath("/hooks/retry")).toHaveLength(1);
    // Due: the same event again (503), then 4 · 5 s / 2 = 10 s later.
    await sendDue(t.db.primary, opts({ now: () => new Date(t0 + 2_500), random: () => 0, pipeline: 1 }));
    view = (await t.api.get(`/v1/webhook-endpoints/${ep.id}`).set(auth(A().credentials.api_key_admin))).body.data;
    expect(view.failure_count).toBe(2);
    expect(Date.parse(view.next_attempt_at) - (t0 + 2_500)).toBe(10_000);
    await sendDue(t.db.primary, opts({ now: () => new Date(t0 + 12_500), random: () => 0, pipeline: 1 }));
    const ids = ofPath("/hooks/retry").map((r) => r.headers["webhook-id"]);
    expect(ids).toEqual([idOf(first), idOf(first), idOf(first), idOf(second)]);
    // Each attempt verifies (a new timestamp and signature, the same id).
    for (const r of ofPath("/hooks/retry")) new Webhook(ep.secret).verify(r.body, r.headers as Record<string, string>);
    const deliveries = (await t.api.get(`/v1/webhook-endpoints/${ep.id}/deliveries`).set(auth(A().credentials.api_key_admin))).body.data;
    expect(deliveries.map((d: { status: string; attempt: number }) => `${d.status}#${d.attempt}`).sort()).toEqual(["failed#1", "failed#2", "succeeded#1", "succeeded#3"]);
    expect(deliveries.filter((d: { status: string; next_retry_at: string | null }) => d.status === "failed" && d.next_retry_at !== null)).toHaveLength(2);
    view = (await t.api.get(`/v1/webhook-endpoints/${ep.id}`).set(auth(A().credentials.api_key_admin))).body.data;
    expect(view).toMatchObject({ failure_count: 0, next_attempt_at: null, last_error: null, state: "active" });
    await t.api.delete(`/v1/webhook-endpoints/${ep.id}`).set(auth(A().credentials.api_key_admin)).expect(204);
  });

  it("follows no redirect, gives up an attempt after the timeout, and reads a bounded answer", async () => {
    const ep = await createEndpoint("/hooks/redirect");
    answers.set("/hooks/redirect", [302, 0]);
    await appendEvent(A().id, A().guest_with_events);
    await sendUntil(() => ofPath("/hooks/redirect").length >= 1);
    expect(ofPath("/hooks/elsewhere")).toHaveLength(0);
    let view = (await t.api.get(`/v1/webhook-endpoints/${ep.id}`).set(auth(A().credentials.api_key_admin))).body.data;
    expect(view.last_error).toBe("HTTP 302 (redirects are not followed)");
    // The next attempt hangs: it ends at the (here 300 ms) timeout.
    await t.admin.$executeRawUnsafe(`UPDATE webhook_endpoints SET next_attempt_at = NULL WHERE id = $1::uuid`, ep.id);
    const started = Date.now();
    await sendDue(t.db.primary, opts({ timeoutMs: 300 }));
    expect(Date.now() - started).toBeLessThan(5_000);
    view = (await t.api.get(`/v1/webhook-endpoints/${ep.id}`).set(auth(A().credentials.api_key_admin))).body.data;
    expect(view.last_error).toBe("no answer within 300 ms");
    expect(view.failure_count).toBe(2);
    await t.api.delete(`/v1/webhook-endpoints/${ep.id}`).set(auth(A().credentials.api_key_admin)).expect(204);
  });

  it("reads at most RESPONSE_LIMIT bytes of an answer", async () => {
    answers.set("/hooks/big", [500]);
    const r = await postWebhook(`http://receiver.test:${port}/hooks/big`, {}, "{}", { policy, resolve: resolver });
    expect(r.status).toBe(500);
    expect(r.body).toHaveLength(RESPONSE_LIMIT); // the receiver sent 5,000
  });

  it("disables the endpoint on 410 Gone, and replay brings it back with the same webhook-id", async () => {
    const ep = await createEndpoint("/hooks/gone");
    answers.set("/hooks/gone", [410]);
    const seq = await appendEvent(A().id, A().guest_with_events);
    await sendUntil(() => ofPath("/hooks/gone").length >= 1);
    const view = (await t.api.get(`/v1/webhook-endpoints/${ep.id}`).set(auth(A().credentials.api_key_admin))).body.data;
    expect(view.state).toBe("disabled");
    expect(view.disabled_reason).toBe("the receiver answered 410 Gone");
    await sendDue(t.db.primary, opts());
    expect(ofPath("/hooks/gone")).toHaveLength(1);

    const replay = await t.api.post(`/v1/webhook-endpoints/${ep.id}/replay`).set(auth(A().credentials.api_key_admin)).send({ since: new Date(Date.now() - 60_000).toISOString() });
    expect(replay.status).toBe(200);
    expect(replay.body.data.state).toBe("active");
    await sendUntil(() => ofPath("/hooks/gone").length >= 2);
    expect(ofPath("/hooks/gone").map((r) => r.headers["webhook-id"])).toContain(idOf(seq));
    await t.api.delete(`/v1/webhook-endpoints/${ep.id}`).set(auth(A().credentials.api_key_admin)).expect(204);
  });

  it("disables an endpoint that has failed for the whole schedule, showing why", async () => {
    const ep = await createEndpoint("/hooks/down");
    answers.set("/hooks/down", Array(10).fill(500));
    await appendEvent(A().id, A().guest_with_events);
    const t0 = Date.now();
    await sendUntil(() => ofPath("/hooks/down").length >= 1, { now: () => new Date(t0) });
    await sendDue(t.db.primary, opts({ now: () => new Date(t0 + GIVE_UP_AFTER_MS + 1) }));
    const view = (await t.api.get(`/v1/webhook-endpoints/${ep.id}`).set(auth(A().credentials.api_key_admin))).body.data;
    expect(ofPath("/hooks/down")).toHaveLength(2);
    expect(view.state).toBe("disabled");
    expect(view.disabled_reason).toMatch(/^failing since .* \(2 attempts\); last: HTTP 500$/);
    await t.api.delete(`/v1/webhook-endpoints/${ep.id}`).set(auth(A().credentials.api_key_admin)).expect(204);
  });
});

describe("pipelining: several POSTs on one connection", () => {
  it("sends an endpoint's events in log order on one connection, several before the first answer", async () => {
    const ep = await createEndpoint("/hooks/pipe");
    delays.set("/hooks/pipe", 300);
    const seqs: string[] = [];
    for (let i = 0; i < 6; i++) seqs.push(await appendEvent(A().id, A().guest_with_events));
    await sendUntil(() => ofPath("/hooks/pipe").length >= 6, { pipeline: 4 });
    const got = ofPath("/hooks/pipe");
    expect(got.map((r) => r.headers["webhook-id"])).toEqual(seqs.map((s) => idOf(s)));
    expect(new Set(got.map((r) => r.remotePort)).size).toBe(1);
    // Four arrived before the first answer (300 ms after the first arrived); the fifth only after it.
    expect(got[3].at - got[0].at).toBeLessThan(300);
    expect(got[4].at - got[0].at).toBeGreaterThanOrEqual(290);
    const [row] = await t.admin.$queryRawUnsafe<{ seq: string }[]>(`SELECT cursor_seq::text AS seq FROM webhook_endpoints WHERE id = $1::uuid`, ep.id);
    expect(row.seq).toBe(seqs[5]);
    delays.delete("/hooks/pipe");
    await t.api.delete(`/v1/webhook-endpoints/${ep.id}`).set(auth(A().credentials.api_key_admin)).expect(204);
  });

  it("a failed event holds the cursor: the later ones already sent come again after it, with the same webhook-id", async () => {
    const ep = await createEndpoint("/hooks/pipefail");
    answers.set("/hooks/pipefail", [200, 500]);
    const seqs: string[] = [];
    for (let i = 0; i < 4; i++) seqs.push(await appendEvent(A().id, A().guest_with_events));
    const t0 = Date.now();
    await sendUntil(() => ofPath("/hooks/pipefail").length >= 4, { now: () => new Date(t0), random: () => 0 });
    const ids = seqs.map((s) => idOf(s));
    expect(ofPath("/hooks/pipefail").map((r) => r.headers["webhook-id"])).toEqual(ids);
    const cursor = async () => (await t.admin.$queryRawUnsafe<{ seq: string }[]>(`SELECT cursor_seq::text AS seq FROM webhook_endpoints WHERE id = $1::uuid`, ep.id))[0].seq;
    expect(await cursor()).toBe(seqs[0]);
    // The retry sends the failed event, then the two after it again.
    await sendDue(t.db.primary, opts({ now: () => new Date(t0 + 2_500), random: () => 0 }));
    expect(ofPath("/hooks/pipefail").map((r) => r.headers["webhook-id"])).toEqual([...ids, ...ids.slice(1)]);
    expect(await cursor()).toBe(seqs[3]);
    const deliveries = (await t.api.get(`/v1/webhook-endpoints/${ep.id}/deliveries`).set(auth(A().credentials.api_key_admin))).body.data as { message_id: string; status: string }[];
    // Every attempt that happened is listed: the ones answered 2xx behind the failure too.
    expect(deliveries.map((d) => `${d.message_id} ${d.status}`).sort()).toEqual(
      [`${ids[0]} succeeded`, `${ids[1]} failed`, `${ids[1]} succeeded`, `${ids[2]} succeeded`, `${ids[2]} succeeded`, `${ids[3]} succeeded`, `${ids[3]} succeeded`].sort(),
    );
    await t.api.delete(`/v1/webhook-endpoints/${ep.id}`).set(auth(A().credentials.api_key_admin)).expect(204);
  });
});

describe("the worker's shared read of a group's log (feed.ts)", () => {
  it("gives every endpoint, from any cursor inside it, what its own read of the database gives", async () => {
    const [p1, p2] = A().properties;
    const kinds: [string | null, string][] = [[p1, "reservation"], [p2, "guest_profile"], [null, "guest_profile"], [p1, "transaction"], [p2, "reservation"]];
    const before = await eventLogEnd(t.db.primary, A().id);
    for (let i = 0; i < 25; i++) {
      const [property, type] = kinds[i % kinds.length];
      await appendEvent(A().id, A().guest_with_events, property, type);
    }
    await appendEvent(B().id, B().guest_with_events); // another group's event: never in A's feed
    const start: [bigint, bigint] = [BigInt(before.txid), BigInt(before.seq)];
    const feed = new GroupFeed(t.db.primary, A().id, start, 0);
    // The timeline shows a commit once older transactions end: read until all 25 are in.
    for (let i = 0; i < 50 && (await store.groupEventsAfter(t.db.primary, A().id, start, 100)).length < 25; i++) await new Promise((r) => setTimeout(r, 100));
    const log = await store.groupEventsAfter(t.db.primary, A().id, start, 100);
    expect(log.length).toBe(25);
    while (feed.take(endpointAt(start, ["*"], []), 100)!.length < 25) await feed.advance();
    const filters: [string[], string[]][] = [[["*"], []], [["reservation"], []], [["guest_profile"], [p2]], [["reservation", "transaction"], [p1]], [["*"], [p1]], [["review"], []]];
    let compared = 0;
    for (const [topics, propertyIds] of filters) {
      for (const at of [start, ...log.map((ev): [bigint, bigint] => [BigInt(ev.txid), BigInt(ev.seq)])]) {
        for (const take of [1, 3, 100]) {
          const e = endpointAt(at, topics, propertyIds);
          const fromFeed = feed.take(e, take);
          const fromDatabase = await store.eventsAfterCursor(t.db.primary, e, take);
          expect(fromFeed?.map((ev) => ev.seq)).toEqual(fromDatabase.map((ev) => ev.seq));
          compared++;
        }
      }
    }
    expect(compared).toBe(6 * 26 * 3);
    // A cursor before the feed's start is not the feed's: the lane reads from the database.
    expect(feed.take(endpointAt([start[0], start[1] - 1n], ["*"], []), 10)).toBeUndefined();
  });
});

function endpointAt(at: readonly [bigint, bigint], topics: string[], propertyIds: string[]): ClaimedEndpoint {
  return {
    id: randomUUID(), propertyGroupId: A().id, url: "http://receiver.test/", topics, propertyIds, cursorTxid: at[0], cursorSeq: at[1],
    failureCount: 0, failingSince: null, secretCiphertext: "", previousSecretCiphertext: null, previousSecretUntil: null, leaseToken: randomUUID(),
  };
}

describe("batched checkpoints", () => {
  const until = async (check: () => boolean, ms = 10_000) => {
    const deadline = Date.now() + ms;
    while (!check()) {
      if (Date.now() > deadline) throw new Error("not there in time");
      await new Promise((r) => setTimeout(r, 20));
    }
  };
  // Ordered here, not by the database's collation (webhook-ids mix cases).
  const byMessageId = (a: { message_id: string; status: string }, b: { message_id: string; status: string }) =>
    a.message_id < b.message_id ? -1 : a.message_id > b.message_id ? 1 : a.status < b.status ? -1 : a.status > b.status ? 1 : 0;
  const recorded = async (endpointId: string) =>
    (await t.admin.$queryRawUnsafe<{ message_id: string; status: string; n: number }[]>(
      `SELECT message_id, status, count(*)::int AS n FROM webhook_deliveries WHERE endpoint_id = $1::uuid GROUP BY 1, 2`, endpointId)).sort(byMessageId);

  it("records each attempt once in normal operation, across reads and checkpoints", async () => {
    const ep = await createEndpoint("/hooks/batch");
    const seqs: string[] = [];
    for (let i = 0; i < 7; i++) seqs.push(await appendEvent(A().id, A().guest_with_events));
    // Reads of 3 events; a checkpoint before every POST but the first of a claim.
    await sendUntil(() => ofPath("/hooks/batch").length >= 7, { batchSize: 3, checkpointMs: 0 });
    expect(ofPath("/hooks/batch").map((r) => r.headers["webhook-id"])).toEqual(seqs.map((s) => idOf(s)));
    expect(await recorded(ep.id)).toEqual(seqs.map((s) => ({ message_id: idOf(s), status: "succeeded", n: 1 })).sort(byMessageId));
    const [row] = await t.admin.$queryRawUnsafe<{ seq: string; lease: string | null }[]>(
      `SELECT cursor_seq::text AS seq, lease_token::text AS lease FROM webhook_endpoints WHERE id = $1::uuid`, ep.id);
    expect(row).toEqual({ seq: seqs[6], lease: null });
    await t.api.delete(`/v1/webhook-endpoints/${ep.id}`).set(auth(A().credentials.api_key_admin)).expect(204);
  });

  it("an instance lost between its POSTs and its checkpoint: another re-sends them with the same webhook-id", async () => {
    const ep = await createEndpoint("/hooks/crash");
    // Answered 2xx three times, then a call that hangs: instance A "dies" with it in flight, before
    // its next checkpoint (none is due for a minute).
    answers.set("/hooks/crash", [200, 200, 200, 0]);
    const seqs: string[] = [];
    for (let i = 0; i < 5; i++) seqs.push(await appendEvent(A().id, A().guest_with_events));
    const a = sendDue(t.db.primary, opts({ checkpointMs: 60_000, timeoutMs: 3_000 }));
    await until(() => ofPath("/hooks/crash").length >= 4);
    expect(await recorded(ep.id)).toEqual([]);
    // Its lease runs out; instance B takes over from the recorded cursor.
    await t.admin.$executeRawUnsafe(`UPDATE webhook_endpoints SET lease_until = now() - interval '1 second' WHERE id = $1::uuid`, ep.id);
    await sendUntil(() => ofPath("/hooks/crash").length >= 10);
    const ids = seqs.map((s) => idOf(s));
    // A had all five on the wire (pipelined behind the call that hangs); B sends them again.
    expect(ofPath("/hooks/crash").map((r) => r.headers["webhook-id"])).toEqual([...ids, ...ids]);
    for (const r of ofPath("/hooks/crash")) new Webhook(ep.secret).verify(r.body, r.headers as Record<string, string>);
    // A's call times out; its checkpoint finds the lease lost: A stops. The attempts it made are
    // recorded (they happened), the cursor and the failure state are B's.
    expect((await a)[0]).toMatchObject({ endpointId: ep.id, outcome: "stopped", sent: 3 });
    expect(await recorded(ep.id)).toEqual(ids.map((id, i) => ({ message_id: id, status: "succeeded", n: i < 3 ? 2 : 1 })).sort(byMessageId));
    const view = (await t.api.get(`/v1/webhook-endpoints/${ep.id}`).set(auth(A().credentials.api_key_admin))).body.data;
    expect(view).toMatchObject({ state: "active", failure_count: 0, last_error: null });
    const [row] = await t.admin.$queryRawUnsafe<{ seq: string }[]>(`SELECT cursor_seq::text AS seq FROM webhook_endpoints WHERE id = $1::uuid`, ep.id);
    expect(row.seq).toBe(seqs[4]);
    await t.api.delete(`/v1/webhook-endpoints/${ep.id}`).set(auth(A().credentials.api_key_admin)).expect(204);
  });
});

describe("SSRF", () => {
  const refused = async (url: string) => {
    const res = await t.api.post("/v1/webhook-endpoints").set(auth(A().credentials.api_key_admin)).send({ url, topics: ["*"] });
    expect(res.status).toBe(400);
    expect(res.body.error).toBe("invalid_request");
    return res.body.detail as string;
  };

  it("refuses loopback, private, link-local and metadata addresses at validation, names included", async () => {
    setAllowPrivate(false);
    try {
      names.set("internal.test", ["10.1.2.3"]);
      names.set("metadata.test", ["169.254.169.254"]);
      names.set("loop.test", ["127.0.0.1"]);
      names.set("mixed.test", ["93.184.216.34", "192.168.1.10"]);
      names.set("mapped.test", ["::ffff:10.0.0.1"]);
      const before = attempts.length;
      expect(await refused("http://127.0.0.1:9/x")).toMatch(/loopback/);
      expect(await refused("http://[::1]:9/x")).toMatch(/loopback/);
      expect(await refused("http://169.254.169.254/latest/meta-data")).toMatch(/metadata, link-local or unspecified address/);
      expect(await refused("http://10.0.0.8/x")).toMatch(/private/);
      expect(await refused("http://localhost:9/x")).toMatch(/local host/);
      expect(await refused("http://internal.test/x")).toMatch(/internal\.test resolves to 10\.1\.2\.3/);
      expect(await refused("http://metadata.test/x")).toMatch(/169\.254\.169\.254/);
      expect(await refused("http://loop.test:9/x")).toMatch(/loopback/);
      expect(await refused("http://mixed.test/x")).toMatch(/192\.168\.1\.10/);
      expect(await refused("http://mapped.test/x")).toMatch(/private/);
      expect(await refused("http://nowhere.test/x")).toMatch(/does not resolve/);
      expect(await refused("ftp://receiver.test/x")).toMatch(/https/);
      expect(await refused("http://user:pw@receiver.test/x")).toMatch(/credentials/);
      expect(attempts.length).toBe(before);
    } finally {
      setAllowPrivate(true);
    }
    // Even the demo switch never allows the metadata address, however it is spelt.
    expect(await refused("http://169.254.169.254/latest/meta-data")).toMatch(/refused even with GCS_WEBHOOKS_ALLOW_PRIVATE/);
    expect(await refused("http://[::ffff:169.254.169.254]/latest/meta-data")).toMatch(/\(169\.254\.169\.254\) is a metadata/);
  });

  it("checks again at connect time: a name that now resolves to a private address is refused before any socket opens", async () => {
    names.set("rebind.test", ["127.0.0.1"]);
    const ep = await createEndpoint("/hooks/rebind", { url: `http://rebind.test:${port}/hooks/rebind` });
    // DNS rebinding: the name now answers the metadata address, then a private one.
    for (const target of ["169.254.169.254", "10.0.0.7"]) {
      names.set("rebind.test", [target]);
      await appendEvent(A().id, A().guest_with_events);
      const before = attempts.length;
      const deadline = Date.now() + 10_000;
      let deliveries: { status: string; error: string }[] = [];
      while (Date.now() < deadline) {
        await sendDue(t.db.primary, opts({ policy: { allowPrivate: false, httpsOnly: false } }));
        deliveries = (await t.api.get(`/v1/webhook-endpoints/${ep.id}/deliveries`).set(auth(A().credentials.api_key_admin))).body.data;
        if (deliveries.some((d) => d.error.includes(target))) break;
        await new Promise((r) => setTimeout(r, 50));
      }
      expect(deliveries[0].status).toBe("refused");
      expect(deliveries[0].error).toContain(`rebind.test resolves to ${target}`);
      // No socket was opened for it, and the receiver heard nothing.
      expect(attempts.slice(before).filter((h) => h.startsWith("rebind"))).toEqual([]);
      expect(ofPath("/hooks/rebind")).toHaveLength(0);
      await t.admin.$executeRawUnsafe(`UPDATE webhook_endpoints SET next_attempt_at = NULL WHERE id = $1::uuid`, ep.id);
    }
    // A loopback answer is refused too when private addresses are not allowed.
    names.set("rebind.test", ["127.0.0.1"]);
    const before = attempts.length;
    await sendDue(t.db.primary, opts({ policy: { allowPrivate: false, httpsOnly: false } }));
    expect(attempts.slice(before).filter((h) => h.startsWith("rebind"))).toEqual([]);
    const [last] = (await t.api.get(`/v1/webhook-endpoints/${ep.id}/deliveries`).set(auth(A().credentials.api_key_admin))).body.data;
    expect(last.error).toContain("loopback");
    await t.api.delete(`/v1/webhook-endpoints/${ep.id}`).set(auth(A().credentials.api_key_admin)).expect(204);
  });

  it("accepts https only in production", async () => {
    (t.services.config.webhooks as { httpsOnly: boolean }).httpsOnly = true;
    try {
      expect(await refused(`http://receiver.test:${port}/x`)).toBe("url must use https");
    } finally {
      (t.services.config.webhooks as { httpsOnly: boolean }).httpsOnly = false;
    }
  });
});

describe("the routes: scopes, tenants, input", () => {
  it("isolates tenants on every route", async () => {
    const ep = await createEndpoint("/hooks/tenant");
    const b = auth(B().credentials.api_key_admin);
    const list = await t.api.get("/v1/webhook-endpoints").set(b);
    expect(list.status).toBe(200);
    expect(list.body.data.map((e: { id: string }) => e.id)).not.toContain(ep.id);
    for (const [method, path, body] of [
      ["get", `/v1/webhook-endpoints/${ep.id}`, undefined],
      ["delete", `/v1/webhook-endpoints/${ep.id}`, undefined],
      ["post", `/v1/webhook-endpoints/${ep.id}/rotate-secret`, undefined],
      ["post", `/v1/webhook-endpoints/${ep.id}/test`, undefined],
      ["get", `/v1/webhook-endpoints/${ep.id}/deliveries`, undefined],
      ["post", `/v1/webhook-endpoints/${ep.id}/replay`, { since: "2026-01-01T00:00:00Z" }],
    ] as const) {
      const req = (t.api as unknown as Record<string, (p: string) => { set(h: object): { send(b?: object): Promise<{ status: number; body: { error: string } }> } }>)[method](path).set(b);
      const res = await req.send(body);
      expect([method, path, res.status, res.body.error]).toEqual([method, path, 404, "not_found"]);
    }
    // Still there for its own group.
    await t.api.get(`/v1/webhook-endpoints/${ep.id}`).set(auth(A().credentials.api_key_admin)).expect(200);
    // A credential narrowed to one property sees only that property's endpoints.
    const pinned = A().credentials.api_key_pinned;
    const narrowed = await t.api.get("/v1/webhook-endpoints").set(auth(A().credentials.api_key_admin)).set("X-Property-Id", pinned.property_id);
    expect(narrowed.status).toBe(200);
    expect(narrowed.body.data.map((e: { id: string }) => e.id)).not.toContain(ep.id);
    await t.api.delete(`/v1/webhook-endpoints/${ep.id}`).set(auth(A().credentials.api_key_admin)).expect(204);
  });

  it("needs read:webhooks / write:webhooks; session owners and admins hold them", async () => {
    const limited = await t.api.get("/v1/webhook-endpoints").set(auth(A().credentials.api_key_limited));
    expect(limited.status).toBe(403);
    expect(limited.body).toMatchObject({ error: "forbidden", scope: "read:webhooks" });
    const pinned = await t.api.post("/v1/webhook-endpoints").set(auth(A().credentials.api_key_pinned.token)).send({ url: "http://receiver.test/x", topics: ["*"] });
    expect(pinned.status).toBe(403);
    expect(pinned.body.scope).toBe("write:webhooks");
    const session = await t.api.get("/v1/webhook-endpoints").set(auth(A().credentials.session_token));
    expect(session.status).toBe(200);
    // The fixture contract's api_key: every read scope and write:tables, so it lists but cannot create.
    expect((await t.api.get("/v1/webhook-endpoints").set(auth(A().credentials.api_key))).status).toBe(200);
    const contractKey = await t.api.post("/v1/webhook-endpoints").set(auth(A().credentials.api_key)).send({ url: "http://receiver.test/x", topics: ["*"] });
    expect([contractKey.status, contractKey.body.scope]).toEqual([403, "write:webhooks"]);
  });

  it("answers bad input with invalid_request, never 500", async () => {
    const a = auth(A().credentials.api_key_admin);
    const bad = [
      {},
      { url: `http://receiver.test:${port}/x` },
      { url: `http://receiver.test:${port}/x`, topics: [] },
      { url: `http://receiver.test:${port}/x`, topics: ["bookings"] },
      { url: `http://receiver.test:${port}/x`, topics: ["*"], property_ids: ["nope"] },
      { url: `http://receiver.test:${port}/x`, topics: ["*"], property_ids: [B().properties[0]] },
      { url: `http://receiver.test:${port}/x`, topics: ["*"], extra: 1 },
      { url: 42, topics: ["*"] },
      { url: "not a url", topics: ["*"] },
    ];
    for (const body of bad) {
      const res = await t.api.post("/v1/webhook-endpoints").set(a).send(body);
      expect([JSON.stringify(body), res.status, res.body.error]).toEqual([JSON.stringify(body), 400, "invalid_request"]);
    }
    expect((await t.api.get("/v1/webhook-endpoints?cursor=abc").set(a)).body.error).toBe("invalid_cursor");
    expect((await t.api.get("/v1/webhook-endpoints?limit=x").set(a)).status).toBe(400);
    expect((await t.api.get(`/v1/webhook-endpoints/${randomUUID()}`).set(a)).status).toBe(404);
    expect((await t.api.get("/v1/webhook-endpoints/not-a-uuid").set(a)).status).toBe(404);
    const ep = await createEndpoint("/hooks/bad");
    for (const body of [{}, { cursor: "x", since: "2026-01-01T00:00:00Z" }, { since: "yesterday" }, { cursor: "forged.cursor" }]) {
      const res = await t.api.post(`/v1/webhook-endpoints/${ep.id}/replay`).set(a).send(body);
      expect(res.status).toBe(400);
    }
    const put = await t.api.put(`/v1/webhook-endpoints/${ep.id}`).set(a).send({});
    expect(put.status).toBe(405);
    await t.api.delete(`/v1/webhook-endpoints/${ep.id}`).set(a).expect(204);
  });

  it("the worker delivers and prunes attempts older than the retention", async () => {
    const ep = await createEndpoint("/hooks/worker");
    await t.admin.$executeRawUnsafe(
      `INSERT INTO webhook_deliveries (endpoint_id, property_group_id, message_id, event_type, attempt, status, duration_ms, created_at)
       VALUES ($1::uuid, $2::uuid, 'evt_old', 'guest_profile.updated', 1, 'succeeded', 5, now() - make_interval(secs => $3::float8 / 1000 + 60))`,
      ep.id, A().id, DELIVERY_RETENTION_MS,
    );
    const seq = await appendEvent(A().id, A().guest_with_events);
    const silent = { debug() {}, info() {}, warn() {}, error() {} };
    const worker = startWebhookWorker(t.db.primary, { secretKey: key, messageIdKey: idKey, policy, resolve: resolver, intervalMs: 50, logger: silent });
    try {
      const deadline = Date.now() + 10_000;
      while (!ofPath("/hooks/worker").some((r) => r.headers["webhook-id"] === idOf(seq)) && Date.now() < deadline) await new Promise((r) => setTimeout(r, 50));
    } finally {
      await worker.stop();
    }
    expect(ofPath("/hooks/worker").map((r) => r.headers["webhook-id"])).toContain(idOf(seq));
    const ids = (await t.api.get(`/v1/webhook-endpoints/${ep.id}/deliveries`).set(auth(A().credentials.api_key_admin))).body.data.map((d: { message_id: string }) => d.message_id);
    expect(ids).not.toContain("evt_old");
    expect(ids).toContain(idOf(seq));
    await t.api.delete(`/v1/webhook-endpoints/${ep.id}`).set(auth(A().credentials.api_key_admin)).expect(204);
  });

  it("caps a group at 50 endpoints", async () => {
    const b = auth(B().credentials.api_key_admin);
    await t.admin.$executeRawUnsafe(
      `INSERT INTO webhook_endpoints (property_group_id, url, topics, property_ids, secret_ciphertext, state)
       SELECT $1::uuid, 'http://receiver.test/cap', '{*}', '{}', 'v2:x:y', 'disabled' FROM generate_series(1, 50)`,
      B().id,
    );
    const res = await t.api.post("/v1/webhook-endpoints").set(b).send({ url: `http://receiver.test:${port}/x`, topics: ["*"] });
    expect([res.status, res.body.error, res.body.detail]).toEqual([400, "invalid_request", "a group has at most 50 webhook endpoints; delete one first"]);
    // Group A is not affected.
    const a = await createEndpoint("/hooks/cap-a");
    await t.api.delete(`/v1/webhook-endpoints/${a.id}`).set(auth(A().credentials.api_key_admin)).expect(204);
    await t.admin.$executeRawUnsafe(`DELETE FROM webhook_endpoints WHERE property_group_id = $1::uuid AND url = 'http://receiver.test/cap'`, B().id);
  });

  it("pages the list with a cursor and replays from a /v1/events cursor", async () => {
    const a = auth(A().credentials.api_key_admin);
    const made = [await createEndpoint("/hooks/p1"), await createEndpoint("/hooks/p2"), await createEndpoint("/hooks/p3")];
    const seen: string[] = [];
    let cursor: string | null = null;
    do {
      const res: { status: number; body: { data: { id: string }[]; next_cursor: string | null } } = await t.api.get(`/v1/webhook-endpoints?limit=2${cursor ? `&cursor=${encodeURIComponent(cursor)}` : ""}`).set(a);
      expect(res.status).toBe(200);
      seen.push(...res.body.data.map((e: { id: string }) => e.id));
      cursor = res.body.next_cursor;
    } while (cursor);
    for (const e of made) expect(seen).toContain(e.id);
    expect(new Set(seen).size).toBe(seen.length);

    // Replay from the cursor of an unfiltered /v1/events page: the events after it are sent again.
    const target = made[0];
    const seq = await appendEvent(A().id, A().guest_with_events);
    await sendUntil(() => ofPath("/hooks/p1").length >= 1);
    let page: { body: { has_more: boolean; data: unknown[]; next_cursor: string } } = await t.api.get("/v1/events?limit=20").set(a);
    let before: string | null = null;
    while (page.body.has_more) {
      if ((page.body.data as { seq: string }[]).some((r) => r.seq === seq)) break;
      before = page.body.next_cursor;
      page = await t.api.get(`/v1/events?limit=20&cursor=${encodeURIComponent(before!)}`).set(a);
    }
    expect(before).not.toBeNull();
    const res = await t.api.post(`/v1/webhook-endpoints/${target.id}/replay`).set(a).send({ cursor: before });
    expect(res.status).toBe(200);
    await sendUntil(() => ofPath("/hooks/p1").filter((r) => r.headers["webhook-id"] === idOf(seq)).length >= 2);
    for (const e of made) await t.api.delete(`/v1/webhook-endpoints/${e.id}`).set(a).expect(204);
  });
});

// ---------------------------------------------------------------------------------------------
// Issue 40: the push doors hold against a determined caller.
// ---------------------------------------------------------------------------------------------
describe("issue 40: webhooks under a determined caller", () => {
  const silent = { debug() {}, info() {}, warn() {}, error() {} };
  const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));
  const until = async (check: () => boolean, ms = 20_000, what = "condition") => {
    const deadline = Date.now() + ms;
    while (!check()) {
      if (Date.now() > deadline) throw new Error(`${what}: not there in ${ms} ms`);
      await sleep(20);
    }
  };
  /** A worker as `gcs serve` runs it (each is an instance: they share nothing but the database). */
  const worker = (more: Partial<Parameters<typeof startWebhookWorker>[1]> = {}) =>
    startWebhookWorker(t.db.primary, { secretKey: key, messageIdKey: idKey, policy, resolve: resolver, intervalMs: 100, logger: silent, ...more });
  const ids = (path: string) => ofPath(path).map((r) => String(r.headers["webhook-id"]));
  const cursorSeq = async (id: string) =>
    (await t.admin.$queryRawUnsafe<{ seq: string }[]>(`SELECT cursor_seq::text AS seq FROM webhook_endpoints WHERE id = $1::uuid`, id))[0].seq;
  const recordedAt = async (seq: string) =>
    (await t.admin.$queryRawUnsafe<{ at: Date }[]>(`SELECT recorded_at AS at FROM events WHERE seq = $1::bigint`, seq))[0].at;

  it("a rotation reaches an endpoint that keeps receiving: every POST after the answer carries both signatures", async () => {
    const ep = await createEndpoint("/hooks/busy");
    const w = worker();
    let appending = true;
    let answered = false;
    // The webhook-ids of the events appended after the rotation's answer (the append started after it).
    const appendedAfter = new Set<string>();
    const appender = (async () => {
      while (appending) {
        const afterAnswer = answered;
        const seq = await appendEvent(A().id, A().guest_with_events);
        if (afterAnswer) appendedAfter.add(idOf(seq));
        await sleep(10);
      }
    })();
    let secret = "";
    const after = () => ofPath("/hooks/busy").filter((r) => appendedAfter.has(String(r.headers["webhook-id"])));
    try {
      // Deliveries flow continuously, on a lane that keeps the endpoint.
      await until(() => ofPath("/hooks/busy").length >= 30, 30_000, "deliveries flowing");
      const rotated = await t.api.post(`/v1/webhook-endpoints/${ep.id}/rotate-secret`).set(auth(A().credentials.api_key_admin));
      answered = true;
      expect(rotated.status).toBe(200);
      secret = rotated.body.data.secret;
      await until(() => after().length >= 40, 30_000, "deliveries of events appended after the rotation");
    } finally {
      appending = false;
      await appender;
      await w.stop();
    }
    // Every delivery after the rotation's answer: those of the events appended after it. (Not by
    // receipt time: a POST started just before the answer, legitimately signed with the old secret
    // alone, may arrive after it.)
    expect(after().length).toBeGreaterThanOrEqual(40);
    for (const r of after()) {
      expect(String(r.headers["webhook-signature"]).split(" ")).toHaveLength(2);
      for (const s of [secret, ep.secret]) new Webhook(s).verify(r.body, r.headers as Record<string, string>);
    }
    await t.api.delete(`/v1/webhook-endpoints/${ep.id}`).set(auth(A().credentials.api_key_admin)).expect(204);
  }, 90_000);

  it("holds the 50-endpoint cap under 60 concurrent creates from several credentials", async () => {
    await t.admin.$executeRawUnsafe(
      `INSERT INTO webhook_endpoints (property_group_id, url, topics, property_ids, secret_ciphertext, state)
       SELECT $1::uuid, 'http://receiver.test/race', '{*}', '{}', 'v2:x:y', 'disabled' FROM generate_series(1, 45)`,
      B().id,
    );
    const tokens = [B().credentials.api_key_admin, B().credentials.session_token];
    // An app whose per-credential gate queues for 30 s, not 1: 30 creates of one credential wait
    // for its 2 slots in turn, and on a loaded host the last waited past 1 s and got 429 (the gate's
    // answer, not the cap's). The race this test is about is the cap's.
    const racing = await startAppOn(t.databaseUrl, t.manifest, { GCS_WEBHOOKS_ALLOW_PRIVATE: "true", GCS_DELIVERY_WORKER: "false", GCS_CREDENTIAL_QUEUE_MS: "30000" });
    racing.services.webhookResolver = resolver;
    try {
      const results = await Promise.all(Array.from({ length: 60 }, (_, i) =>
        racing.api.post("/v1/webhook-endpoints").set(auth(tokens[i % tokens.length])).send({ url: `http://receiver.test:${port}/hooks/race/${i}`, topics: ["*"] })));
      const [{ n }] = await t.admin.$queryRawUnsafe<{ n: number }[]>(`SELECT count(*)::int AS n FROM webhook_endpoints WHERE property_group_id = $1::uuid`, B().id);
      expect(n).toBe(50);
      expect(results.filter((r) => r.status === 201)).toHaveLength(5);
      for (const r of results.filter((r) => r.status !== 201)) {
        expect([r.status, r.body.error, r.body.detail]).toEqual([400, "invalid_request", "a group has at most 50 webhook endpoints; delete one first"]);
      }
    } finally {
      await racing.close();
      await t.admin.$executeRawUnsafe(`DELETE FROM webhook_endpoints WHERE property_group_id = $1::uuid`, B().id);
    }
  }, 60_000);

  it("one group's 75 hanging receivers do not delay another group's delivery beyond an interval", async () => {
    // 75 endpoints of A (more than one instance's 64 lanes; inserted, as the cap is 50 through the
    // API) on a receiver that never answers, each starting at the log's end.
    const end = await eventLogEnd(t.db.primary, A().id);
    for (let i = 0; i < 75; i++) {
      const id = randomUUID();
      await t.admin.$executeRawUnsafe(
        `INSERT INTO webhook_endpoints (id, property_group_id, url, topics, property_ids, secret_ciphertext, cursor_txid, cursor_seq)
         VALUES ($1::uuid, $2::uuid, $3, '{*}', '{}', $4, $5::bigint, $6::bigint)`,
        id, A().id, `http://receiver.test:${port}/hooks/hang/${i}`, seal(newSecret(), id, key), end.txid, end.seq,
      );
    }
    const b = await createEndpoint("/hooks/fair", {}, B().credentials.api_key_admin);
    // A's receivers hold their lanes for the whole timeout, far longer than the bound below.
    const w = worker({ timeoutMs: 10_000 });
    const hanging = () => received.filter((r) => r.path.startsWith("/hooks/hang/")).length;
    let latency = Infinity;
    try {
      await appendEvent(A().id, A().guest_with_events);
      // A's receivers hold the lanes they were given, and the next polls have run.
      await until(() => hanging() >= 30, 20_000, "A's receivers reached");
      await sleep(500);
      const seq = await appendEvent(B().id, B().guest_with_events);
      const committed = Date.now();
      await until(() => ids("/hooks/fair").includes(idOf(seq)), 20_000, "B's delivery");
      latency = ofPath("/hooks/fair").find((r) => r.headers["webhook-id"] === idOf(seq))!.at - committed;
      console.log(`issue 40: group B's commit → receipt with group A's 75 receivers hanging: ${latency} ms (A's receivers reached: ${hanging()})`);
    } finally {
      await w.stop();
      await t.admin.$executeRawUnsafe(`DELETE FROM webhook_endpoints WHERE property_group_id = $1::uuid AND url LIKE '%/hooks/hang/%'`, A().id);
      await t.api.delete(`/v1/webhook-endpoints/${b.id}`).set(auth(B().credentials.api_key_admin)).expect(204);
    }
    // One interval is 100 ms; the claim, a read and a loaded 2-core machine's timers add up to a
    // few hundred, sometimes more. Held behind A's receivers, B would wait for their 10 s timeout.
    expect(latency).toBeLessThan(2_500);
  }, 90_000);

  it("several groups' hanging receivers (A's 75, B's 20) do not delay a third group's delivery beyond an interval", async () => {
    // A third group of its own (the fixtures have two), with one endpoint at its log's start.
    const org = randomUUID();
    const c = randomUUID();
    await t.admin.$executeRawUnsafe(`INSERT INTO organisations (id, name) VALUES ($1::uuid, 'issue 40 group C')`, org);
    await t.admin.$executeRawUnsafe(`INSERT INTO property_groups (id, organisation_id, name) VALUES ($1::uuid, $2::uuid, 'C')`, c, org);
    const insertEndpoint = async (group: string, path: string) => {
      const id = randomUUID();
      const end = await eventLogEnd(t.db.primary, group);
      await t.admin.$executeRawUnsafe(
        `INSERT INTO webhook_endpoints (id, property_group_id, url, topics, property_ids, secret_ciphertext, cursor_txid, cursor_seq)
         VALUES ($1::uuid, $2::uuid, $3, '{*}', '{}', $4, $5::bigint, $6::bigint)`,
        id, group, `http://receiver.test:${port}${path}`, seal(newSecret(), id, key), end.txid, end.seq,
      );
    };
    for (let i = 0; i < 75; i++) await insertEndpoint(A().id, `/hooks/hang/a${i}`);
    for (let i = 0; i < 20; i++) await insertEndpoint(B().id, `/hooks/hang/b${i}`);
    await insertEndpoint(c, "/hooks/fair-c");
    const w = worker({ timeoutMs: 10_000 });
    const hanging = (g: string) => received.filter((r) => r.path.startsWith(`/hooks/hang/${g}`)).length;
    let latency = Infinity;
    let bLanes = 0;
    try {
      await appendEvent(A().id, A().guest_with_events);
      await until(() => hanging("a") >= 30, 20_000, "A's receivers reached");
      await appendEvent(B().id, B().guest_with_events);
      // B's receivers hold the lanes they were given, and the next polls have run.
      await until(() => hanging("b") >= 1, 20_000, "B's receivers reached");
      await sleep(500);
      const [{ seq }] = await t.admin.$queryRawUnsafe<{ seq: string }[]>(
        `INSERT INTO events (property_group_id, entity_type, entity_id, operation, delta, occurred_at)
         VALUES ($1::uuid, 'reservation', $2::uuid, 'update', '{"status":"checked_in"}', now()) RETURNING seq::text AS seq`, c, randomUUID());
      const committed = Date.now();
      await until(() => ids("/hooks/fair-c").includes(idOf(seq)), 20_000, "C's delivery");
      latency = ofPath("/hooks/fair-c")[0].at - committed;
      bLanes = hanging("b");
      console.log(`issue 40: group C's commit → receipt with A's 75 and B's 20 receivers hanging: ${latency} ms (reached: A ${hanging("a")}, B ${hanging("b")})`);
    } finally {
      await w.stop();
      await t.admin.$executeRawUnsafe(`DELETE FROM webhook_endpoints WHERE url LIKE '%/hooks/hang/%' OR property_group_id = $1::uuid`, c);
    }
    // B holds one lane of the reserve, not all of it: C's first lane is claimed at the next poll
    // (before, A's 56 and B's 8 held every lane until A's 10 s timeout).
    expect(bLanes).toBe(1);
    expect(latency).toBeLessThan(2_500);
  }, 90_000);

  it("a replay on an active endpoint re-sends from the asked position with the original ids, whichever instance holds the lane", async () => {
    const a = auth(A().credentials.api_key_admin);
    const ep = await createEndpoint("/hooks/again");
    // Two instances' workers: the lane is on one of them; the replay request on neither.
    const workers = [worker(), worker()];
    try {
      const seqs: string[] = [];
      for (let i = 0; i < 7; i++) seqs.push(await appendEvent(A().id, A().guest_with_events));
      const sent = seqs.map(idOf);
      await until(() => ids("/hooks/again").length >= 7, 20_000, "the 7 events");
      expect(ids("/hooks/again")).toEqual(sent);

      // since: the recorded_at of the first of the 7.
      const since = await t.api.post(`/v1/webhook-endpoints/${ep.id}/replay`).set(a).send({ since: (await recordedAt(seqs[0])).toISOString() });
      expect([since.status, since.body.data.state]).toEqual([200, "active"]);
      await until(() => ids("/hooks/again").length >= 14, 20_000, "the replay from since");
      // A new event comes after the replayed ones, and the replay is not lost to it.
      const next = await appendEvent(A().id, A().guest_with_events);
      await until(() => ids("/hooks/again").includes(idOf(next)), 20_000, "the next event");
      expect(ids("/hooks/again")).toEqual([...sent, ...sent, idOf(next)]);

      // cursor: a /v1/events next_cursor behind the endpoint, after the third of the 7. (Behind its
      // recorded cursor: the lane records its progress within a quarter second.)
      for (let i = 0; i < 100 && (await cursorSeq(ep.id)) !== next; i++) await sleep(50);
      expect(await cursorSeq(ep.id)).toBe(next);
      let page = await t.api.get("/v1/events?limit=500").set(a);
      let before: string | null = null;
      while (!(page.body.data as { seq: string }[]).some((r) => r.seq === seqs[0])) {
        before = page.body.next_cursor;
        page = await t.api.get(`/v1/events?limit=500&cursor=${encodeURIComponent(before!)}`).set(a);
      }
      const rows = page.body.data as { seq: string }[];
      const upTo = rows.findIndex((r) => r.seq === seqs[2]) + 1;
      const cut = await t.api.get(`/v1/events?limit=${upTo}${before ? `&cursor=${encodeURIComponent(before)}` : ""}`).set(a);
      expect(cut.body.data.at(-1).seq).toBe(seqs[2]);
      const byCursor = await t.api.post(`/v1/webhook-endpoints/${ep.id}/replay`).set(a).send({ cursor: cut.body.next_cursor });
      expect(byCursor.status).toBe(200);
      const resent = [...sent.slice(3), idOf(next)];
      await until(() => ids("/hooks/again").length >= 15 + resent.length, 20_000, "the replay from a cursor");
      await sleep(500); // nothing more comes
      expect(ids("/hooks/again")).toEqual([...sent, ...sent, idOf(next), ...resent]);
      for (const r of ofPath("/hooks/again")) new Webhook(ep.secret).verify(r.body, r.headers as Record<string, string>);
    } finally {
      await Promise.all(workers.map((w) => w.stop()));
    }
    await t.api.delete(`/v1/webhook-endpoints/${ep.id}`).set(a).expect(204);
  }, 90_000);

  it("prices test pings: a document running more than one is refused with invalid_request (not a 429 to retry) before any is sent", async () => {
    const a = auth(A().credentials.api_key_admin);
    const ep = await createEndpoint("/hooks/pings");
    const ping = (alias: string, directive = "") => `${alias}: testWebhookEndpoint(id: "${ep.id}") ${directive} { delivered }`;
    const aliased = `mutation { ${Array.from({ length: 100 }, (_, i) => ping(`p${i}`)).join(" ")} }`;
    const viaFragment = `mutation { ${ping("p0")} ...more } fragment more on Mutation { ${ping("p1")} }`;
    const skipped = `mutation($no: Boolean!) { ${ping("p0")} ${ping("p1", "@skip(if: $no)")} ${ping("p2", "@include(if: false)")} }`;
    for (const [query, variables, n] of [[aliased, {}, 100], [viaFragment, {}, 2], [skipped, { no: false }, 2]] as const) {
      const res = await t.api.post("/graphql").set(a).send({ query, variables });
      expect(res.body.data).toBeNull();
      expect(res.body.errors[0].extensions).toMatchObject({ code: "invalid_request" });
      expect(res.body.errors[0].message).toContain(`one test ping per request, and this one asks for ${n}`);
    }
    expect(ofPath("/hooks/pings")).toHaveLength(0);
    // One per request, over /graphql and REST alike; fields left out by @skip/@include do not count,
    // nor does one response name selected twice (execution merges it into one run).
    const one = await t.api.post("/graphql").set(a).send({ query: `mutation { ${ping("p0")} }` });
    expect(one.body.data).toEqual({ p0: { delivered: true } });
    const withSkipped = await t.api.post("/graphql").set(a).send({ query: skipped, variables: { no: true } });
    expect(withSkipped.body).toEqual({ data: { p0: { delivered: true } } });
    const merged = await t.api.post("/graphql").set(a).send({ query: `mutation { ${ping("p0")} ...again } fragment again on Mutation { ${ping("p0")} }` });
    expect(merged.body).toEqual({ data: { p0: { delivered: true } } });
    await t.api.post(`/v1/webhook-endpoints/${ep.id}/test`).set(a).expect(200);
    expect(ofPath("/hooks/pings")).toHaveLength(4);
    await t.api.delete(`/v1/webhook-endpoints/${ep.id}`).set(a).expect(204);
  });

  it("a 2xx answer over 64 KB is a success: each event is sent once and recorded once", async () => {
    const ep = await createEndpoint("/hooks/long");
    const seqs: string[] = [];
    for (let i = 0; i < 8; i++) seqs.push(await appendEvent(A().id, A().guest_with_events));
    await sendUntil(() => ofPath("/hooks/long").length >= 8);
    await sendDue(t.db.primary, opts());
    expect(ids("/hooks/long")).toEqual(seqs.map(idOf));
    const rows = await t.admin.$queryRawUnsafe<{ message_id: string; status: string }[]>(
      `SELECT message_id, status FROM webhook_deliveries WHERE endpoint_id = $1::uuid ORDER BY event_seq`, ep.id);
    expect(rows).toEqual(seqs.map((s) => ({ message_id: idOf(s), status: "succeeded" })));
    await t.api.delete(`/v1/webhook-endpoints/${ep.id}`).set(auth(A().credentials.api_key_admin)).expect(204);
  });

  it("webhook-ids reveal nothing of other groups' events and stay the same on a replay", async () => {
    const ep = await createEndpoint("/hooks/ids");
    const first = await appendEvent(A().id, A().guest_with_events);
    for (let i = 0; i < 5; i++) await appendEvent(B().id, B().guest_with_events); // another group's events between
    const second = await appendEvent(A().id, A().guest_with_events);
    await sendUntil(() => ofPath("/hooks/ids").length >= 2);
    const got = ids("/hooks/ids");
    expect(got).toHaveLength(2);
    for (const [id, seq] of [[got[0], first], [got[1], second]]) {
      // Not the global seq, nor anything counted from it: a keyed hash of it.
      expect(id).toMatch(/^evt_[A-Za-z0-9_-]{22}$/);
      expect(id).not.toContain(seq);
    }
    // Nor the body: data is the /v1/events row without seq.
    const wh = new Webhook(ep.secret);
    const bodies = ofPath("/hooks/ids").map((r) => wh.verify(r.body, r.headers as Record<string, string>) as { type: string; timestamp: string; data: Record<string, unknown> });
    for (const b of bodies) {
      expect(Object.keys(b)).toEqual(["type", "timestamp", "data"]);
      expect(Object.keys(b.data).sort()).toEqual(["delta", "entity_id", "entity_type", "guest_profile_id", "integration_id", "occurred_at", "operation", "property_id", "recorded_at"]);
      expect(b.data.delta).toEqual({ vip_code: "VIP9" });
    }
    for (const r of ofPath("/hooks/ids")) expect(r.body).not.toContain('"seq"');
    // The two events differ only in their times, and so do their bodies: nothing counts what B appended between.
    const [one, two] = bodies.map(({ data: { recorded_at: _r, occurred_at: _o, ...rest } }) => rest);
    expect(two).toEqual(one);
    // The same ids on a replay (receivers deduplicate on them), and in the deliveries list.
    await t.api.post(`/v1/webhook-endpoints/${ep.id}/replay`).set(auth(A().credentials.api_key_admin)).send({ since: (await recordedAt(first)).toISOString() }).expect(200);
    await sendUntil(() => ofPath("/hooks/ids").length >= 4);
    expect(ids("/hooks/ids")).toEqual([...got, ...got]);
    const listed = (await t.api.get(`/v1/webhook-endpoints/${ep.id}/deliveries`).set(auth(A().credentials.api_key_admin))).body.data as { message_id: string }[];
    expect(new Set(listed.map((d) => d.message_id))).toEqual(new Set(got));
    await t.api.delete(`/v1/webhook-endpoints/${ep.id}`).set(auth(A().credentials.api_key_admin)).expect(204);
  });
});
