// The OpenTelemetry SDK, loaded by tracing.ts only when tracing is on: a Node tracer provider
// (AsyncLocalStorage context, W3C trace context and baggage propagation) exporting OTLP over HTTP.
// Spans go to OTEL_EXPORTER_OTLP_ENDPOINT + /v1/traces, as the OTLP spec has it; the exporter reads
// the other standard variables (OTEL_EXPORTER_OTLP_HEADERS, timeouts) itself.
import * as api from "@opentelemetry/api";
import { OTLPTraceExporter } from "@opentelemetry/exporter-trace-otlp-http";
import { resourceFromAttributes } from "@opentelemetry/resources";
import { BatchSpanProcessor, SimpleSpanProcessor, type SpanExporter } from "@opentelemetry/sdk-trace-base";
import { NodeTracerProvider } from "@opentelemetry/sdk-trace-node";
import { ATTR_SERVICE_NAME, ATTR_SERVICE_VERSION } from "@opentelemetry/semantic-conventions";
// eslint-disable-next-line @typescript-eslint/no-require-imports
const { version } = require("../../package.json") as { version: string };

export const SERVICE_NAME = "guest-context-service";

export function startSdk(exporter?: SpanExporter, endpoint?: string) {
  // A given exporter (tests) gets every span as it ends; OTLP gets batches.
  const processor = exporter
    ? new SimpleSpanProcessor(exporter)
    : new BatchSpanProcessor(new OTLPTraceExporter(endpoint ? { url: `${endpoint.replace(/\/+$/, "")}/v1/traces` } : {}));
  const provider = new NodeTracerProvider({
    resource: resourceFromAttributes({ [ATTR_SERVICE_NAME]: SERVICE_NAME, [ATTR_SERVICE_VERSION]: version }),
    spanProcessors: [processor],
  });
  provider.register();
  return {
    api,
    tracer: provider.getTracer(SERVICE_NAME, version),
    async shutdown() {
      await provider.shutdown();
      api.trace.disable();
      api.context.disable();
      api.propagation.disable();
    },
  };
}
