// Webhook endpoints through /graphql and MCP (issue 29), the doors beside /v1 (webhooks.test.ts):
// the whole life of an endpoint as GraphQL fields, the secret only in the create and rotate results
// and in no span or log line, a credential of group B that never sees group A's endpoints or
// deliveries on any field or tool, and the scopes every field and tool needs. Receivers are on
// 127.0.0.1 only (an injected resolver answers for receiver.test).
import { createServer, type IncomingHttpHeaders, type Server } from "node:http";
import type { AddressInfo } from "node:net";
import { InMemorySpanExporter } from "@opentelemetry/sdk-trace-base";
import { Webhook } from "standardwebhooks";
import { startTracing, type Tracing } from "../../src/observability/tracing";
import type { Resolver } from "../../src/webhooks/ssrf";
import { capturingLogger, startTestApp, type TestApp } from "../helpers/app";

type Json = Record<string, any>; // eslint-disable-line @typescript-eslint/no-explicit-any

const exporter = new InMemorySpanExporter();
const log = capturingLogger();
let tracing: Tracing;
let t: TestApp;
let receiver: Server;
let port: number;
const received: { headers: IncomingHttpHeaders; body: string; path: string }[] = [];
/** Paths whose answer waits for a promise (the ping in flight). */
const holds = new Map<string, Promise<void>>();
const resolver: Resolver = async (host) => {
  if (host !== "receiver.test") throw Object.assign(new Error("not found"), { code: "ENOTFOUND" });
  return [{ address: "127.0.0.1", family: 4 }];
};

beforeAll(async () => {
  receiver = createServer((req, res) => {
    let body = "";
    req.on("data", (c: Buffer) => (body += c));
    req.on("end", async () => {
      received.push({ headers: req.headers, body, path: req.url! });
      await holds.get(req.url!);
      res.writeHead(204).end();
    });
  });
  await new Promise<void>((r) => receiver.listen(0, "127.0.0.1", r));
  port = (receiver.address() as AddressInfo).port;
  tracing = startTracing({ exporter });
  t = await startTestApp({ GCS_WEBHOOKS_ALLOW_PRIVATE: "true" }, log.logger);
  t.services.webhookResolver = resolver;
});
afterAll(async () => {
  await t?.close();
  await tracing?.shutdown();
  receiver.closeAllConnections();
  await new Promise((r) => receiver.close(r));
});

const A = () => t.manifest.groups.A;
const B = () => t.manifest.groups.B;

const ENDPOINT = "id url topics propertyIds state failureCount nextAttemptAt lastError previousSecretExpiresAt secret";

async function graphql(token: string, query: string, variables: Json = {}) {
  const res = await t.api.post("/graphql").set("Authorization", `Bearer ${token}`).send({ query, variables });
  return res.body as { data?: Json | null; errors?: { message: string; extensions?: Json }[] };
}

async function ok(token: string, query: string, variables: Json = {}): Promise<Json> {
  const body = await graphql(token, query, variables);
  if (body.errors) throw new Error(JSON.stringify(body.errors));
  return body.data!;
}

async function mcp(token: string, method: string, params: Json) {
  const res = await t.api
    .post("/mcp")
    .set("Authorization", `Bearer ${token}`)
    .set("Accept", "application/json, text/event-stream")
    .send({ jsonrpc: "2.0", id: 1, method, params });
  expect(res.status).toBe(200);
  return res.body.result as Json;
}

async function tool(token: string, name: string, args: Json = {}): Promise<{ isError: boolean; body: Json | string }> {
  const result = await mcp(token, "tools/call", { name, arguments: args });
  const text = result.content[0].text as string;
  return { isError: result.isError === true, body: text.startsWith("{") ? JSON.parse(text) : text };
}

const create = (token = A().credentials.api_key_admin, path = "/hooks/doors") =>
  ok(token, `mutation ($url: String!) { createWebhookEndpoint(url: $url, topics: ["*"]) { ${ENDPOINT} } }`, {
    url: `http://receiver.test:${port}${path}`,
  }).then((d) => d.createWebhookEndpoint as Json);

const QUERIES = (id: string): [string, string][] => [
  ["webhookEndpoint", `{ webhookEndpoint(id: "${id}") { id } }`],
  ["webhookDeliveries", `{ webhookDeliveries(endpointId: "${id}") { nodes { id } } }`],
];
const MUTATIONS = (id: string): [string, string][] => [
  ["rotateWebhookSecret", `mutation { rotateWebhookSecret(id: "${id}") { id } }`],
  ["testWebhookEndpoint", `mutation { testWebhookEndpoint(id: "${id}") { delivered } }`],
  ["replayWebhookEndpoint", `mutation { replayWebhookEndpoint(id: "${id}", since: "2020-01-01T00:00:00Z") { id } }`],
  ["deleteWebhookEndpoint", `mutation { deleteWebhookEndpoint(id: "${id}") }`],
];

