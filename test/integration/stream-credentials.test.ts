// Issue 40: an open stream ends when its credential stops opening it. A key revoked with
// `gcs keys revoke` ends its open GET /v1/events/stream and /graphql/stream streams on two instances
// (this process's app and a `gcs serve` process, one database) within 5 s; a session JWT's streams
// end at its expiry; a key that loses read:events ends with 403. The time from the revocation to
// each stream's end is measured and printed.
import { execFile } from "node:child_process";
import path from "node:path";
import { promisify } from "node:util";
import { Client } from "pg";
import { createClient } from "graphql-sse";
import { createApiKey } from "../../src/auth/credentials";
import { SESSION_CLOCK_SKEW_S, issueSessionToken } from "../../src/auth/session";
import { listenTestApp, startTestApp, type TestApp } from "../helpers/app";
import { serve, stopProcess, type ServeProcess } from "../helpers/serve";
import { openStream, seqOf, type SseStream } from "../helpers/sse";

const ROOT = path.resolve(__dirname, "../..");
const NODE = path.join(ROOT, "node_modules/.bin/node");
/** The documented bound (docs/receive-changes.md). */
const BOUND_MS = 5_000;

let t: TestApp;
let one: Awaited<ReturnType<typeof listenTestApp>>;
let two: ServeProcess;
const A = () => t.manifest.groups.A;

beforeAll(async () => {
  t = await startTestApp({ GCS_STREAM_POLL_MS: "100", GCS_DELIVERY_WORKER: "false" });
  one = await listenTestApp(t);
  // The second instance: a server process of its own on the same database, default check interval.
  two = await serve({ DATABASE_URL: t.databaseUrl, GCS_STREAM_POLL_MS: "100" });
}, 90_000);
afterAll(async () => {
  await stopProcess(two?.child);
  await one?.close();
  await t?.close();
});

const EVENTS = "subscription { events { cursor node { seq } } }";

interface Subscription {
  seqs: string[];
  errors: { message: string; extensions?: Record<string, unknown> }[];
  endedAt?: number;
  close(): void;
}

/** A subscription through graphql-sse's own client, as a dashboard opens it. */
function subscribe(base: string, token: string): Subscription {
  const client = createClient({ url: `${base}/graphql/stream`, headers: { Authorization: `Bearer ${token}` }, retryAttempts: 0 });
  const s: Subscription = { seqs: [], errors: [], close: () => {} };
  const done = () => (s.endedAt ??= Date.now());
  const dispose = client.subscribe<{ events: { node: { seq: string } } }>(
    { query: EVENTS },
    {
      next: (result) => {
        if (result.errors) s.errors.push(...(result.errors as unknown as Subscription["errors"]));
        if (result.data) s.seqs.push(result.data.events.node.seq);
      },
      error: (err) => {
        s.errors.push(err as Subscription["errors"][number]);
        done();
      },
      complete: done,
    },
  );
  s.close = () => {
    dispose();
    client.dispose();
  };
  return s;
}

async function until(check: () => boolean, ms = 15_000) {
  const deadline = Date.now() + ms;
  while (!check()) {
    if (Date.now() > deadline) throw new Error("timed out");
    await new Promise((r) => setTimeout(r, 10));
  }
}

async function append(): Promise<string> {
  const c = new Client({ connectionString: t.databaseUrl });
  await c.connect();
  try {
    const { rows } = await c.query(
      `INSERT INTO events (property_group_id, entity_type, entity_id, property_id, operation, delta, occurred_at)
       VALUES ($1, 'reservation', gen_random_uuid(), $2, 'update', '{}', now()) RETURNING seq::text`,
      [A().id, A().properties[0]],
    );
    return rows[0].seq;
  } finally {
    await c.end();
  }
}

/** The four streams of one token: REST and GraphQL on each instance, each shown to be live. */
async function openEverywhere(token: string) {
  const rest = [await openStream(one.base, token), await openStream(two.url, token)];
  for (const s of rest) expect(s.status).toBe(200);
  const graphql = [subscribe(one.base, token), subscribe(two.url, token)];
  await until(() => rest.every((s) => s.retry !== undefined));
  await new Promise((r) => setTimeout(r, 500)); // the subscriptions take their start
  const seq = await append();
  await until(() => rest.every((s) => s.events.some((e) => seqOf(e) === seq)) && graphql.every((s) => s.seqs.includes(seq)));
  return { rest, graphql };
}

/** The error event a REST stream ended with. */
const errorOf = (s: SseStream) => JSON.parse(s.events.find((e) => e.event === "error")!.data!);

