// GET /v1/events/stream (issue 29): Server-Sent Events over the event timeline. Resuming with
// Last-Event-ID while writers append (some committing out of order) gives every event exactly once;
// the stream shows what GET /v1/events shows; tenants, scope, the cap and the hints hold.
import http, { type IncomingMessage } from "node:http";
import { Client } from "pg";
import { listenTestApp, startTestApp, type TestApp } from "../helpers/app";
import { openStream as sseOpen, seqOf, type SseEvent } from "../helpers/sse";

let t: TestApp;
let listening: Awaited<ReturnType<typeof listenTestApp>>;
let base: string;
const A = () => t.manifest.groups.A;
const B = () => t.manifest.groups.B;

beforeAll(async () => {
  t = await startTestApp({ GCS_STREAM_MAX_PER_CREDENTIAL: "2", GCS_STREAM_POLL_MS: "100", GCS_STREAM_HEARTBEAT_MS: "1000", GCS_DELIVERY_WORKER: "false" });
  listening = await listenTestApp(t);
  base = listening.base;
});
afterAll(async () => {
  await listening.close();
  await t.close();
});

const openStream = (token: string, opts: { query?: string; lastEventId?: string } = {}) => sseOpen(base, token, opts);

async function until(check: () => boolean, ms = 30_000) {
  const deadline = Date.now() + ms;
  while (!check()) {
    if (Date.now() > deadline) throw new Error("timed out");
    await new Promise((r) => setTimeout(r, 25));
  }
}