describe("webhook endpoints over /graphql", () => {
  it("runs an endpoint's whole life; its secret is in the create and rotate results only, never in a span or log line", async () => {
    const key = A().credentials.api_key_admin;
    const made = await create(key, "/hooks/life");
    expect(made).toMatchObject({ state: "active", topics: ["*"], propertyIds: [], failureCount: 0, previousSecretExpiresAt: null });
    expect(made.secret).toMatch(/^whsec_/);

    const listed = (await ok(key, `{ webhookEndpoints(limit: 500) { nodes { ${ENDPOINT} } hasMore } }`)).webhookEndpoints;
    expect(listed.nodes.find((e: Json) => e.id === made.id)).toEqual({ ...made, secret: null });
    expect((await ok(key, `{ webhookEndpoint(id: "${made.id}") { secret } }`)).webhookEndpoint.secret).toBeNull();

    // The ping, signed with the secret, verified as a receiver would; recorded as a delivery.
    const ping = (await ok(key, `mutation { testWebhookEndpoint(id: "${made.id}") { messageId delivered responseCode durationMs error } }`)).testWebhookEndpoint;
    expect(ping).toMatchObject({ delivered: true, responseCode: 204, error: null });
    const got = received.find((r) => r.headers["webhook-id"] === ping.messageId)!;
    expect(new Webhook(made.secret).verify(got.body, got.headers as Record<string, string>)).toMatchObject({ type: "webhook.ping", data: { endpoint_id: made.id } });
    const deliveries = (await ok(key, `{ webhookDeliveries(endpointId: "${made.id}") { nodes { messageId status responseCode attempt } } }`)).webhookDeliveries;
    expect(deliveries.nodes).toEqual([{ messageId: ping.messageId, status: "succeeded", responseCode: 204, attempt: 1 }]);

    const rotated = (await ok(key, `mutation { rotateWebhookSecret(id: "${made.id}") { ${ENDPOINT} } }`)).rotateWebhookSecret;
    expect(rotated.secret).toMatch(/^whsec_/);
    expect(rotated.secret).not.toBe(made.secret);
    expect(Date.parse(rotated.previousSecretExpiresAt)).toBeGreaterThan(Date.now());

    const replayed = (await ok(key, `mutation { replayWebhookEndpoint(id: "${made.id}", since: "2020-01-01T00:00:00Z") { state secret } }`)).replayWebhookEndpoint;
    expect(replayed).toEqual({ state: "active", secret: null });
    const exactlyOne = await graphql(key, `mutation { replayWebhookEndpoint(id: "${made.id}") { id } }`);
    expect(exactlyOne.errors?.[0].extensions?.code).toBe("invalid_request");

    expect((await ok(key, `mutation { deleteWebhookEndpoint(id: "${made.id}") }`)).deleteWebhookEndpoint).toBe(made.id);
    const gone = await graphql(key, `{ webhookEndpoint(id: "${made.id}") { id } }`);
    expect(gone.errors?.[0].extensions?.code).toBe("not_found");

    // Spans carry operation names, error codes and SQL text (never values); log lines no bodies.
    const finished = exporter.getFinishedSpans();
    expect(finished.some((s) => s.attributes["graphql.operation.type"] === "mutation")).toBe(true);
    const spans = JSON.stringify(finished.map((s) => ({ name: s.name, attributes: s.attributes, events: s.events })));
    for (const secret of [made.secret, rotated.secret]) {
      expect(spans).not.toContain(secret);
      expect(log.lines.filter((l) => l.includes(secret))).toEqual([]);
    }
  });

  it("holds no transaction open while the receiver answers the test ping", async () => {
    const key = A().credentials.api_key_admin;
    const made = await create(key, "/hooks/slow");
    let release!: () => void;
    holds.set("/hooks/slow", new Promise<void>((r) => (release = r)));
    const ping = ok(key, `mutation { testWebhookEndpoint(id: "${made.id}") { delivered } }`);
    for (let i = 0; i < 200 && !received.some((r) => r.path === "/hooks/slow"); i++) await new Promise((r) => setTimeout(r, 20));
    expect(received.some((r) => r.path === "/hooks/slow")).toBe(true);
    // The receiver has the ping and has not answered: no session of this database is in a transaction.
    const { rows } = await t.adminPool.query<{ n: number }>(
      "SELECT count(*)::int AS n FROM pg_stat_activity WHERE datname = current_database() AND pid <> pg_backend_pid() AND xact_start IS NOT NULL",
    );
    release();
    expect((await ping).testWebhookEndpoint.delivered).toBe(true);
    expect(rows[0].n).toBe(0);
    await ok(key, `mutation { deleteWebhookEndpoint(id: "${made.id}") }`);
  });

  it("is costed like other lists: a page's rows count by its limit", async () => {
    const res = await t.api
      .post("/graphql")
      .set("Authorization", `Bearer ${A().credentials.api_key_admin}`)
      .send({
        query: `{ a: webhookEndpoints(limit: 500) { nodes { ${ENDPOINT} } } b: webhookEndpoints(limit: 500) { nodes { ${ENDPOINT} } }
          c: webhookDeliveries(endpointId: "${A().id}", limit: 500) { nodes { id messageId eventType eventSeq attempt status responseCode durationMs error nextRetryAt createdAt } } }`,
      });
    expect(res.status).toBe(400);
    expect(res.body.errors[0].extensions).toMatchObject({ code: "query_too_complex", limit: "cost" });
  });
});

