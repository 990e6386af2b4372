// What `gcs simulate` changes (the demo, issue 41): a row and the event that describes it, written by
// one statement (a data-modifying WITH), so they commit together as a property system's sync would:
// no reader ever sees an event whose row says otherwise, or a changed row without its event. The
// statement-level triggers on reservations and guest_profiles record the change for the dashboard
// rollups (migration 20261127150000_metric_rollups), as they do for every other write.
import type { PrismaClient } from "../../generated/prisma/client";

/** A stay moves forward only: tentative → confirmed → checked_in → checked_out. */
const NEXT_STATUS = `CASE r.status WHEN 'tentative' THEN 'confirmed' WHEN 'confirmed' THEN 'checked_in' WHEN 'checked_in' THEN 'checked_out' END`;
const ADVANCING = `('tentative', 'confirmed', 'checked_in')`;

export interface SimulationTargets {
  /** Reservations with a next status. */
  reservations: string[];
  guests: string[];
  /** The cities the group's guests live in, for a guest who moves. */
  cities: string[];
}

/** Up to `n` random reservations that can move forward and `n` random guests of the group. */
export async function simulationTargets(db: PrismaClient, propertyGroupId: string, n: number): Promise<SimulationTargets> {
  const reservations = await db.$queryRawUnsafe<{ id: string }[]>(
    `SELECT r.id::text AS id FROM reservations r WHERE r.property_group_id = $1::uuid AND r.status::text IN ${ADVANCING} ORDER BY random() LIMIT $2`,
    propertyGroupId,
    n,
  );
  const guests = await db.$queryRaw<{ id: string }[]>`
    SELECT id::text AS id FROM guest_profiles WHERE property_group_id = ${propertyGroupId}::uuid ORDER BY random() LIMIT ${n}`;
  const cities = await db.$queryRaw<{ city: string }[]>`
    SELECT DISTINCT city FROM guest_profiles WHERE property_group_id = ${propertyGroupId}::uuid AND city IS NOT NULL ORDER BY city LIMIT 50`;
  return { reservations: reservations.map((r) => r.id), guests: guests.map((g) => g.id), cities: cities.map((c) => c.city) };
}

/** The event's seq, or undefined when the reservation has no next status any more (another writer moved it on). */
export async function advanceReservation(db: PrismaClient, propertyGroupId: string, id: string): Promise<string | undefined> {
  const rows = await db.$queryRawUnsafe<{ seq: string }[]>(
    `WITH changed AS (
       UPDATE reservations r SET status = (${NEXT_STATUS})::"ReservationStatus", updated_at = now()
       WHERE r.property_group_id = $1::uuid AND r.id = $2::uuid AND r.status::text IN ${ADVANCING}
       RETURNING r.id, r.guest_profile_id, r.property_id, r.integration_id, r.status)
     INSERT INTO events (property_group_id, entity_type, entity_id, guest_profile_id, property_id, integration_id, operation, delta, occurred_at)
     SELECT $1::uuid, 'reservation'::"EntityType", c.id, c.guest_profile_id, c.property_id, c.integration_id, 'update'::"EventOperation",
       jsonb_build_object('status', c.status), now()
     FROM changed c RETURNING seq::text AS seq`,
    propertyGroupId,
    id,
  );
  return rows[0]?.seq;
}

/**
 * A guest's profile changes: a VIP guest moves between the group's two tiers (VIP, VVIP: the guest
 * stays a VIP, so the master profile's vip flag stays true), anyone else moves to `city`. Returns the
 * event's seq, or undefined when the guest is gone.
 */
export async function changeGuest(db: PrismaClient, propertyGroupId: string, id: string, city: string): Promise<string | undefined> {
  const rows = await db.$queryRaw<{ seq: string }[]>`
    WITH changed AS (
      UPDATE guest_profiles g SET
        vip_code = CASE g.vip_code WHEN 'VIP' THEN 'VVIP' WHEN 'VVIP' THEN 'VIP' ELSE g.vip_code END,
        city = CASE WHEN g.vip_code IN ('VIP', 'VVIP') THEN g.city ELSE ${city} END,
        updated_at = now()
      WHERE g.property_group_id = ${propertyGroupId}::uuid AND g.id = ${id}::uuid
      RETURNING g.id, g.property_id, g.integration_id, g.vip_code, g.city)
    INSERT INTO events (property_group_id, entity_type, entity_id, guest_profile_id, property_id, integration_id, operation, delta, occurred_at)
    SELECT ${propertyGroupId}::uuid, 'guest_profile'::"EntityType", c.id, c.id, c.property_id, c.integration_id, 'update'::"EventOperation",
      CASE WHEN c.vip_code IN ('VIP', 'VVIP') THEN jsonb_build_object('vip_code', c.vip_code) ELSE jsonb_build_object('city', c.city) END, now()
    FROM changed c RETURNING seq::text AS seq`;
  return rows[0]?.seq;
}

/** Every property group, oldest first (for a message naming them). */
export function propertyGroupList(db: PrismaClient): Promise<{ id: string; name: string }[]> {
  return db.$queryRaw<{ id: string; name: string }[]>`SELECT id::text AS id, name FROM property_groups ORDER BY created_at, id`;
}
