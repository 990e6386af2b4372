// What the gauges of /metrics read at scrape time (observability/metrics.ts GaugeReaders), over the
// running app's database: its pools and replica health (no query), and one statement each for the
// delivery and webhook gauges, on the primary (the replica may lag behind the engine's checkpoints).
import type { Pool } from "pg";
import type { Database } from "../../db/database";
import { webhookGaugeRows } from "./webhook-sender";
import { deliveryGaugeRows } from "./delivery";
import { acrossGroups } from "../../db/session";

export function gaugeReaders(db: Database) {
  return {
    pools: (): [string, Pool][] => (db.replica ? [["primary", db.primaryPool], ["replica", db.replica.pool]] : [["primary", db.primaryPool]]),
    replica: () => db.replica && { address: db.replica.address, status: db.replica.status() },
    // Backlogs over every group: the metrics cross-group path (db/session.ts).
    delivery: (limit: number) => acrossGroups("metrics", () => deliveryGaugeRows(db.primary, limit)),
    webhooks: (limit: number) => acrossGroups("metrics", () => webhookGaugeRows(db.primary, limit)),
  };
}
