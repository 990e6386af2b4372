// /graphql/stream (issue 29): `subscription { events }` over Server-Sent Events with graphql-sse.
// Resuming from an item's cursor while writers append gives every event exactly once, and the
// cursors page GET /v1/events; groups, pinned keys, X-Property-Id, scope, authentication, the cap
// and bad documents hold as on GET /v1/events/stream and /graphql.
import { Client } from "pg";
import { createClient } from "graphql-sse";
import request from "supertest";
import { createApp } from "../../src/app";
import { DASHBOARD_DOCUMENTS } from "../../src/dashboard";
import { listenTestApp, startTestApp, type TestApp } from "../helpers/app";

let t: TestApp;
let listening: Awaited<ReturnType<typeof listenTestApp>>;
let base: string;
const A = () => t.manifest.groups.A;
const B = () => t.manifest.groups.B;

beforeAll(async () => {
  t = await startTestApp({ GCS_STREAM_MAX_PER_CREDENTIAL: "2", GCS_STREAM_POLL_MS: "100", GCS_DELIVERY_WORKER: "false" });
  listening = await listenTestApp(t);
  base = listening.base;
});
afterAll(async () => {
  await listening.close();
  await t.close();
});

const EVENTS = `subscription Live($filter: EventFilter, $after: String) {
  events(filter: $filter, after: $after) { cursor node { seq entityType operation propertyId delta } }
}`;

interface Item {
  cursor: string;
  node: { seq: string; entityType: string; operation: string; propertyId: string | null; delta: unknown };
}

/** A subscription through graphql-sse's own client: the items as they arrive, and any errors. */
function subscribe(token: string, variables: Record<string, unknown> = {}, headers: Record<string, string> = {}) {
  const client = createClient({ url: `${base}/graphql/stream`, headers: { Authorization: `Bearer ${token}`, ...headers }, retryAttempts: 0 });
  const s = { items: [] as Item[], errors: [] as unknown[], done: false, close: () => {} };
  const dispose = client.subscribe<{ events: Item }>(
    { query: EVENTS, variables },
    {
      next: (result) => {
        if (result.errors) s.errors.push(...result.errors);
        if (result.data) s.items.push(result.data.events);
      },
      error: (err) => {
        s.errors.push(err);
        s.done = true;
      },
      complete: () => {
        s.done = true;
      },
    },
  );
  s.close = () => {
    dispose();
    client.dispose();
  };
  return s;
}

/** The raw answer to a subscription request: status and body text (read until `stopAt` appears or the stream ends). */
async function raw(body: unknown, headers: Record<string, string>, stopAt = "event: complete") {
  const controller = new AbortController();
  const res = await fetch(`${base}/graphql/stream`, {
    method: "POST",
    headers: { Accept: "text/event-stream", "Content-Type": "application/json", ...headers },
    body: JSON.stringify(body),
    signal: controller.signal,
  });
  let text = "";
  const reader = res.body!.getReader();
  const deadline = Date.now() + 10_000;
  while (Date.now() < deadline) {
    const { value, done } = await reader.read();
    if (done) break;
    text += new TextDecoder().decode(value);
    if (text.includes(stopAt)) break;
  }
  controller.abort();
  return { status: res.status, type: res.headers.get("content-type"), text };
}

async function until(check: () => boolean, ms = 30_000) {
  const deadline = Date.now() + ms;
  while (!check()) {
    if (Date.now() > deadline) throw new Error("timed out");
    await new Promise((r) => setTimeout(r, 25));
  }
}

/** Time for a subscription to take its starting point (the end of the log) before events are added. */
const settle = () => new Promise((r) => setTimeout(r, 400));

async function withWriter<T>(work: (c: Client) => Promise<T>): Promise<T> {
  const c = new Client({ connectionString: t.databaseUrl });
  await c.connect();
  try {
    return await work(c);
  } finally {
    await c.end();
  }
}

const addEvent = (c: Client, group: string, property: string | null, type = "reservation") =>
  c
    .query(
      `INSERT INTO events (property_group_id, entity_type, entity_id, property_id, operation, delta, occurred_at)
       VALUES ($1, $3::"EntityType", gen_random_uuid(), $2, 'update', '{"status":"checked_in"}', now()) RETURNING seq::text`,
      [group, property, type],
    )
    .then((r) => r.rows[0].seq as string);

