// The embedded default (PGlite) end to end, as the README's first command runs it: `gcs fixtures`
// and `gcs serve` with no DATABASE_URL, then real HTTP. PGlite runs in child processes because it
// loads its WebAssembly through dynamic import, which Jest's module sandbox does not allow.
import { execFile, spawn, type ChildProcess } from "node:child_process";
import { mkdtempSync, readFileSync, rmSync } from "node:fs";
import os from "node:os";
import path from "node:path";
import { promisify } from "node:util";
import type { FixtureManifest } from "../../src/fixtures";
import { contract } from "../helpers/openapi-validate";
import { demoBanner, stopProcess } from "../helpers/serve";

const ROOT = path.resolve(__dirname, "../..");
const NODE = path.join(ROOT, "node_modules/.bin/node");
const GCS = path.join(ROOT, "bin/gcs.js");

let dir: string;
let server: ChildProcess;
let base: string;
let demoKey: string;
let manifest: FixtureManifest;

function embeddedEnv(): NodeJS.ProcessEnv {
  const env: NodeJS.ProcessEnv = { ...process.env, GCS_DATA_DIR: path.join(dir, "pglite"), LOG_LEVEL: "warn", PORT: "0", HOST: "127.0.0.1" };
  delete env.DATABASE_URL;
  return env;
}

beforeAll(async () => {
  dir = mkdtempSync(path.join(os.tmpdir(), "gcs-embedded-"));
  await promisify(execFile)(NODE, [GCS, "fixtures", "--out", path.join(dir, "m.json"), "--seed", "5", "--guests", "12"], {
    cwd: ROOT,
    env: embeddedEnv(),
    timeout: 180_000,
  });
  manifest = JSON.parse(readFileSync(path.join(dir, "m.json"), "utf8"));

  // Webhooks to a receiver on 127.0.0.1 (issue 29, at the end of this file) need the demo switch.
  const serveEnv = { ...embeddedEnv(), GCS_WEBHOOKS_ALLOW_PRIVATE: "true", GCS_WEBHOOKS_INTERVAL_MS: "100", GCS_STREAM_POLL_MS: "100" };
  server = spawn(NODE, [GCS, "serve"], { cwd: ROOT, env: serveEnv, stdio: ["ignore", "pipe", "pipe"] });
  ({ key: demoKey, base } = await demoBanner(server, 120_000));
}, 300_000);

afterAll(async () => {
  await stopProcess(server);
  rmSync(dir, { recursive: true, force: true });
});

const get = async (p: string, token: string) => {
  const res = await fetch(base + p, { headers: { Authorization: `Bearer ${token}` } });
  await contract().assertFetch("GET", p, res); // the same contract check as every supertest response
  // eslint-disable-next-line @typescript-eslint/no-explicit-any
  return { status: res.status, body: (await res.json()) as any };
};

