// The service with a real streaming replica (test/helpers/replica.ts): DATABASE_URL is a PostgreSQL 15
// primary, DATABASE_REPLICA_URL a hot standby made with pg_basebackup -R, both on loopback.
// - Reads answer from the standby: both servers log every statement, and each read request (every
//   GET route, every Query root field, every MCP task tool) leaves statements on the standby and none
//   on the primary.
// - Writes and what a request reads back of its own write go to the primary: with the standby's
//   replay paused, a pause answers the paused binding while reads still see it active; the delivery
//   engine delivers and confirms.
// - The event timeline, walked through the standby while the primary appends in concurrent
//   transactions committing out of order, skips and repeats nothing.
// - A standby further behind than GCS_REPLICA_MAX_LAG_MS, or down, is out of reads (and back once
//   caught up or up), as /readyz and /metrics report; an idle primary does not read as lag.
import { randomUUID } from "node:crypto";
import { readFileSync } from "node:fs";
import path from "node:path";
import { buildSchema, getNamedType, isLeafType, isNonNullType, isObjectType, type GraphQLField, type GraphQLNamedType } from "graphql";
import { Client } from "pg";
import request from "supertest";
import { loadConfig } from "../../src/config";
import { UNBOUND_FILTER } from "../../src/fixtures/tables";
import { addTableMembers } from "../../src/data/stores/table-membership";
import { scopedPrisma } from "../../src/data/tenant";
import { startStandIn, type StandIn } from "../../src/delivery/standin";
import { taskTools } from "../../src/api/tools/task-tools";
import { routes, type RouteSpec } from "../../src/api/routes";
import { startServer, type RunningServer } from "../../src/server";
import { createApp } from "../../src/app";
import type { AddressInfo } from "node:net";
import { capturingLogger, startAppOn, type TestApp } from "../helpers/app";
import { validated } from "../helpers/openapi-validate";
import { queryOne, startReplicaPair, type ReplicaPair } from "../helpers/replica";
import { openStream, seqOf, type SseEvent } from "../helpers/sse";
import { StatementLog, type LoggedStatement } from "../helpers/statement-log";
import { SET_SESSION } from "../../src/db/tenant-pool";

const schema = buildSchema(readFileSync(path.resolve(__dirname, "../../schema.graphql"), "utf8"));
const MARKERS = "gcs-replica-markers";
const STREAM_WRITER = "gcs-replica-stream-writer";
/** The replica health check's own statements (src/db/replica-health.ts), on both servers every interval. */
const HEALTH_CHECK = /pg_current_wal_insert_lsn|pg_last_wal_replay_lsn/;

let pair: ReplicaPair;

beforeAll(async () => {
  pair = await startReplicaPair({ logStatements: true });
}, 120_000);
afterAll(() => pair?.stop());

const A = () => pair.manifest.groups.A;
/** Group A's web-app session reaches every route and field; MCP takes its API key (no sessions there). */
const bearer = (credential: "session_token" | "api_key" = "session_token") => ({ Authorization: `Bearer ${A().credentials[credential]}` });
const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));

async function waitUntil(what: string, done: () => Promise<boolean>, ms = 20_000): Promise<void> {
  const deadline = Date.now() + ms;
  while (!(await done())) {
    if (Date.now() > deadline) throw new Error(`${what}: not within ${ms} ms`);
    await sleep(50);
  }
}

