// Newest first (issue 42): the event timeline walked backwards on every door (REST order=desc,
// GraphQL events(order: DESC), MCP list_records type events order "desc"), cursors bound to their
// order, and guest_context's latest events by when they happened.
import { Client } from "pg";
import { startTestApp, type TestApp } from "../../helpers/app";

let t: TestApp;
let pg: Client;
beforeAll(async () => {
  t = await startTestApp();
  pg = new Client({ connectionString: t.databaseUrl });
  await pg.connect();
});
afterAll(async () => {
  await pg.end();
  await t.close();
});

type EventRow = { seq: string; entity_type: string; entity_id: string; guest_profile_id: string | null; property_id: string | null };
type Row = Record<string, any>; // eslint-disable-line @typescript-eslint/no-explicit-any

const A = () => t.manifest.groups.A;
const B = () => t.manifest.groups.B;
const get = (path: string, token = A().credentials.api_key) => t.api.get(path).set("Authorization", `Bearer ${token}`);

/** Walks /v1/events with `query` to the end; `between` runs after each page. */
async function walk(query: string, token?: string, between?: () => Promise<void>) {
  const rows: EventRow[] = [];
  let cursor: string | null = null;
  let pages = 0;
  do {
    const res = await get(`/v1/events?${query}${cursor ? `&cursor=${encodeURIComponent(cursor)}` : ""}`, token);
    expect(res.status).toBe(200);
    rows.push(...res.body.data);
    cursor = res.body.next_cursor;
    pages++;
    if (between) await between();
  } while (cursor);
  return { rows, pages };
}

const seqs = (rows: { seq: string }[]) => rows.map((r) => r.seq);

/** Retries until `check` passes: a commit is served once every older transaction of the cluster has finished (parallel test files hold write transactions open in other databases for seconds: CI saw more than 10 s). */
async function eventually(check: () => Promise<void>, ms = 45_000) {
  const deadline = Date.now() + ms;
  for (;;) {
    try {
      return await check();
    } catch (err) {
      if (Date.now() > deadline) throw err;
      await new Promise((r) => setTimeout(r, 50));
    }
  }
}

async function appendEvent(groupId: string, guestId: string, occurredAt: string, propertyId: string | null = null) {
  const { rows } = await pg.query(
    `INSERT INTO events (property_group_id, entity_type, entity_id, guest_profile_id, property_id, operation, delta, occurred_at)
     VALUES ($1, 'guest_profile', $2, $2, $3, 'update', '{"city":"Hove"}', $4) RETURNING seq::text`,
    [groupId, guestId, propertyId, occurredAt],
  );
  return rows[0].seq as string;
}

async function graphql(query: string, variables: Record<string, unknown> = {}, token = A().credentials.api_key) {
  const res = await t.api.post("/graphql").set("Authorization", `Bearer ${token}`).send({ query, variables });
  return res.body as { data?: Row; errors?: { extensions: { code: string }; message: string }[] };
}

async function mcp(name: string, args: Record<string, unknown>, token = A().credentials.api_key) {
  const res = await t.api
    .post("/mcp")
    .set("Authorization", `Bearer ${token}`)
    .set("Accept", "application/json, text/event-stream")
    .send({ jsonrpc: "2.0", id: 1, method: "tools/call", params: { name, arguments: args } });
  expect(res.status).toBe(200);
  const result = res.body.result as { isError?: boolean; content: { text: string }[] };
  return { isError: result.isError === true, body: JSON.parse(result.content[0].text) as Row };
}

