// A slow destination against two real `gcs serve` processes with delivery workers: no transaction or
// lock is held while it answers (src/delivery/engine.ts), so
// - a pause through the API answers within a second mid-flush, and no destination call starts after
//   it answered (calls already in flight may finish);
// - the binding's confirmed_seq moves while the flush runs, call by call;
// - a SIGKILL of the instance delivering loses nothing: the survivor takes the binding over when the
//   lease runs out, and only the calls in flight at the kill reach the destination twice;
// - a failing destination shows in the binding (last_error, lag) and in /metrics.
// Each instance calls the stand-in destination through its own recording proxy, which notes when
// every request arrived. DELIVERY_SLOW_DELAY_MS and DELIVERY_SLOW_MEMBERS size the run (the closing
// figures print when DELIVERY_SLOW_REPORT=1).
import { createServer, type Server } from "node:http";
import type { AddressInfo } from "node:net";
import { randomUUID } from "node:crypto";
import { addTableMembers, removeTableMembers } from "../../src/data/stores/table-membership";
import { startStandIn, type StandIn } from "../../src/delivery/standin";
import { subscriberHash } from "../../src/delivery/providers";
import { startTestApp, type TestApp } from "../helpers/app";
import { serve, type ServeProcess } from "../helpers/serve";

const DELAY_MS = Number(process.env.DELIVERY_SLOW_DELAY_MS ?? 200);
const MEMBERS = Number(process.env.DELIVERY_SLOW_MEMBERS ?? 60);
const LEASE_MS = 4_000;
const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

interface Arrival {
  at: number;
  method: string;
  path: string;
}

/** An HTTP proxy to the stand-in that notes each request's arrival (Date.now()) before forwarding it. */
async function startRecorder(target: string): Promise<{ url: string; arrivals: Arrival[]; close(): Promise<void> }> {
  const arrivals: Arrival[] = [];
  const server: Server = createServer((req, res) => {
    arrivals.push({ at: Date.now(), method: req.method!, path: req.url! });
    const chunks: Buffer[] = [];
    req.on("data", (c: Buffer) => chunks.push(c));
    req.on("end", () => {
      const headers = Object.fromEntries(["authorization", "revision", "content-type", "accept"].flatMap((h) => (req.headers[h] ? [[h, String(req.headers[h])]] : [])));
      const body = Buffer.concat(chunks);
      fetch(`${target}${req.url}`, { method: req.method, headers, body: body.length > 0 ? body : undefined })
        .then(async (r) => {
          const answer = Buffer.from(await r.arrayBuffer());
          if (!res.destroyed) res.writeHead(r.status, { "content-type": r.headers.get("content-type") ?? "application/json" }).end(answer);
        })
        .catch(() => !res.destroyed && res.writeHead(502).end());
    });
    res.on("error", () => undefined);
  });
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
  return {
    url: `http://127.0.0.1:${(server.address() as AddressInfo).port}`,
    arrivals,
    close: () => {
      server.closeAllConnections();
      return new Promise((resolve) => server.close(() => resolve()));
    },
  };
}

let t: TestApp;
let standIn: StandIn;
let recorders: Awaited<ReturnType<typeof startRecorder>>[];
let instances: ServeProcess[] = [];

const A = () => t.manifest.groups.A;
const tableId = () => A().tables.bound;
const mailchimpDeletes = (arrivals: Arrival[]) => arrivals.filter((a) => a.method === "DELETE" && a.path.startsWith("/3.0/"));

async function binding(provider: string) {
  return t.admin.destinationBinding.findUniqueOrThrow({ where: { tableId_provider: { tableId: tableId(), provider } } });
}

async function until(what: string, check: () => Promise<boolean> | boolean, timeoutMs = 30_000): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  while (!(await check())) {
    if (Date.now() > deadline) throw new Error(`timed out waiting for ${what}`);
    await sleep(20);
  }
}

async function logHead(): Promise<bigint> {
  const [{ head }] = await t.admin.$queryRaw<{ head: bigint }[]>`SELECT max(seq) AS head FROM table_membership_changes WHERE table_id = ${tableId()}::uuid`;
  return head;
}

/** Sessions of the service on the test's database idle in a transaction, or in one for over a second. */
async function openTransactions(): Promise<string[]> {
  const rows = await t.admin.$queryRaw<{ state: string; query: string }[]>`
    SELECT state, left(query, 80) AS query FROM pg_stat_activity
    WHERE datname = current_database() AND pid <> pg_backend_pid() AND backend_type = 'client backend'
      AND (state LIKE 'idle in transaction%' OR (state <> 'idle' AND xact_start < now() - interval '1 second'))`;
  return rows.map((r) => `${r.state}: ${r.query}`);
}

const caughtUp = async (provider: string) => (await binding(provider)).confirmedSeq === (await logHead());

async function callApi(instance: ServeProcess, method: string, path: string): Promise<{ status: number; body: any; ms: number }> {
  const started = Date.now();
  const res = await fetch(`${instance.url}${path}`, { method, headers: { authorization: `Bearer ${A().credentials.api_key}` } });
  const body = res.headers.get("content-type")?.includes("json") ? await res.json() : await res.text();
  return { status: res.status, body, ms: Date.now() - started };
}

