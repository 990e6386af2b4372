// OpenTelemetry spans (src/observability/tracing.ts) through the in-memory exporter: the HTTP
// server span continuing the caller's traceparent, the GraphQL operation under it, and every SQL
// statement (the SQL read paths' and Prisma's) under those, with its text and never its values.
import { execFileSync } from "node:child_process";
import path from "node:path";
import { InMemorySpanExporter, type ReadableSpan } from "@opentelemetry/sdk-trace-base";
import { SpanKind, SpanStatusCode } from "@opentelemetry/api";
import { hashToken } from "../../src/auth/secrets";
import { startTracing, statementSpanName, type Tracing } from "../../src/observability/tracing";
import { capturingLogger, startTestApp, type TestApp } from "../helpers/app";

const exporter = new InMemorySpanExporter();
const log = capturingLogger();
let tracing: Tracing;
let t: TestApp;

beforeAll(async () => {
  tracing = startTracing({ exporter });
  t = await startTestApp({}, log.logger);
});
afterAll(async () => {
  await t?.close();
  await tracing?.shutdown();
});

const bearer = (token: string) => ({ Authorization: `Bearer ${token}` });
const parentOf = (span: ReadableSpan) => span.parentSpanContext?.spanId;
const idOf = (span: ReadableSpan) => span.spanContext().spanId;

/** The spans of the trace whose server span has ended (it ends last, when the response finishes). */
async function trace(match: (server: ReadableSpan) => boolean): Promise<{ server: ReadableSpan; spans: ReadableSpan[] }> {
  for (let i = 0; i < 100; i++) {
    const server = exporter.getFinishedSpans().find((s) => s.kind === SpanKind.SERVER && match(s));
    if (server) return { server, spans: exporter.getFinishedSpans().filter((s) => s.spanContext().traceId === server.spanContext().traceId) };
    await new Promise((resolve) => setTimeout(resolve, 20));
  }
  throw new Error("no server span ended");
}

/** Every span of `spans` that descends from `root`. */
function descendants(root: ReadableSpan, spans: ReadableSpan[]): ReadableSpan[] {
  const children = spans.filter((s) => parentOf(s) === idOf(root));
  return children.flatMap((c) => [c, ...descendants(c, spans)]);
}

