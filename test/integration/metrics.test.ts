// GET /metrics (src/observability/metrics.ts): the documented names and label sets, counts that move
// with requests, route templates instead of raw paths, gauges read at scrape time; served on its own
// port only, never to a tenant's API credential; Server-Timing on every response.
import request from "supertest";
import { loadConfig } from "../../src/config";
import { metricsApp } from "../../src/observability/metrics";
import { refreshRollups } from "../../src/rollups/refresh";
import { startServer, type RunningServer } from "../../src/server";
import { cloneTemplateDatabase, loadManifest, startTestApp, type TestApp } from "../helpers/app";
import { serve, type LogLine } from "../helpers/serve";

interface Sample {
  name: string;
  labels: Record<string, string>;
  value: number;
}

/** The Prometheus text format's sample lines. */
function parse(text: string): Sample[] {
  const samples: Sample[] = [];
  for (const line of text.split("\n")) {
    const m = /^([a-zA-Z_:][\w:]*)(?:\{(.*)\})? (\S+)$/.exec(line);
    if (!m) continue;
    const labels: Record<string, string> = {};
    for (const [, key, value] of (m[2] ?? "").matchAll(/(\w+)="((?:[^"\\]|\\.)*)"/g)) labels[key] = value;
    samples.push({ name: m[1], labels, value: Number(m[3]) });
  }
  return samples;
}

const scrape = async (token?: string) => {
  const res = await request(metricsApp(token)).get("/metrics").set(token ? { Authorization: `Bearer ${token}` } : {});
  expect(res.status).toBe(200);
  expect(res.headers["content-type"]).toMatch(/^text\/plain; version=0\.0\.4/);
  return parse(res.text);
};

/** The value of the one sample with `name` whose labels include `labels` (0 when there is none). */
function value(samples: Sample[], name: string, labels: Record<string, string> = {}): number {
  const found = samples.filter((s) => s.name === name && Object.entries(labels).every(([k, v]) => s.labels[k] === v));
  if (found.length > 1) throw new Error(`${found.length} samples of ${name} ${JSON.stringify(labels)}`);
  return found[0]?.value ?? 0;
}

const bearer = (token: string) => ({ Authorization: `Bearer ${token}` });