/** Guests of group A with their own address and granted email-marketing consent, made members of the bound table. */
async function addMembers(count: number): Promise<{ id: string; email: string }[]> {
  const db = t.admin;
  const source = await db.guestProfile.findUniqueOrThrow({ where: { id: A().guest_lookup.guest_id } });
  const guests = Array.from({ length: count }, (_, n) => ({ id: randomUUID(), email: `slow.${n}.${Date.now()}@example.org`, n }));
  await db.guestProfile.createMany({
    data: guests.map((g) => ({
      id: g.id, propertyGroupId: A().id, propertyId: source.propertyId, integrationId: source.integrationId,
      sourceId: `slow-${g.email}`, email: g.email, givenName: "Slow", familyName: `Guest ${g.n}`,
    })),
  });
  await db.consentObservation.createMany({
    data: guests.map((g) => ({
      id: randomUUID(), propertyGroupId: A().id, propertyId: source.propertyId, contactType: "email" as const, contactValue: g.email,
      purpose: "email_marketing", channel: "email", status: "granted" as const, source: "test", observedAt: new Date(Date.UTC(2024, 0, 1)),
    })),
  });
  await addTableMembers(db, { tableId: tableId(), propertyGroupId: A().id, memberIds: guests.map((g) => g.id) });
  return guests;
}

beforeAll(async () => {
  t = await startTestApp({ GCS_DELIVERY_WORKER: "false" });
  standIn = await startStandIn();
  recorders = await Promise.all([startRecorder(standIn.url), startRecorder(standIn.url)]);
  const started = await Promise.allSettled(
    recorders.map((r) =>
      serve({
        DATABASE_URL: t.databaseUrl,
        GCS_DELIVERY_WORKER: "true",
        GCS_DELIVERY_INTERVAL_MS: "100",
        GCS_DELIVERY_LEASE_MS: String(LEASE_MS),
        GCS_METRICS_PORT: "0",
        GCS_MAILCHIMP_BASE_URL: r.url,
        GCS_KLAVIYO_BASE_URL: r.url,
      }),
    ),
  );
  instances = started.flatMap((r) => (r.status === "fulfilled" ? [r.value] : []));
  for (const r of started) if (r.status === "rejected") throw r.reason;
  await until("the fixture backlog to be delivered", async () => (await caughtUp("mailchimp")) && (await caughtUp("klaviyo")));
}, 90_000);

afterAll(async () => {
  for (const i of instances) if (i.child.exitCode === null && i.child.signalCode === null) i.child.kill("SIGKILL");
  await Promise.all(instances.map((i) => i.exited));
  await Promise.all((recorders ?? []).map((r) => r.close()));
  await standIn?.close();
  await t?.close();
});

