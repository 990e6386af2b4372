// gcs: serve | deliver | migrate | fixtures | keys create|list|revoke | partners create|token | connectors list|revoke
// | secrets rotate
import { writeFileSync } from "node:fs";
import path from "node:path";
import { parseArgs } from "node:util";
import { loadConfig, type Config } from "../config";
import { openDatabase, type Database } from "../db/database";
import { migrate } from "../db/migrate";
import { createApiKey, createPartnerCredential, issuePartnerAccessToken, listApiKeys, revokeApiKey } from "../auth/credentials";
import { resolveSessionKey } from "../auth/session";
import { connectorLine, listConnectors, revokeConnector } from "../oauth/connectors";
import { loadFixtures, MIN_GUESTS } from "../fixtures";
import { startServer } from "../server";
import { announceEmbeddedDemo } from "./demo";
import { createLogger } from "../logger";
import { flushDue } from "../delivery/engine";
import { assertDeliveryKeyConfigured, deliverySecretKey, destinationsFromConfig, runDelivery } from "../delivery/run";
import { rotateSecrets } from "../delivery/rotate";

const USAGE = `usage: gcs <command>
  serve                                   run the API (PORT, DATABASE_URL; embedded PGlite when unset)
  deliver [--once]                        run only the destination delivery worker (or one pass)
  migrate                                 apply pending database migrations
  fixtures --out <file> [--seed N] [--guests N]
                                          replace the fixture tenants and write their manifest
  keys create --group <uuid> --name <name> --scopes <s1,s2> [--property <uuid>]
  keys list [--group <uuid>]              never prints secrets
  keys revoke <key-id>
  partners create --group <uuid> --name <name> --scopes <s1,s2>
  partners token --client-id <id> --client-secret <secret> [--ttl <seconds>]
  connectors list [--group <uuid>] [--json]
                                          AI clients approved through the MCP OAuth flow; no secrets
  connectors revoke <connector-id> [--json]
                                          ends the connector's access and refresh tokens
  secrets rotate [--json]                 re-seal destination secrets under GCS_DELIVERY_SECRET_KEY`;

class UsageError extends Error {}

async function main(argv: string[]): Promise<number> {
  const [command, sub] = argv;
  const config = loadConfig();
  switch (command) {
    case "serve":
      assertDeliveryKeyConfigured(config); // before anything starts: a one-line refusal
      return serve(config);
    case "deliver":
      assertDeliveryKeyConfigured(config);
      return deliver(config, argv.slice(1));
    case "migrate":
      return withDatabase(config, false, async (db) => {
        const result = await migrate(db.url);
        console.log(result.applied.length ? `applied: ${result.applied.join(", ")}` : "database is up to date");
      });
    case "fixtures":
      return fixtures(config, argv.slice(1));
    case "keys":
      return keys(config, sub, argv.slice(2));
    case "partners":
      return partners(config, sub, argv.slice(2));
    case "connectors":
      return connectors(config, sub, argv.slice(2));
    case "secrets":
      return secrets(config, sub, argv.slice(2));
    default:
      throw new UsageError(command ? `unknown command ${command}` : "no command given");
  }
}

async function serve(config: Config): Promise<number> {
  const server = await startServer(config, async (running) => {
    if (running.services.db.embedded) await announceEmbeddedDemo(running);
  });
  // Drain (server.ts): readyz 503, stop accepting, finish requests in flight and the delivery batch,
  // exit 0 within GCS_SHUTDOWN_TIMEOUT_MS. A second signal ends the process at once.
  const shutdown = (signal: string) => {
    server.services.logger.info({ signal, timeoutMs: config.http.shutdownTimeoutMs }, "shutting down: draining");
    server.stop().then(
      () => process.exit(0),
      (err: Error) => {
        server.services.logger.error({ err }, "shutdown failed");
        process.exit(1);
      },
    );
  };
  process.once("SIGINT", shutdown);
  process.once("SIGTERM", shutdown);
  return new Promise<number>(() => undefined); // runs until a signal
}