describe("reads on the standby, writes on the primary", () => {
  let t: TestApp;
  const markers: Client[] = [];
  let onPrimary: StatementLog;
  let onStandby: StatementLog;
  const log = capturingLogger();
  const PASSWORD = "replica-password-never-logged";
  let webhookEndpointId: string;

  beforeAll(async () => {
    for (const server of [pair.primary, pair.standby]) {
      const c = new Client({ connectionString: server.adminUrl(), application_name: MARKERS });
      await c.connect();
      markers.push(c);
    }
    onPrimary = new StatementLog(pair.primary.logFile, markers[0], MARKERS);
    onStandby = new StatementLog(pair.standby.logFile, markers[1], MARKERS);
    // A lag limit no test here reaches: replay is paused on purpose below, and reads must stay on the
    // standby. A password in the URL (trust auth ignores it) that no log line may show.
    const replicaUrl = new URL(pair.standby.adminUrl());
    replicaUrl.password = PASSWORD;
    t = await startAppOn(pair.primary.adminUrl(), pair.manifest, {
      DATABASE_REPLICA_URL: replicaUrl.toString(),
      GCS_REPLICA_MAX_LAG_MS: "600000",
      GCS_REPLICA_CHECK_MS: "200",
      GCS_RATE_LIMIT: "0",
      GCS_STREAM_POLL_MS: "100",
      GCS_GRAPHQL_MAX_DEPTH: "20",
      GCS_GRAPHQL_MAX_COST: "100000000",
    }, log.logger);
    // A webhook endpoint of group A, for the webhook routes, fields and tools to read.
    const made = await markers[0].query<{ id: string }>(
      `INSERT INTO webhook_endpoints (property_group_id, url, topics, property_ids, secret_ciphertext)
       VALUES ($1::uuid, 'https://receiver.example/hooks', '{*}', '{}', 'v2:x:y') RETURNING id::text AS id`,
      [A().id],
    );
    webhookEndpointId = made.rows[0].id;
    await pair.caughtUp();
    await onPrimary.window(); // start-up's statements are no request's
    await onStandby.window();
  }, 60_000);

  afterAll(async () => {
    await t?.close();
    onPrimary?.close();
    onStandby?.close();
    for (const c of markers) await c.end();
  });

  // The tenant wall's settings travel with each statement (db/tenant-pool.ts), with a remembered
  // credential's check while it is unproved: not statements of their own.
  const settings = (text: string) => text.startsWith(SET_SESSION); // every form of it begins so
  const appStatements = (log: LoggedStatement[]) =>
    log.filter((s) => !HEALTH_CHECK.test(s.text) && !settings(s.text) && s.application !== "gcs-replica-helper");

  /** Runs one request and records where its statements ran. */
  const placements: { target: string; primary: string[]; standby: number; counted: number }[] = [];
  async function observe<T extends { headers: Record<string, string> }>(target: string, send: () => PromiseLike<T>): Promise<T> {
    const result = await send();
    const primary = appStatements(await onPrimary.window());
    const standby = appStatements(await onStandby.window());
    const counted = Number(result.headers["x-sql-statements"]);
    placements.push({ target, primary: primary.map((s) => s.text.replace(/\s+/g, " ").slice(0, 160)), standby: standby.length, counted });
    return result;
  }

  it("starts with the standby in use for reads, and logs its address without the password", () => {
    expect(t.db.replica!.status()).toMatchObject({ state: "streaming", lagSeconds: 0 });
    expect(t.db.readerPool).toBe(t.db.replica!.pool);
    const line = log.lines.find((l) => l.includes("read replica in use for reads"));
    expect(JSON.parse(line!).replica).toMatch(/^postgresql:\/\/postgres:redacted@127\.0\.0\.1:\d+\/postgres$/);
    expect(log.lines.filter((l) => l.includes(PASSWORD))).toEqual([]);
  });

  it("reads an idle primary's standby as caught up, however old the last write", async () => {
    await queryOne(pair.primary.adminUrl(), "SELECT pg_current_xact_id()"); // a commit for the standby to replay
    await pair.caughtUp();
    await sleep(1500);
    expect(t.db.replica!.status()).toMatchObject({ state: "streaming", lagSeconds: 0 });
    const replayed = await queryOne<{ s: number }>(pair.standby.adminUrl(), "SELECT extract(epoch FROM now() - pg_last_xact_replay_timestamp())::float8 AS s");
    expect(replayed.s).toBeGreaterThan(1); // a replay-timestamp measure would call this a second of lag
  });

  it("answers every read route, every Query root field and every MCP task tool from the standby alone", async () => {
    const failed: string[] = [];
    const ok = (target: string, status: number, body: unknown) => {
      if (status !== 200) failed.push(`${target}: ${status} ${JSON.stringify(body).slice(0, 300)}`);
    };

    // REST: every read route of the route table (GET, and the POSTs that read only: preview, lookup).
    const rows = new Map<string, string>([["/v1/tables", A().tables.bound]]);
    const readBodies: Record<string, Record<string, unknown>> = {
      "/v1/tables/preview": { member_type: "guest_profile", filter_doc: UNBOUND_FILTER },
      "/v1/guests/lookup": { table_id: A().tables.bound, purpose: "email_marketing" },
    };
    const reads = routes.filter((r) => r.method === "GET" || r.path in readBodies);
    for (const route of reads.filter((r) => !r.path.includes(":"))) {
      const res = await observe(`${route.method} ${route.path}`, () =>
        route.method === "GET" ? t.api.get(route.path).set(bearer()) : t.api.post(route.path).set(bearer()).send(readBodies[route.path]),
      );
      ok(`${route.method} ${route.path}`, res.status, res.body);
      const first = Array.isArray(res.body.data) ? (res.body.data as { id?: string }[])[0]?.id : undefined;
      if (first && !rows.has(route.path)) rows.set(route.path, first);
    }
    const pathFor = (route: RouteSpec) =>
      route.path.replace(/:(\w+)/g, (_, name: string) => {
        if (name === "provider") return pair.manifest.destinations[0];
        const id = rows.get(route.path.slice(0, route.path.indexOf(`/:${name}`)));
        if (!id) throw new Error(`${route.path}: no value for :${name}`);
        return id;
      });
    // A required query parameter is a purpose (a table's reachability).
    const requiredQuery = (route: RouteSpec) => (Object.values(route.query ?? {}).some((q) => q.required) ? "?purpose=email_marketing" : "");
    for (const route of reads.filter((r) => r.path.includes(":"))) {
      const res = await observe(`GET ${route.path}`, () => t.api.get(pathFor(route) + requiredQuery(route)).set(bearer()));
      ok(`GET ${route.path}`, res.status, res.body);
    }

    // GraphQL: every Query root field, with ids of rows the lists return.
    const graphql = (target: string, query: string, variables: Record<string, unknown> = {}) =>
      observe(target, () => t.api.post("/graphql").set(bearer()).send({ query, variables }));
    const fields = Object.values(schema.getQueryType()!.getFields());
    const ids = new Map<string, string>([["Table", A().tables.bound]]);
    for (const field of fields.filter((f) => !f.args.some(required))) {
      const listed = listedType(field);
      if (!listed || ids.has(listed.name) || !isObjectType(listed) || !listed.getFields().id) continue;
      const nodes = listed === getNamedType(field.type) ? "{ id }" : "{ nodes { id } }";
      const res = await graphql(`Query.${field.name} (ids)`, `{ ${field.name} ${nodes} }`);
      const value = res.body.data?.[field.name];
      const id = (Array.isArray(value) ? value : value?.nodes)?.[0]?.id;
      if (id) ids.set(listed.name, id);
    }
    const people = await graphql("Query.guests (a person)", "{ guests(limit: 100) { nodes { id givenName familyName email masterProfileId } } }");
    type Person = { id: string; givenName: string; familyName: string; email: string; masterProfileId: string };
    const nodes = people.body.data.guests.nodes as Person[];
    const person = nodes.find((g) => g.givenName && g.familyName && g.email && g.masterProfileId)!;
    // Another profile of the same person, for the chain of links that joined them.
    const sameMaster = nodes.find((g) => g.masterProfileId === person.masterProfileId && g.id !== person.id) ?? person;
    const given: Record<string, Record<string, unknown>> = {
      guestSearch: { query: `${person.givenName} ${person.familyName}` },
      guestContext: { masterProfileId: person.masterProfileId },
      contactPermission: { email: person.email, purpose: "email_marketing" },
      mergeExplanation: { guestProfileId: person.id, otherGuestProfileId: sameMaster.id },
      lookupGuests: { input: { masterProfileIds: [person.masterProfileId], emails: [person.email], purpose: "email_marketing" } },
      tableReachability: { purpose: "email_marketing" },
      tablePreview: { memberType: "guest_profile", filterDoc: UNBOUND_FILTER },
      stayMetrics: { filter: { arrivalFrom: "2024-01-01", arrivalTo: "2025-12-31" } },
      consentMetrics: { purpose: "email_marketing" },
      webhookDeliveries: { endpointId: webhookEndpointId },
    };
    for (const field of fields) {
      const variables: Record<string, unknown> = { ...given[field.name] };
      for (const arg of field.args.filter(required)) {
        if (arg.name in variables) continue;
        const type = arg.name === "id" ? getNamedType(field.type).name : arg.name.endsWith("Id") ? arg.name[0].toUpperCase() + arg.name.slice(1, -2) : "";
        if (!ids.has(type)) throw new Error(`Query.${field.name}(${arg.name}:) has no value; add one to \`given\``);
        variables[arg.name] = ids.get(type);
      }
      const used = field.args.filter((a) => a.name in variables);
      const declared = used.length ? `(${used.map((a) => `$${a.name}: ${a.type}`).join(", ")})` : "";
      const passed = used.length ? `(${used.map((a) => `${a.name}: $${a.name}`).join(", ")})` : "";
      const selection = isLeafType(getNamedType(field.type)) ? "" : "{ __typename }";
      const res = await graphql(`Query.${field.name}`, `query Replica${declared} { ${field.name}${passed} ${selection} }`, variables);
      ok(`Query.${field.name}`, res.body.errors ? 500 : res.status, res.body);
    }

    // MCP: the task tools.
    const toolArguments: Record<string, Record<string, unknown>> = {
      find_guests: { query: `${person.givenName} ${person.familyName}` },
      guest_context: { master_profile_id: person.masterProfileId },
      check_contact_permission: { email: person.email, purpose: "email_marketing" },
      explain_merge: { guest_profile_id: person.id, other_guest_profile_id: sameMaster.id },
      stay_performance: { from: "2024-01-01", to: "2025-12-31" },
      list_webhook_deliveries: { endpoint_id: webhookEndpointId },
    };
    for (const tool of taskTools) {
      const res = await observe(`MCP ${tool.name}`, () =>
        t.api
          .post("/mcp")
          .set(bearer("api_key"))
          .set("Accept", "application/json, text/event-stream")
          .send({ jsonrpc: "2.0", id: 1, method: "tools/call", params: { name: tool.name, arguments: toolArguments[tool.name] } }),
      );
      ok(`MCP ${tool.name}`, res.body?.result && !res.body.result.isError ? res.status : 500, res.body);
    }

    expect(failed).toEqual([]);
    // Every request read something, all of it on the standby and nothing on the primary.
    expect(placements.filter((p) => p.primary.length > 0 || p.standby === 0)).toEqual([]);
    // The standby received exactly the statements the service counted: choosing the server costs none.
    expect(placements.filter((p) => p.standby !== p.counted)).toEqual([]);
    const targets = new Set(placements.map((p) => p.target));
    expect(targets.size).toBeGreaterThan(reads.length + fields.length + taskTools.length - 1);
    console.log(
      `replica reads: ${reads.length} REST read routes, ${fields.length} Query root fields, ${taskTools.length} MCP task tools; ` +
        `${placements.length} requests, ${placements.reduce((n, p) => n + p.standby, 0)} statements on the standby, 0 on the primary`,
    );
  }, 120_000);

  it("pause and resume write on the primary and answer the binding read back from it, while the standby's replay is paused", async () => {
    const provider = pair.manifest.destinations[0];
    const binding = `/v1/tables/${A().tables.bound}/destinations/${provider}`;
    const stateOnReads = async () => {
      const res = await t.api.get(`/v1/tables/${A().tables.bound}`).set(bearer());
      return (res.body.data.bindings as { provider: string; state: string }[]).find((b) => b.provider === provider)!.state;
    };
    expect(await stateOnReads()).toBe("active");
    await pair.pauseReplay();
    try {
      const paused = await observe("pause", () => t.api.post(`${binding}/pause`).set(bearer()));
      expect(paused.status).toBe(200);
      expect(paused.body.data.state).toBe("paused"); // read back from the primary
      expect(placements.at(-1)!.primary.some((s) => /UPDATE/i.test(s))).toBe(true);
      expect(await stateOnReads()).toBe("active"); // reads: the standby, which has not replayed the pause
      const resumed = await t.api.post(`${binding}/resume`).set(bearer());
      expect(resumed.status).toBe(200);
      expect(resumed.body.data.state).toBe("active");
      // The same through /graphql.
      const mutation = await t.api
        .post("/graphql")
        .set(bearer())
        .send({ query: `mutation($t: UUID!, $p: String!) { pauseDestination(tableId: $t, provider: $p) { state } }`, variables: { t: A().tables.bound, p: provider } });
      expect(mutation.body).toEqual({ data: { pauseDestination: { state: "paused" } } });
      expect(await stateOnReads()).toBe("active");
      expect((await t.api.post(`${binding}/resume`).set(bearer())).body.data.state).toBe("active");
    } finally {
      await pair.resumeReplay();
    }
    await pair.caughtUp();
    expect(await stateOnReads()).toBe("active");
  });

  it("walks the event timeline through the standby while the primary appends out of commit order: no event skipped or doubled", async () => {
    const group = A().id;
    const guest = A().guest_with_events;
    const writers: Client[] = [];
    for (let i = 0; i < 6; i++) {
      const c = new Client({ connectionString: pair.primary.adminUrl(), application_name: "gcs-replica-writer" });
      await c.connect();
      writers.push(c);
    }
    const append = (c: Client) =>
      c.query(
        `INSERT INTO events (property_group_id, entity_type, entity_id, guest_profile_id, operation, delta, occurred_at)
         VALUES ($1, 'guest_profile', $2, $2, 'update', '{"replica_test": true}', now())`,
        [group, guest],
      );
    // A transaction that takes its ids first and commits last, then several that interleave.
    let writing = true;
    const long = (async () => {
      const c = writers[0];
      await c.query("BEGIN");
      await append(c);
      await sleep(2500);
      await append(c);
      await c.query("COMMIT");
    })();
    const short = writers.slice(1).map(async (c, i) => {
      for (let n = 0; n < 6; n++) {
        await c.query("BEGIN");
        await append(c);
        await sleep(((i * 7 + n * 13) % 5) * 60);
        await append(c);
        await c.query("COMMIT");
      }
    });
    const written = Promise.all([long, ...short]).finally(() => (writing = false));

    // The walker: pages of 20; at the end of the timeline it re-reads its last page from the same
    // cursor, which must come back as the same rows first (nothing may appear before them).
    const seen: string[] = [];
    let cursor: string | null = null;
    let tail: string[] = [];
    let tailReads = 0;
    for (;;) {
      const url: string = `/v1/events?limit=20${cursor ? `&cursor=${encodeURIComponent(cursor)}` : ""}`;
      const res = await t.api.get(url).set(bearer());
      expect(res.status).toBe(200);
      const page = (res.body.data as { seq: string }[]).map((e) => e.seq);
      expect(page.slice(0, tail.length)).toEqual(tail);
      if (res.body.next_cursor) {
        seen.push(...page);
        cursor = res.body.next_cursor;
        tail = [];
        continue;
      }
      tail = page;
      tailReads++;
      if (!writing) {
        // The writers are done: once the standby has replayed everything, the tail is final.
        await written;
        await pair.caughtUp();
        const settled = await t.api.get(url).set(bearer());
        const rows = (settled.body.data as { seq: string }[]).map((e) => e.seq);
        if (settled.body.next_cursor === null && rows.length === tail.length) {
          expect(rows).toEqual(tail);
          break;
        }
      }
      await sleep(30);
    }
    seen.push(...tail);
    for (const c of writers) await c.end();

    const { rows } = await markers[0].query<{ seq: string }>("SELECT seq::text AS seq FROM events WHERE property_group_id = $1 ORDER BY events.txid, events.seq", [group]);
    expect(seen).toEqual(rows.map((r) => r.seq)); // every event once, in timeline order
    expect(tailReads).toBeGreaterThan(5); // the walk reached the end while the writers were still at it
    expect(t.db.readerPool).toBe(t.db.replica!.pool);
  }, 60_000);

  it("streams the timeline from the standby and resumes with Last-Event-ID while the primary appends out of commit order: no gap, no duplicate", async () => {
    const app = await createApp(t.services);
    const server = app.app.listen(0, "127.0.0.1");
    await new Promise((r) => server.once("listening", r));
    const base = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
    const token = A().credentials.api_key;
    const writers: Client[] = [];
    for (let i = 0; i < 4; i++) {
      const c = new Client({ connectionString: pair.primary.adminUrl(), application_name: STREAM_WRITER });
      await c.connect();
      writers.push(c);
    }
    const append = (c: Client) =>
      c.query(
        `INSERT INTO events (property_group_id, entity_type, entity_id, guest_profile_id, operation, delta, occurred_at)
         VALUES ($1, 'guest_profile', $2, $2, 'update', '{"replica_stream": true}', now())`,
        [A().id, A().guest_with_events],
      );
    try {
      await onPrimary.window();
      let s = await openStream(base, token);
      expect(s.status).toBe(200);
      await waitUntil("the retry hint", async () => s.retry !== undefined);
      // One transaction takes its seq first and commits last; the others interleave meanwhile.
      let writing = true;
      const long = (async () => {
        await writers[0].query("BEGIN");
        await append(writers[0]);
        await sleep(1500);
        await append(writers[0]);
        await writers[0].query("COMMIT");
      })();
      const short = writers.slice(1).map(async (c, i) => {
        for (let n = 0; n < 25; n++) {
          await c.query("BEGIN");
          await append(c);
          await sleep(40 + ((i * 7 + n * 13) % 5) * 30);
          await c.query("COMMIT");
        }
      });
      const written = Promise.all([long, ...short]).finally(() => (writing = false));

      // Reconnect with Last-Event-ID after every few events, while the writers are at it.
      const seen: SseEvent[] = [];
      let reconnects = 0;
      while (writing) {
        await waitUntil("a few events", async () => s.events.length >= 3 || !writing);
        if (s.events.length === 0) continue;
        s.close();
        seen.push(...s.events);
        s = await openStream(base, token, { lastEventId: seen[seen.length - 1].id });
        expect(s.status).toBe(200);
        reconnects++;
      }
      await written;
      await pair.caughtUp();
      const { rows } = await markers[0].query<{ seq: string }>(
        `SELECT seq::text AS seq FROM events WHERE property_group_id = $1 AND delta ? 'replica_stream' ORDER BY events.txid, events.seq`,
        [A().id],
      );
      await waitUntil("every event on the stream", async () => seen.length + s.events.length >= rows.length);
      await sleep(300); // nothing more may follow
      s.close();
      seen.push(...s.events);

      expect(seen.map(seqOf)).toEqual(rows.map((r) => r.seq)); // every event once, in timeline order
      expect(rows.length).toBe(2 + 3 * 25);
      expect(reconnects).toBeGreaterThan(2);
      expect(t.db.readerPool).toBe(t.db.replica!.pool);
      // The stream read nothing from the primary: only the writers' statements are there.
      expect(appStatements(await onPrimary.window()).filter((st) => st.application !== STREAM_WRITER)).toEqual([]);
    } finally {
      for (const c of writers) await c.end();
      app.drain();
      server.closeAllConnections();
      await new Promise((r) => server.close(r));
      await app.stop();
    }
  }, 60_000);
});