describe("embedded PGlite", () => {
  it("the printed demo key and curl line return guests", async () => {
    const res = await get("/v1/guests?limit=2", demoKey);
    expect(res.status).toBe(200);
    expect(res.body.data).toHaveLength(2);
  });

  it("has rate limits off, so its responses carry no RateLimit headers (as docs/operations.md says)", async () => {
    const res = await fetch(`${base}/v1/guests?limit=1`, { headers: { Authorization: `Bearer ${demoKey}` } });
    expect(res.status).toBe(200);
    expect([res.headers.get("ratelimit"), res.headers.get("ratelimit-policy")]).toEqual([null, null]);
    expect(readFileSync(path.join(ROOT, "docs/operations.md"), "utf8")).toContain("they are off in the embedded demo, so its responses carry none");
  });

  it("serves properties, integrations and a full limit=2 guest walk", async () => {
    const A = manifest.groups.A;
    expect((await get("/v1/properties", A.credentials.api_key)).body.data).toHaveLength(A.properties.length);
    expect((await get("/v1/integrations", A.credentials.api_key)).body.data.length).toBeGreaterThan(0);
    const seen: string[] = [];
    let cursor: string | null = null;
    let pages = 0;
    do {
      const res = await get(`/v1/guests?limit=2${cursor ? `&cursor=${encodeURIComponent(cursor)}` : ""}`, A.credentials.api_key);
      expect(res.status).toBe(200);
      seen.push(...res.body.data.map((g: { id: string }) => g.id));
      cursor = res.body.next_cursor;
      pages++;
    } while (cursor);
    expect(pages).toBeGreaterThan(3);
    expect(new Set(seen).size).toBe(seen.length);
    expect(seen.length).toBe(A.counts.guest_profiles);
  });

  it("keeps tenants apart and answers lookups and errors as on PostgreSQL", async () => {
    const A = manifest.groups.A;
    const { integration_id, source_id, guest_id } = A.guest_lookup;
    const hit = await get(`/v1/guests?source_id=${encodeURIComponent(source_id)}&integration_id=${integration_id}`, A.credentials.api_key);
    expect(hit.body.data.map((g: { id: string }) => g.id)).toEqual([guest_id]);
    expect((await get(`/v1/guests/${guest_id}`, manifest.groups.B.credentials.api_key)).status).toBe(404);
    expect((await get("/v1/guests?source_id=x", A.credentials.api_key)).body.error).toBe("source_id requires integration_id");
    expect((await get("/v1/guests", manifest.unprovisioned_session_token)).body.error).toBe("tenant_not_provisioned");
    expect((await get("/v1/guests", A.credentials.session_token)).status).toBe(200);
  });

  it("answers the task fields on the same migrations (gcs_fold, folded-name indexes): find her, then what we know", async () => {
    const A = manifest.groups.A;
    const gql = async (query: string, variables: Record<string, unknown>) => {
      const res = await fetch(`${base}/graphql`, {
        method: "POST",
        headers: { Authorization: `Bearer ${A.credentials.api_key}`, "Content-Type": "application/json" },
        body: JSON.stringify({ query, variables }),
      });
      // eslint-disable-next-line @typescript-eslint/no-explicit-any
      const body = (await res.json()) as any;
      expect(body.errors).toBeUndefined();
      return body.data;
    };
    const master = A.master_with_two_guests;
    const context = await gql(
      `query($m: UUID) { guestContext(masterProfileId: $m) { identity { givenName familyName } consent { effective { contactValue purpose status } } } }`,
      { m: master },
    );
    const { givenName, familyName } = context.guestContext.identity;
    const found = await gql(`query($q: String!) { guestSearch(query: $q) { candidates { masterProfileId } } }`, {
      q: `${familyName.toUpperCase()}, ${givenName.slice(0, 3)}`,
    });
    expect(found.guestSearch.candidates.map((c: { masterProfileId: string }) => c.masterProfileId)).toContain(master);
    expect(context.guestContext.consent.effective).toContainEqual({ contactValue: A.consent_conflict.contact_value, purpose: "email_marketing", status: "withdrawn" });

    // Issue 42 on the same migrations: a near-miss name is a closest candidate (no extension needed),
    // master profiles answer candidates beside empty data, a purpose typo is refused.
    const near = `${givenName} ${familyName}e`;
    const closest = await gql(`query($q: String!) { guestSearch(query: $q) { closest candidates { masterProfileId matchedOn similarity } } }`, { q: near });
    expect(closest.guestSearch.closest).toBe(true);
    expect(closest.guestSearch.candidates).toContainEqual({ masterProfileId: master, matchedOn: ["similar_name"], similarity: expect.any(Number) });
    const masters = await get(`/v1/master-profiles?q=${encodeURIComponent(near)}`, A.credentials.api_key);
    expect(masters.body.data).toEqual([]);
    expect(masters.body.candidates.map((c: { master_profile: { id: string } }) => c.master_profile.id)).toContain(master);
    expect((await get(`/v1/master-profiles?q=${encodeURIComponent(`${givenName} ${familyName}`)}`, A.credentials.api_key)).body.data.map((m: { id: string }) => m.id)).toContain(master);
    const typo = await get("/v1/consents?purpose=emial_marketing", A.credentials.api_key);
    expect([typo.status, typo.body.error]).toEqual([400, "invalid_request"]);
    expect(typo.body.detail).toContain("email_marketing");
  });

  it("answers why a master profile's profiles merged, with evidence true of both profiles (docs/identity-resolution.md)", async () => {
    const A = manifest.groups.A;
    const links = await get(`/v1/master-profiles/${A.master_with_two_guests}/links`, A.credentials.api_key);
    expect(links.status).toBe(200);
    const [first, second] = links.body.data;
    expect([first.rule, second.linked_guest_profile_id]).toEqual(["first_profile", first.guest_profile_id]);
    const [a, b] = await Promise.all([first, second].map(async (l) => (await get(`/v1/guests/${l.guest_profile_id}`, A.credentials.api_key)).body.data));
    expect(second.matched_fields).toEqual([{ field: "email", value: a.email.toLowerCase() }]);
    expect(b.email.toLowerCase()).toBe(a.email.toLowerCase());
  });
});

