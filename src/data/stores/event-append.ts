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

/**
 * The most events one append may hold (a `gcs events append` file): the append is one transaction,
 * and while it is open every timeline waits for it (events count as finished only below the oldest
 * open transaction: data/events.ts), so /v1/events, both streams and every webhook of every group
 * stall until it commits. At this bound it stays open a few seconds (docs/receive-changes.md).
 */
export const MAX_APPEND_EVENTS = 100_000;

export class AppendTooLargeError extends Error {}

/** The most JSON one INSERT carries: a typical file is one statement; PostgreSQL takes up to 1 GB a parameter. */
const STATEMENT_JSON_BYTES = 32 * 1024 * 1024;

/**
 * Appends the events in the given order, all or none, and returns their seqs. Over MAX_APPEND_EVENTS
 * events, or one delta over MAX_EVENT_DELTA_BYTES, refuses the whole call. The rows are made into
 * JSON first; the transaction then holds only the INSERTs, one per 32 MiB of JSON (json_to_recordset,
 * in file order), so it stays open as briefly as the rows take to write.
 */
export async function appendEvents(db: PrismaClient, propertyGroupId: string, events: NewEvent[]): Promise<string[]> {
  if (events.length === 0) return [];
  if (events.length > MAX_APPEND_EVENTS) throw new AppendTooLargeError(`${events.length} events; at most ${MAX_APPEND_EVENTS} in one append: split the file`);
  const chunks: string[][] = [[]];
  let chunkBytes = 0;
  events.forEach((e, i) => {
    const tooLarge = deltaSizeProblem(e.delta);
    if (tooLarge) throw new EventTooLargeError(`event ${i + 1}: ${tooLarge}`);
    const row = JSON.stringify({
      n: i,
      entity_type: e.entityType,
      entity_id: e.entityId,
      guest_profile_id: e.guestProfileId,
      property_id: e.propertyId,
      integration_id: e.integrationId,
      operation: e.operation,
      delta: e.delta ?? {},
      occurred_at: e.occurredAt.toISOString(),
    });
    const bytes = Buffer.byteLength(row, "utf8") + 1;
    if (chunkBytes + bytes > STATEMENT_JSON_BYTES && chunks[chunks.length - 1].length > 0) {
      chunks.push([]);
      chunkBytes = 0;
    }
    chunks[chunks.length - 1].push(row);
    chunkBytes += bytes;
  });
  const insert = (tx: Prisma.TransactionClient, rows: string[]) => tx.$queryRaw<{ seq: string }[]>`
    INSERT INTO events (property_group_id, entity_type, entity_id, guest_profile_id, property_id, integration_id, operation, delta, occurred_at)
    SELECT ${propertyGroupId}::uuid, e.entity_type::"EntityType", e.entity_id, e.guest_profile_id, e.property_id, e.integration_id,
           e.operation::"EventOperation", e.delta, e.occurred_at
    FROM json_to_recordset(${`[${rows.join(",")}]`}::json) AS e(n int, entity_type text, entity_id uuid, guest_profile_id uuid, property_id uuid,
           integration_id uuid, operation text, delta jsonb, occurred_at timestamptz)
    ORDER BY e.n
    RETURNING seq::text AS seq`;
  // Above Prisma's 5-second default: 100,000 events take a few seconds on a loaded machine.
  return db.$transaction(
    async (tx) => {
      const seqs: string[] = [];
      for (const rows of chunks) for (const r of await insert(tx, rows)) seqs.push(r.seq);
      return seqs;
    },
    { maxWait: 60_000, timeout: 5 * 60_000 },
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
