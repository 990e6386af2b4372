// Two real `gcs serve` processes with their delivery workers on, against one PostgreSQL, under a
// bounded load of concurrent membership adds and removes, delivering through one gate each
// (test/helpers/destination-gate.ts) to one stand-in destination that records every member
// operation it applied. Each change of the bound table is one operation per binding: an add is a
// subscribe of the member's address, a remove a removal; with one address per guest and at most
// one add and one remove per guest, (binding's list, op, address) names the change.
// The load writes through the service's one membership write path (src/data/stores/table-membership.ts)
// from the test process: the API has no membership writes (the contract is reads plus pause/resume).
//
// What the engine promises (src/delivery/engine.ts): a flush leases its binding, and records what
// the destination confirmed after each call, never holding a transaction or lock while the
// destination answers. So two instances never deliver one change twice, and an instance that dies
// mid-call loses nothing: once its lease runs out (LEASE_MS here) the other instance sends the
// unconfirmed calls again. That re-sent call is the one place a change reaches the destination
// twice; its operations are idempotent (subscribe is an upsert, removal a delete), so what the
// destination holds is still each change applied once. Both halves are checked here.
import { randomUUID } from "node:crypto";
import { addTableMembers, removeTableMembers } from "../../src/data/stores/table-membership";
import { createPrismaClient } from "../../src/db/database";
import { startStandIn, type ReceivedOperation, type StandIn } from "../../src/delivery/standin";
import type { FixtureManifest } from "../../src/fixtures";
import type { PrismaClient } from "../../src/generated/prisma/client";
import { startGates, type Gate } from "../helpers/destination-gate";
import { startOwnPostgres } from "../helpers/own-postgres";
import type { TestPostgres } from "../helpers/postgres";
import { serve, type ServeProcess } from "../helpers/serve";

const BATCH_SIZE = 25;
const GUESTS = 800;
/** Longer than a held call in the first test, short enough for the second to see a takeover. */
const LEASE_MS = 6_000;

// Its own PostgreSQL: held batches keep transactions open, which would hold back the event
// timeline of the other test files on the shared server.
let pg: TestPostgres;
let manifest: FixtureManifest;
let db: PrismaClient;
let standIn: StandIn;
let gates: Gate[];
let instances: ServeProcess[];
let bindings: Binding[];
let load: MembershipLoad;

interface Binding {
  id: string;
  provider: string;
  remoteListId: string;
}

const A = () => manifest.groups.A;
const tableId = () => A().tables.bound;
const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

beforeAll(async () => {
  ({ pg, manifest } = await startOwnPostgres());
  db = createPrismaClient(pg.adminUrl(), 6);
  standIn = await startStandIn();
  gates = await startGates(standIn, 2);
  bindings = await db.destinationBinding.findMany({
    where: { tableId: tableId() },
    select: { id: true, provider: true, remoteListId: true },
    orderBy: { provider: "asc" },
  });
  load = new MembershipLoad(await createGuests(GUESTS));
  const started = await Promise.allSettled(
    gates.map((gate) =>
      serve({
        DATABASE_URL: pg.adminUrl(),
        GCS_DELIVERY_WORKER: "true",
        GCS_DELIVERY_INTERVAL_MS: "100",
        GCS_DELIVERY_BATCH_SIZE: String(BATCH_SIZE),
        GCS_DELIVERY_LEASE_MS: String(LEASE_MS),
        GCS_MAILCHIMP_BASE_URL: gate.url,
        GCS_KLAVIYO_BASE_URL: gate.url,
      }),
    ),
  );
  // Kept even when the other failed to start, so afterAll stops it.
  instances = started.flatMap((r) => (r.status === "fulfilled" ? [r.value] : []));
  for (const r of started) if (r.status === "rejected") throw r.reason;
  // The fixture bindings start behind their logs; the load starts from caught-up bindings.
  await caughtUp();
}, 90_000); // a PostgreSQL and two server processes start on a machine the test run shares

afterAll(async () => {
  // The instances first: a failed test may have left one holding a binding's lock.
  for (const i of instances ?? []) if (i.child.exitCode === null && i.child.signalCode === null) i.child.kill("SIGKILL");
  await Promise.all((instances ?? []).map((i) => i.exited));
  await within("the load to stop", load?.stop() ?? Promise.resolve()).catch(() => undefined);
  await Promise.all((gates ?? []).map((g) => g.close()));
  await standIn?.close();
  await db?.$disconnect();
  pg?.stop();
});

