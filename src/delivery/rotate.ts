// `gcs secrets rotate`: re-seals every destination connection secret under the current key.
//
// Batches of connections in id order, each in its own transaction holding the rows' locks
// (SELECT … FOR UPDATE), so a rotation running twice, or beside anything else that writes a
// connection's secret, never loses a write. Delivery workers only read the secret: they see the old
// or the new ciphertext, and open either as long as they run with the new key configured and the
// old one among the previous keys. So: configure every instance first, rotate second, and only
// then drop the old key.
//
// Cross-tenant maintenance: runs on the unscoped client. Never reports a secret, only counts and
// the ids of connections whose secret no configured key opens.
import type { DataClient as PrismaClient } from "../data/client";
import { resealConnectionBatch } from "../data/stores/delivery";
import { resealWebhookBatch } from "../data/stores/webhook-sender";
import { kidOfSealed, open, seal, type Keyring } from "./secret-box";
import { acrossGroups } from "../db/session";

export interface RotationReport {
  /** Re-sealed under the current key (they were v1, or under a previous key). */
  rotated: number;
  /** Already sealed under the current key: left as they are. */
  current: number;
  /** No configured key opens them (another deployment's key, a placeholder, damage): left as they are. */
  failed: number;
  failedConnectionIds: string[];
  /** kid of the current key. */
  kid: string;
  /** Webhook signing secrets (current and, during a rotation overlap, previous), the same way. */
  webhookSecrets: { rotated: number; current: number; failed: number; failedEndpointIds: string[] };
}

/** Every group's sealed secrets (gcs secrets rotate): the CLI's cross-group path (db/session.ts). */
export function rotateSecrets(prisma: PrismaClient, ring: Keyring, batchSize = 100): Promise<RotationReport> {
  return acrossGroups("CLI", () => rotateAll(prisma, ring, batchSize));
}

async function rotateAll(prisma: PrismaClient, ring: Keyring, batchSize: number): Promise<RotationReport> {
  const report: RotationReport = {
    rotated: 0, current: 0, failed: 0, failedConnectionIds: [], kid: ring.current.kid,
    webhookSecrets: { rotated: 0, current: 0, failed: 0, failedEndpointIds: [] },
  };
  let after: string | null = null;
  for (;;) {
    const last = await resealConnectionBatch(prisma, after, batchSize, (row) => {
      let plaintext: string;
      try {
        plaintext = open(row.secret_ciphertext, row.id, ring);
      } catch {
        report.failed++;
        report.failedConnectionIds.push(row.id);
        return null;
      }
      if (kidOfSealed(row.secret_ciphertext) === ring.current.kid) {
        report.current++;
        return null;
      }
      report.rotated++;
      return seal(plaintext, row.id, ring);
    });
    if (!last) break;
    after = last;
  }
  const w = report.webhookSecrets;
  for (let afterEndpoint: string | null = null; ; ) {
    const last: string | null = await resealWebhookBatch(prisma, afterEndpoint, batchSize, (id, ciphertext) => {
      let plaintext: string;
      try {
        plaintext = open(ciphertext, id, ring);
      } catch {
        w.failed++;
        if (!w.failedEndpointIds.includes(id)) w.failedEndpointIds.push(id);
        return null;
      }
      if (kidOfSealed(ciphertext) === ring.current.kid) {
        w.current++;
        return null;
      }
      w.rotated++;
      return seal(plaintext, id, ring);
    });
    if (!last) return report;
    afterEndpoint = last;
  }
}
