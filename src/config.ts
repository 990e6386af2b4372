// Environment → typed configuration, validated once at start-up.
import { isIP } from "node:net";
import { z } from "zod";

/** ruru, the GraphQL IDE, is a dev dependency: a production install has none. */
function ruruInstalled(): boolean {
  try {
    require.resolve("ruru/server");
    return true;
  } catch {
    return false;
  }
}

const staticTokenSchema = z.object({
  name: z.string().min(1),
  token: z.string().min(24),
  property_group_id: z.uuid(),
  scopes: z.array(z.string()).min(1),
});

const envSchema = z.object({
  NODE_ENV: z.enum(["development", "production", "test"]).default("development"),
  PORT: z.coerce.number().int().min(0).max(65535).default(3000),
  HOST: z.string().default("0.0.0.0"),
  DATABASE_URL: z.string().url().optional(),
  // The login that owns the tables and applies migrations, when DATABASE_URL's login owns nothing
  // (docs/security.md). Default: DATABASE_URL.
  DATABASE_MIGRATION_URL: z.string().url().optional(),
  // The login for the cross-group paths (delivery and webhook workers, credential and rate-limit
  // bookkeeping, OAuth, the CLI), a member of gcs_system, so that DATABASE_URL's login need not be
  // one (docs/security.md). Default: DATABASE_URL.
  DATABASE_SYSTEM_URL: z.string().url().optional(),
  // Optional read replica, a streaming hot standby of DATABASE_URL: reads go there, writes (and reads
  // of what a request just wrote) to DATABASE_URL. Each instance checks the standby every
  // GCS_REPLICA_CHECK_MS (src/db/replica-health.ts); while it is down, or more than
  // GCS_REPLICA_MAX_LAG_MS behind the primary, reads go to the primary, and back once it has caught up.
  DATABASE_REPLICA_URL: z.string().url().optional(),
  GCS_REPLICA_MAX_LAG_MS: z.coerce.number().int().min(0).max(3_600_000).default(10_000),
  GCS_REPLICA_CHECK_MS: z.coerce.number().int().min(50).max(60_000).default(1000),
  DATABASE_POOL_SIZE: z.coerce.number().int().min(1).max(200).default(10),
  GCS_DATA_DIR: z.string().default(".data/pglite"),
  LOG_LEVEL: z.enum(["fatal", "error", "warn", "info", "debug", "trace", "silent"]).default("info"),
  // Unset: pretty at a terminal, JSON otherwise (logger.ts).
  LOG_FORMAT: z.enum(["json", "pretty"]).optional(),
  // Observability (src/observability): /metrics on a port of its own, off unless set; an optional
  // bearer token there; OpenTelemetry tracing, off unless the OTLP endpoint is set.
  GCS_METRICS_PORT: z.coerce.number().int().min(0).max(65535).optional(),
  GCS_METRICS_HOST: z.string().optional(),
  GCS_METRICS_TOKEN: z.string().min(32).optional(),
  OTEL_EXPORTER_OTLP_ENDPOINT: z.string().url().optional(),
  // The GraphQL IDE (ruru) at GET /graphql in a browser; unset: on, off in production.
  GCS_GRAPHQL_IDE: z.enum(["true", "false"]).optional(),
  // The internal dashboard at GET /dashboard; unset: on, off in production.
  GCS_DASHBOARD: z.enum(["true", "false"]).optional(),
  // Secrets: when unset, the service generates them once and keeps them in the database.
  GCS_CURSOR_SECRET: z.string().min(32).optional(),
  GCS_SESSION_JWT_SECRET: z.string().min(32).optional(),
  GCS_SESSION_JWT_ISSUER: z.string().default("https://app.guest-context.example"),
  GCS_SESSION_JWT_AUDIENCE: z.string().default("guest-context-api"),
  // JSON array of { name, token, property_group_id, scopes }.
  GCS_STATIC_TOKENS: z.string().optional(),
  GCS_GRAPHQL_INTROSPECTION: z.enum(["true", "false"]).optional(),
  // Bounds on one /graphql operation (src/graphql/limits.ts): nesting depth, estimated cost, field
  // selections and aliases after fragment expansion, tokens the parser reads, response size.
  GCS_GRAPHQL_MAX_DEPTH: z.coerce.number().int().min(1).max(100).default(10),
  GCS_GRAPHQL_MAX_COST: z.coerce.number().int().min(1).default(16_000),
  // Comma-separated origins (https://dash.example.com) allowed to call the API from a browser; unset: no CORS.
  GCS_CORS_ORIGINS: z.string().optional(),
  GCS_TRUST_PROXY: z.string().optional(),
  GCS_GRAPHQL_MAX_SELECTIONS: z.coerce.number().int().min(1).default(1_000),
  GCS_GRAPHQL_MAX_ALIASES: z.coerce.number().int().min(0).default(100),
  GCS_GRAPHQL_MAX_TOKENS: z.coerce.number().int().min(100).default(10_000),
  GCS_GRAPHQL_MAX_RESPONSE_BYTES: z.coerce.number().int().min(1024).default(5 * 1024 * 1024),
  // Path to a JSON file of the sha256 hashes of the only documents /graphql runs (src/graphql/trusted-documents.ts).
  GCS_GRAPHQL_TRUSTED_DOCUMENTS: z.string().min(1).optional(),
  GCS_DELIVERY_WORKER: z.enum(["true", "false"]).default("true"),
  // Webhooks (src/webhooks): loopback and private receiver addresses are refused unless this is
  // true (the demo and the tests deliver to 127.0.0.1). Never set it where the service can reach an
  // internal network it should not call. The sender polls the event log every INTERVAL_MS (one
  // claim, and one read per group with endpoints at the log's end: webhooks/feed.ts), so an event
  // reaches a receiver about INTERVAL_MS / 2 after its commit.
  GCS_WEBHOOKS_ALLOW_PRIVATE: z.enum(["true", "false"]).default("false"),
  GCS_WEBHOOKS_INTERVAL_MS: z.coerce.number().int().min(50).max(600_000).default(100),
  GCS_WEBHOOKS_LANES: z.coerce.number().int().min(1).max(1_000).default(64),
  // POSTs on the wire per endpoint (HTTP/1.1 pipelining); 1 sends event n+1 only after n was answered.
  GCS_WEBHOOKS_PIPELINE: z.coerce.number().int().min(1).max(64).default(8),
  // 0: this instance does not refresh the dashboard rollups (another instance, or none: then every
  // aggregate is counted live once the stored answers are older than data/metric-rollups.ts MAX_STALENESS_SECONDS allows).
  // Every 2 s: a pass that applies a few writes' touches takes milliseconds, but each pass plans its
  // statements afresh, so halving the passes (from every second) halves that share: at 20 writes/s the
  // refresher's PostgreSQL CPU went from 0.094 to 0.056 of a core, freshness p99 1.4 → 2.4 s (docs/aggregates.md).
  GCS_ROLLUP_REFRESH_MS: z.coerce.number().int().min(0).max(600_000).default(2000),
  // false: the refresher rebuilds a pair whole after any change instead of applying what each write
  // touched (the repair path as the daily one: what bench/rollup-freshness.ts compares).
  GCS_ROLLUP_INCREMENTAL: z.enum(["true", "false"]).default("true"),
  // GET /v1/events/stream (src/streams/event-stream.ts): open streams per credential and instance,
  // how often an idle stream reads the timeline again, and the heartbeat comment's interval.
  GCS_STREAM_MAX_PER_CREDENTIAL: z.coerce.number().int().min(1).max(10_000).default(10),
  GCS_STREAM_POLL_MS: z.coerce.number().int().min(50).max(60_000).default(500),
  GCS_STREAM_HEARTBEAT_MS: z.coerce.number().int().min(1000).max(300_000).default(15_000),
  // How often each instance checks the credentials of its open streams (src/streams/credential-watch.ts):
  // a revoked or expired one ends its streams within this plus one statement and the timer's lateness.
  // At most 4 s, leaving a second of that margin under the documented 5 s bound.
  GCS_STREAM_CREDENTIAL_CHECK_MS: z.coerce.number().int().min(50).max(4000).default(2000),
  // Key that seals destination connection secrets (src/delivery/secret-box.ts): a raw 32-byte key
  // as `base64:…` or 64 hex chars, or a passphrase. Unset: generated once and kept in the database,
  // fine for the embedded demo and tests; NODE_ENV=production refuses to serve or deliver without it.
  GCS_DELIVERY_SECRET_KEY: z.string().min(16).optional(),
  // Older keys, comma-separated: they still open secrets sealed under them, never seal.
  GCS_DELIVERY_SECRET_KEY_PREVIOUS: z
    .string()
    .optional()
    .transform((v) => (v ?? "").split(",").map((k) => k.trim()).filter(Boolean))
    .refine((keys) => keys.every((k) => k.length >= 16), "every previous key must have at least 16 characters"),
  GCS_MAILCHIMP_BASE_URL: z.string().url().optional(),
  GCS_KLAVIYO_BASE_URL: z.string().url().optional(),
  GCS_DELIVERY_INTERVAL_MS: z.coerce.number().int().min(100).max(600_000).default(2000),
  GCS_DELIVERY_BATCH_SIZE: z.coerce.number().int().min(1).max(500).default(500),
  // How long a flush holds a binding between two destination calls; above the 15 s request timeout.
  GCS_DELIVERY_LEASE_MS: z.coerce.number().int().min(1000).max(3_600_000).default(60_000),
  // Limits and shutdown (src/server.ts, src/db/database.ts). 0 turns the statement timeout off.
  GCS_STATEMENT_TIMEOUT_MS: z.coerce.number().int().min(0).max(600_000).default(5000),
  // The second tenant wall (docs/security.md). "false" only for the benchmark's A/B: statements then
  // run as the login role, and a superuser login sees every group.
  GCS_ROW_SECURITY: z.enum(["true", "false"]).default("true"),
  // Looked-up credentials remembered for 5 s, proved by each request (auth/remembered-credentials.ts).
  GCS_REMEMBER_CREDENTIALS: z.enum(["true", "false"]).default("true"),
  // A request's reads of one turn of the event loop sent together on one connection (db/tenant-pool.ts read).
  GCS_PIPELINE_READS: z.enum(["true", "false"]).default("true"),
  GCS_SHUTDOWN_TIMEOUT_MS: z.coerce.number().int().min(0).max(600_000).default(25_000),
  GCS_SHUTDOWN_DELAY_MS: z.coerce.number().int().min(0).max(600_000).default(0),
  GCS_KEEP_ALIVE_TIMEOUT_MS: z.coerce.number().int().min(1000).max(3_600_000).default(65_000),
  GCS_MAX_CONNECTIONS: z.coerce.number().int().min(1).default(10_000),
  // Open connections of one client address (src/server.ts); 0 = no cap of its own. A tenth of the
  // overall cap: one address cannot lock the others out, and a load balancer's pool fits.
  GCS_MAX_CONNECTIONS_PER_ADDRESS: z.coerce.number().int().min(0).default(1000),
  // A request's headers must arrive within this from its first byte, the whole request within the other.
  GCS_HEADERS_TIMEOUT_MS: z.coerce.number().int().min(1000).max(600_000).default(15_000),
  GCS_REQUEST_TIMEOUT_MS: z.coerce.number().int().min(1000).max(3_600_000).default(60_000),
  // Requests per window per credential (src/http/rate-limit.ts); 0 = off. Unset: 12000 per 60 s (200 a second on average) with
  // DATABASE_URL, off for the embedded demo.
  GCS_RATE_LIMIT: z.coerce.number().int().min(0).optional(),
  GCS_RATE_LIMIT_WINDOW_S: z.coerce.number().int().min(1).max(86_400).default(60),
  // How often each instance adds its counts to the shared table and learns the others'.
  GCS_RATE_LIMIT_SYNC_MS: z.coerce.number().int().min(10).max(60_000).default(1000),
  // Requests of one credential using the database at once, per instance (src/http/credential-gate.ts);
  // 0 = off. Unset: half the pool (at least 1) with DATABASE_URL, off for the embedded demo.
  GCS_CREDENTIAL_MAX_CONCURRENCY: z.coerce.number().int().min(0).optional(),
  GCS_CREDENTIAL_QUEUE_MS: z.coerce.number().int().min(0).max(60_000).default(1000),
  // Failed authentications (401s) per client address per minute before its requests get 429
  // (src/http/auth-failures.ts); 0 = off. Far above a client retrying a bad key by hand or by backoff.
  GCS_AUTH_FAILURES_PER_ADDRESS: z.coerce.number().int().min(0).default(100),
  // JSON-RPC messages in one /mcp batch (src/app.ts); a larger batch is refused whole.
  GCS_MCP_MAX_BATCH: z.coerce.number().int().min(1).max(1000).default(10),
  // The service's public origin (https://guests.example.com): the OAuth issuer and the URLs in the
  // MCP authorization metadata (src/oauth). Unset: http://localhost:PORT.
  GCS_PUBLIC_URL: z.string().optional(),
});

