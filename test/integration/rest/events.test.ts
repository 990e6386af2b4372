// GET /v1/events: timeline walks that survive out-of-order commits, latest/rollup, filters, errors.
import { Client } from "pg";
import { startTestApp, type TestApp } from "../../helpers/app";
import { preparedOnLastConnection } from "../../helpers/prepared-statements";

let t: TestApp;
beforeAll(async () => {
  t = await startTestApp();
});
afterAll(() => t.close());

type EventRow = { seq: string; entity_type: string; entity_id: string; guest_profile_id: string | null; property_id: string | null };

const A = () => t.manifest.groups.A;
const get = (path: string, token = A().credentials.api_key) => t.api.get(path).set("Authorization", `Bearer ${token}`);
const seqsOfGroup = async (groupId: string) =>
  (await t.admin.event.findMany({ where: { propertyGroupId: groupId }, select: { seq: true } })).map((e) => e.seq.toString());

/** Walks /v1/events?mode=timeline to the end (the envelope carries `mode` too). */
async function walkEvents(query: string, between?: () => Promise<void>, from: string | null = null) {
  const rows: EventRow[] = [];
  let cursor: string | null = from;
  let pages = 0;
  do {
    const res = await get(`/v1/events?${query}${cursor ? `&cursor=${encodeURIComponent(cursor)}` : ""}`);
    expect(res.status).toBe(200);
    expect(res.body.mode).toBe("timeline");
    rows.push(...res.body.data);
    cursor = res.body.next_cursor;
    pages++;
    if (between) await between();
  } while (cursor);
  return { rows, pages };
}

/**
 * Retries until `check` passes: the timeline serves a commit once every older transaction of the
 * PostgreSQL cluster has finished, and parallel test files keep transactions open in other databases.
 */
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

/** Appends one event for a fixture guest through a connection of its own. */
async function appendEvent(client: Client, groupId: string, guestId: string) {
  const { rows } = await client.query(
    `INSERT INTO events (property_group_id, entity_type, entity_id, guest_profile_id, operation, delta, occurred_at)
     VALUES ($1, 'guest_profile', $2, $2, 'update', '{"vip_code":"VIP2"}', now()) RETURNING seq::text`,
    [groupId, guestId],
  );
  return rows[0].seq as string;
}