describe("REST GET /v1/events?order=desc", () => {
  it("walked in pages, is the ascending walk reversed (the whole group, and one guest with limit=2)", async () => {
    const asc = await walk("limit=200");
    const desc = await walk("limit=200&order=desc");
    expect(desc.pages).toBeGreaterThan(1);
    expect(seqs(desc.rows)).toEqual(seqs(asc.rows).reverse());
    expect(seqs((await walk("limit=200&order=asc")).rows)).toEqual(seqs(asc.rows)); // asc is the default

    const guest = A().guest_with_events;
    const one = await walk(`guest_profile_id=${guest}&limit=2&order=desc`);
    expect(one.pages).toBeGreaterThan(1);
    expect(seqs(one.rows)).toEqual(seqs((await walk(`guest_profile_id=${guest}&limit=2`)).rows).reverse());
  });

  it("filters apply as ascending: guest_profile_id, master_profile_id, entity_type, entity_id", async () => {
    const master = A().master_with_two_guests;
    const reservation = (await get("/v1/events?entity_type=reservation&limit=1")).body.data[0].entity_id;
    for (const filter of [`guest_profile_id=${A().guest_with_events}`, `master_profile_id=${master}`, "entity_type=review", `entity_id=${reservation}`]) {
      const desc = await walk(`${filter}&order=desc&limit=3`);
      expect(desc.rows.length).toBeGreaterThan(0);
      expect([filter, seqs(desc.rows)]).toEqual([filter, seqs((await walk(`${filter}&limit=3`)).rows).reverse()]);
    }
    const both = await get(`/v1/events?order=desc&master_profile_id=${master}&guest_profile_id=${A().guest_with_events}`);
    expect([both.status, both.body.error]).toEqual([400, "invalid_request"]);
  });

  it("mode=latest is newest first whatever the order", async () => {
    const guest = A().guest_with_events;
    const latest = await get(`/v1/events?mode=latest&guest_profile_id=${guest}`);
    for (const order of ["desc", "asc"]) {
      const res = await get(`/v1/events?mode=latest&order=${order}&guest_profile_id=${guest}`);
      expect(res.status).toBe(200);
      expect(res.body).toEqual(latest.body);
    }
    const s = seqs(latest.body.data).map(BigInt);
    expect([...s].sort((a, b) => (a > b ? -1 : a < b ? 1 : 0))).toEqual(s);
  });

  it("a cursor of one order given with the other is 400 invalid_cursor; tampered cursors still fail", async () => {
    const asc = await get("/v1/events?limit=2");
    const desc = await get("/v1/events?limit=2&order=desc");
    const ascWithDesc = await get(`/v1/events?limit=2&order=desc&cursor=${encodeURIComponent(asc.body.next_cursor)}`);
    expect([ascWithDesc.status, ascWithDesc.body.error]).toEqual([400, "invalid_cursor"]);
    expect(ascWithDesc.body.detail).toMatch(/order asc/);
    const descWithAsc = await get(`/v1/events?limit=2&cursor=${encodeURIComponent(desc.body.next_cursor)}`);
    expect([descWithAsc.status, descWithAsc.body.error]).toEqual([400, "invalid_cursor"]);
    expect(descWithAsc.body.detail).toMatch(/order desc/);
    const explicit = await get(`/v1/events?limit=2&order=asc&cursor=${encodeURIComponent(desc.body.next_cursor)}`);
    expect(explicit.body.error).toBe("invalid_cursor");

    // Tampered: the payload of another position under the same signature, and a foreign filter.
    const [, mac] = desc.body.next_cursor.split(".");
    const forged = `${Buffer.from(JSON.stringify(["1", "1"])).toString("base64url")}.${mac}`;
    expect((await get(`/v1/events?order=desc&cursor=${forged}`)).body.error).toBe("invalid_cursor");
    const otherFilter = await get(`/v1/events?order=desc&entity_type=review&cursor=${encodeURIComponent(desc.body.next_cursor)}`);
    expect(otherFilter.body.error).toBe("invalid_cursor");
    expect((await get(`/v1/events?order=desc&cursor=${encodeURIComponent(desc.body.next_cursor)}`, B().credentials.api_key)).body.error).toBe("invalid_cursor");
  });

  it("bad order values are 400 invalid_request naming asc and desc", async () => {
    for (const q of ["order=DESC", "order=newest", "order=", "order=desc&order=asc"]) {
      const res = await get(`/v1/events?${q}`);
      expect([q, res.status, res.body.error]).toEqual([q, 400, "invalid_request"]);
    }
    expect((await get("/v1/events?order=up")).body.detail).toMatch(/order must be one of asc, desc/);
  });

  it("in a live log, events appended during a descending walk appear at the head, never inside the walk", async () => {
    const guest = A().guest_with_events;
    const before = seqs((await walk(`guest_profile_id=${guest}&limit=200&order=desc`)).rows);
    const appended: string[] = [];
    const during = await walk(`guest_profile_id=${guest}&limit=2&order=desc`, undefined, async () => {
      appended.push(await appendEvent(A().id, guest, new Date().toISOString()));
    });
    expect(seqs(during.rows)).toEqual(before);
    await eventually(async () => {
      const head = await get(`/v1/events?guest_profile_id=${guest}&order=desc&limit=${appended.length}`);
      expect(seqs(head.body.data)).toEqual([...appended].reverse());
    });
  });

  it("keeps groups apart and a pinned key to its property", async () => {
    const aSeqs = new Set((await t.admin.event.findMany({ where: { propertyGroupId: A().id }, select: { seq: true } })).map((e) => e.seq.toString()));
    const other = await walk("limit=500&order=desc", B().credentials.api_key);
    expect(other.rows.length).toBeGreaterThan(0);
    expect(other.rows.filter((e) => aSeqs.has(e.seq))).toEqual([]);

    const pinned = A().credentials.api_key_pinned;
    const mine = await walk("limit=100&order=desc", pinned.token);
    expect(mine.rows.length).toBeGreaterThan(0);
    for (const e of mine.rows) expect(e.property_id).toBe(pinned.property_id);
    expect(seqs(mine.rows)).toEqual(seqs((await walk("limit=100", pinned.token)).rows).reverse());
  });

  it("one statement count whatever the page size (limit 5 and 50, with expand=guest)", async () => {
    const count = async (limit: number) => {
      const res = await get(`/v1/events?order=desc&limit=${limit}&expand=guest&entity_type=reservation`);
      expect(res.body.data.length).toBe(limit);
      return Number(res.headers["x-sql-statements"]);
    };
    expect(await count(50)).toBe(await count(5));
  });
});