describe("streams end when their credential stops opening them", () => {
  it("a key revoked with `gcs keys revoke` ends its REST and GraphQL streams on both instances within 5 s", async () => {
    const key = await createApiKey(t.admin, { propertyGroupId: A().id, name: "revoked while streaming", scopes: ["read:events"] });
    const { rest, graphql } = await openEverywhere(key.token);

    await promisify(execFile)(NODE, [path.join(ROOT, "bin/gcs.js"), "keys", "revoke", key.id], { cwd: ROOT, env: { ...process.env, DATABASE_URL: t.databaseUrl, LOG_LEVEL: "silent" } });
    const revokedAt = Date.now();
    await until(() => rest.every((s) => s.endedAt) && graphql.every((s) => s.endedAt), BOUND_MS + 2_000);
    const late = await append(); // after the revocation: no stream may get it

    const took = [...rest, ...graphql].map((s) => s.endedAt! - revokedAt);
    console.log(`revoked key: streams ended ${took.join(", ")} ms after \`gcs keys revoke\` returned (REST one, REST two, GraphQL one, GraphQL two)`);
    for (const ms of took) expect(ms).toBeLessThanOrEqual(BOUND_MS);
    for (const s of rest) {
      expect(errorOf(s)).toEqual({ error: "unauthorized", detail: "the bearer token is unknown or revoked" });
      expect(s.events.map((e) => e.event)).not.toContain(undefined);
    }
    for (const s of graphql) {
      expect(s.errors).toEqual([expect.objectContaining({ extensions: expect.objectContaining({ code: "unauthorized" }) })]);
    }
    await new Promise((r) => setTimeout(r, 300));
    for (const s of rest) expect(s.events.map((e) => (e.event === "error" ? "error" : seqOf(e)))).not.toContain(late);
    for (const s of graphql) expect(s.seqs).not.toContain(late);
    // And a new stream is refused, as any request.
    const again = await openStream(two.url, key.token);
    expect(again.status).toBe(401);
    for (const s of [...rest, again]) s.close();
    for (const s of graphql) s.close();
  }, 60_000);

  it("a session JWT's streams end when a request with it is first refused: its exp, with the 60 s clock tolerance", async () => {
    const key = await t.services.sessionKey();
    // exp 57 s ago: accepted now (60 s tolerance), refused 3 s from now.
    const expSeconds = 3 - SESSION_CLOCK_SKEW_S;
    const token = await issueSessionToken(key, { userId: "user-expiring", organisationId: A().organisation_id, role: "admin" }, expSeconds);
    const refusedAt = (JSON.parse(Buffer.from(token.split(".")[1], "base64url").toString()).exp + SESSION_CLOCK_SKEW_S) * 1000;
    const rest = await openStream(one.base, token);
    expect(rest.status).toBe(200);
    const graphql = subscribe(two.url, token);
    await until(() => rest.endedAt !== undefined && graphql.endedAt !== undefined, 15_000);
    const took = [rest.endedAt! - refusedAt, graphql.endedAt! - refusedAt];
    console.log(`session JWT: streams ended ${took.join(", ")} ms after the token's expiry (REST, GraphQL)`);
    for (const ms of took) {
      expect(ms).toBeGreaterThanOrEqual(0);
      expect(ms).toBeLessThanOrEqual(BOUND_MS);
    }
    expect(errorOf(rest)).toEqual({ error: "unauthorized", detail: "session token has expired" });
    expect(graphql.errors).toEqual([expect.objectContaining({ message: "session token has expired", extensions: expect.objectContaining({ code: "unauthorized" }) })]);
    rest.close();
    graphql.close();
  }, 30_000);

  it("a key that loses read:events ends its streams with 403 forbidden; the other keys' streams go on", async () => {
    const key = await createApiKey(t.admin, { propertyGroupId: A().id, name: "descoped while streaming", scopes: ["read:events", "read:guests"] });
    const other = await openStream(one.base, A().credentials.api_key);
    const { rest, graphql } = await openEverywhere(key.token);
    await t.adminPool.query(`UPDATE api_keys SET scopes = '{read:guests}' WHERE id = $1`, [key.id]);
    await until(() => rest.every((s) => s.endedAt) && graphql.every((s) => s.endedAt), BOUND_MS + 2_000);
    for (const s of rest) expect(errorOf(s)).toEqual({ error: "forbidden", scope: "read:events", detail: "this credential lacks the scope read:events" });
    for (const s of graphql) expect(s.errors).toEqual([expect.objectContaining({ extensions: expect.objectContaining({ code: "forbidden", scope: "read:events" }) })]);
    const seq = await append();
    await until(() => other.events.some((e) => seqOf(e) === seq));
    expect(other.endedAt).toBeUndefined();
    for (const s of [...rest, other]) s.close();
    for (const s of graphql) s.close();
  }, 60_000);
});