describe("GET /v1/events timeline", () => {
  it("walks one guest's events with limit=2 and the whole group's exactly", async () => {
    const guest = A().guest_with_events;
    const own = await t.admin.event.findMany({ where: { guestProfileId: guest }, orderBy: [{ txid: "asc" }, { seq: "asc" }] });
    const { rows, pages } = await walkEvents(`guest_profile_id=${guest}&limit=2`);
    expect(pages).toBeGreaterThan(1);
    expect(rows.map((r) => r.seq)).toEqual(own.map((e) => e.seq.toString()));
    expect(new Set(rows.map((r) => r.entity_type)).size).toBeGreaterThan(1);

    const all = await walkEvents("limit=500");
    expect(all.rows.map((r) => r.seq).sort()).toEqual((await seqsOfGroup(A().id)).sort());
  });

  it("covers all nine entity types and filters by type and id", async () => {
    const types = ["guest_profile", "reservation", "transaction", "action", "loyalty_program", "membership", "review", "channel", "space"];
    for (const type of types) {
      const res = await get(`/v1/events?entity_type=${type}&limit=3`);
      expect(res.body.data.length).toBeGreaterThan(0);
      for (const e of res.body.data) expect(e.entity_type).toBe(type);
    }
    const one = (await get("/v1/events?entity_type=reservation&limit=1")).body.data[0];
    const byId = await get(`/v1/events?entity_id=${one.entity_id}`);
    expect(byId.body.data.length).toBeGreaterThan(1);
    for (const e of byId.body.data) expect(e.entity_id).toBe(one.entity_id);
  });

  it("master_profile_id selects the events of its clustered guests; unclustered guests never match", async () => {
    const master = A().master_with_two_guests;
    const guests = (await t.admin.guestProfile.findMany({ where: { masterProfileId: master } })).map((g) => g.id);
    const { rows } = await walkEvents(`master_profile_id=${master}&limit=50`);
    expect(rows.length).toBeGreaterThan(0);
    for (const e of rows) expect(guests).toContain(e.guest_profile_id);
    expect(rows.map((e) => e.guest_profile_id)).not.toContain(A().unclustered_guest);
    // The master's guests are read inside the events statement: no lookup statement before it.
    const statements = async (query: string) => Number((await get(`/v1/events?${query}`)).headers["x-sql-statements"]);
    expect(await statements(`master_profile_id=${master}`)).toBe(await statements(`guest_profile_id=${guests[0]}`));
    const both = await get(`/v1/events?master_profile_id=${master}&guest_profile_id=${guests[0]}`);
    expect(both.status).toBe(400);
    expect(both.body.error).toBe("invalid_request");
  });

  it("keeps groups apart and narrows to a property", async () => {
    const aSeqs = new Set(await seqsOfGroup(A().id));
    const res = await get("/v1/events?limit=500", t.manifest.groups.B.credentials.api_key);
    expect(res.body.data.length).toBeGreaterThan(0);
    expect(res.body.data.filter((e: EventRow) => aSeqs.has(e.seq))).toEqual([]);
    const narrowed = await get("/v1/events?limit=500").set("X-Property-Id", A().properties[0]);
    expect(narrowed.body.data.length).toBeGreaterThan(0);
    for (const e of narrowed.body.data) expect(e.property_id).toBe(A().properties[0]);
  });

  it("errors: bad cursor, bad enum, bad uuid, limit bounds, missing scope", async () => {
    expect((await get("/v1/events?cursor=abc")).body.error).toBe("invalid_cursor");
    for (const q of ["entity_type=booking", "mode=all", "guest_profile_id=12", "limit=0", "limit=x", "since=1"]) {
      const res = await get(`/v1/events?${q}`);
      expect(res.status).toBe(400);
      expect(res.body.error).toBe("invalid_request");
    }
    expect((await get("/v1/events?limit=9999")).status).toBe(200);
    const limited = await get("/v1/events", A().credentials.api_key_limited);
    expect(limited.body).toMatchObject({ error: "forbidden", scope: "read:events" });
  });

  it("a walk never skips an event whose transaction commits after a later one", async () => {
    const [slow, fast] = [new Client({ connectionString: t.databaseUrl }), new Client({ connectionString: t.databaseUrl })];
    await Promise.all([slow.connect(), fast.connect()]);
    try {
      const guest = A().unclustered_guest;
      await slow.query("BEGIN");
      const early = await appendEvent(slow, A().id, guest); // the smaller seq, committed last
      const late = await appendEvent(fast, A().id, guest); // autocommits at once
      expect(BigInt(late)).toBeGreaterThan(BigInt(early));

      // While the slow transaction is open, the later commit is held back rather than walked past.
      const during = await walkEvents(`guest_profile_id=${guest}&limit=500`);
      expect(during.rows.map((r) => r.seq)).not.toContain(late);
      const page1 = await get(`/v1/events?guest_profile_id=${guest}&limit=1`);
      expect(page1.body.has_more).toBe(true);

      await slow.query("COMMIT");
      // The walk that started before the commit, continued after it, sees both.
      await eventually(async () => {
        const rest = await walkEvents(`guest_profile_id=${guest}&limit=1`, undefined, page1.body.next_cursor);
        const seen = [page1.body.data[0].seq, ...rest.rows.map((r) => r.seq)];
        expect(seen).toEqual(expect.arrayContaining([early, late]));
        expect(new Set(seen).size).toBe(seen.length);
      });
    } finally {
      await Promise.all([slow.end(), fast.end()]);
    }
  });

  it("stays exact while writers append concurrently: nothing skipped, nothing twice", async () => {
    const before = await seqsOfGroup(A().id);
    const writers = [0, 1, 2].map(() => new Client({ connectionString: t.databaseUrl }));
    await Promise.all(writers.map((c) => c.connect()));
    let stop = false;
    const guests = (await t.admin.guestProfile.findMany({ where: { propertyGroupId: A().id }, take: 5 })).map((g) => g.id);
    const writing = writers.map(async (c, i) => {
      while (!stop) {
        await c.query("BEGIN");
        await appendEvent(c, A().id, guests[i]);
        await new Promise((r) => setTimeout(r, Math.random() * 15));
        await appendEvent(c, A().id, guests[i]);
        await c.query("COMMIT");
      }
    });
    try {
      const { rows } = await walkEvents("limit=25", () => new Promise((r) => setTimeout(r, 3)));
      const seen = rows.map((r) => r.seq);
      expect(new Set(seen).size).toBe(seen.length);
      for (const seq of before) expect(seen).toContain(seq);
    } finally {
      stop = true;
      await Promise.all(writing);
      await Promise.all(writers.map((c) => c.end()));
    }
    // Once the writers are done, a fresh walk sees every row exactly once.
    await eventually(async () => {
      const final = await walkEvents("limit=500");
      const finalSeqs = final.rows.map((r) => r.seq);
      expect(new Set(finalSeqs).size).toBe(finalSeqs.length);
      expect(finalSeqs.sort()).toEqual((await seqsOfGroup(A().id)).sort());
    });
  });
});

