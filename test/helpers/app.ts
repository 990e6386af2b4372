// Per test file: a database cloned from the fixture template, the real app on it, supertest, and
// the fixture manifest with real credentials.
import { readFileSync } from "node:fs";
import { createServer, type Server } from "node:http";
import type { AddressInfo } from "node:net";
import { Writable } from "node:stream";
import pino from "pino";
import { randomBytes } from "node:crypto";
import { Client, Pool } from "pg";
import request from "supertest";
import { validated } from "./openapi-validate";
import { createApp, type App } from "../../src/app";
import { loadConfig } from "../../src/config";
import { createPrismaClient, openDatabase, type Database } from "../../src/db/database";
import type { PrismaClient } from "../../src/generated/prisma/client";
import { createLogger, type Logger } from "../../src/logger";
import { createServices, type Services } from "../../src/services";
import { TEMPLATE_DB, withDatabase } from "./database-url";
import type { FixtureManifest } from "../../src/fixtures";

export interface TestApp {
  /** supertest bound to the app: api.get("/v1/guests")… */
  api: ReturnType<typeof request>;
  services: Services;
  /** The service's database: every statement the app sends goes through the tenant wall (db/tenant-pool.ts). */
  db: Database;
  /**
   * The test's own client, on the login role (a superuser here) and outside the wall: for setting up
   * and checking rows of any group. Not the app's: the app never holds it.
   */
  admin: PrismaClient;
  /** The pool under `admin`, for SQL of the same kind. */
  adminPool: Pool;
  manifest: FixtureManifest;
  databaseUrl: string;
  close(): Promise<void>;
}

export function loadManifest(): FixtureManifest {
  return JSON.parse(readFileSync(process.env.GCS_TEST_MANIFEST!, "utf8"));
}

/** A fresh database cloned from the fixture template. */
export async function cloneTemplateDatabase(): Promise<{ url: string; drop(): Promise<void> }> {
  const adminUrl = process.env.GCS_TEST_ADMIN_URL!;
  const name = `gcs_t_${randomBytes(6).toString("hex")}`;
  const admin = new Client({ connectionString: adminUrl });
  await admin.connect();
  await admin.query(`CREATE DATABASE ${name} TEMPLATE ${TEMPLATE_DB}`);
  await admin.end();
  return {
    url: withDatabase(adminUrl, name),
    async drop() {
      const c = new Client({ connectionString: adminUrl });
      await c.connect();
      await c.query(`DROP DATABASE IF EXISTS ${name} WITH (FORCE)`);
      await c.end();
    },
  };
}

export async function startTestApp(env: Record<string, string> = {}, logger?: Logger): Promise<TestApp> {
  const clone = await cloneTemplateDatabase();
  const t = await startAppOn(clone.url, loadManifest(), env, logger);
  return {
    ...t,
    async close() {
      await t.close();
      await clone.drop();
    },
  };
}

/** The real app on a database the caller provides and loaded (a test's own PostgreSQL). */
export async function startAppOn(databaseUrl: string, manifest: FixtureManifest, env: Record<string, string> = {}, logger?: Logger): Promise<TestApp> {
  const config = loadConfig({ NODE_ENV: "test", LOG_LEVEL: "silent", DATABASE_URL: databaseUrl, ...env });
  const log = logger ?? createLogger(config.logLevel);
  const db = await openDatabase({ databaseUrl, migrationUrl: config.migrationUrl, systemUrl: config.systemUrl, replica: config.replica, logger: log, dataDir: "", poolSize: env.DATABASE_POOL_SIZE ? config.poolSize : 5, rememberCredentials: config.rememberCredentials, pipelineReads: config.pipelineReads });
  const services = await createServices(config, db, log);
  const app: App = await createApp(services);
  // An idle connection closed by the server (a test's database dropped WITH (FORCE) at the end) is no error.
  const adminPool = new Pool({ connectionString: databaseUrl, max: 2 }).on("error", () => undefined);
  const admin = createPrismaClient(adminPool);
  return {
    api: validated(request(app.handler)), // every response is checked against openapi.yaml
    services,
    db,
    admin,
    adminPool,
    manifest,
    databaseUrl,
    async close() {
      await app.stop();
      await db.close();
      await admin.$disconnect();
      await adminPool.end();
    },
  };
}

/** An info-level logger whose lines (pino's JSON text, one per entry) a test can read. */
export function capturingLogger(): { logger: Logger; lines: string[] } {
  const lines: string[] = [];
  const sink = new Writable({
    write(chunk, _enc, done) {
      lines.push(...String(chunk).split("\n").filter(Boolean));
      done();
    },
  });
  return { logger: pino({ level: "info" }, sink), lines };
}

/** A second app on a test app's services, listening on loopback: for clients that need a real URL (browsers, SDKs). */
export async function listenTestApp(t: TestApp): Promise<{ app: App; base: string; close(): Promise<void> }> {
  const app = await createApp(t.services);
  const server: Server = createServer(app.handler).listen(0, "127.0.0.1");
  await new Promise((resolve) => server.once("listening", resolve));
  return {
    app,
    base: `http://127.0.0.1:${(server.address() as AddressInfo).port}`,
    async close() {
      // Open event streams end only when the app drains and their connections close.
      app.drain();
      server.closeAllConnections();
      await new Promise((resolve) => server.close(resolve));
      await app.stop();
    },
  };
}