// Issue 29 on PGlite: `gcs events append` through the running server, the SSE stream and a signed
// webhook to a receiver on 127.0.0.1.
describe("embedded PGlite: the stream and webhooks", () => {
  it("streams and POSTs an event appended with gcs events append", async () => {
    const { createServer } = await import("node:http");
    const { Webhook } = await import("standardwebhooks");
    const bodies: { body: string; headers: Record<string, string> }[] = [];
    const receiver = createServer((req, res) => {
      let body = "";
      req.on("data", (c) => (body += c));
      req.on("end", () => {
        bodies.push({ body, headers: req.headers as Record<string, string> });
        res.writeHead(204).end();
      });
    });
    await new Promise<void>((r) => receiver.listen(0, "127.0.0.1", r));
    const port = (receiver.address() as { port: number }).port;
    const auth = { Authorization: `Bearer ${demoKey}` };
    const made = await fetch(`${base}/v1/webhook-endpoints`, {
      method: "POST",
      headers: { ...auth, "Content-Type": "application/json" },
      body: JSON.stringify({ url: `http://127.0.0.1:${port}/hook`, topics: ["guest_profile"] }),
    });
    expect(made.status).toBe(201);
    const endpoint = (await made.json()) as { data: { secret: string } };

    const controller = new AbortController();
    const stream = await fetch(`${base}/v1/events/stream?entity_type=guest_profile`, { headers: auth, signal: controller.signal });
    expect(stream.status).toBe(200);
    const reader = stream.body!.getReader();
    let text = "";
    // The same event through the GraphQL subscription (/graphql/stream, graphql-sse).
    const subscription = await fetch(`${base}/graphql/stream`, {
      method: "POST",
      headers: { ...auth, Accept: "text/event-stream", "Content-Type": "application/json" },
      body: JSON.stringify({ query: 'subscription { events(filter: { entityType: guest_profile }) { cursor node { seq delta } } }' }),
      signal: controller.signal,
    });
    expect(subscription.status).toBe(200);
    const subscriptionReader = subscription.body!.getReader();
    let subscribed = "";
    // One event in each group: the demo key's stream and endpoint see only their group's.
    for (const g of [manifest.groups.A, manifest.groups.B]) {
      const child = spawn(NODE, [GCS, "events", "append", "--group", g.id, "--json"], { cwd: ROOT, env: embeddedEnv(), stdio: ["pipe", "pipe", "pipe"] });
      let out = "";
      child.stdout!.on("data", (d) => (out += d));
      child.stdin!.end(JSON.stringify({ entity_type: "guest_profile", entity_id: g.guest_with_events, operation: "update", delta: { vip_code: "VIP7" }, guest_profile_id: g.guest_with_events }) + "\n");
      expect(await new Promise((r) => child.on("close", r))).toBe(0);
      expect(JSON.parse(out).appended).toBe(1);
    }
    const deadline = Date.now() + 30_000;
    while (!text.includes("data: ") && Date.now() < deadline) text += new TextDecoder().decode((await reader.read()).value);
    while (!subscribed.includes("event: next") && Date.now() < deadline) subscribed += new TextDecoder().decode((await subscriptionReader.read()).value);
    while (bodies.length === 0 && Date.now() < deadline) await new Promise((r) => setTimeout(r, 50));
    await new Promise((r) => setTimeout(r, 500));
    controller.abort();
    receiver.close();
    const events = text.split("\n").filter((l) => l.startsWith("data: ")).map((l) => JSON.parse(l.slice(6)));
    expect(events).toHaveLength(1);
    expect(events[0]).toMatchObject({ entity_type: "guest_profile", operation: "update", delta: { vip_code: "VIP7" } });
    expect(bodies).toHaveLength(1);
    // The stream's row without seq (it counts every group's events).
    const payload = new Webhook(endpoint.data.secret).verify(bodies[0].body, bodies[0].headers) as { data: Record<string, unknown> };
    const { seq: _seq, ...row } = events[0];
    expect(payload.data).toEqual(row);
    const items = subscribed.split("\n").filter((l) => l.startsWith("data: ")).map((l) => JSON.parse(l.slice(6)));
    expect(items).toEqual([{ data: { events: { cursor: expect.any(String), node: { seq: events[0].seq, delta: { vip_code: "VIP7" } } } } }]);
  }, 90_000);
});
