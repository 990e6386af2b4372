// `gcs serve` started with credentials in its connection strings' query parameters (and userinfo):
// the start-up lines name the databases (host, port, database) but never a secret. The replica here
// is the primary itself, so its health check logs it as out of reads (not a standby), by its URL.
import { cloneTemplateDatabase } from "../helpers/app";
import { serve, type ServeProcess } from "../helpers/serve";

const SECRETS = ["userinfo-pw-41d2", "query-pw-83aa", "replica-pw-0c9e", "replica-sslpw-77f1", "replica-token-5b3d"];

let db: { url: string; drop(): Promise<void> };
let server: ServeProcess | undefined;

beforeAll(async () => {
  db = await cloneTemplateDatabase();
});

afterAll(async () => {
  if (server) {
    server.child.kill("SIGTERM");
    await server.exited;
  }
  await db?.drop();
});

it("logs neither the password of DATABASE_URL nor the credential parameters of DATABASE_REPLICA_URL", async () => {
  const primary = new URL(db.url);
  if (!primary.username) primary.username = "postgres";
  primary.password = SECRETS[0];
  primary.searchParams.set("password", SECRETS[1]);
  primary.searchParams.set("application_name", "gcs-redaction-test");
  const replica = new URL(db.url);
  replica.searchParams.set("password", SECRETS[2]);
  replica.searchParams.set("sslpassword", SECRETS[3]);
  replica.searchParams.set("auth_token", SECRETS[4]);

  // The test server trusts local connections: the passwords are carried, never checked.
  server = await serve({ DATABASE_URL: primary.href, DATABASE_REPLICA_URL: replica.href, GCS_REPLICA_CHECK_MS: "200" });
  const deadline = Date.now() + 20_000;
  while (!server.log.some((l) => l.msg.startsWith("read replica out of reads")) && Date.now() < deadline) await new Promise((r) => setTimeout(r, 100));

  const ready = server.log.find((l) => l.msg === "database ready")!;
  expect(ready.database).toContain(`${primary.hostname}:${primary.port}${primary.pathname}`);
  expect(new URL(String(ready.database)).searchParams.get("password")).toBe("redacted");
  expect(new URL(String(ready.database)).searchParams.get("application_name")).toBe("gcs-redaction-test");
  const out = server.log.find((l) => l.msg.startsWith("read replica out of reads"))!;
  expect(new URL(String(out.replica)).searchParams.get("sslpassword")).toBe("redacted");
  const output = server.output();
  for (const secret of SECRETS) expect(output).not.toContain(secret);
}, 60_000);