describe("GET /v1/events/stream", () => {
  it("resumes with Last-Event-ID while writers append, with no gap and no duplicate", async () => {
    const token = A().credentials.api_key;
    const guest = A().guest_with_events;
    const writers = await Promise.all([0, 1, 2].map(async () => {
      const c = new Client({ connectionString: t.databaseUrl });
      await c.connect();
      return c;
    }));
    const appended: string[] = [];
    const insert = async (c: Client) => {
      const { rows } = await c.query(
        `INSERT INTO events (property_group_id, entity_type, entity_id, guest_profile_id, operation, delta, occurred_at)
         VALUES ($1, 'guest_profile', $2, $2, 'update', '{"vip_code":"VIP3"}', now()) RETURNING seq::text`,
        [A().id, guest],
      );
      appended.push(rows[0].seq);
    };
    let s = await openStream(token);
    expect(s.status).toBe(200);
    expect(s.headers["content-type"]).toBe("text/event-stream; charset=utf-8");
    await until(() => s.retry !== undefined);
    expect(s.retry).toBe(2000);

    let writing = true;
    const work = writers.map(async (c, i) => {
      while (writing) {
        if (i === 0) {
          // A transaction that takes its seq early and commits late: it must not be skipped.
          await c.query("BEGIN");
          await insert(c);
          await new Promise((r) => setTimeout(r, 150));
          await c.query("COMMIT");
        } else {
          await insert(c);
        }
        await new Promise((r) => setTimeout(r, 10));
      }
    });

    const seen: SseEvent[] = [];
    for (let round = 0; round < 4; round++) {
      await until(() => s.events.length >= 5);
      s.close();
      seen.push(...s.events);
      s = await openStream(token, { lastEventId: seen[seen.length - 1].id });
      expect(s.status).toBe(200);
    }
    writing = false;
    await Promise.all(work);
    await until(() => appended.every((seq) => [...seen, ...s.events].some((e) => seqOf(e) === seq)));
    s.close();
    seen.push(...s.events);
    await Promise.all(writers.map((c) => c.end()));

    const seqs = seen.map(seqOf);
    expect(new Set(seqs).size).toBe(seqs.length); // no duplicate
    expect([...seqs].sort()).toEqual([...appended].sort()); // no gap, nothing else
    expect(seen.every((e) => e.event === "guest_profile.updated")).toBe(true);

    // The ids are /v1/events cursors: paging from the first one gives the same rows, in the same order.
    const rows: { seq: string }[] = [];
    let cursor: string | null = seen[0].id!;
    while (cursor) {
      const page: { status: number; body: { data: { seq: string }[]; next_cursor: string | null } } = await t.api.get(`/v1/events?limit=100&cursor=${encodeURIComponent(cursor)}`).set({ Authorization: `Bearer ${token}` });
      expect(page.status).toBe(200);
      rows.push(...page.body.data);
      cursor = page.body.next_cursor;
    }
    expect(rows.map((r) => r.seq)).toEqual(seqs.slice(1));
    expect(JSON.parse(seen[1].data!)).toEqual(rows[0]);
  });

  it("filters like /v1/events and never shows another group's events; a foreign id is invalid_cursor", async () => {
    const a = await openStream(A().credentials.api_key, { query: "entity_type=reservation" });
    const b = await openStream(B().credentials.api_key);
    await until(() => a.retry !== undefined && b.retry !== undefined);
    const c = new Client({ connectionString: t.databaseUrl });
    await c.connect();
    const add = (group: string, guest: string, type: string) =>
      c.query(
        `INSERT INTO events (property_group_id, entity_type, entity_id, guest_profile_id, operation, delta, occurred_at)
         VALUES ($1, $3::"EntityType", $2, $2, 'update', '{}', now()) RETURNING seq::text`,
        [group, guest, type],
      ).then((r) => r.rows[0].seq as string);
    await add(A().id, A().guest_with_events, "guest_profile");
    const reservation = await add(A().id, A().guest_with_events, "reservation");
    const ofB = await add(B().id, B().guest_with_events, "guest_profile");
    await c.end();
    await until(() => a.events.length >= 1 && b.events.length >= 1);
    await new Promise((r) => setTimeout(r, 300));
    a.close();
    b.close();
    expect(a.events.map(seqOf)).toEqual([reservation]);
    expect(b.events.map(seqOf)).toEqual([ofB]);

    const foreign = await openStream(B().credentials.api_key, { lastEventId: a.events[0].id });
    expect(foreign.status).toBe(400);
    await until(() => foreign.body.includes("}"));
    expect(JSON.parse(foreign.body).error).toBe("invalid_cursor");
  });

  it("streams of one group with different filters (one reader for all) each get exactly the rows GET /v1/events gives", async () => {
    const guest = A().guest_with_events;
    const master = A().master_with_two_guests;
    const entity = "0f0e0d0c-0b0a-4908-8706-050403020100";
    const c = new Client({ connectionString: t.databaseUrl });
    await c.connect();
    const sibling = (await c.query(`SELECT id::text FROM guest_profiles WHERE master_profile_id = $1 AND id <> $2 LIMIT 1`, [master, guest])).rows[0].id as string;
    const views = [
      { token: A().credentials.api_key, query: "entity_type=reservation" },
      { token: A().credentials.api_key, query: `master_profile_id=${master}` },
      { token: A().credentials.session_token, query: `guest_profile_id=${guest.toUpperCase()}` },
      { token: A().credentials.session_token, query: `entity_id=${entity}` },
    ];
    const streams = await Promise.all(views.map((v) => openStream(v.token, { query: v.query })));
    await until(() => streams.every((st) => st.retry !== undefined));
    const add = (db: Client, type: string, entityId: string, guestId: string | null) =>
      db.query(
        `INSERT INTO events (property_group_id, entity_type, entity_id, guest_profile_id, operation, delta, occurred_at)
         VALUES ($1, $2::"EntityType", $3, $4, 'update', '{}', now())`,
        [A().id, type, entityId, guestId],
      );
    const late = new Client({ connectionString: t.databaseUrl });
    await late.connect();
    await late.query("BEGIN");
    await add(late, "reservation", entity, guest); // takes its seq first, commits last
    for (let i = 0; i < 12; i++) {
      await add(c, "guest_profile", guest, guest);
      await add(c, "guest_profile", sibling, sibling);
      await add(c, "reservation", i % 2 ? entity : "1f0e0d0c-0b0a-4908-8706-050403020100", i % 3 ? guest : null);
      if (i === 6) await late.query("COMMIT");
    }
    await late.end();
    await c.end();

    for (const [i, st] of streams.entries()) {
      // What GET /v1/events gives from the stream's first id on, with the same filter and credential.
      await until(() => st.events.length > 0);
      const rows: string[] = [];
      let cursor: string | null = st.events[0].id!;
      while (cursor) {
        const page: { status: number; body: { data: { seq: string }[]; next_cursor: string | null } } = await t.api
          .get(`/v1/events?${views[i].query}&limit=100&cursor=${encodeURIComponent(cursor)}`)
          .set({ Authorization: `Bearer ${views[i].token}` });
        expect([views[i].query, page.status, page.body]).toEqual([views[i].query, 200, expect.anything()]);
        rows.push(...page.body.data.map((r) => r.seq));
        cursor = page.body.next_cursor;
      }
      await until(() => st.events.length >= rows.length + 1);
    }
    await new Promise((r) => setTimeout(r, 300)); // nothing more may follow
    for (const st of streams) st.close();
    const counts = streams.map((st) => st.events.length);
    expect(counts).toEqual([13, 33, 21, 7]); // reservations; guest and sibling; guest; the entity's
    for (const [i, st] of streams.entries()) {
      const seqs = st.events.map(seqOf);
      const page = await t.api.get(`/v1/events?${views[i].query}&limit=100&cursor=${encodeURIComponent(st.events[0].id!)}`).set({ Authorization: `Bearer ${views[i].token}` });
      expect(seqs.slice(1)).toEqual(page.body.data.map((r: { seq: string }) => r.seq));
    }
  });

  it("a client that stops reading leaves the group's reader and catches up when it reads again; the others keep streaming", async () => {
    const token = A().credentials.api_key;
    const guest = A().guest_with_events;
    const fast = await openStream(A().credentials.session_token);
    // The slow client: paused from its first byte on, so the server's writes back up.
    const slow = await new Promise<IncomingMessage>((resolve, reject) => {
      const req = http.get(`${base}/v1/events/stream`, { headers: { Authorization: `Bearer ${token}` } });
      req.on("error", reject);
      req.on("response", (res) => {
        res.pause();
        resolve(res);
      });
    });
    await until(() => fast.retry !== undefined);
    const c = new Client({ connectionString: t.databaseUrl });
    await c.connect();
    const append = async (n: number, size: number) =>
      (await c.query(
        `INSERT INTO events (property_group_id, entity_type, entity_id, guest_profile_id, operation, delta, occurred_at)
         SELECT $1, 'guest_profile', $2, $2, 'update', jsonb_build_object('blob', repeat('x', $3::int)), now() FROM generate_series(1, $4::int)
         RETURNING seq::text`,
        [A().id, guest, size, n],
      )).rows.map((r: { seq: string }) => r.seq);
    // About 10 MB, more than a loopback socket buffers, then small events while the client still does not read.
    const appended = [...(await append(150, 65_536))];
    await until(() => fast.events.length >= 150);
    appended.push(...(await append(30, 10)));
    await until(() => fast.events.length >= 180);
    await c.end();

    let text = "";
    slow.setEncoding("utf8");
    slow.on("data", (chunk: string) => (text += chunk));
    slow.resume();
    const seqs = () => [...text.matchAll(/^data: \{"seq":"(\d+)"/gm)].map((m) => m[1]);
    await until(() => seqs().length >= appended.length, 30_000);
    await new Promise((r) => setTimeout(r, 300)); // nothing more may follow
    slow.destroy();
    fast.close();
    expect(seqs()).toEqual(appended);
    expect(fast.events.map(seqOf)).toEqual(appended);
  }, 60_000);

  it("a key pinned to one property streams only that property's events", async () => {
    const pinned = A().credentials.api_key_pinned;
    const other = A().properties.find((p) => p !== pinned.property_id)!;
    const s = await openStream(pinned.token);
    await until(() => s.retry !== undefined);
    const c = new Client({ connectionString: t.databaseUrl });
    await c.connect();
    const add = (property: string) =>
      c.query(
        `INSERT INTO events (property_group_id, entity_type, entity_id, property_id, operation, delta, occurred_at)
         VALUES ($1, 'reservation', gen_random_uuid(), $2, 'update', '{}', now()) RETURNING seq::text`,
        [A().id, property],
      ).then((r) => r.rows[0].seq as string);
    await add(other);
    const mine = await add(pinned.property_id);
    await c.end();
    await until(() => s.events.length >= 1);
    await new Promise((r) => setTimeout(r, 300));
    s.close();
    expect(s.events.map(seqOf)).toEqual([mine]);
  });

  it("sends heartbeats, caps open streams per credential, and checks scope and input", async () => {
    const token = A().credentials.api_key;
    const one = await openStream(token);
    const two = await openStream(token);
    await until(() => one.comments.includes("heartbeat"), 5_000);
    const three = await openStream(token);
    expect(three.status).toBe(429);
    await until(() => three.body.includes("}"));
    expect(JSON.parse(three.body).error).toBe("rate_limited");
    one.close();
    await new Promise((r) => setTimeout(r, 200));
    const again = await openStream(token);
    expect(again.status).toBe(200);
    again.close();
    two.close();

    const limited = await openStream(A().credentials.api_key_limited);
    expect(limited.status).toBe(403);
    await until(() => limited.body.includes("}"));
    expect(JSON.parse(limited.body)).toMatchObject({ error: "forbidden", scope: "read:events" });
    for (const query of ["entity_type=booking", "guest_profile_id=nope", "colour=red", "guest_profile_id=3f1c2a9e-7d4b-4c1a-9e2f-5b6a7c8d9e0f&master_profile_id=3f1c2a9e-7d4b-4c1a-9e2f-5b6a7c8d9e0f"]) {
      const bad = await openStream(token, { query });
      expect([query, bad.status]).toEqual([query, 400]);
      bad.close();
    }
  });
});
