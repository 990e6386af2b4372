// The API (with the delivery worker unless turned off). `gcs deliver` runs the worker alone (deliver.ts).
import { loadConfig } from "../../config";
import { serveEmbeddedToLocalTools } from "../../embedded/server";
import { assertDeliveryKeyConfigured } from "../../delivery/run";
import { PREPARE_EMBEDDED_COMMAND } from "../program";
import { stopWithNpmParent } from "../npm-parent";

/* eslint-disable @typescript-eslint/no-require-imports */
export async function serve(): Promise<never> {
  const config = loadConfig();
  assertDeliveryKeyConfigured(config); // before anything starts: a one-line refusal
  // On the embedded database this process owns the data directory and serves it to the other gcs
  // commands. A new directory is prepared in a child process from now on, while this one loads the
  // server's modules (required only here, for that reason).
  serveEmbeddedToLocalTools(PREPARE_EMBEDDED_COMMAND, config.databaseUrl ? undefined : config.dataDir);
  const { startServer } = require("../../server") as typeof import("../../server");
  const { announceEmbeddedDemo } = require("../demo") as typeof import("../demo");
  const server = await startServer(config, async (running) => {
    if (running.services.db.embedded) await announceEmbeddedDemo(running);
  });
  // Drain (server.ts): readyz 503, stop accepting, finish requests in flight and the delivery batch,
  // exit 0 within GCS_SHUTDOWN_TIMEOUT_MS. A second signal ends the process at once.
  let stopping = false;
  const shutdown = (signal: string) => {
    stopping = true;
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
  stopWithNpmParent(() => stopping || shutdown("npm exited"));
  return new Promise<never>(() => undefined); // runs until a signal
}
/* eslint-enable @typescript-eslint/no-require-imports */