describe("tenant isolation: group B never sees group A's endpoints or deliveries", () => {
  it("on every Query field, Mutation field and MCP tool", async () => {
    const a = A().credentials.api_key_admin;
    const b = B().credentials.api_key_admin;
    const made = await create(a, "/hooks/tenant");
    await ok(a, `mutation { testWebhookEndpoint(id: "${made.id}") { delivered } }`);
    const pings = received.length;

    const listed = (await ok(b, "{ webhookEndpoints(limit: 500) { nodes { id } } }")).webhookEndpoints.nodes.map((e: Json) => e.id);
    expect(listed).not.toContain(made.id);
    for (const [field, query] of [...QUERIES(made.id), ...MUTATIONS(made.id)]) {
      const res = await graphql(b, query);
      expect([field, res.errors?.[0].extensions?.code]).toEqual([field, "not_found"]);
    }
    expect(received.length).toBe(pings); // B's test call sent nothing

    const tools = await tool(b, "list_webhook_endpoints", { limit: 500 });
    expect(tools.isError).toBe(false);
    expect((tools.body as Json).endpoints.map((e: Json) => e.id)).not.toContain(made.id);
    const theirs = await tool(b, "list_webhook_deliveries", { endpoint_id: made.id });
    expect([theirs.isError, (theirs.body as Json).error]).toEqual([true, "not_found"]);

    // Untouched for its own group: not rotated, not deleted, one delivery (A's ping).
    const own = (await ok(a, `{ webhookEndpoint(id: "${made.id}") { previousSecretExpiresAt } webhookDeliveries(endpointId: "${made.id}") { nodes { messageId } } }`));
    expect(own.webhookEndpoint.previousSecretExpiresAt).toBeNull();
    expect(own.webhookDeliveries.nodes).toHaveLength(1);
    const health = await tool(a, "list_webhook_endpoints", { limit: 500 });
    const row = (health.body as Json).endpoints.find((e: Json) => e.id === made.id);
    expect(row).toMatchObject({ state: "active", failure_count: 0, last_error: null });
    expect(row).not.toHaveProperty("secret");
    const log = await tool(a, "list_webhook_deliveries", { endpoint_id: made.id });
    expect((log.body as Json).deliveries).toEqual([expect.objectContaining({ status: "succeeded", response_code: 204, attempt: 1 })]);
    await ok(a, `mutation { deleteWebhookEndpoint(id: "${made.id}") }`);
  });
});

describe("scopes: read:webhooks and write:webhooks", () => {
  it("every field refuses a credential without its scope, naming it; the tools are not even listed", async () => {
    const made = await create();
    const limited = A().credentials.api_key_limited;
    // The limited key holds read:guests only: no webhook field or tool.
    const queries: [string, string][] = [["webhookEndpoints", "{ webhookEndpoints { nodes { id } } }"], ...QUERIES(made.id)];
    for (const [field, query] of queries) {
      const res = await graphql(limited, query);
      expect([field, res.errors?.[0].extensions]).toEqual([field, expect.objectContaining({ code: "forbidden", scope: "read:webhooks" })]);
    }
    const limitedNames = ((await mcp(limited, "tools/list", {})).tools as Json[]).map((t) => t.name);
    expect(limitedNames).not.toContain("list_webhook_endpoints");
    expect(limitedNames).not.toContain("list_webhook_deliveries");
    expect((await tool(limited, "list_webhook_endpoints")).isError).toBe(true);
    // The fixture contract's keys hold every read scope (read:webhooks too) and never write:webhooks.
    const mutations: [string, string][] = [
      ["createWebhookEndpoint", `mutation { createWebhookEndpoint(url: "http://receiver.test:${port}/x", topics: ["*"]) { id } }`],
      ...MUTATIONS(made.id),
    ];
    for (const token of [limited, A().credentials.api_key_pinned.token, A().credentials.api_key]) {
      for (const [field, query] of mutations) {
        const res = await graphql(token, query);
        expect([field, res.errors?.[0].extensions]).toEqual([field, expect.objectContaining({ code: "forbidden", scope: "write:webhooks" })]);
      }
    }
    for (const token of [A().credentials.api_key_pinned.token, A().credentials.api_key, A().credentials.api_key_admin]) {
      const names = ((await mcp(token, "tools/list", {})).tools as Json[]).map((t) => t.name);
      expect(names).toEqual(expect.arrayContaining(["list_webhook_endpoints", "list_webhook_deliveries"]));
    }
    await ok(A().credentials.api_key_admin, `mutation { deleteWebhookEndpoint(id: "${made.id}") }`);
  });
});
