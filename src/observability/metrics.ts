// Prometheus metrics (prom-client), one registry per process. The request path only bumps counters
// and histograms in memory; the pool and delivery gauges are read when Prometheus scrapes. Names and
// label sets are part of the operator's contract (docs/operations.md, "Metrics and tracing"): rename nothing.
//
// Served by metricsApp() on its own listener (GCS_METRICS_PORT, server.ts), never on the API port:
// the API's credentials are tenants' and mean nothing here, and a port Prometheus reaches need not be
// one the internet reaches. GCS_METRICS_TOKEN adds a bearer token on top.
import { timingSafeEqual, createHash } from "node:crypto";
import express from "express";
import { Counter, Gauge, Registry, collectDefaultMetrics } from "prom-client";
import { RequestHistogram } from "./request-histogram";
import type { Pool } from "pg";
import type { Logger } from "../logger";

export const registry = new Registry();

const httpDuration = new RequestHistogram(
  "gcs_http_request_duration_seconds",
  "HTTP requests by method, route template and status, from the first byte read to the last byte written.",
  ["method", "route", "status"],
  [0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10],
  registry,
);

const sqlPerRequest = new RequestHistogram(
  "gcs_sql_statements_per_request",
  "SQL statements one request issued, by route template (the X-Sql-Statements header).",
  ["route"],
  [0, 1, 2, 3, 4, 6, 8, 12, 16, 32, 64],
  registry,
);

const graphqlOperations = new Counter({
  name: "gcs_graphql_operations_total",
  help: "GraphQL operations executed, REST routes' and /graphql's, by operation name, type and outcome (ok, partial, error).",
  labelNames: ["operation", "type", "outcome"] as const,
  registers: [registry],
});

const rateLimitRefusals = new Counter({
  name: "gcs_rate_limit_refusals_total",
  help: "Requests answered 429 rate_limited (GCS_RATE_LIMIT or GCS_CREDENTIAL_MAX_CONCURRENCY), by route template.",
  labelNames: ["route"] as const,
  registers: [registry],
});

const aggregateAnswers = new Counter({
  name: "gcs_aggregate_answers_total",
  help: "Dashboard aggregate answers (stays, guests, consent, reviews) by source: rollup (stored buckets) or live (counted from the rows: a request no stored shape covers, or a pair not built or past the staleness bound).",
  labelNames: ["aggregate", "source"] as const,
  registers: [registry],
});

/** Counts one aggregate answer by where it came from (data/metrics.ts). */
export function recordAggregateAnswer(aggregate: "stays" | "guests" | "consent" | "reviews", source: "rollup" | "live"): void {
  aggregateAnswers.inc({ aggregate, source });
}

/** Observes one finished request. */
export function recordRequest(method: string, route: string, status: number, seconds: number, statements: number): void {
  httpDuration.observe([method, route, String(status)], seconds);
  sqlPerRequest.observe([route], statements);
  if (status === 429) rateLimitRefusals.inc({ route });
}

// /graphql operation names are the client's choice: past this many distinct names, new ones count
// as "other", so no client can grow the label set without bound. REST's operations are compiled at
// start-up and always have their own.
const MAX_OPERATION_NAMES = 200;
const operationNames = new Set<string>();

/** The label of an operation name, fixed when the operation is compiled. */
export function operationLabel(name: string | undefined): string {
  if (!name) return "anonymous";
  if (operationNames.has(name)) return name;
  if (operationNames.size >= MAX_OPERATION_NAMES || name.length > 100) return "other";
  operationNames.add(name);
  return name;
}

export type Outcome = "ok" | "partial" | "error";

export function recordOperation(operation: string, type: string, outcome: Outcome): void {
  graphqlOperations.inc({ operation, type, outcome });
}

// Read at scrape time through the readers the running app passes (one per process; tests that
// build several apps get the latest). The app builds them over its database (data/stores/gauges.ts),
// so this module reads no database itself.
let observed: { readers: GaugeReaders; logger: Logger } | undefined;