describe("GET /v1/events latest and rollup", () => {
  it("answers the newest event per entity, one page, mode latest", async () => {
    const guest = A().guest_with_events;
    for (const mode of ["latest", "rollup"]) {
      const res = await get(`/v1/events?mode=${mode}&guest_profile_id=${guest}`);
      expect(res.status).toBe(200);
      expect(res.body.mode).toBe("latest");
      expect(res.body.next_cursor).toBeNull();
      const entities = res.body.data.map((e: EventRow) => `${e.entity_type}:${e.entity_id}`);
      expect(new Set(entities).size).toBe(entities.length);
      const events = await t.admin.event.findMany({ where: { guestProfileId: guest } });
      const newest = new Map<string, bigint>();
      for (const e of events) {
        const k = `${e.entityType}:${e.entityId}`;
        if (!newest.has(k) || e.seq > newest.get(k)!) newest.set(k, e.seq);
      }
      expect(res.body.data.map((e: EventRow) => e.seq).sort()).toEqual([...newest.values()].map(String).sort());
      expect(res.body.has_more).toBe(false);
    }
  });

  it("limit caps the entities and has_more tells that more changed", async () => {
    const res = await get(`/v1/events?mode=latest&limit=1`);
    expect(res.body.data).toHaveLength(1);
    expect(res.body.has_more).toBe(true);
    expect(res.body.next_cursor).toBeNull();
    const master = await get(`/v1/events?mode=latest&master_profile_id=${A().master_with_two_guests}`);
    expect(master.body.data.length).toBeGreaterThan(0);
    expect((await get(`/v1/events?mode=latest&cursor=abc`)).status).toBe(400);
  });
});

describe("GET /v1/events: which timelines keep their plan", () => {
  /** The timeline statements the service prepared on the connection the last request used. */
  const timelines = async () =>
    (await preparedOnLastConnection(t.db.readerPool))
      .filter((p) => p.name.startsWith("gcs_") && /FROM events t WHERE/.test(p.statement) && /ORDER BY t\.txid, t\.seq/.test(p.statement))
      .map((p) => p.statement);

  it("prepares a guest's and a master profile's timeline on the connection, and plans a group-wide filter afresh", async () => {
    expect((await get(`/v1/events?guest_profile_id=${A().guest_with_events}&limit=2`)).status).toBe(200);
    expect((await timelines()).some((s) => /t\.guest_profile_id = \$\d/.test(s))).toBe(true);

    expect((await get(`/v1/events?master_profile_id=${A().master_with_two_guests}&limit=2`)).status).toBe(200);
    expect((await timelines()).some((s) => /t\.guest_profile_id = ANY\(/.test(s))).toBe(true);

    // A rare entity type over the whole group: a kept plan would walk the group's events in order.
    const res = await get(`/v1/events?entity_type=reservation&limit=2`);
    expect(res.status).toBe(200);
    expect(res.body.data.length).toBeGreaterThan(0);
    expect((await timelines()).filter((s) => /t\.entity_type = \$\d/.test(s))).toEqual([]);
  });
});