describe("GraphQL events(order: DESC)", () => {
  const PAGE = `query($order: EventOrder, $cursor: String, $filter: EventFilter) {
    events(order: $order, limit: 3, cursor: $cursor, filter: $filter) { nodes { seq } nextCursor }
  }`;

  async function walkGraphql(variables: Record<string, unknown>) {
    const out: string[] = [];
    let cursor: string | null = null;
    do {
      const body = await graphql(PAGE, { ...variables, cursor });
      expect(body.errors).toBeUndefined();
      out.push(...body.data!.events.nodes.map((n: { seq: string }) => n.seq));
      cursor = body.data!.events.nextCursor;
    } while (cursor);
    return out;
  }

  it("walks the reverse of ASC, which stays the default; the other order's cursor is invalid_cursor", async () => {
    const filter = { guestProfileId: A().guest_with_events };
    const asc = await walkGraphql({ filter });
    expect(await walkGraphql({ filter, order: "ASC" })).toEqual(asc);
    expect(await walkGraphql({ filter, order: "DESC" })).toEqual([...asc].reverse());
    expect(asc.length).toBeGreaterThan(3);

    const first = await graphql(PAGE, { filter });
    const crossed = await graphql(PAGE, { filter, order: "DESC", cursor: first.data!.events.nextCursor });
    expect(crossed.errors?.[0].extensions.code).toBe("invalid_cursor");
    const bad = await graphql(PAGE, { filter, order: "NEWEST" });
    expect(bad.errors?.[0].message).toMatch(/EventOrder/);
  });
});

describe("MCP list_records type events order", () => {
  it("order \"desc\" answers the REST desc pages; a bad order is a tool error naming order", async () => {
    const guest = A().guest_with_events;
    const first = await mcp("list_records", { type: "events", guest_profile_id: guest, order: "desc", limit: 3 });
    expect(first.isError).toBe(false);
    const rest = await get(`/v1/events?guest_profile_id=${guest}&order=desc&limit=3`);
    expect(seqs(first.body.data)).toEqual(seqs(rest.body.data));
    const second = await mcp("list_records", { type: "events", guest_profile_id: guest, order: "desc", limit: 3, cursor: first.body.next_cursor });
    const restSecond = await get(`/v1/events?guest_profile_id=${guest}&order=desc&limit=3&cursor=${encodeURIComponent(rest.body.next_cursor)}`);
    expect(seqs(second.body.data)).toEqual(seqs(restSecond.body.data));

    const crossed = await mcp("list_records", { type: "events", guest_profile_id: guest, limit: 3, cursor: first.body.next_cursor });
    expect([crossed.isError, crossed.body.error]).toEqual([true, "invalid_cursor"]);
    const bad = await mcp("list_records", { type: "events", order: "newest" });
    expect(bad.isError).toBe(true);
    expect(bad.body.detail).toMatch(/order must be one of asc, desc/);
    const other = await mcp("list_records", { type: "reservations", order: "desc" });
    expect(other.body.detail).toMatch(/unknown argument order/);
  });

  it("a pinned key's descending tool pages hold only its property's events", async () => {
    const pinned = A().credentials.api_key_pinned;
    const { body } = await mcp("list_records", { type: "events", order: "desc", limit: 50 }, pinned.token);
    expect(body.data.length).toBeGreaterThan(0);
    for (const e of body.data) expect(e.property_id).toBe(pinned.property_id);
  });
});