/** One row per webhook endpoint, read at scrape time (data/webhooks.ts webhookGaugeRows). */
export interface WebhookGaugeRow {
  id: string;
  state: string;
  failures: number;
  pending: number;
}

/** One row per destination binding that is not paused (data/stores/delivery.ts deliveryGaugeRows). */
export interface DeliveryGaugeRow {
  id: string;
  provider: string;
  /** Age of the oldest change the destination has not confirmed, in seconds; null when caught up. */
  lag_s: number | null;
  last_flush_s: number | null;
  pending: number;
  failures: number;
}

/** The read replica as its last check saw it (db/replica-health.ts). */
export interface ReplicaGaugeStatus {
  state: string;
  lagBytes: number | null;
  lagSeconds: number | null;
}

/** What the gauges read. */
export interface GaugeReaders {
  /** The pg pools by name: primary, and replica when there is one. */
  pools(): [string, Pool][];
  /** The read replica's address and last status, when there is one (no query). */
  replica(): { address: string; status: ReplicaGaugeStatus } | undefined;
  /** At most `limit` binding rows for the delivery gauges. */
  delivery(limit: number): Promise<DeliveryGaugeRow[]>;
  /** At most `limit` endpoint rows for the webhook gauges. */
  webhooks(limit: number): Promise<WebhookGaugeRow[]>;
}

/** Pool, replica, delivery and webhook gauges read through `readers` until the returned function is called. */
export function observeDatabase(readers: GaugeReaders, logger: Logger): () => void {
  const entry = { readers, logger };
  observed = entry;
  return () => {
    if (observed === entry) observed = undefined;
  };
}

const poolConnections = new Gauge({
  name: "gcs_db_pool_connections",
  help: "Connections of a pg pool (primary, replica) by state: in_use, idle.",
  labelNames: ["pool", "state"] as const,
  registers: [registry],
  collect() {
    this.reset();
    for (const [name, pool] of pools()) {
      this.set({ pool: name, state: "in_use" }, pool.totalCount - pool.idleCount);
      this.set({ pool: name, state: "idle" }, pool.idleCount);
    }
  },
});

const poolWaiting = new Gauge({
  name: "gcs_db_pool_waiting",
  help: "Queries waiting for a connection of a pg pool (primary, replica).",
  labelNames: ["pool"] as const,
  registers: [registry],
  collect() {
    this.reset();
    for (const [name, pool] of pools()) this.set({ pool: name }, pool.waitingCount);
  },
});

const poolMax = new Gauge({
  name: "gcs_db_pool_max",
  help: "Size limit of a pg pool (primary, replica).",
  labelNames: ["pool"] as const,
  registers: [registry],
  collect() {
    this.reset();
    for (const [name, pool] of pools()) this.set({ pool: name }, pool.options.max ?? 10);
  },
});

function pools(): [string, Pool][] {
  return observed ? observed.readers.pools() : [];
}

// The read replica as this instance's last check saw it (db/replica-health.ts): no query at scrape
// time. Labelled by its host:port, so that no series exists without a replica.
function replicaGauge(name: string, help: string, value: (s: ReplicaGaugeStatus) => number | null) {
  return new Gauge({
    name,
    help,
    labelNames: ["replica"] as const,
    registers: [registry],
    collect() {
      this.reset();
      const replica = observed?.readers.replica();
      const v = replica && value(replica.status);
      if (replica && v != null) this.set({ replica: replica.address }, v);
    },
  });
}

replicaGauge(
  "gcs_replica_lag_seconds",
  "How far the read replica's replay is behind the primary's WAL, in seconds (at least; GCS_REPLICA_CHECK_MS resolution). Absent while it cannot be measured (down).",
  (s) => s.lagSeconds,
);
replicaGauge("gcs_replica_lag_bytes", "WAL bytes the read replica had not replayed at the last check. Absent while it cannot be measured (down).", (s) => s.lagBytes);
replicaGauge(
  "gcs_replica_serving_reads",
  "1 while reads go to the read replica; 0 while they go to the primary (replica down, more than GCS_REPLICA_MAX_LAG_MS behind, not a standby, or not checked yet).",
  (s) => (s.state === "streaming" ? 1 : 0),
);

