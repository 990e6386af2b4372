// SIGTERM to the real server process with requests in flight: /readyz turns 503 at once, the
// listener closes, every request in flight completes with its full answer, and the process exits 0.
// The requests are held in flight honestly: the test locks the table their SQL reads.
import http from "node:http";
import { Client } from "pg";
import type { FixtureManifest } from "../../src/fixtures";
import type { TestPostgres } from "../helpers/postgres";
import { startOwnPostgres } from "../helpers/own-postgres";
import { serve, type ServeProcess } from "../helpers/serve";
import { contract } from "../helpers/openapi-validate";

// Its own PostgreSQL: the locks below hold transactions open for seconds, which would hold back the
// event timeline of every other test file on a shared server.
let pg: TestPostgres;
let manifest: FixtureManifest;
let databaseUrl: string;
let server: ServeProcess;

beforeAll(async () => {
  ({ pg, manifest } = await startOwnPostgres());
  databaseUrl = pg.adminUrl();
  server = await serve({
    DATABASE_URL: databaseUrl,
    GCS_DELIVERY_WORKER: "true",
    // Production mode: where Apollo would install its own signal handler (it skips it under test).
    NODE_ENV: "production",
    // Production refuses to start without a configured key for destination secrets.
    GCS_DELIVERY_SECRET_KEY: "shutdown-test-passphrase-0123456789",
    DATABASE_POOL_SIZE: "30",
    // All 20 requests of one key must be in flight at once: no per-credential cap here.
    GCS_CREDENTIAL_MAX_CONCURRENCY: "0",
    // The requests wait for the test's lock longer than the default statement timeout would allow.
    GCS_STATEMENT_TIMEOUT_MS: "30000",
    // Readiness is answered 503 for this long before the listener closes (what a load balancer sees).
    GCS_SHUTDOWN_DELAY_MS: "1500",
  });
});
afterAll(async () => {
  if (server?.child.exitCode === null) server.child.kill("SIGKILL");
  pg?.stop();
});

interface Answer {
  status: number;
  headers: http.IncomingHttpHeaders;
  body: string;
}

/** One request on its own connection. */
function get(path: string, token?: string): Promise<Answer> {
  return new Promise((resolve, reject) => {
    const req = http.get(`${server.url}${path}`, { agent: false, headers: token ? { Authorization: `Bearer ${token}` } : {} }, (res) => {
      let body = "";
      res.on("data", (d) => (body += d));
      res.on("end", () => resolve({ status: res.statusCode!, headers: res.headers, body }));
      res.on("error", reject);
    });
    req.on("error", reject);
  });
}

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

// A test that fails while its lock is held must not leave the next one waiting on it.
const lockers: Client[] = [];
afterEach(async () => {
  await Promise.all(lockers.splice(0).map((l) => l.end().catch(() => undefined)));
});

it("drains on SIGTERM: readyz 503, no new connections, every request in flight answered 200, exit code 0", async () => {
  const token = manifest.groups.A.credentials.api_key;
  const path = "/v1/guests?limit=5";
  const expected = await get(path, token);
  expect(expected.status).toBe(200);
  expect((await get("/readyz")).status).toBe(200);

  const locker = new Client({ connectionString: databaseUrl });
  locker.on("error", () => undefined); // dropped with the database if the test fails midway
  lockers.push(locker);
  await locker.connect();
  await locker.query("BEGIN; LOCK TABLE guest_profiles IN ACCESS EXCLUSIVE MODE");
  const inFlight = Array.from({ length: 20 }, () => get(path, token));
  // Wait until all 20 are blocked on the lock inside PostgreSQL.
  const waiting = async () =>
    Number(
      (await locker.query("SELECT count(*) FROM pg_locks WHERE NOT granted AND relation = 'guest_profiles'::regclass")).rows[0].count,
    );
  for (let i = 0; i < 200 && (await waiting()) < 20; i++) await sleep(50);
  expect(await waiting()).toBeGreaterThanOrEqual(20);

  server.child.kill("SIGTERM");
  await sleep(300);
  // Still accepting for GCS_SHUTDOWN_DELAY_MS, but not ready: a load balancer takes it out.
  const readyz = await get("/readyz");
  expect(readyz.status).toBe(503);
  contract().assert({ method: "GET", url: "/readyz", status: 503, headers: readyz.headers as Record<string, string | undefined>, contentType: readyz.headers["content-type"], body: JSON.parse(readyz.body) });
  expect(JSON.parse(readyz.body)).toEqual({ error: "unavailable", detail: expect.any(String) });
  expect(readyz.headers.connection).toBe("close");
  // Then the listener closes: new connections are refused while the 20 are still waiting. (A
  // connection the kernel queued just as the listener closed is reset, not refused: look again.)
  let refused: NodeJS.ErrnoException | undefined;
  for (let i = 0; i < 60 && refused?.code !== "ECONNREFUSED"; i++) {
    refused = await get("/healthz").then(
      () => undefined,
      (err: NodeJS.ErrnoException) => err,
    );
    if (refused?.code !== "ECONNREFUSED") await sleep(100);
  }
  expect(refused?.code).toBe("ECONNREFUSED");
  expect(server.child.exitCode).toBeNull();

  await locker.query("COMMIT");
  await locker.end();
  const answers = await Promise.all(inFlight);
  for (const a of answers) {
    expect(a.status).toBe(200);
    expect(a.body).toBe(expected.body);
    expect(a.headers.connection).toBe("close");
  }
  expect(await server.exited).toBe(0);
  const stopped = server.log.find((l) => l.msg === "stopped");
  expect(stopped).toMatchObject({ drained: true, workerStopped: true });
  expect(server.log.filter((l) => l.level >= 50)).toEqual([]);
});

it("exits 0 by GCS_SHUTDOWN_TIMEOUT_MS even when a request cannot finish, closing its connection", async () => {
  const stuck = await serve({ DATABASE_URL: databaseUrl, GCS_STATEMENT_TIMEOUT_MS: "30000", GCS_SHUTDOWN_TIMEOUT_MS: "1000" });
  const locker = new Client({ connectionString: databaseUrl });
  locker.on("error", () => undefined);
  await locker.connect();
  try {
    await locker.query("BEGIN; LOCK TABLE guest_profiles IN ACCESS EXCLUSIVE MODE");
    const token = manifest.groups.A.credentials.api_key;
    const request = fetch(`${stuck.url}/v1/guests?limit=5`, { headers: { Authorization: `Bearer ${token}` } }).then(
      (res) => res.status,
      (err: Error) => err,
    );
    await sleep(500);
    const signalled = Date.now();
    stuck.child.kill("SIGTERM");
    expect(await stuck.exited).toBe(0);
    const took = Date.now() - signalled;
    expect(took).toBeGreaterThanOrEqual(1000);
    expect(took).toBeLessThan(5000);
    expect(String(await request)).toMatch(/fetch failed/); // cut at the deadline, not answered
    expect(stuck.log.find((l) => l.msg === "stopped")).toMatchObject({ drained: false });
  } finally {
    await locker.query("ROLLBACK").catch(() => undefined);
    await locker.end();
    if (stuck.child.exitCode === null) stuck.child.kill("SIGKILL");
  }
});

it("warned at start that GCS_PUBLIC_URL is unset in production (the OAuth metadata would name localhost)", () => {
  const warning = server.log.find((line) => String(line.msg).startsWith("GCS_PUBLIC_URL is not set"));
  expect(warning).toMatchObject({ level: 40, publicUrl: expect.stringMatching(/^http:\/\/localhost:\d+$/) });
});