/** Requests per window per credential when GCS_RATE_LIMIT is unset and a DATABASE_URL is given. */
export const DEFAULT_RATE_LIMIT = 12_000;

export type Config = ReturnType<typeof loadConfig>;

export function loadConfig(env: NodeJS.ProcessEnv = process.env) {
  const parsed = envSchema.safeParse(env);
  if (!parsed.success) {
    const problems = parsed.error.issues.map((i) => `${i.path.join(".")}: ${i.message}`).join("; ");
    throw new Error(`invalid configuration: ${problems}`);
  }
  const e = parsed.data;
  const corsOrigins = parseOrigins(e.GCS_CORS_ORIGINS);
  let staticTokens: z.infer<typeof staticTokenSchema>[] = [];
  if (e.GCS_STATIC_TOKENS) {
    const tokens = z.array(staticTokenSchema).safeParse(JSON.parse(e.GCS_STATIC_TOKENS));
    if (!tokens.success) throw new Error("invalid configuration: GCS_STATIC_TOKENS");
    staticTokens = tokens.data;
  }
  return {
    env: e.NODE_ENV,
    port: e.PORT,
    host: e.HOST,
    databaseUrl: e.DATABASE_URL,
    migrationUrl: e.DATABASE_MIGRATION_URL,
    systemUrl: e.DATABASE_SYSTEM_URL,
    replica: e.DATABASE_REPLICA_URL
      ? { url: e.DATABASE_REPLICA_URL, maxLagMs: e.GCS_REPLICA_MAX_LAG_MS, checkMs: e.GCS_REPLICA_CHECK_MS }
      : undefined,
    poolSize: e.DATABASE_POOL_SIZE,
    dataDir: e.GCS_DATA_DIR,
    logLevel: e.LOG_LEVEL,
    logFormat: e.LOG_FORMAT,
    metrics: {
      port: e.GCS_METRICS_PORT,
      host: e.GCS_METRICS_HOST ?? e.HOST,
      token: e.GCS_METRICS_TOKEN,
    },
    tracing: { endpoint: e.OTEL_EXPORTER_OTLP_ENDPOINT },
    // Unset: on outside production when ruru (a dev dependency) is installed; "true" insists (graphql/ide.ts).
    graphqlIde: e.GCS_GRAPHQL_IDE ? e.GCS_GRAPHQL_IDE === "true" : e.NODE_ENV !== "production" && ruruInstalled(),
    dashboard: e.GCS_DASHBOARD ? e.GCS_DASHBOARD === "true" : e.NODE_ENV !== "production",
    cursorSecret: e.GCS_CURSOR_SECRET,
    session: {
      secret: e.GCS_SESSION_JWT_SECRET,
      issuer: e.GCS_SESSION_JWT_ISSUER,
      audience: e.GCS_SESSION_JWT_AUDIENCE,
    },
    staticTokens,
    graphqlIntrospection: e.GCS_GRAPHQL_INTROSPECTION
      ? e.GCS_GRAPHQL_INTROSPECTION === "true"
      : e.NODE_ENV !== "production",
    graphqlMaxDepth: e.GCS_GRAPHQL_MAX_DEPTH,
    graphqlMaxCost: e.GCS_GRAPHQL_MAX_COST,
    corsOrigins,
    trustProxy: parseTrustProxy(e.GCS_TRUST_PROXY),
    graphqlMaxSelections: e.GCS_GRAPHQL_MAX_SELECTIONS,
    graphqlMaxAliases: e.GCS_GRAPHQL_MAX_ALIASES,
    graphqlMaxTokens: e.GCS_GRAPHQL_MAX_TOKENS,
    graphqlMaxResponseBytes: e.GCS_GRAPHQL_MAX_RESPONSE_BYTES,
    graphqlTrustedDocuments: e.GCS_GRAPHQL_TRUSTED_DOCUMENTS,
    mcpMaxBatch: e.GCS_MCP_MAX_BATCH,
    rateLimit: {
      limit: e.GCS_RATE_LIMIT ?? (e.DATABASE_URL ? DEFAULT_RATE_LIMIT : 0),
      windowS: e.GCS_RATE_LIMIT_WINDOW_S,
      syncMs: e.GCS_RATE_LIMIT_SYNC_MS,
    },
    authFailures: { limit: e.GCS_AUTH_FAILURES_PER_ADDRESS, windowS: 60 },
    credentialConcurrency: {
      // Resolved against the real pool size in createServices (services.ts).
      max: e.GCS_CREDENTIAL_MAX_CONCURRENCY ?? (e.DATABASE_URL ? undefined : 0),
      queueMs: e.GCS_CREDENTIAL_QUEUE_MS,
    },
    delivery: {
      worker: e.GCS_DELIVERY_WORKER === "true",
      secretKey: e.GCS_DELIVERY_SECRET_KEY,
      previousSecretKeys: e.GCS_DELIVERY_SECRET_KEY_PREVIOUS,
      mailchimpBaseUrl: e.GCS_MAILCHIMP_BASE_URL,
      klaviyoBaseUrl: e.GCS_KLAVIYO_BASE_URL,
      intervalMs: e.GCS_DELIVERY_INTERVAL_MS,
      batchSize: e.GCS_DELIVERY_BATCH_SIZE,
      leaseMs: e.GCS_DELIVERY_LEASE_MS,
    },
    webhooks: {
      allowPrivate: e.GCS_WEBHOOKS_ALLOW_PRIVATE === "true",
      httpsOnly: e.NODE_ENV === "production",
      intervalMs: e.GCS_WEBHOOKS_INTERVAL_MS,
      lanes: e.GCS_WEBHOOKS_LANES,
      pipeline: e.GCS_WEBHOOKS_PIPELINE,
    },
    rollups: { refreshMs: e.GCS_ROLLUP_REFRESH_MS, incremental: e.GCS_ROLLUP_INCREMENTAL === "true" },
    stream: {
      maxPerCredential: e.GCS_STREAM_MAX_PER_CREDENTIAL,
      pollMs: e.GCS_STREAM_POLL_MS,
      heartbeatMs: e.GCS_STREAM_HEARTBEAT_MS,
      credentialCheckMs: e.GCS_STREAM_CREDENTIAL_CHECK_MS,
    },
    statementTimeoutMs: e.GCS_STATEMENT_TIMEOUT_MS,
    rowSecurity: e.GCS_ROW_SECURITY === "true",
    rememberCredentials: e.GCS_REMEMBER_CREDENTIALS === "true",
    pipelineReads: e.GCS_PIPELINE_READS === "true",
    publicUrl: parsePublicUrl(e.GCS_PUBLIC_URL, e.PORT),
    /** False when publicUrl is only the localhost default (OAuth metadata would name it). */
    publicUrlConfigured: Boolean(e.GCS_PUBLIC_URL?.trim()),
    http: {
      shutdownTimeoutMs: e.GCS_SHUTDOWN_TIMEOUT_MS,
      shutdownDelayMs: e.GCS_SHUTDOWN_DELAY_MS,
      keepAliveTimeoutMs: e.GCS_KEEP_ALIVE_TIMEOUT_MS,
      maxConnections: e.GCS_MAX_CONNECTIONS,
      maxConnectionsPerAddress: e.GCS_MAX_CONNECTIONS_PER_ADDRESS,
      headersTimeoutMs: e.GCS_HEADERS_TIMEOUT_MS,
      requestTimeoutMs: Math.max(e.GCS_REQUEST_TIMEOUT_MS, e.GCS_HEADERS_TIMEOUT_MS),
    },
  };
}