const deliveryLag = new Gauge({
  name: "gcs_delivery_lag_seconds",
  help: "Age of the oldest membership change a destination binding has not delivered yet (0: caught up). Paused bindings are left out.",
  labelNames: ["binding_id", "destination"] as const,
  registers: [registry],
  async collect() {
    const rows = await deliveryRows();
    this.reset();
    for (const r of rows) this.set({ binding_id: r.id, destination: r.provider }, r.lag_s ?? 0);
  },
});

const deliveryLastFlush = new Gauge({
  name: "gcs_delivery_last_flush_timestamp_seconds",
  help: "When a destination binding last delivered a batch (Unix time); absent until its first. Paused bindings are left out.",
  labelNames: ["binding_id", "destination"] as const,
  registers: [registry],
  async collect() {
    const rows = await deliveryRows();
    this.reset();
    for (const r of rows) if (r.last_flush_s !== null) this.set({ binding_id: r.id, destination: r.provider }, r.last_flush_s);
  },
});

const deliveryPending = new Gauge({
  name: "gcs_delivery_pending_changes",
  help: "Membership changes a destination binding has not delivered yet (the binding's lag). Paused bindings are left out.",
  labelNames: ["binding_id", "destination"] as const,
  registers: [registry],
  async collect() {
    const rows = await deliveryRows();
    this.reset();
    for (const r of rows) this.set({ binding_id: r.id, destination: r.provider }, r.pending);
  },
});

const deliveryFailures = new Gauge({
  name: "gcs_delivery_consecutive_failures",
  help: "Destination failures of a binding since its last confirmed call (0: healthy); the binding's last_error says why. Paused bindings are left out.",
  labelNames: ["binding_id", "destination"] as const,
  registers: [registry],
  async collect() {
    const rows = await deliveryRows();
    this.reset();
    for (const r of rows) this.set({ binding_id: r.id, destination: r.provider }, r.failures);
  },
});

const webhookEndpoints = new Gauge({
  name: "gcs_webhook_endpoints",
  help: "Webhook endpoints by state: active (healthy), failing (active, retrying an event), disabled (after a 410 or the whole retry schedule).",
  labelNames: ["state"] as const,
  registers: [registry],
  async collect() {
    const rows = await webhookRows();
    this.reset();
    if (!observed) return;
    const counts = { active: 0, failing: 0, disabled: 0 };
    for (const r of rows) counts[r.state === "disabled" ? "disabled" : r.failures > 0 ? "failing" : "active"]++;
    for (const [state, n] of Object.entries(counts)) this.set({ state }, n);
  },
});

const webhookPending = new Gauge({
  name: "gcs_webhook_pending_events",
  help: "Events a webhook endpoint selects that it has not been sent yet (counted up to 10,000), disabled endpoints included.",
  labelNames: ["endpoint_id"] as const,
  registers: [registry],
  async collect() {
    const rows = await webhookRows();
    this.reset();
    for (const r of rows) this.set({ endpoint_id: r.id }, r.pending);
  },
});

const webhookFailures = new Gauge({
  name: "gcs_webhook_consecutive_failures",
  help: "Failed attempts of the event a webhook endpoint is held on (0: healthy); the endpoint's last_error says why.",
  labelNames: ["endpoint_id"] as const,
  registers: [registry],
  async collect() {
    const rows = await webhookRows();
    this.reset();
    for (const r of rows) this.set({ endpoint_id: r.id }, r.failures);
  },
});

let webhookScrape: Promise<WebhookGaugeRow[]> | undefined;
const webhookFailing = { failing: false };

/** One query per scrape for the webhook gauges, like deliveryRows. */
function webhookRows(): Promise<WebhookGaugeRow[]> {
  const entry = observed;
  if (!entry) return Promise.resolve([]);
  webhookScrape ??= bounded("webhook", () => entry.readers.webhooks(MAX_BINDINGS), entry.logger, webhookFailing).finally(() => setImmediate(() => (webhookScrape = undefined)));
  return webhookScrape;
}

