import { writeFileSync } from "node:fs";
import path from "node:path";
import { resolveSessionKey } from "../../auth/session";
import { deliverySecretKey } from "../../delivery/run";
import { loadFixtures, MIN_GUESTS, streamProgress } from "../../fixtures";
import { refreshRollups } from "../../rollups/refresh";
import { restoreCredentials, snapshotCredentials, type KeptCredentials } from "../../data/stores/kept-credentials";
import { atLeast } from "../args";
import { cliConfig, withDatabase } from "../database";

/** A fixed contract (fixture-contract.md): progress on stderr, the manifest to --out, a one-line reason on failure. */
export async function fixtures(opts: { out: string; seed: number; guests: string }): Promise<void> {
  const guests = atLeast(opts.guests, "--guests", MIN_GUESTS);
  const config = cliConfig();
  await withDatabase(config, true, async (db) => {
    const started = Date.now();
    // The groups are replaced with every row they hold: keys and webhook endpoints made outside the
    // fixtures (a running demo's key, a reader's own) are put back, and the rest is said.
    const snapshot = await snapshotCredentials(db.primary);
    const manifest = await loadFixtures(db.primary, {
      seed: opts.seed,
      guests,
      sessionKey: await resolveSessionKey(config.session, db.primary),
      deliveryKey: await deliverySecretKey(config, db.primary),
      // On a terminal the rate line of a big load is rewritten in place; elsewhere plain lines.
      progress: streamProgress(process.stderr),
      // PGlite has one connection; on PostgreSQL groups A and B load side by side.
      concurrency: db.embedded ? 1 : 2,
    });
    const kept = await restoreCredentials(db.primary, snapshot);
    if (Object.values(kept).some((count) => count > 0)) console.error(keptLine(kept));
    // Dashboard rollups built now, so that a server started on this data answers from them at once.
    const rollupsStarted = Date.now();
    await refreshRollups(db);
    console.error(`dashboard rollups built in ${((Date.now() - rollupsStarted) / 1000).toFixed(1)}s`);
    const out = path.resolve(opts.out);
    writeFileSync(out, JSON.stringify(manifest, null, 2) + "\n", { mode: 0o600 });
    console.error(`fixtures loaded in ${((Date.now() - started) / 1000).toFixed(1)}s; manifest written to ${out}`);
  });
}

function keptLine(k: KeptCredentials): string {
  const n = (count: number, one: string, many: string) => `${count} ${count === 1 ? one : many}`;
  const kept = `kept ${n(k.apiKeys, "API key", "API keys")} and ${n(k.webhookEndpoints, "webhook endpoint", "webhook endpoints")} made outside the fixtures (they work as before)`;
  if (k.apiKeysRemoved + k.webhookEndpointsRemoved + k.partnersRemoved + k.connectorsRemoved === 0) return kept;
  const removed = [
    n(k.apiKeysRemoved, "API key", "API keys"),
    n(k.webhookEndpointsRemoved, "webhook endpoint", "webhook endpoints"),
    n(k.partnersRemoved, "partner client", "partner clients"),
  ].join(", ");
  return `${kept}; removed with the replaced groups: ${removed} and ${n(k.connectorsRemoved, "MCP connector", "MCP connectors")} (create them again)`;
}