describe("/metrics", () => {
  let t: TestApp;
  beforeAll(async () => {
    t = await startTestApp();
  });
  afterAll(() => t.close());

  it("counts requests by route template and status, SQL per request, GraphQL operations and 429s", async () => {
    const key = t.manifest.groups.A.credentials.api_key;
    const before = await scrape();
    const guest = t.manifest.groups.A.guest_with_events;
    for (let i = 0; i < 3; i++) expect((await t.api.get("/v1/guests?limit=2").set(bearer(key))).status).toBe(200);
    expect((await t.api.get(`/v1/guests/${guest}`).set(bearer(key))).status).toBe(200);
    expect((await t.api.get(`/v1/guests/${t.manifest.groups.B.guest_with_events}`).set(bearer(key))).status).toBe(404);
    expect((await t.api.get("/v1/guests")).status).toBe(401);
    expect((await t.api.get(`/no/such/${guest}`)).status).toBe(404);
    const gql = await t.api.post("/graphql").set(bearer(key)).send({ query: "query MetricsProbe { properties { id } }" });
    expect(gql.status).toBe(200);
    const failing = await t.api.post("/graphql").set(bearer(key)).send({ query: "query MetricsMissing { guest(id: \"00000000-0000-4000-8000-000000000000\") { id } }" });
    expect(failing.status).toBe(200);
    const after = await scrape();

    const moved = (name: string, labels: Record<string, string>) => value(after, name, labels) - value(before, name, labels);
    const ok = { method: "GET", route: "/v1/guests", status: "200" };
    expect(moved("gcs_http_request_duration_seconds_count", ok)).toBe(3);
    expect(moved("gcs_http_request_duration_seconds_sum", ok)).toBeGreaterThan(0);
    expect(moved("gcs_http_request_duration_seconds_bucket", { ...ok, le: "+Inf" })).toBe(3);
    expect(moved("gcs_http_request_duration_seconds_count", { method: "GET", route: "/v1/guests/:id", status: "200" })).toBe(1);
    expect(moved("gcs_http_request_duration_seconds_count", { method: "GET", route: "/v1/guests/:id", status: "404" })).toBe(1);
    expect(moved("gcs_http_request_duration_seconds_count", { method: "GET", route: "/v1/guests", status: "401" })).toBe(1);
    expect(moved("gcs_http_request_duration_seconds_count", { method: "GET", route: "unmatched", status: "404" })).toBe(1);
    expect(moved("gcs_http_request_duration_seconds_count", { method: "POST", route: "/graphql", status: "200" })).toBe(2);
    // No raw path ever becomes a label: no ids, one series per template.
    const routes = new Set(after.filter((s) => s.labels.route).map((s) => s.labels.route));
    for (const route of routes) expect(route).not.toMatch(/[0-9a-f]{8}-[0-9a-f]{4}/);

    // Each of the three pages issued at least the page's own statement, the first also the credential
    // lookup (later ones prove the remembered credential in the page's statement: auth/remembered-credentials.ts).
    expect(moved("gcs_sql_statements_per_request_count", { route: "/v1/guests" })).toBe(4); // 3 pages and the 401
    expect(moved("gcs_sql_statements_per_request_sum", { route: "/v1/guests" })).toBeGreaterThanOrEqual(3);
    expect(moved("gcs_sql_statements_per_request_bucket", { route: "/v1/guests", le: "0" })).toBe(1); // the 401

    expect(moved("gcs_graphql_operations_total", { operation: "ListGuests", type: "query", outcome: "ok" })).toBe(3);
    expect(moved("gcs_graphql_operations_total", { operation: "MetricsProbe", type: "query", outcome: "ok" })).toBe(1);
    expect(moved("gcs_graphql_operations_total", { operation: "MetricsMissing", type: "query", outcome: "error" })).toBe(1); // not_found
  });

  it("counts aggregate answers by source: rollup, and live once a pair is past the staleness bound", async () => {
    const key = t.manifest.groups.A.credentials.api_key;
    await refreshRollups(t.db);
    const ask = async () => {
      const res = await t.api.post("/graphql").set(bearer(key)).send({ query: "{ reviewMetrics(groupBy: [source]) { source count } guestMetrics { guests } }" });
      expect(res.body.errors).toBeUndefined();
    };
    const before = await scrape();
    await ask();
    const fresh = await scrape();
    const moved = (from: Sample[], to: Sample[], aggregate: string, source: string) =>
      value(to, "gcs_aggregate_answers_total", { aggregate, source }) - value(from, "gcs_aggregate_answers_total", { aggregate, source });
    expect([moved(before, fresh, "reviews", "rollup"), moved(before, fresh, "reviews", "live"), moved(before, fresh, "guests", "rollup")]).toEqual([1, 0, 1]);
    // A change older than the bound: the refresher stopped, so the pair is counted live.
    await t.adminPool.query("INSERT INTO metric_rollup_changes (property_group_id, metric, changed_at) VALUES ($1, 'reviews', now() - interval '601 seconds')", [t.manifest.groups.A.id]);
    await ask();
    const stale = await scrape();
    expect([moved(fresh, stale, "reviews", "rollup"), moved(fresh, stale, "reviews", "live"), moved(fresh, stale, "guests", "rollup")]).toEqual([0, 1, 1]);
    await refreshRollups(t.db);
  });

  it("reads the pool and the delivery backlog at scrape time, and the process's own metrics", async () => {
    const samples = await scrape();
    expect(value(samples, "gcs_db_pool_max", { pool: "primary" })).toBe(5);
    const inUse = value(samples, "gcs_db_pool_connections", { pool: "primary", state: "in_use" });
    const idle = value(samples, "gcs_db_pool_connections", { pool: "primary", state: "idle" });
    expect(inUse + idle).toBeGreaterThan(0);
    expect(samples.some((s) => s.name === "gcs_db_pool_waiting" && s.labels.pool === "primary")).toBe(true);

    // The fixtures leave every binding behind its table's log, some never flushed.
    const { rows } = await t.adminPool.query<{ id: string; provider: string; state: string; flushed: boolean }>(
      "SELECT id::text, provider, state::text, last_flush_at IS NOT NULL AS flushed FROM destination_bindings",
    );
    const shown = rows.filter((r) => r.state !== "paused");
    expect(shown.length).toBeGreaterThan(0);
    const lag = samples.filter((s) => s.name === "gcs_delivery_lag_seconds");
    expect(lag.map((s) => s.labels.binding_id).sort()).toEqual(shown.map((r) => r.id).sort());
    for (const s of lag) {
      expect(Object.keys(s.labels).sort()).toEqual(["binding_id", "destination"]);
      expect(s.labels.destination).toBe(rows.find((r) => r.id === s.labels.binding_id)!.provider);
    }
    expect(lag.some((s) => s.value > 0)).toBe(true);
    const flushed = samples.filter((s) => s.name === "gcs_delivery_last_flush_timestamp_seconds");
    expect(flushed.map((s) => s.labels.binding_id).sort()).toEqual(shown.filter((r) => r.flushed).map((r) => r.id).sort());

    for (const name of ["process_cpu_user_seconds_total", "process_resident_memory_bytes", "nodejs_eventloop_lag_seconds", "nodejs_heap_size_used_bytes"]) {
      expect(samples.some((s) => s.name === name)).toBe(true);
    }
  });

  it("reads the webhook endpoints at scrape time: by state, events pending and consecutive failures per endpoint", async () => {
    const A = t.manifest.groups.A.id;
    const insert = async (state: string, failures: number) =>
      (
        await t.adminPool.query<{ id: string }>(
          `INSERT INTO webhook_endpoints (property_group_id, url, topics, property_ids, secret_ciphertext, state, failure_count, cursor_txid, cursor_seq)
           SELECT $1::uuid, 'http://127.0.0.1:9/metrics', '{reservation}', '{}', 'v2:x:y', $2::"WebhookEndpointState", $3,
             COALESCE(max(txid), 0), COALESCE(max(seq), 0) FROM events WHERE property_group_id = $1::uuid
           RETURNING id::text`,
          [A, state, failures],
        )
      ).rows[0].id;
    const [healthy, failing, disabled] = [await insert("active", 0), await insert("active", 3), await insert("disabled", 8)];
    try {
      // Two events the endpoints select (reservation), one they do not (guest_profile).
      for (const type of ["reservation", "reservation", "guest_profile"]) {
        await t.adminPool.query(
          `INSERT INTO events (property_group_id, entity_type, entity_id, operation, delta, occurred_at) VALUES ($1::uuid, $2::"EntityType", gen_random_uuid(), 'update', '{}', now())`,
          [A, type],
        );
      }
      // Pending events are those below the log's visible end (the timeline's watermark), which a
      // transaction open elsewhere on the server holds back for a moment: scrape until they show.
      let samples = await scrape();
      for (let tries = 0; tries < 50 && value(samples, "gcs_webhook_pending_events", { endpoint_id: disabled }) !== 2; tries++) {
        await new Promise((r) => setTimeout(r, 200));
        samples = await scrape();
      }
      expect(value(samples, "gcs_webhook_endpoints", { state: "active" })).toBe(1);
      expect(value(samples, "gcs_webhook_endpoints", { state: "failing" })).toBe(1);
      expect(value(samples, "gcs_webhook_endpoints", { state: "disabled" })).toBe(1);
      for (const id of [healthy, failing, disabled]) expect(value(samples, "gcs_webhook_pending_events", { endpoint_id: id })).toBe(2);
      expect([healthy, failing, disabled].map((id) => value(samples, "gcs_webhook_consecutive_failures", { endpoint_id: id }))).toEqual([0, 3, 8]);
    } finally {
      await t.adminPool.query("DELETE FROM webhook_endpoints WHERE id = ANY($1::uuid[])", [[healthy, failing, disabled]]);
    }
  });

  it("is not on the API port, whatever the credential", async () => {
    const key = t.manifest.groups.A.credentials.api_key;
    const res = await t.api.get("/metrics").set(bearer(key));
    expect(res.status).toBe(404);
    expect(res.text).not.toContain("gcs_http_request_duration_seconds");
  });

  it("with GCS_METRICS_TOKEN answers that bearer token only, not a tenant's API key", async () => {
    const token = "m".repeat(40);
    const app = metricsApp(token);
    expect((await request(app).get("/metrics")).status).toBe(401);
    const tenant = await request(app).get("/metrics").set(bearer(t.manifest.groups.A.credentials.api_key));
    expect(tenant.status).toBe(401);
    expect(tenant.text).not.toContain("gcs_");
    expect((await request(app).get("/metrics").set(bearer(`${token}x`))).status).toBe(401);
    expect(await scrape(token)).not.toHaveLength(0);
  });
});