// ---------------------------------------------------------------------------------------------
// Helpers
// ---------------------------------------------------------------------------------------------

/** `promise`, or a failure naming `what` after `timeoutMs`. */
function within<T>(what: string, promise: Promise<T>, timeoutMs = 10_000): Promise<T> {
  let timer: NodeJS.Timeout;
  const timeout = new Promise<never>((_, reject) => (timer = setTimeout(() => reject(new Error(`timed out waiting for ${what}`)), timeoutMs)));
  return Promise.race([promise, timeout]).finally(() => clearTimeout(timer));
}

/** Polls `check` until it holds; fails with `what` after `timeoutMs`. */
async function until(what: string, check: () => Promise<boolean>, timeoutMs = 20_000): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  while (!(await check())) {
    if (Date.now() > deadline) throw new Error(`timed out waiting for ${what}`);
    await sleep(25);
  }
}

const confirmedSeq = async (binding: Binding) =>
  (await db.destinationBinding.findUniqueOrThrow({ where: { id: binding.id }, select: { confirmedSeq: true } })).confirmedSeq;

/** Every active binding has confirmed its table's whole log. */
const caughtUp = () =>
  until("every binding to catch up", async () => {
    const [{ behind }] = await db.$queryRaw<{ behind: number }[]>`
      SELECT count(*)::int AS behind FROM destination_bindings b
      WHERE b.state = 'active'
        AND EXISTS (SELECT 1 FROM table_membership_changes c WHERE c.table_id = b.table_id AND c.seq > b.confirmed_seq)`;
    return behind === 0;
  });

interface Guest {
  id: string;
  email: string;
}

/** Guests of group A, each with its own address and granted email-marketing consent. */
async function createGuests(count: number): Promise<Guest[]> {
  const source = await db.guestProfile.findUniqueOrThrow({ where: { id: A().guest_lookup.guest_id } });
  const guests = Array.from({ length: count }, (_, n) => ({ id: randomUUID(), email: `instances.${n}@example.org`, n }));
  await db.guestProfile.createMany({
    data: guests.map((g) => ({
      id: g.id, propertyGroupId: A().id, propertyId: source.propertyId, integrationId: source.integrationId,
      sourceId: `instances-${g.n}`, email: g.email, givenName: "Load", familyName: `Guest ${g.n}`,
    })),
  });
  await db.consentObservation.createMany({
    data: guests.map((g) => ({
      id: randomUUID(), propertyGroupId: A().id, propertyId: source.propertyId, contactType: "email" as const,
      contactValue: g.email, purpose: "email_marketing", channel: "email", status: "granted" as const, source: "test",
      observedAt: new Date(Date.UTC(2024, 0, 1)),
    })),
  });
  return guests.map(({ id, email }) => ({ id, email }));
}

/**
 * Membership changes of the bound table through the service's one write path
 * (src/data/stores/table-membership.ts), from several writers at once. Every third guest added is removed
 * again once both bindings confirmed its add: an add and a remove of one member in one batch are
 * rightly collapsed into one operation by the engine, and this keeps one operation per change.
 */
class MembershipLoad {
  private next = 0;
  /** Member → the seq its add is confirmed by (the newest seq of the add call that logged it). */
  private readonly addedBy = new Map<string, bigint>();
  private toRemove: string[] = [];
  private stopped = false;
  private failure: unknown;
  private readonly removing: Promise<void>;

  constructor(readonly guests: Guest[]) {
    this.removing = this.removeLoop().catch((err) => void (this.failure = err));
  }

  /** Adds the next `count` guests, `writers` calls at a time, in chunks of 1 to 20. */
  async add(count: number, writers = 4): Promise<void> {
    const ids = this.guests.slice(this.next, this.next + count).map((g) => g.id);
    if (ids.length < count) throw new Error("not enough guests for this load");
    const from = this.next;
    this.next += count;
    const chunks: string[][] = [];
    for (let i = 0, k = 0; i < ids.length; k++) {
      const size = 1 + ((k * 7) % 20);
      chunks.push(ids.slice(i, i + size));
      i += size;
    }
    let nextChunk = 0;
    await Promise.all(
      Array.from({ length: writers }, async () => {
        while (nextChunk < chunks.length) {
          const chunk = chunks[nextChunk++];
          const r = await addTableMembers(db, { tableId: tableId(), propertyGroupId: A().id, memberIds: chunk });
          expect(r.changed).toEqual(chunk);
          for (const id of chunk) {
            this.addedBy.set(id, r.lastSeq!);
            if ((from + ids.indexOf(id)) % 3 === 0) this.toRemove.push(id);
          }
        }
      }),
    );
  }