/** Bounded, so a scrape stays cheap with any number of bindings; an operator with more has other tools. */
const MAX_BINDINGS = 1000;
const DELIVERY_QUERY_TIMEOUT_MS = 2000;
let deliveryScrape: Promise<DeliveryGaugeRow[]> | undefined;

/** One query per scrape for all delivery gauges (prom-client collects them concurrently). */
function deliveryRows(): Promise<DeliveryGaugeRow[]> {
  if (!observed) return Promise.resolve([]);
  deliveryScrape ??= queryDelivery(observed).finally(() => setImmediate(() => (deliveryScrape = undefined)));
  return deliveryScrape;
}

const deliveryFailing = { failing: false };

function queryDelivery({ readers, logger }: { readers: GaugeReaders; logger: Logger }): Promise<DeliveryGaugeRow[]> {
  return bounded("delivery", () => readers.delivery(MAX_BINDINGS), logger, deliveryFailing);
}

/** A scrape's query, given up after DELIVERY_QUERY_TIMEOUT_MS: the scrape goes on without its gauges. */
async function bounded<T>(what: string, read: () => Promise<T[]>, logger: Logger, state: { failing: boolean }): Promise<T[]> {
  const query = read();
  let timer: NodeJS.Timeout | undefined;
  const timeout = new Promise<never>((_, reject) => {
    timer = setTimeout(() => reject(new Error(`no answer in ${DELIVERY_QUERY_TIMEOUT_MS} ms`)), DELIVERY_QUERY_TIMEOUT_MS);
  });
  try {
    const rows = await Promise.race([query, timeout]);
    if (state.failing) logger.info(`${what} metrics readable again`);
    state.failing = false;
    return rows;
  } catch (err) {
    // The scrape goes on without these gauges; one warning per outage.
    if (!state.failing) logger.warn({ err: (err as Error).message }, `${what} metrics not readable; left out of /metrics`);
    state.failing = true;
    return [];
  } finally {
    clearTimeout(timer);
  }
}

let processMetrics = false;

/**
 * GET /metrics in the Prometheus text format, alone on an Express app of its own (server.ts gives it
 * its own port). With `token`, only `Authorization: Bearer <token>` is answered.
 */
export function metricsApp(token?: string, logger?: Pick<Logger, "error">): express.Express {
  if (!processMetrics) {
    // CPU, memory, event loop lag, GC, handles: the standard names (process_*, nodejs_*).
    collectDefaultMetrics({ register: registry });
    processMetrics = true;
  }
  const app = express();
  app.disable("x-powered-by");
  app.set("etag", false);
  app.get("/metrics", async (req, res) => {
    res.setHeader("Cache-Control", "no-store");
    if (token && !bearerMatches(req.get("authorization"), token)) {
      res.setHeader("WWW-Authenticate", 'Bearer realm="metrics"');
      res.status(401).json({ error: "unauthorized", detail: "send Authorization: Bearer <GCS_METRICS_TOKEN>" });
      return;
    }
    res.type(registry.contentType).send(await registry.metrics());
  });
  app.use((req: express.Request, res: express.Response) => {
    res.status(404).json({ error: "not_found", detail: `no route ${req.method} ${req.path}; this port serves GET /metrics only` });
  });
  // Express's own handler would answer with a stack trace outside production.
  app.use((err: unknown, _req: express.Request, res: express.Response, _next: express.NextFunction) => {
    logger?.error({ err }, "metrics could not be collected");
    res.status(500).json({ error: "internal_error", detail: "metrics could not be collected; retry later" });
  });
  return app;
}

const digest = (value: string) => createHash("sha256").update(value).digest();

/** Constant-time comparison: hashing first makes both sides the same length. */
function bearerMatches(header: string | undefined, token: string): boolean {
  const match = /^Bearer\s+(\S+)\s*$/i.exec(header ?? "");
  return match !== null && timingSafeEqual(digest(match[1]), digest(token));
}