describe("Server-Timing", () => {
  let t: TestApp;
  beforeAll(async () => {
    t = await startTestApp();
  });
  afterAll(() => t.close());

  const TIMING = /^auth;dur=[\d.]+, exec;dur=[\d.]+, sql;dur=[\d.]+;desc="(\d+) statements?"$/;

  it("says where the time went on REST and GraphQL responses, beside X-Sql-Statements", async () => {
    const key = t.manifest.groups.A.credentials.api_key;
    for (const res of [
      await t.api.get("/v1/guests?limit=2").set(bearer(key)),
      await t.api.post("/graphql").set(bearer(key)).send({ query: "{ properties { id } }" }),
    ]) {
      expect(res.status).toBe(200);
      const timing = TIMING.exec(res.headers["server-timing"]);
      expect(timing).not.toBeNull();
      expect(timing![1]).toBe(res.headers["x-sql-statements"]);
      expect(Number(timing![1])).toBeGreaterThanOrEqual(1); // the page's (the token was looked up once, then remembered)
    }
  });

  it("is on every response: phases that did not run are left out", async () => {
    expect((await t.api.get("/healthz")).headers["server-timing"]).toBe('sql;dur=0;desc="0 statements"');
    const unauthorised = await t.api.get("/v1/guests").set(bearer("gcs_nope_nope_nope_nope_nope"));
    expect(unauthorised.status).toBe(401);
    expect(unauthorised.headers["server-timing"]).toMatch(/^auth;dur=[\d.]+, sql;dur=[\d.]+;desc="1 statement"$/);
  });
});