async function deliver(config: Config, args: string[]): Promise<number> {
  const { values } = parseArgs({ args, options: { once: { type: "boolean", default: false } } });
  const logger = createLogger(config.logLevel);
  if (values.once) {
    return withDatabase(config, true, async (db) => {
      const reports = await flushDue(db.primary, {
        secretKey: await deliverySecretKey(config, db.primary),
        destinations: destinationsFromConfig(config),
        batchSize: config.delivery.batchSize,
        logger,
      });
      for (const r of reports) console.log(JSON.stringify(r, (_k, v) => (typeof v === "bigint" ? v.toString() : v)));
    });
  }
  const db = await openDatabase({ databaseUrl: config.databaseUrl, dataDir: config.dataDir, poolSize: 4 });
  const delivery = await runDelivery(config, db.primary, logger, false);
  logger.info("delivery worker running");
  const shutdown = async () => {
    await delivery.stop();
    await db.close();
    process.exit(0);
  };
  process.once("SIGINT", shutdown);
  process.once("SIGTERM", shutdown);
  return new Promise<number>(() => undefined);
}

async function fixtures(config: Config, args: string[]): Promise<number> {
  const { values } = parseArgs({
    args,
    options: { out: { type: "string" }, seed: { type: "string", default: "1" }, guests: { type: "string", default: "300" } },
  });
  if (!values.out) throw new UsageError("fixtures needs --out <manifest.json>");
  const seed = positiveInt(values.seed!, "--seed", 0);
  const guests = positiveInt(values.guests!, "--guests", MIN_GUESTS);
  return withDatabase(config, true, async (db) => {
    const started = Date.now();
    const sessionKey = await resolveSessionKey(config.session, db.primary);
    const manifest = await loadFixtures(db.primary, {
      seed,
      guests,
      sessionKey,
      deliveryKey: await deliverySecretKey(config, db.primary),
      progress: (line) => console.error(line),
      // PGlite has one connection; on PostgreSQL groups A and B load side by side.
      concurrency: db.embedded ? 1 : 2,
    });
    const out = path.resolve(values.out!);
    writeFileSync(out, JSON.stringify(manifest, null, 2) + "\n", { mode: 0o600 });
    console.error(`fixtures loaded in ${((Date.now() - started) / 1000).toFixed(1)}s; manifest written to ${out}`);
  });
}

async function keys(config: Config, sub: string | undefined, args: string[]): Promise<number> {
  if (sub === "create") {
    const { values } = parseArgs({
      args,
      options: { group: { type: "string" }, property: { type: "string" }, name: { type: "string" }, scopes: { type: "string" } },
    });
    if (!values.group || !values.name || !values.scopes) throw new UsageError("keys create needs --group, --name and --scopes");
    return withDatabase(config, true, async (db) => {
      const key = await createApiKey(db.primary, {
        propertyGroupId: values.group!,
        propertyId: values.property ?? null,
        name: values.name!,
        scopes: values.scopes!.split(",").map((s) => s.trim()).filter(Boolean),
      });
      console.log(`id:     ${key.id}\nscopes: ${key.scopes.join(" ")}\nkey:    ${key.token}\n(the key is shown once; only its hash is stored)`);
    });
  }
  if (sub === "list") {
    const { values } = parseArgs({ args, options: { group: { type: "string" } } });
    return withDatabase(config, true, async (db) => {
      for (const k of await listApiKeys(db.primary, values.group)) {
        const state = k.revokedAt ? `revoked ${k.revokedAt.toISOString()}` : "active";
        console.log([k.id, `${k.displayPrefix}…`, k.name, k.propertyGroupId, k.propertyId ?? "-", k.scopes.join(","), state].join("\t"));
      }
    });
  }
  if (sub === "revoke") {
    const id = args[0];
    if (!id) throw new UsageError("keys revoke needs a key id");
    return withDatabase(config, true, async (db) => {
      if (!(await revokeApiKey(db.primary, id))) throw new Error(`no active key ${id}`);
      console.log(`revoked ${id}`);
    });
  }
  throw new UsageError("keys needs create, list or revoke");
}