describe("guest_context: the latest events are the newest by occurred_at", () => {
  it("a backfilled history appended after last week's events does not hide them", async () => {
    const guest = A().unclustered_guest;
    const day = 86_400_000;
    const recent = [await appendEvent(A().id, guest, new Date(Date.now() - 3 * day).toISOString()), await appendEvent(A().id, guest, new Date(Date.now() - 2 * day).toISOString())];
    // The backfill: older events, appended last (larger seq).
    const backfill: string[] = [];
    for (let i = 0; i < 6; i++) backfill.push(await appendEvent(A().id, guest, `2025-0${i + 1}-15T10:00:00.000Z`));

    const { isError, body } = await mcp("guest_context", { guest_profile_id: guest });
    expect(isError).toBe(false);
    const shown = body.recent_events.events as { seq: string; occurred_at: string }[];
    expect(shown.slice(0, 2).map((e) => e.seq)).toEqual([recent[1], recent[0]]);
    // Newest by occurred_at first, ties by seq (newest appended first).
    const expected = await pg.query(
      "SELECT seq::text FROM events WHERE guest_profile_id = $1 ORDER BY occurred_at DESC, seq DESC LIMIT 5",
      [guest],
    );
    expect(shown.map((e) => e.seq)).toEqual(expected.rows.map((r) => r.seq));
    expect(shown.map((e) => e.seq)).not.toContain(backfill[0]);
    expect(body.recent_events.more).toEqual({ tool: "list_records", arguments: { type: "events", guest_profile_id: guest, order: "desc" } });

    // Ties on occurred_at: the later appended first.
    const at = new Date(Date.now() - day).toISOString();
    const tie = [await appendEvent(A().id, guest, at), await appendEvent(A().id, guest, at)];
    const again = await mcp("guest_context", { guest_profile_id: guest });
    expect(again.body.recent_events.events.slice(0, 2).map((e: { seq: string }) => e.seq)).toEqual([tie[1], tie[0]]);
  });

  it("reads a person's events in one statement, whatever the history's length", async () => {
    const guest = A().unclustered_guest;
    const count = async () => {
      const res = await t.api
        .post("/graphql")
        .set("Authorization", `Bearer ${A().credentials.api_key}`)
        .send({ query: `{ guestContext(guestProfileId: "${guest}") { recentEvents { events { seq } } } }` });
      expect(res.body.errors).toBeUndefined();
      return Number(res.headers["x-sql-statements"]);
    };
    const before = await count();
    for (let i = 0; i < 20; i++) await appendEvent(A().id, guest, `2024-01-${String(i + 1).padStart(2, "0")}T00:00:00.000Z`);
    expect(await count()).toBe(before);
  });

  it("another group's key finds no such guest; a pinned key elsewhere neither", async () => {
    const guest = A().unclustered_guest;
    const other = await mcp("guest_context", { guest_profile_id: guest }, B().credentials.api_key);
    expect(other.body).toEqual({ found: false });
    const owner = await t.admin.guestProfile.findUniqueOrThrow({ where: { id: guest } });
    const pinned = A().credentials.api_key_pinned;
    const narrowed = await mcp("guest_context", { guest_profile_id: guest }, pinned.token);
    if (owner.propertyId === pinned.property_id) expect(narrowed.body.found).toBe(true);
    else expect(narrowed.body).toEqual({ found: false });
  });
});
