// `gcs serve` with OTEL_EXPORTER_OTLP_ENDPOINT set: spans reach an OTLP/HTTP collector (a local
// stand-in here) at <endpoint>/v1/traces, as service guest-context-service, continuing the caller's
// trace; what is still buffered is exported when the server stops. A real process: the OTLP exporter
// loads node:http with import(), which Jest's module system does not run.
import { createServer, type Server } from "node:http";
import type { AddressInfo } from "node:net";
import { cloneTemplateDatabase, loadManifest } from "../helpers/app";
import { serve, type ServeProcess } from "../helpers/serve";

interface OtlpExport {
  resourceSpans: {
    resource: { attributes: { key: string; value: { stringValue?: string } }[] };
    scopeSpans: { spans: { traceId: string; parentSpanId?: string; name: string }[] }[];
  }[];
}

let collector: Server;
const received: { path: string; body: OtlpExport }[] = [];
let clone: Awaited<ReturnType<typeof cloneTemplateDatabase>>;
let server: ServeProcess | undefined;

beforeAll(async () => {
  collector = createServer((req, res) => {
    let body = "";
    req.on("data", (chunk) => (body += chunk));
    req.on("end", () => {
      received.push({ path: req.url ?? "", body: JSON.parse(body) as OtlpExport });
      res.writeHead(200, { "Content-Type": "application/json" }).end("{}");
    });
  });
  await new Promise<void>((resolve) => collector.listen(0, "127.0.0.1", resolve));
  clone = await cloneTemplateDatabase();
});
afterAll(async () => {
  if (server?.child.exitCode === null) {
    server.child.kill("SIGKILL");
    await server.exited;
  }
  await new Promise((resolve) => collector.close(resolve));
  await clone?.drop();
});

it("exports the request's spans over OTLP/HTTP as guest-context-service, in the caller's trace", async () => {
  const endpoint = `http://127.0.0.1:${(collector.address() as AddressInfo).port}/`;
  server = await serve({ DATABASE_URL: clone.url, OTEL_EXPORTER_OTLP_ENDPOINT: endpoint });
  const traceId = "0af7651916cd43dd8448eb211c80319c";
  const res = await fetch(`${server.url}/v1/properties`, {
    headers: { Authorization: `Bearer ${loadManifest().groups.A.credentials.api_key}`, traceparent: `00-${traceId}-b7ad6b7169203331-01` },
  });
  expect(res.status).toBe(200);
  server.child.kill("SIGTERM"); // drains, then flushes the batch
  expect(await server.exited).toBe(0);

  expect(received.map((r) => r.path)).toContain("/v1/traces");
  const batches = received.flatMap((r) => r.body.resourceSpans);
  for (const batch of batches) {
    expect(batch.resource.attributes.find((a) => a.key === "service.name")?.value.stringValue).toBe("guest-context-service");
  }
  const spans = batches.flatMap((b) => b.scopeSpans.flatMap((s) => s.spans)).filter((s) => s.traceId === traceId);
  const names = spans.map((s) => s.name);
  expect(names).toEqual(expect.arrayContaining(["GET /v1/properties", "query ListProperties", "SELECT gcs_credential_api_key"]));
  expect(spans.find((s) => s.name === "GET /v1/properties")?.parentSpanId).toBe("b7ad6b7169203331");
});