describe("/graphql/stream: subscription events", () => {
  it("resumes from an item's cursor while writers append, with no gap and no duplicate; the cursors page /v1/events", async () => {
    const token = A().credentials.api_key;
    const property = A().properties[0];
    const writers = await Promise.all([0, 1, 2].map(async () => {
      const c = new Client({ connectionString: t.databaseUrl });
      await c.connect();
      return c;
    }));
    const appended: string[] = [];
    let s = subscribe(token);
    await settle();
    let writing = true;
    const work = writers.map(async (c, i) => {
      while (writing) {
        if (i === 0) {
          // Takes its seq early and commits late: must not be skipped.
          await c.query("BEGIN");
          appended.push(await addEvent(c, A().id, property));
          await new Promise((r) => setTimeout(r, 150));
          await c.query("COMMIT");
        } else appended.push(await addEvent(c, A().id, property));
        await new Promise((r) => setTimeout(r, 10));
      }
    });
    const seen: Item[] = [];
    for (let round = 0; round < 4; round++) {
      await until(() => s.items.length >= 5);
      s.close();
      seen.push(...s.items);
      s = subscribe(token, { after: seen[seen.length - 1].cursor });
    }
    writing = false;
    await Promise.all(work);
    await until(() => appended.every((seq) => [...seen, ...s.items].some((e) => e.node.seq === seq)));
    s.close();
    seen.push(...s.items);
    await Promise.all(writers.map((c) => c.end()));
    expect(s.errors).toEqual([]);

    const seqs = seen.map((e) => e.node.seq);
    expect(new Set(seqs).size).toBe(seqs.length); // no duplicate
    expect([...seqs].sort()).toEqual([...appended].sort()); // no gap, nothing else
    expect(seen[0].node).toMatchObject({ entityType: "reservation", operation: "update", propertyId: property, delta: { status: "checked_in" } });

    // A cursor is a /v1/events next_cursor: paging from the first one gives the rest, in order.
    const rows: string[] = [];
    let cursor: string | null = seen[0].cursor;
    while (cursor) {
      const page: { status: number; body: { data: { seq: string }[]; next_cursor: string | null } } = await t.api.get(`/v1/events?limit=100&cursor=${encodeURIComponent(cursor)}`).set({ Authorization: `Bearer ${token}` });
      expect(page.status).toBe(200);
      rows.push(...page.body.data.map((r) => r.seq));
      cursor = page.body.next_cursor;
    }
    expect(rows).toEqual(seqs.slice(1));
  });

  it("shows each group only its own events, and a narrowed caller only its property's", async () => {
    const [p1, p2] = A().properties;
    const pinned = A().credentials.api_key_pinned;
    const other = A().properties.find((p) => p !== pinned.property_id)!;
    const a = subscribe(A().credentials.api_key, { filter: { entityType: "reservation" } });
    const b = subscribe(B().credentials.api_key);
    const narrowed = subscribe(A().credentials.api_key, {}, { "X-Property-Id": p2 });
    const pin = subscribe(pinned.token);
    await settle();
    const [ofA1, ofA2, , ofB, pinnedOwn] = await withWriter(async (c) => [
      await addEvent(c, A().id, p1),
      await addEvent(c, A().id, p2),
      await addEvent(c, A().id, null, "guest_profile"),
      await addEvent(c, B().id, B().properties[0]),
      await addEvent(c, A().id, pinned.property_id),
      await addEvent(c, A().id, other),
    ]);
    await until(() => a.items.length >= 4 && b.items.length >= 1 && narrowed.items.length >= 1 && pin.items.length >= 1);
    await new Promise((r) => setTimeout(r, 300));
    for (const s of [a, b, narrowed, pin]) s.close();
    const seqs = (s: { items: Item[] }) => s.items.map((e) => e.node.seq);
    expect(seqs(b)).toEqual([ofB]);
    expect(seqs(a)).toContain(ofA1);
    expect(seqs(a)).toContain(ofA2);
    expect(seqs(a)).not.toContain(ofB);
    expect(a.items.every((e) => e.node.entityType === "reservation")).toBe(true);
    expect(narrowed.items.every((e) => e.node.propertyId === p2)).toBe(true);
    expect(seqs(narrowed)).toContain(ofA2);
    expect(pin.items.every((e) => e.node.propertyId === pinned.property_id)).toBe(true);
    expect(seqs(pin)).toContain(pinnedOwn);
    // Another group's cursor is refused.
    const foreign = subscribe(B().credentials.api_key, { after: a.items[0].cursor });
    await until(() => foreign.done);
    expect(foreign.errors).toEqual([expect.objectContaining({ extensions: expect.objectContaining({ code: "invalid_cursor" }) })]);
  });

  it("refuses a missing scope, a bad or missing key and the cap like GET /v1/events/stream", async () => {
    const query = { query: EVENTS };
    // The field's scope, also when the field is reached through an inline or a named fragment.
    const inline = { query: "subscription { ... on Subscription { events { cursor } } }" };
    const named = { query: "subscription Live { ...live } fragment live on Subscription { events { cursor } }" };
    for (const body of [query, inline, named]) {
      const limited = await raw(body, { Authorization: `Bearer ${A().credentials.api_key_limited}` });
      expect([body, limited.status]).toEqual([body, 403]);
      expect(JSON.parse(limited.text).errors[0].extensions).toMatchObject({ code: "forbidden", scope: "read:events" });
    }
    for (const headers of [{}, { Authorization: "Bearer gcs_nope" }] as Record<string, string>[]) {
      const denied = await raw(query, headers);
      expect(denied.status).toBe(401);
      expect(JSON.parse(denied.text).errors[0].extensions.code).toBe("unauthorized");
    }

    const token = A().credentials.api_key;
    const one = subscribe(token);
    const two = subscribe(token);
    await settle();
    const three = await raw(query, { Authorization: `Bearer ${token}` });
    expect(three.status).toBe(429);
    expect(JSON.parse(three.text).errors[0].extensions.code).toBe("rate_limited");
    one.close();
    two.close();
    await new Promise((r) => setTimeout(r, 300));
    // The cap is shared with GET /v1/events/stream and released when streams end.
    const again = await raw(query, { Authorization: `Bearer ${token}` }, ":\n\n");
    expect(again.status).toBe(200);
    expect(again.type).toBe("text/event-stream; charset=utf-8");
  });

  it("answers bad documents with GraphQL errors, never a 500", async () => {
    const auth = { Authorization: `Bearer ${A().credentials.api_key}` };
    const cases: [unknown, number, string][] = [
      [{ query: "subscription { events { cursor " }, 400, "GRAPHQL_PARSE_FAILED"],
      [{ query: "subscription { events { colour } }" }, 400, "GRAPHQL_VALIDATION_FAILED"],
      [{ query: "subscription { guests { nodes { id } } }" }, 400, "GRAPHQL_VALIDATION_FAILED"],
      [{ query: "query { viewer { kind } }" }, 400, "unsupported_operation"],
      [{ query: EVENTS, variables: { filter: { entityType: "booking" } } }, 400, "BAD_USER_INPUT"],
      [{ query: "subscription A { events { cursor } } subscription B { events { cursor } }" }, 400, "invalid_request"],
      [{ query: 'subscription { events(filter: { entityId: "a\\u0000b" }) { cursor } }' }, 400, "invalid_request"],
      [{ query: "subscription { events @include(if: false) { cursor } }" }, 400, "invalid_request"],
      [{ query: "subscription Live($on: Boolean!) { events @include(if: $on) { cursor } }", variables: { on: true } }, 400, "GRAPHQL_VALIDATION_FAILED"],
    ];
    for (const [body, status, code] of cases) {
      const res = await raw(body, auth);
      expect([body, res.status]).toEqual([body, status]);
      expect([body, JSON.parse(res.text).errors[0].extensions.code]).toEqual([body, code]);
    }
    // Errors found while subscribing (a bad cursor, both profile filters) end the stream with them.
    for (const variables of [{ after: "nope" }, { filter: { guestProfileId: A().guest_with_events, masterProfileId: A().guest_with_events } }]) {
      const res = await raw({ query: EVENTS, variables }, auth);
      expect(res.status).toBe(200);
      const next = res.text.split("\n\n").find((block) => block.startsWith("event: next"))!;
      const payload = JSON.parse(next.split("\n").find((l) => l.startsWith("data: "))!.slice(6));
      expect(payload.errors[0].extensions.code).toMatch(/^invalid_(cursor|request)$/);
    }
    // GET with the document in the query string works too (the protocol's other form).
    const controller = new AbortController();
    const get = await fetch(`${base}/graphql/stream?query=${encodeURIComponent("subscription { events { cursor } }")}`, { headers: { ...auth, Accept: "text/event-stream" }, signal: controller.signal });
    expect([get.status, get.headers.get("content-type")]).toEqual([200, "text/event-stream; charset=utf-8"]);
    controller.abort();
    // Not the stream's protocol: 406 without Accept: text/event-stream, 405 for single connection mode's PUT.
    const plain = await fetch(`${base}/graphql/stream`, { method: "POST", headers: { ...auth, "Content-Type": "application/json" }, body: JSON.stringify({ query: EVENTS }) });
    expect(plain.status).toBe(406);
    const put = await fetch(`${base}/graphql/stream`, { method: "PUT", headers: auth });
    expect(put.status).toBe(405);
    // Parameters it cannot read: a JSON error with a code, never a bare status or a 500.
    const sse = { ...auth, Accept: "text/event-stream" };
    const unreadable: [Promise<Response>, number][] = [
      [fetch(`${base}/graphql/stream`, { method: "POST", headers: sse }), 400],
      [fetch(`${base}/graphql/stream?query=${encodeURIComponent(EVENTS)}&variables=%7Bnope`, { headers: sse }), 400],
      [fetch(`${base}/graphql/stream`, { headers: sse }), 400],
      [fetch(`${base}/graphql/stream`, { method: "POST", headers: { ...sse, "Content-Type": "application/json" }, body: JSON.stringify({ query: EVENTS, variables: [1] }) }), 400],
      [fetch(`${base}/graphql/stream`, { method: "POST", headers: { ...sse, "Content-Type": "application/json" }, body: JSON.stringify({ query: EVENTS, operationName: 7 }) }), 400],
    ];
    for (const [answer, status] of unreadable) {
      const res = await answer;
      expect([res.status, res.headers.get("content-type")]).toEqual([status, "application/json; charset=utf-8"]);
      expect(((await res.json()) as { errors: { extensions: { code: string } }[] }).errors[0].extensions.code).toBe("invalid_request");
    }
    // A cost over GCS_GRAPHQL_MAX_COST (per event) is refused like on /graphql.
    const costly = await createApp({ ...t.services, config: { ...t.services.config, graphqlMaxCost: 3 } });
    try {
      const res = await request(costly.app).post("/graphql/stream").set({ ...auth, Accept: "text/event-stream" }).send({ query: EVENTS });
      expect(res.status).toBe(400);
      expect(res.body.errors[0].extensions).toMatchObject({ code: "query_too_complex", limit: "cost" });
    } finally {
      await costly.stop();
    }
    // Over POST /graphql a subscription stays a 400 that names this path.
    const posted = await t.api.post("/graphql").set(auth).send({ query: EVENTS });
    expect(posted.status).toBe(400);
    expect(posted.body.errors[0].message).toContain("/graphql/stream");
  });

  it("keeps the cap per app: a second app in the process counts its own streams", async () => {
    const token = A().credentials.api_key;
    const held = [subscribe(token), subscribe(token)];
    const other = await listenTestApp(t);
    const controller = new AbortController();
    try {
      await settle();
      expect((await raw({ query: EVENTS }, { Authorization: `Bearer ${token}` })).status).toBe(429);
      const res = await fetch(`${other.base}/graphql/stream`, {
        method: "POST",
        headers: { Accept: "text/event-stream", "Content-Type": "application/json", Authorization: `Bearer ${token}` },
        body: JSON.stringify({ query: EVENTS }),
        signal: controller.signal,
      });
      expect(res.status).toBe(200);
    } finally {
      controller.abort();
      for (const s of held) s.close();
      await other.close();
    }
  });

  it("counts toward /graphql's rate limit and runs only trusted documents when they are on", async () => {
    const strict = await createApp({
      ...t.services,
      config: { ...t.services.config, rateLimit: { ...t.services.config.rateLimit, limit: 2, windowS: 3600 }, graphqlTrustedDocuments: DASHBOARD_DOCUMENTS },
    });
    try {
      const send = (query: string) => request(strict.app).post("/graphql/stream").set({ Authorization: `Bearer ${B().credentials.api_key}`, Accept: "text/event-stream" }).send({ query });
      const untrusted = await send(EVENTS);
      expect(untrusted.status).toBe(400);
      expect(untrusted.body.errors[0].extensions.code).toBe("untrusted_document");
      await send(EVENTS);
      const limited = await send(EVENTS);
      expect(limited.status).toBe(429);
    } finally {
      await strict.stop();
    }
  });
});