async function partners(config: Config, sub: string | undefined, args: string[]): Promise<number> {
  if (sub === "create") {
    const { values } = parseArgs({ args, options: { group: { type: "string" }, name: { type: "string" }, scopes: { type: "string" } } });
    if (!values.group || !values.name || !values.scopes) throw new UsageError("partners create needs --group, --name and --scopes");
    return withDatabase(config, true, async (db) => {
      const p = await createPartnerCredential(db.primary, {
        propertyGroupId: values.group!,
        name: values.name!,
        scopes: values.scopes!.split(","),
      });
      console.log(`client_id:     ${p.clientId}\nclient_secret: ${p.clientSecret}\n(the secret is shown once)`);
    });
  }
  if (sub === "token") {
    const { values } = parseArgs({
      args,
      options: { "client-id": { type: "string" }, "client-secret": { type: "string" }, ttl: { type: "string", default: "3600" } },
    });
    if (!values["client-id"] || !values["client-secret"]) throw new UsageError("partners token needs --client-id and --client-secret");
    return withDatabase(config, true, async (db) => {
      const t = await issuePartnerAccessToken(db.primary, {
        clientId: values["client-id"]!,
        clientSecret: values["client-secret"]!,
        ttlSeconds: positiveInt(values.ttl!, "--ttl", 60),
      });
      console.log(`access_token: ${t.token}\nexpires_at:   ${t.expiresAt.toISOString()}`);
    });
  }
  throw new UsageError("partners needs create or token");
}

async function connectors(config: Config, sub: string | undefined, args: string[]): Promise<number> {
  if (sub === "list") {
    const { values } = parseArgs({ args, options: { group: { type: "string" }, json: { type: "boolean", default: false } } });
    return withDatabase(config, true, async (db) => {
      const rows = await listConnectors(db.primary, values.group);
      if (values.json) return console.log(JSON.stringify(rows));
      for (const c of rows) console.log(connectorLine(c));
    });
  }
  if (sub === "revoke") {
    const { values, positionals } = parseArgs({ args, allowPositionals: true, options: { json: { type: "boolean", default: false } } });
    if (positionals.length !== 1) throw new UsageError("connectors revoke needs one connector id (from connectors list)");
    return withDatabase(config, true, async (db) => {
      const result = await revokeConnector(db.primary, positionals[0]);
      if (!result.revoked) throw new Error(`no active connector ${result.id}`);
      if (values.json) return console.log(JSON.stringify(result));
      console.log(`revoked ${result.id}: its access and refresh tokens no longer work`);
    });
  }
  throw new UsageError("connectors needs list or revoke");
}

async function secrets(config: Config, sub: string | undefined, args: string[]): Promise<number> {
  if (sub !== "rotate") throw new UsageError("secrets needs rotate");
  const { values } = parseArgs({ args, options: { json: { type: "boolean", default: false } } });
  return withDatabase(config, true, async (db) => {
    const r = await rotateSecrets(db.primary, await deliverySecretKey(config, db.primary));
    if (values.json) return console.log(JSON.stringify(r));
    console.log(`destination secrets under key ${r.kid}: ${r.rotated} rotated, ${r.current} already current, ${r.failed} failed to open`);
    for (const id of r.failedConnectionIds) console.log(`failed to open: connection ${id} (left as it is)`);
  });
}

async function withDatabase(config: Config, migrateFirst: boolean, work: (db: Database) => Promise<void>): Promise<number> {
  const db = await openDatabase({ databaseUrl: config.databaseUrl, dataDir: config.dataDir, poolSize: 4, migrate: migrateFirst });
  try {
    await work(db);
    return 0;
  } finally {
    await db.close();
  }
}

function positiveInt(raw: string, name: string, min: number): number {
  const n = Number(raw);
  if (!Number.isSafeInteger(n) || n < min) throw new UsageError(`${name} must be an integer ≥ ${min}`);
  return n;
}

main(process.argv.slice(2)).then(
  (code) => process.exit(code),
  (err: Error) => {
    if (err instanceof UsageError) console.error(`gcs: ${err.message}\n${USAGE}`);
    else console.error(`gcs: ${oneLine(err)}`);
    process.exit(err instanceof UsageError ? 2 : 1);
  },
);

/** One line, no stack, no connection string credentials. */
function oneLine(err: Error): string {
  const code = (err as { code?: string }).code;
  const reason = code === "ECONNREFUSED" || code === "ENOTFOUND" ? `cannot reach the database (${code})` : err.message;
  return reason.replace(/postgres(ql)?:\/\/[^\s@]*@/g, "postgresql://***@").split("\n")[0];
}