describe("the metrics port of the running server", () => {
  let server: RunningServer;
  let clone: Awaited<ReturnType<typeof cloneTemplateDatabase>>;
  beforeAll(async () => {
    clone = await cloneTemplateDatabase();
    const config = loadConfig({
      NODE_ENV: "test",
      LOG_LEVEL: "silent",
      DATABASE_URL: clone.url,
      HOST: "127.0.0.1",
      PORT: "0",
      GCS_METRICS_PORT: "0",
      GCS_DELIVERY_WORKER: "false",
    });
    server = await startServer(config);
  });
  afterAll(async () => {
    await server?.stop();
    await clone?.drop();
  });

  it("serves GET /metrics on GCS_METRICS_PORT and nothing of the API; the API port has no /metrics", async () => {
    const key = loadManifest().groups.A.credentials.api_key;
    const api = `http://127.0.0.1:${server.port}`;
    const metrics = `http://127.0.0.1:${server.metricsPort}`;
    expect(server.metricsPort).toBeGreaterThan(0);
    expect(server.metricsPort).not.toBe(server.port);
    expect((await fetch(`${api}/v1/properties`, { headers: bearer(key) })).status).toBe(200);
    const scraped = await fetch(`${metrics}/metrics`);
    expect(scraped.status).toBe(200);
    expect(value(parse(await scraped.text()), "gcs_http_request_duration_seconds_count", { route: "/v1/properties", status: "200" })).toBeGreaterThanOrEqual(1);
    expect((await fetch(`${metrics}/v1/properties`, { headers: bearer(key) })).status).toBe(404);
    expect((await fetch(`${api}/metrics`, { headers: bearer(key) })).status).toBe(404);
  });
});

describe("the metrics listening log line", () => {
  let clone: Awaited<ReturnType<typeof cloneTemplateDatabase>>;
  beforeAll(async () => {
    clone = await cloneTemplateDatabase();
  });
  afterAll(() => clone.drop());

  it("says whether /metrics is protected by GCS_METRICS_TOKEN, and never the token", async () => {
    const token = "m".repeat(40);
    const lines: (LogLine | undefined)[] = [];
    for (const env of [{}, { GCS_METRICS_TOKEN: token }] as Record<string, string>[]) {
      const gcs = await serve({ DATABASE_URL: clone.url, GCS_METRICS_PORT: "0", ...env });
      try {
        lines.push(gcs.log.find((l) => l.msg === "metrics listening"));
      } finally {
        gcs.child.kill("SIGTERM");
        await gcs.exited;
      }
    }
    expect(lines.map((l) => l?.protected)).toEqual([false, true]);
    expect(JSON.stringify(lines)).not.toContain("[redacted]");
    expect(JSON.stringify(lines)).not.toContain(token);
  });
});