it("keeps a replica URL that names a server not in recovery (a promoted standby, the primary) out of reads", async () => {
  const t = await startAppOn(pair.primary.adminUrl(), pair.manifest, { DATABASE_REPLICA_URL: pair.primary.adminUrl(), GCS_RATE_LIMIT: "0" });
  try {
    expect(t.db.replica!.status()).toMatchObject({ state: "not_standby", lagSeconds: null });
    expect(t.db.readerPool).toBe(t.db.primaryPool);
    expect((await t.api.get("/readyz")).body).toEqual({ status: "ready", replica: { state: "not_standby", serving_reads: false, lag_seconds: null, lag_bytes: null } });
    expect((await t.api.get("/v1/properties").set(bearer())).status).toBe(200);
  } finally {
    await t.close();
  }
});

describe("lag, outage and shutdown", () => {
  let server: RunningServer;
  let standIn: StandIn;
  let api: ReturnType<typeof request>;
  let metricsUrl: string;
  const MAX_LAG_MS = 1000;

  const readiness = async () => (await api.get("/readyz")).body as { status: string; replica: { state: string; serving_reads: boolean; lag_seconds: number | null; lag_bytes: number | null } };
  const gauge = async (name: string): Promise<number | undefined> => {
    const text = await (await fetch(metricsUrl)).text();
    const m = new RegExp(`^${name}\\{replica="127\\.0\\.0\\.1:\\d+"\\} (\\S+)$`, "m").exec(text);
    return m ? Number(m[1]) : undefined;
  };

  beforeAll(async () => {
    standIn = await startStandIn();
    // Frozen from the start: the delivery engine below can only have read and written the primary.
    await pair.pauseReplay();
    server = await startServer(
      loadConfig({
        NODE_ENV: "test",
        LOG_LEVEL: "silent",
        HOST: "127.0.0.1",
        PORT: "0",
        GCS_METRICS_PORT: "0",
        DATABASE_URL: pair.primary.adminUrl(),
        DATABASE_REPLICA_URL: pair.standby.adminUrl(),
        GCS_REPLICA_MAX_LAG_MS: String(MAX_LAG_MS),
        GCS_REPLICA_CHECK_MS: "100",
        GCS_RATE_LIMIT: "0",
        GCS_DELIVERY_WORKER: "true",
        GCS_DELIVERY_INTERVAL_MS: "100",
        GCS_MAILCHIMP_BASE_URL: standIn.url,
        GCS_KLAVIYO_BASE_URL: standIn.url,
      }),
    );
    api = validated(request(`http://127.0.0.1:${server.port}`));
    metricsUrl = `http://127.0.0.1:${server.metricsPort}/metrics`;
  }, 60_000);

  afterAll(async () => {
    await server?.stop();
    await standIn?.close();
  });

  const confirmed = (url: string) =>
    queryOne<{ seqs: string }>(url, "SELECT string_agg(confirmed_seq::text, ',' ORDER BY provider) AS seqs FROM destination_bindings WHERE table_id = $1", [A().tables.bound]);

  it("the delivery engine reads and writes the primary: it delivers a new member while the standby is frozen", async () => {
    // Written as group A through the service's primary (the tenant wall holds a write to its group).
    const db = scopedPrisma(server.services.db.primary, { propertyGroupId: A().id, propertyId: null });
    const before = await confirmed(pair.standby.adminUrl());
    // A new guest with e-mail marketing granted, added to the bound table: on the primary only.
    const source = await db.guestProfile.findFirstOrThrow({ where: { id: A().guest_lookup.guest_id } });
    const id = randomUUID();
    const email = "replica.delivery@example.org";
    await db.guestProfile.create({
      data: { id, propertyGroupId: A().id, propertyId: source.propertyId, integrationId: source.integrationId, sourceId: "replica-delivery", email, givenName: "Replica", familyName: "Delivery" },
    });
    await db.consentObservation.create({
      data: {
        id: randomUUID(), propertyGroupId: A().id, propertyId: source.propertyId, contactType: "email", contactValue: email,
        purpose: "email_marketing", channel: "email", status: "granted", source: "test", observedAt: new Date("2026-01-01T00:00:00Z"),
      },
    });
    await addTableMembers(db, { tableId: A().tables.bound, propertyGroupId: A().id, memberIds: [id] });
    const { head } = await queryOne<{ head: string }>(pair.primary.adminUrl(), "SELECT max(seq)::text AS head FROM table_membership_changes WHERE table_id = $1", [A().tables.bound]);
    await waitUntil("both bindings confirmed on the primary", async () => (await confirmed(pair.primary.adminUrl())).seqs === `${head},${head}`);
    expect(standIn.received().filter((r) => r.email === email).map((r) => `${r.provider} ${r.op}`).sort()).toEqual(["klaviyo subscribe", "mailchimp subscribe"]);
    // The standby has replayed none of it.
    expect(await confirmed(pair.standby.adminUrl())).toEqual(before);
    expect(await queryOne(pair.standby.adminUrl(), "SELECT id FROM guest_profiles WHERE id = $1", [id])).toBeUndefined();
  });

  it("takes a standby more than GCS_REPLICA_MAX_LAG_MS behind out of reads, and back once it has caught up", async () => {
    const guest = A().guest_lookup.guest_id;
    const nameOf = async () => (await api.get(`/v1/guests/${guest}`).set(bearer())).body.data.given_name as string;
    const original = await nameOf();
    await queryOne(pair.primary.adminUrl(), "UPDATE guest_profiles SET given_name = 'Replicated' WHERE id = $1", [guest]);
    await waitUntil("the standby out of reads", async () => (await readiness()).replica.state === "lagging");
    const lagging = await readiness();
    expect(lagging).toMatchObject({ status: "ready", replica: { state: "lagging", serving_reads: false } });
    expect(lagging.replica.lag_seconds).toBeGreaterThan(MAX_LAG_MS / 1000);
    expect(lagging.replica.lag_bytes).toBeGreaterThan(0);
    expect(await gauge("gcs_replica_serving_reads")).toBe(0);
    expect(await gauge("gcs_replica_lag_seconds")).toBeGreaterThan(MAX_LAG_MS / 1000);
    expect(await gauge("gcs_replica_lag_bytes")).toBeGreaterThan(0);
    // Reads now see the primary's write the frozen standby lacks.
    expect(await nameOf()).toBe("Replicated");
    expect(server.services.db.readerPool).toBe(server.services.db.primaryPool);

    await pair.resumeReplay();
    await waitUntil("the standby back in reads", async () => (await readiness()).replica.state === "streaming");
    const back = await readiness();
    expect(back).toEqual({ status: "ready", replica: { state: "streaming", serving_reads: true, lag_seconds: expect.any(Number), lag_bytes: expect.any(Number) } });
    expect(back.replica.lag_seconds).toBeLessThanOrEqual(MAX_LAG_MS / 2000); // back only at half the limit
    expect(await gauge("gcs_replica_serving_reads")).toBe(1);
    expect(server.services.db.readerPool).toBe(server.services.db.replica!.pool);
    expect(await nameOf()).toBe("Replicated");
    await queryOne(pair.primary.adminUrl(), "UPDATE guest_profiles SET given_name = $2 WHERE id = $1", [guest, original]);
  });

  it("reads from the primary while the standby is down, and from the standby again once it is back", async () => {
    await pair.standby.halt();
    const results = [];
    for (const route of ["/v1/properties", "/v1/guests", `/v1/guests/${A().guest_lookup.guest_id}`, "/v1/events"]) {
      results.push((await api.get(route).set(bearer())).status);
    }
    expect(results).toEqual([200, 200, 200, 200]);
    await waitUntil("the standby reported down", async () => (await readiness()).replica.state === "down");
    expect(await readiness()).toEqual({ status: "ready", replica: { state: "down", serving_reads: false, lag_seconds: null, lag_bytes: null } });
    expect(await gauge("gcs_replica_serving_reads")).toBe(0);
    expect(await gauge("gcs_replica_lag_seconds")).toBeUndefined();

    await pair.standby.resume();
    await waitUntil("the standby back in reads", async () => (await readiness()).replica.state === "streaming", 30_000);
    expect((await api.get("/v1/properties").set(bearer())).status).toBe(200);
  }, 60_000);

  it("stops checking and leaves no connection on the standby once the server has stopped", async () => {
    const health = server.services.db.replica!;
    await server.stop();
    const checkedAt = health.status().checkedAt;
    await sleep(400);
    expect(health.status().checkedAt).toBe(checkedAt);
    const left = await queryOne<{ n: number }>(
      pair.standby.adminUrl(),
      "SELECT count(*)::int AS n FROM pg_stat_activity WHERE backend_type = 'client backend' AND pid <> pg_backend_pid() AND application_name <> $1",
      [MARKERS],
    );
    expect(left.n).toBe(0);
  });
});

const required = (a: { type: unknown; defaultValue: unknown }) => isNonNullType(a.type) && a.defaultValue === undefined;

/** The type a list field lists: T of [T] or of a page's `nodes: [T]`. */
function listedType(f: GraphQLField<unknown, unknown>): GraphQLNamedType | undefined {
  const named = getNamedType(f.type);
  if (f.type.toString().startsWith("[") && isObjectType(named)) return named;
  const nodes = isObjectType(named) ? named.getFields().nodes : undefined;
  return nodes ? getNamedType(nodes.type) : undefined;
}