describe("a slow destination with two instances delivering", () => {
  it("steady progress, SIGKILL mid-flush, pause answered at once with no call after it, nothing confirmed sent twice", async () => {
    const guests = await addMembers(MEMBERS);
    await until("the members to be subscribed", async () => (await caughtUp("mailchimp")) && (await caughtUp("klaviyo")));
    for (const r of recorders) r.arrivals.length = 0;

    // Every destination request now takes DELAY_MS; the removals are one Mailchimp DELETE each.
    standIn.setDelay(DELAY_MS);
    const startedAt = Date.now();
    const from = (await binding("mailchimp")).confirmedSeq;
    await removeTableMembers(t.db.primary, { tableId: tableId(), propertyGroupId: A().id, memberIds: guests.map((g) => g.id) });
    const head = await logHead();

    // Whichever instance took the Mailchimp binding is killed once its calls are under way.
    await until("a first round of deletes", () => recorders.some((r) => mailchimpDeletes(r.arrivals).length >= 6));
    const victim = recorders.findIndex((r) => mailchimpDeletes(r.arrivals).length >= 6);
    const survivor = 1 - victim;
    // The cursor has moved while the flush runs.
    await until("confirmed_seq to move mid-flush", async () => (await binding("mailchimp")).confirmedSeq > from);
    instances[victim].child.kill("SIGKILL");
    await instances[victim].exited;
    const killedAt = Date.now();
    const sentByVictim = mailchimpDeletes(recorders[victim].arrivals).length;
    const confirmedAtKill = (await binding("mailchimp")).confirmedSeq;
    expect(confirmedAtKill).toBeLessThan(head);

    // The survivor takes over once the lease has run out, and moves the cursor on.
    const seen = new Set<bigint>();
    const openWhileCalling: string[] = [];
    await until(
      "the survivor to take the binding over",
      async () => {
        const seq = (await binding("mailchimp")).confirmedSeq;
        seen.add(seq);
        openWhileCalling.push(...(await openTransactions()));
        return mailchimpDeletes(recorders[survivor].arrivals).length >= 8 && seq > confirmedAtKill;
      },
      LEASE_MS + 30_000,
    );
    expect(seen.size).toBeGreaterThanOrEqual(2);
    // While destination calls of DELAY_MS were in flight, no session held a transaction open.
    expect(openWhileCalling).toEqual([]);

    // Pause through the API mid-flush: answered at once, and no call starts after the answer.
    const pause = await callApi(instances[survivor], "POST", `/v1/tables/${tableId()}/destinations/mailchimp/pause`);
    const pausedAt = Date.now();
    expect(pause.status).toBe(200);
    expect(pause.body.data.state).toBe("paused");
    expect(pause.ms).toBeLessThan(1000);
    await sleep(DELAY_MS * 3 + 500);
    const lateCalls = mailchimpDeletes(recorders[survivor].arrivals).filter((a) => a.at > pausedAt);
    expect(lateCalls).toEqual([]);
    const paused = await binding("mailchimp");
    expect(paused.state).toBe("paused");
    expect(paused.confirmedSeq).toBeLessThan(head);

    // Resume: the rest is delivered.
    const resume = await callApi(instances[survivor], "POST", `/v1/tables/${tableId()}/destinations/mailchimp/resume`);
    expect(resume.status).toBe(200);
    expect(resume.ms).toBeLessThan(1000);
    await until("the removals to be delivered", async () => (await binding("mailchimp")).confirmedSeq === head, 60_000 + (MEMBERS / 4) * DELAY_MS * 2);
    const elapsedMs = Date.now() - startedAt;

    // Every removal reached the destination; the only repeats are calls in flight at the kill (at
    // most the client's four parallel deletes), never one the destination had confirmed.
    const deletes = recorders.flatMap((r) => mailchimpDeletes(r.arrivals));
    const perHash = new Map<string, number>();
    for (const d of deletes) perHash.set(d.path.split("/").pop()!, (perHash.get(d.path.split("/").pop()!) ?? 0) + 1);
    const expected = guests.map((g) => subscriberHash(g.email));
    expect(expected.filter((h) => !perHash.has(h))).toEqual([]);
    const duplicates = [...perHash.values()].reduce((n, c) => n + c - 1, 0);
    expect(duplicates).toBeLessThanOrEqual(4);
    const sentTwice = [...perHash].filter(([, c]) => c > 1).map(([h]) => h);
    const victimHashes = new Set(mailchimpDeletes(recorders[victim].arrivals).map((d) => d.path.split("/").pop()!));
    expect(sentTwice.every((h) => victimHashes.has(h))).toBe(true);
    expect(instances[survivor].log.filter((l) => l.level >= 50)).toEqual([]);

    if (process.env.DELIVERY_SLOW_REPORT === "1") {
      process.stdout.write(
        `slow destination: ${MEMBERS} removals, ${DELAY_MS} ms a call: ${deletes.length} DELETEs, ${duplicates} duplicates ` +
          `(victim sent ${sentByVictim} before the kill at +${killedAt - startedAt} ms), pause answered in ${pause.ms} ms, ` +
          `resume in ${resume.ms} ms, ${((MEMBERS / elapsedMs) * 60_000).toFixed(0)} changes/min over ${elapsedMs} ms ` +
          `(kill, lease takeover and pause included)\n`,
      );
    }
  });

  it("a failing destination is retried with backoff, and the binding and /metrics show it", async () => {
    const instance = instances.find((i) => i.child.exitCode === null && i.child.signalCode === null)!;
    standIn.setDelay(0);
    await callApi(instance, "POST", `/v1/tables/${tableId()}/destinations/klaviyo/resume`);
    await until("klaviyo to catch up", () => caughtUp("klaviyo"));
    standIn.failNext(1_000_000, 503, { provider: "klaviyo" });
    const before = recorders.reduce((n, r) => n + r.arrivals.length, 0);
    await addMembers(3);
    await until("the failure to be recorded", async () => (await binding("klaviyo")).lastError !== null);

    const table = await callApi(instance, "GET", `/v1/tables/${tableId()}`);
    const view = table.body.data.bindings.find((b: { provider: string }) => b.provider === "klaviyo");
    expect(view).toMatchObject({ state: "active", lag: 3 });
    expect(view.last_error).toMatch(/503/);
    const row = await binding("klaviyo");
    expect(row.failureCount).toBeGreaterThanOrEqual(1);
    expect(row.nextAttemptAt!.getTime()).toBeGreaterThan(Date.now());

    const metricsPort = instance.log.find((l) => l.msg === "metrics listening")!.port;
    const text = await (await fetch(`http://127.0.0.1:${metricsPort}/metrics`)).text();
    expect(text).toMatch(new RegExp(`gcs_delivery_pending_changes\\{binding_id="${row.id}",destination="klaviyo"\\} 3`));
    expect(text).toMatch(new RegExp(`gcs_delivery_consecutive_failures\\{binding_id="${row.id}",destination="klaviyo"\\} [1-9]`));

    // Backing off: within the first step (2.5–5 s) no more than one retry reaches the destination.
    const attempts = recorders.reduce((n, r) => n + r.arrivals.length, 0) - before;
    expect(attempts).toBeLessThanOrEqual(2);
    standIn.reset();
    await until("delivery after the destination recovers", () => caughtUp("klaviyo"), 30_000);
    expect((await binding("klaviyo")).lastError).toBeNull();
  });
});
