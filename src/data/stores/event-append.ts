// Appending to the event log from outside the API (issue 29): `gcs events append` (an operator's
// backfill, and the tests). The API itself stays read-only; this is the documented way new events
// reach the log besides the upstream systems (`gcs simulate`, the demo, writes rows with their
// events: simulation.ts).
import { Prisma, type PrismaClient } from "../../generated/prisma/client";

export interface NewEvent {
  entityType: string;
  entityId: string;
  operation: "create" | "update" | "delete";
  delta: unknown;
  occurredAt: Date;
  guestProfileId: string | null;
  propertyId: string | null;
  integrationId: string | null;
}

/** One statement per call (a batch), in the given order; returns the seqs. */
export async function appendEvents(db: PrismaClient, propertyGroupId: string, events: NewEvent[]): Promise<string[]> {
  if (events.length === 0) return [];
  const rows = events.map(
    (e) => Prisma.sql`(${propertyGroupId}::uuid, ${e.entityType}::"EntityType", ${e.entityId}::uuid, ${e.guestProfileId}::uuid, ${e.propertyId}::uuid,
      ${e.integrationId}::uuid, ${e.operation}::"EventOperation", ${JSON.stringify(e.delta ?? {})}::jsonb, ${e.occurredAt})`,
  );
  const out = await db.$queryRaw<{ seq: string }[]>`
    INSERT INTO events (property_group_id, entity_type, entity_id, guest_profile_id, property_id, integration_id, operation, delta, occurred_at)
    VALUES ${Prisma.join(rows)} RETURNING seq::text AS seq`;
  return out.map((r) => r.seq);
}

/** The group's property ids (to check a line's property_id). */
export async function groupPropertyIds(db: PrismaClient, propertyGroupId: string): Promise<Set<string>> {
  const rows = await db.$queryRaw<{ id: string }[]>`SELECT id::text FROM properties WHERE property_group_id = ${propertyGroupId}::uuid`;
  return new Set(rows.map((r) => r.id));
}

/** The only property group, when there is exactly one (the embedded demo). */
export async function onlyGroupId(db: PrismaClient): Promise<string | undefined> {
  const rows = await db.$queryRaw<{ id: string }[]>`SELECT id::text FROM property_groups LIMIT 2`;
  return rows.length === 1 ? rows[0].id : undefined;
}
