// A PostgreSQL restart under load, against the real server process: while the database is down
// every request is answered 503 `unavailable` with Retry-After (never a 500, never a wrong body),
// the log says so once and says once when it is back, and requests succeed again within seconds.
// The test runs its own PostgreSQL: stopping the shared one would break every other test file.
import type { FixtureManifest } from "../../src/fixtures";
import type { TestPostgres } from "../helpers/postgres";
import { startOwnPostgres } from "../helpers/own-postgres";
import { serve, type ServeProcess } from "../helpers/serve";
import { contract } from "../helpers/openapi-validate";

let pg: TestPostgres;
let server: ServeProcess;
let manifest: FixtureManifest;

beforeAll(async () => {
  ({ pg, manifest } = await startOwnPostgres());
  server = await serve({ DATABASE_URL: pg.adminUrl() });
});

afterAll(async () => {
  server?.child.kill("SIGKILL");
  pg?.stop();
});

interface Outcome {
  /** When the request was sent. */
  sent: number;
  /** When its answer was read. */
  at: number;
  status: number;
  body: string;
  retryAfter: string | null;
}

const OUTAGE_LINE = "database unavailable: answering 503 unavailable until it is back";
const RECOVERY_LINE = "database reachable again";

it("answers 503 unavailable while PostgreSQL is down, logs the outage once, and serves again within 5 s of its restart", async () => {
  const headers = { Authorization: `Bearer ${manifest.groups.A.credentials.api_key}` };
  const url = `${server.url}/v1/guests?limit=5`;
  const expected = await (await fetch(url, { headers })).text();
  expect(JSON.parse(expected).data).toHaveLength(5);

  // Bounded load: 4 clients, one request at a time each, until told to stop.
  const outcomes: Outcome[] = [];
  let running = true;
  const client = async () => {
    while (running) {
      const sent = Date.now();
      const res = await fetch(url, { headers });
      if (res.status !== 200) await contract().assertFetch("GET", url, res); // as openapi.yaml documents it
      outcomes.push({ sent, at: Date.now(), status: res.status, body: await res.text(), retryAfter: res.headers.get("retry-after") });
      await new Promise((r) => setTimeout(r, 5));
    }
  };
  const clients = Array.from({ length: 4 }, client);

  await new Promise((r) => setTimeout(r, 500));
  await pg.halt();
  const haltedAt = Date.now();
  await new Promise((r) => setTimeout(r, 1500));
  // /graphql refuses the same way while the database is down.
  const graphql = await fetch(`${server.url}/graphql`, {
    method: "POST",
    headers: { ...headers, "Content-Type": "application/json" },
    body: JSON.stringify({ query: "{ guests(limit: 5) { nodes { id } } }" }),
  });
  expect(graphql.status).toBe(503);
  expect(graphql.headers.get("retry-after")).toBe("2");
  expect(((await graphql.json()) as { errors: { extensions: { code: string } }[] }).errors[0].extensions.code).toBe("unavailable");

  const restartingAt = Date.now();
  await pg.resume();
  const resumedAt = Date.now();
  while (Date.now() - resumedAt < 5000 && !outcomes.some((o) => o.at > resumedAt && o.status === 200)) {
    await new Promise((r) => setTimeout(r, 50));
  }
  await new Promise((r) => setTimeout(r, 500));
  running = false;
  await Promise.all(clients);

  // Only two answers, each exactly right.
  for (const o of outcomes) {
    if (o.status === 200) expect(o.body).toBe(expected);
    else {
      expect(o.status).toBe(503);
      expect(JSON.parse(o.body)).toEqual({ error: "unavailable", detail: expect.any(String) });
      expect(o.retryAfter).toBe("2");
    }
  }
  const refused = outcomes.filter((o) => o.status === 503);
  expect(refused.length).toBeGreaterThan(0);
  // Sent while it was down (an answer read just after the halt may have been served just before it).
  expect(outcomes.filter((o) => o.sent > haltedAt && o.at < restartingAt).map((o) => o.status)).not.toContain(200);
  const firstOk = outcomes.find((o) => o.at > resumedAt && o.status === 200);
  expect(firstOk).toBeDefined();
  expect(firstOk!.at - resumedAt).toBeLessThan(5000);
  // Once back, it stays back.
  expect(outcomes.filter((o) => o.at > firstOk!.at).every((o) => o.status === 200)).toBe(true);

  // The process is alive, and its log has one line for the outage and one for its end (with the
  // count of requests refused: the load's 503s and the /graphql one), and no error lines.
  expect(server.child.exitCode).toBeNull();
  expect((await fetch(`${server.url}/readyz`)).status).toBe(200);
  const outage = server.log.filter((l) => l.msg === OUTAGE_LINE);
  const recovery = server.log.filter((l) => l.msg === RECOVERY_LINE);
  expect(outage).toHaveLength(1);
  expect(recovery).toHaveLength(1);
  expect(recovery[0].refused).toBe(refused.length + 1);
  expect(recovery[0].downMs).toEqual(expect.any(Number));
  expect(server.log.filter((l) => l.level >= 50)).toEqual([]);
  console.log(
    `outage: ${outcomes.length} requests, ${refused.length} answered 503; first 200 ${firstOk!.at - resumedAt} ms after the restart; ` +
      `${server.log.length} log lines in all (one access line per request)`,
  );
});