  /** Resolves when every removal due so far is done. */
  async settled(): Promise<void> {
    await until("the load's removals", async () => {
      if (this.failure) throw this.failure;
      return this.toRemove.length === 0;
    });
  }

  stop() {
    this.stopped = true;
    return this.removing;
  }

  private async removeLoop(): Promise<void> {
    while (!this.stopped) {
      const confirmed = (await Promise.all(bindings.map(confirmedSeq))).reduce((a, b) => (a < b ? a : b));
      const ready = this.toRemove.filter((id) => this.addedBy.get(id)! <= confirmed).slice(0, 15);
      if (ready.length === 0) {
        await sleep(50);
        continue;
      }
      this.toRemove = this.toRemove.filter((id) => !ready.includes(id));
      const r = await removeTableMembers(db, { tableId: tableId(), propertyGroupId: A().id, memberIds: ready });
      expect(r.changed).toEqual(ready);
    }
  }
}

const opKey = (provider: string, listId: string, op: ReceivedOperation["op"], email: string) => `${provider} ${listId} ${op} ${email}`;
const keyOf = (o: ReceivedOperation) => opKey(o.provider, o.listId, o.op, o.email);

interface Expected {
  /** Operation key → the binding and seq of the change it delivers. */
  changes: Map<string, { binding: Binding; seq: bigint }>;
  /** `provider list email` → what the destination must finally hold for it. */
  finalState: Map<string, ReceivedOperation["op"]>;
}

/** What the bound table's log says each binding must deliver for the load's guests. */
async function expected(): Promise<Expected> {
  const emailOf = new Map(load.guests.map((g) => [g.id, g.email]));
  const log = await db.tableMembershipChange.findMany({
    where: { tableId: tableId(), memberId: { in: [...emailOf.keys()] } },
    select: { seq: true, memberId: true, op: true },
    orderBy: { seq: "asc" },
  });
  const changes = new Map<string, { binding: Binding; seq: bigint }>();
  const finalState = new Map<string, ReceivedOperation["op"]>();
  for (const binding of bindings) {
    for (const c of log) {
      const op = c.op === "add" ? "subscribe" : "remove";
      const email = emailOf.get(c.memberId)!;
      changes.set(opKey(binding.provider, binding.remoteListId, op, email), { binding, seq: c.seq });
      finalState.set(`${binding.provider} ${binding.remoteListId} ${email}`, op);
    }
  }
  // One add per guest added, one remove per guest removed: each change is its own operation key.
  expect(changes.size).toBe(bindings.length * log.length);
  return { changes, finalState };
}

/** How often the destination applied each operation on the load's guests, and what it holds now. */
function received() {
  const emails = new Set(load.guests.map((g) => g.email));
  const counts = new Map<string, number>();
  const finalState = new Map<string, ReceivedOperation["op"]>();
  for (const o of standIn.received().filter((r) => emails.has(r.email))) {
    counts.set(keyOf(o), (counts.get(keyOf(o)) ?? 0) + 1);
    finalState.set(`${o.provider} ${o.listId} ${o.email}`, o.op);
  }
  return { counts, finalState };
}

/** Keys missing, received more than `allowed(key)` times, or not a change at all. */
function discrepancies(exp: Expected, counts: Map<string, number>, allowed: (key: string) => number = () => 1) {
  return {
    missing: [...exp.changes.keys()].filter((k) => !counts.has(k)),
    tooOften: [...counts].filter(([k, n]) => exp.changes.has(k) && n > allowed(k)).map(([k]) => k),
    unexpected: [...counts.keys()].filter((k) => !exp.changes.has(k)),
  };
}

const loadKeys = (ops: ReceivedOperation[]) => {
  const emails = new Set(load.guests.map((g) => g.email));
  return ops.filter((o) => emails.has(o.email)).map(keyOf);
};

// ---------------------------------------------------------------------------------------------