describe("tracing", () => {
  beforeEach(() => exporter.reset());

  it("a REST request: server span (caller's trace) → GraphQL operation → SQL statements, text without values", async () => {
    const key = t.manifest.groups.A.credentials.api_key;
    const traceId = "4bf92f3577b34da6a3ce929d0e0e4736";
    const callerSpan = "00f067aa0ba902b7";
    const res = await t.api.get("/v1/guests?limit=2").set(bearer(key)).set("traceparent", `00-${traceId}-${callerSpan}-01`);
    expect(res.status).toBe(200);

    const { server, spans } = await trace((s) => s.spanContext().traceId === traceId);
    expect(parentOf(server)).toBe(callerSpan);
    expect(server.name).toBe("GET /v1/guests");
    expect(server.attributes).toMatchObject({ "http.request.method": "GET", "http.route": "/v1/guests", "http.response.status_code": 200 });

    const operation = spans.find((s) => s.name === "query ListGuests")!;
    expect(parentOf(operation)).toBe(idOf(server));
    expect(operation.attributes).toEqual({ "graphql.operation.type": "query", "graphql.operation.name": "ListGuests" });

    const sql = spans.filter((s) => s.kind === SpanKind.CLIENT);
    // The credential lookup runs before the operation; the page's statements inside it.
    const lookup = sql.find((s) => parentOf(s) === idOf(server))!;
    expect(lookup.attributes["db.query.text"]).toMatch(/FROM gcs_credential_api_key\(\$1\)/);
    expect(lookup.name).toBe("SELECT gcs_credential_api_key");
    const inOperation = sql.filter((s) => parentOf(s) === idOf(operation));
    expect(inOperation.length).toBeGreaterThanOrEqual(1);
    expect(inOperation.some((s) => /FROM guest_profiles/.test(String(s.attributes["db.query.text"])))).toBe(true);
    expect(descendants(server, spans)).toHaveLength(spans.length - 1);
    for (const s of sql) {
      expect(s.attributes).toMatchObject({ "db.system": "postgresql", "db.system.name": "postgresql" });
      expect(String(s.attributes["db.query.text"])).toMatch(/^\s*(SELECT|WITH)\b/i);
    }
    // The access log line names the trace.
    expect(log.lines.map((l) => JSON.parse(l)).find((l) => l.msg === "request" && l.traceId === traceId)?.path).toBe("/v1/guests");
    // Placeholders only: neither the token, its hash nor the tenant's id is in any span.
    const everything = JSON.stringify(spans.map((s) => [s.name, s.attributes, s.events]));
    for (const secret of [key, hashToken(key), t.manifest.groups.A.id]) expect(everything).not.toContain(secret);
  });

  it("a /graphql request: the named operation, Prisma's statements under it, errors recorded", async () => {
    const key = t.manifest.groups.A.credentials.api_key;
    // An integration's connection is read through Prisma (operators only: a session token).
    const connection = await t.admin.integrationConnection.findFirst({ where: { propertyGroupId: t.manifest.groups.A.id } });
    const res = await t.api
      .post("/graphql")
      .set(bearer(t.manifest.groups.A.credentials.session_token))
      .send({ query: "query TraceProbe($id: UUID!) { integrationConnection(integrationId: $id) { id } }", variables: { id: connection!.integrationId } });
    expect(res.body).toEqual({ data: { integrationConnection: { id: connection!.id } } });
    const { server, spans } = await trace((s) => s.name === "POST /graphql");
    expect(parentOf(server)).toBeUndefined(); // no traceparent: a trace of its own
    const operation = spans.find((s) => s.name === "query TraceProbe")!;
    expect(parentOf(operation)).toBe(idOf(server));
    const statements = spans.filter((s) => parentOf(s) === idOf(operation));
    // Prisma's SQL, quoted its way, with $n placeholders.
    const prisma = statements.find((s) => /"integration_connections"/.test(String(s.attributes["db.query.text"])));
    expect(prisma).toBeDefined();
    expect(prisma!.kind).toBe(SpanKind.CLIENT);
    expect(prisma!.name).toBe("SELECT integration_connections");
    expect(operation.status.code).not.toBe(SpanStatusCode.ERROR);

    exporter.reset();
    const missing = await t.api
      .post("/graphql")
      .set(bearer(key))
      .send({ query: 'query TraceMissing { guest(id: "00000000-0000-4000-8000-000000000000") { id } }' });
    expect(missing.body.errors[0].extensions.code).toBe("not_found");
    const failed = await trace((s) => s.name === "POST /graphql");
    const failing = failed.spans.find((s) => s.name === "query TraceMissing")!;
    expect(failing.status.code).toBe(SpanStatusCode.ERROR);
    expect(failing.events.map((e) => e.attributes?.["exception.type"])).toEqual(["not_found"]);
  });

  it("costs no SDK when off: loading the server loads no OpenTelemetry SDK, exporter or ruru", () => {
    const root = path.resolve(__dirname, "../..");
    const loaded = execFileSync(
      path.join(root, "node_modules/.bin/node"),
      ["--require", "tsx/cjs", "-e", 'require("./src/server"); process.stdout.write(JSON.stringify(Object.keys(require.cache)))'],
      { cwd: root, encoding: "utf8" },
    );
    const modules = JSON.parse(loaded) as string[];
    expect(modules.some((m) => m.includes("src/observability/tracing.ts"))).toBe(true);
    // prom-client alone loads @opentelemetry/api (the no-op API, for exemplars).
    expect(modules.filter((m) => /@opentelemetry\/(?!api\/)|tracing-sdk|\/ruru\//.test(m))).toEqual([]);
  });

  it("names a statement by its first keyword and table", () => {
    expect(statementSpanName('SELECT "public"."properties"."id" FROM "public"."properties" WHERE 1=1')).toBe("SELECT properties");
    expect(statementSpanName("INSERT INTO rate_limit_counters AS c (key) VALUES ($1)")).toBe("INSERT rate_limit_counters");
    expect(statementSpanName("  with x as (select 1) select * from x")).toBe("WITH x");
    expect(statementSpanName("")).toBe("postgresql");
  });
});
