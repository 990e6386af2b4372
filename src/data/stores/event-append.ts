// Appending to the event log from outside the API (issue 29): `gcs events append` (an operator's
// backfill, and the tests). The API itself stays read-only; this is the documented way new events
// reach the log besides the upstream systems (`gcs simulate`, the demo, writes rows with their
// events: simulation.ts; the fixture loader, whose deltas are its own few fields). appendEvents
// holds the size bound of one event.
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

/**
 * The most one event's delta may hold: its JSON text in UTF-8 bytes. A delta is the changed fields
 * of one record, a few hundred bytes; the bound keeps one event small enough for every reader of the
 * log (a /v1/events page, a webhook POST, an SSE message) to carry whole. Documented in
 * docs/receive-changes.md; every appender (gcs events append, gcs simulate) is held to it by appendEvents.
 */
export const MAX_EVENT_DELTA_BYTES = 64 * 1024;

/** Why this delta is over the bound, or undefined. */
export function deltaSizeProblem(delta: unknown): string | undefined {
  const bytes = Buffer.byteLength(JSON.stringify(delta ?? {}), "utf8");
  return bytes > MAX_EVENT_DELTA_BYTES ? `delta is ${bytes} bytes of JSON; at most ${MAX_EVENT_DELTA_BYTES} (64 KiB) per event` : undefined;
}

export class EventTooLargeError extends Error {}

/** The most rows one INSERT carries (9 parameters a row, under PostgreSQL's 65,535). */
const ROWS_PER_STATEMENT = 500;

/**
 * Appends the events in the given order, all or none: one transaction, 500 rows a statement.
 * Returns the seqs. An event whose delta is over MAX_EVENT_DELTA_BYTES refuses the whole call.
 */
export async function appendEvents(db: PrismaClient, propertyGroupId: string, events: NewEvent[]): Promise<string[]> {
  if (events.length === 0) return [];
  events.forEach((e, i) => {
    const tooLarge = deltaSizeProblem(e.delta);
    if (tooLarge) throw new EventTooLargeError(`event ${i + 1}: ${tooLarge}`);
  });
  const insert = (tx: Prisma.TransactionClient, batch: NewEvent[]) => {
    const rows = batch.map(
      (e) => Prisma.sql`(${propertyGroupId}::uuid, ${e.entityType}::"EntityType", ${e.entityId}::uuid, ${e.guestProfileId}::uuid, ${e.propertyId}::uuid,
        ${e.integrationId}::uuid, ${e.operation}::"EventOperation", ${JSON.stringify(e.delta ?? {})}::jsonb, ${e.occurredAt})`,
    );
    return tx.$queryRaw<{ seq: string }[]>`
      INSERT INTO events (property_group_id, entity_type, entity_id, guest_profile_id, property_id, integration_id, operation, delta, occurred_at)
      VALUES ${Prisma.join(rows)} RETURNING seq::text AS seq`;
  };
  // A backfill of a million lines is a few minutes of inserts: more than the default 5-second timeout.
  return db.$transaction(
    async (tx) => {
      const seqs: string[] = [];
      for (let i = 0; i < events.length; i += ROWS_PER_STATEMENT) seqs.push(...(await insert(tx, events.slice(i, i + ROWS_PER_STATEMENT))).map((r) => r.seq));
      return seqs;
    },
    { maxWait: 60_000, timeout: 60 * 60_000 },
  );
}

/** Of the given ids, those of the group's guest profiles and of its integrations (to check a line's ids). */
export async function groupMembers(db: PrismaClient, propertyGroupId: string, ids: { guestProfileIds: string[]; integrationIds: string[] }) {
  const guests = await db.$queryRaw<{ id: string }[]>`
    SELECT id::text FROM guest_profiles WHERE property_group_id = ${propertyGroupId}::uuid AND id = ANY(${ids.guestProfileIds}::uuid[])`;
  const integrations = await db.$queryRaw<{ id: string }[]>`
    SELECT id::text FROM integrations WHERE property_group_id = ${propertyGroupId}::uuid AND id = ANY(${ids.integrationIds}::uuid[])`;
  return { guestProfileIds: new Set(guests.map((r) => r.id)), integrationIds: new Set(integrations.map((r) => r.id)) };
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