describe("two instances with delivery workers on one database", () => {
  it("share the work and deliver every change exactly once under concurrent adds and removes", async () => {
    expect(bindings.map((b) => b.provider)).toEqual(["klaviyo", "mailchimp"]);
    // Instance 0's next call is held at the destination: its worker waits and its binding stays
    // leased, so whatever the other binding delivers meanwhile, instance 1 delivered.
    gates[0].hold();
    const adding = load.add(300);
    await within("instance 0 to start a batch", gates[0].held());
    const [first] = gates[0].heldOperations;
    const heldBinding = bindings.find((b) => b.provider === first.provider && b.remoteListId === first.listId)!;
    const otherBinding = bindings.find((b) => b !== heldBinding)!;
    const heldAt = await confirmedSeq(heldBinding);
    await load.add(20);
    const [{ head }] = await db.$queryRaw<{ head: bigint }[]>`SELECT max(seq) AS head FROM table_membership_changes WHERE table_id = ${tableId()}::uuid`;
    await until("instance 1 to deliver the other binding", async () => (await confirmedSeq(otherBinding)) >= head, 10_000);
    expect(await confirmedSeq(heldBinding)).toBe(heldAt); // nobody else took the leased binding
    gates[0].release();
    await until("instance 0 to commit its held batch", async () => (await confirmedSeq(heldBinding)) > heldAt, 10_000);

    await adding;
    await load.settled();
    await caughtUp();

    const exp = await expected();
    const got = received();
    expect(exp.changes.size).toBeGreaterThan(600);
    expect(discrepancies(exp, got.counts)).toEqual({ missing: [], tooOften: [], unexpected: [] });
    expect(got.finalState).toEqual(exp.finalState);
    // Both instances delivered, and between them every change once.
    const byInstance = gates.map((g) => loadKeys(g.operations).length);
    for (const n of byInstance) expect(n).toBeGreaterThan(0);
    expect(byInstance[0] + byInstance[1]).toBe(exp.changes.size);
  });

  it("SIGKILL of an instance in the middle of a batch loses nothing; only that batch is sent again", async () => {
    // The kill lands mid-batch by construction: the destination applied instance 0's request, and
    // the instance is killed while it waits for the answer, before it could record it.
    gates[0].hold();
    const adding = load.add(250);
    await within("instance 0 to start a batch", gates[0].held());
    const [first] = gates[0].heldOperations;
    const inFlight = bindings.find((b) => b.provider === first.provider && b.remoteListId === first.listId)!;
    const cursorAtKill = await confirmedSeq(inFlight);
    instances[0].child.kill("SIGKILL");
    await instances[0].exited;
    expect(instances[0].child.signalCode).toBe("SIGKILL");
    gates[0].release();
    const appliedBeforeKill = loadKeys(gates[0].heldOperations);
    const sentByDeadInstance = gates[0].operations.length;

    // The survivor takes the binding over once the dead instance's lease has run out, while the
    // load keeps going.
    await until("the survivor to re-deliver the killed batch", async () => (await confirmedSeq(inFlight)) > cursorAtKill, LEASE_MS + 10_000);
    await adding;
    await load.add(150);
    await load.settled();
    await caughtUp();

    const exp = await expected();
    const got = received();
    // The batch in flight at the kill is the changes right after the cursor, at most a batch of them.
    const batchKeys = new Set(
      [...exp.changes].filter(([, c]) => c.binding === inFlight && c.seq > cursorAtKill && c.seq <= cursorAtKill + BigInt(BATCH_SIZE)).map(([k]) => k),
    );
    const twice = [...got.counts].filter(([, n]) => n === 2).map(([k]) => k);
    const survivorKeys = new Set(loadKeys(gates[1].operations));
    expect(appliedBeforeKill.length).toBeGreaterThan(0);
    // Everything the dead instance had got applied in that batch the survivor sent again; nothing
    // outside that batch was delivered twice, and nothing is missing.
    expect({
      notSentAgain: appliedBeforeKill.filter((k) => !twice.includes(k) || !survivorKeys.has(k)),
      twiceOutsideTheBatch: twice.filter((k) => !batchKeys.has(k)),
    }).toEqual({ notSentAgain: [], twiceOutsideTheBatch: [] });
    expect(discrepancies(exp, got.counts, (k) => (batchKeys.has(k) ? 2 : 1))).toEqual({ missing: [], tooOften: [], unexpected: [] });
    expect(gates[0].operations.length).toBe(sentByDeadInstance);
    // The destination's operations are idempotent, so the repeat changed nothing: it holds exactly the log's outcome.
    expect(got.finalState).toEqual(exp.finalState);

    const rows = await db.destinationBinding.findMany({ where: { tableId: tableId() } });
    for (const row of rows) expect(row).toMatchObject({ state: "active", failureCount: 0, lastError: null });
    expect(instances[1].log.filter((l) => l.level >= 50)).toEqual([]);
    instances[1].child.kill("SIGTERM");
    expect(await instances[1].exited).toBe(0);
  });
});