/**
 * Which proxies in front of the service may set X-Forwarded-For (Express's "trust proxy"): the client
 * address of unauthenticated rate limits and the OAuth endpoints' per-address limits comes from it.
 * Unset: none (a client could otherwise pick its own address). A number of hops, or addresses/CIDRs
 * and Express's names (loopback, linklocal, uniquelocal), comma-separated.
 */
function parseTrustProxy(value: string | undefined): false | number | string[] {
  if (!value?.trim() || value.trim() === "false") return false;
  if (/^\d+$/.test(value.trim())) return Number(value.trim());
  const entries = value.split(",").map((v) => v.trim()).filter(Boolean);
  const named = new Set(["loopback", "linklocal", "uniquelocal"]);
  for (const entry of entries) {
    const [address, bits] = entry.split("/");
    const ok = named.has(entry) || (isIP(address) !== 0 && (bits === undefined || (/^\d{1,3}$/.test(bits) && Number(bits) <= (isIP(address) === 4 ? 32 : 128))));
    if (!ok) throw new Error(`invalid configuration: GCS_TRUST_PROXY: ${JSON.stringify(entry.slice(0, 64))} is not a hop count, an address, a CIDR or loopback/linklocal/uniquelocal`);
  }
  return entries;
}

/** `https://a.example, http://localhost:5173` → exact origins; anything else is a configuration error. */
function parseOrigins(list: string | undefined): string[] {
  if (!list?.trim()) return [];
  return list.split(",").map((raw) => {
    const value = raw.trim();
    let origin: string | undefined;
    try {
      origin = new URL(value).origin;
    } catch {
      origin = undefined;
    }
    if (!origin || origin === "null" || origin !== value.replace(/\/$/, "")) {
      throw new Error(`invalid configuration: GCS_CORS_ORIGINS: ${JSON.stringify(value)} is not an origin like https://dash.example.com`);
    }
    return origin;
  });
}

/**
 * The public origin, no path: OAuth metadata builds its endpoint URLs from it. HTTPS, except on
 * localhost and 127.0.0.1 (RFC 8414 issuers are HTTPS; the MCP SDK allows loopback for development).
 */
function parsePublicUrl(value: string | undefined, port: number): string {
  const raw = value?.trim() || `http://localhost:${port}`;
  let url: URL | undefined;
  try {
    url = new URL(raw);
  } catch {
    url = undefined;
  }
  const loopback = url?.hostname === "localhost" || url?.hostname === "127.0.0.1";
  if (!url || url.origin !== raw.replace(/\/$/, "") || (url.protocol !== "https:" && !(loopback && url.protocol === "http:"))) {
    throw new Error(
      `invalid configuration: GCS_PUBLIC_URL: ${JSON.stringify(raw)} is not an origin like https://guests.example.com (http only for localhost)`,
    );
  }
  return url.origin;
}
