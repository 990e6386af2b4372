// Per-request DataLoaders: every relation is fetched in one batched read per level, in key order.
// The batch functions are data/ functions, so relations are read with the same tenant scope and
// the same row types as root queries.
import DataLoader from "dataloader";
import type { Data } from "../data";
import { GUEST_ROW, type GuestRow } from "../data/guests";
import type { RowShape } from "../data/models";

/** One row per key (or null), matched by `id`. */
function byId<T extends { id: string }>(fetch: (ids: string[]) => Promise<T[]>) {
  return new DataLoader<string, T | null>(async (ids) => {
    const rows = new Map((await fetch([...ids])).map((row) => [row.id, row]));
    return ids.map((id) => rows.get(id) ?? null);
  });
}

/** One value per key (or null): `fetch` answers [key, value] pairs. */
function valueById<V>(fetch: (ids: string[]) => Promise<[string, V][]>) {
  return new DataLoader<string, V | null>(async (ids) => {
    const values = new Map(await fetch([...ids]));
    return ids.map((id) => values.get(id) ?? null);
  });
}

/** All rows per key, matched by a foreign key, in the order the read returns them. */
function byForeignKey<T>(fetch: (keys: string[]) => Promise<T[]>, keyOf: (row: T) => string | null) {
  return new DataLoader<string, T[]>(async (keys) => {
    const groups = new Map<string, T[]>(keys.map((k) => [k, []]));
    for (const row of await fetch([...keys])) groups.get(keyOf(row) ?? "")?.push(row);
    return keys.map((k) => groups.get(k)!);
  });
}

/**
 * A foreign-key loader per column set (graphql/selection.ts), for rows read with only the columns
 * a selection needs: `loaders.x(shape).load(key)`.
 */
function byForeignKeyPerShape<Row>(fetch: (keys: string[], shape: RowShape) => Promise<Row[]>, key: keyof Row & string) {
  const made = new Map<RowShape, DataLoader<string, Row[]>>();
  return (shape: RowShape) => {
    let loader = made.get(shape);
    if (!loader) {
      loader = byForeignKey((ids) => fetch(ids, shape), (row) => row[key] as string | null);
      made.set(shape, loader);
    }
    return loader;
  };
}

type ByGuestRow = { id: string; guestProfileId: string | null };

export function createLoaders(data: Data) {
  const guest = byId((ids) => data.guests.byIds(ids));
  return {
    property: byId((ids) => data.properties.byIds(ids)),
    integration: byId((ids) => data.properties.integrationsByIds(ids)),
    /** Only the name or provider, in plain SQL: the guest context's labels. */
    propertyName: valueById(async (ids) => (await data.properties.namesByIds(ids)).map((p) => [p.id, p.name])),
    integrationProvider: valueById(async (ids) => (await data.properties.providersByIds(ids)).map((i) => [i.id, i.provider])),
    masterProfile: byId((ids) => data.masterProfiles.byIds(ids)),
    guest,
    /**
     * The guest profile id holding a contact point (key: "email" or "phone", NUL, the value as consent
     * stores it) when one person holds it; null when none or several people do.
     */
    guestIdByContact: new DataLoader<string, string | null>(async (keys) => {
      const points = keys.map((k) => k.split("\u0000") as [string, string]);
      const holders = await data.guests.holdersOfContacts(
        points.filter(([type]) => type === "email").map(([, v]) => v),
        points.filter(([type]) => type === "phone").map(([, v]) => v),
      );
      const byContact = new Map(holders.map((h) => [h.contact, h.persons === 1 ? h.id : null]));
      return points.map(([, value]) => byContact.get(value) ?? null);
    }),
    guestsByMasterProfile: byForeignKeyPerShape<GuestRow>(async (ids, shape) => {
      const rows = await data.guests.byMasterProfiles(ids, shape);
      // Whole rows, in the same scope, are what the guest loader reads: a later guest.load of one of
      // them (a link's other side, docs/identity-resolution.md) then costs no statement.
      if (shape === GUEST_ROW) for (const row of rows) guest.prime(row.id, row);
      return rows;
    }, "masterProfileId"),
    reservationsByGuest: byForeignKeyPerShape<ByGuestRow>((ids, shape) => data.stays.reservationsOfGuests(ids, shape), "guestProfileId"),
    transactionsByGuest: byForeignKeyPerShape<ByGuestRow>((ids, shape) => data.stays.transactionsOfGuests(ids, shape), "guestProfileId"),
    transactionsByReservation: byForeignKey((ids) => data.stays.transactionsOfReservations(ids), (row) => row.reservationId),
    consentsByGuest: byForeignKey((ids) => data.consents.ofGuests(ids), (row) => row.guestProfileId),
    reviewsByGuest: byForeignKey((ids) => data.engagement.reviewsOfGuests(ids), (row) => row.guestProfileId),
    actionsByGuest: byForeignKey((ids) => data.engagement.actionsOfGuests(ids), (row) => row.guestProfileId),
    loyaltyByGuest: byForeignKey((ids) => data.loyalty.membersOfGuests(ids), (row) => row.guestProfileId),
    linksByMaster: byForeignKey((ids) => data.masterProfileLinks.ofMasters(ids), (row) => row.masterProfileId),
    linkByGuest: valueById(async (ids) => (await data.masterProfileLinks.ofGuests(ids)).map((link) => [link.guestProfileId, link])),
    loyaltyByMaster: byForeignKey((ids) => data.loyalty.membersOfMasterProfiles(ids), (row) => row.masterProfileId),
    bindingsByTable: byForeignKey((ids) => data.destinations.ofTables(ids), (binding) => binding.tableId),
    memberCountByTable: new DataLoader<string, number>(async (ids) => {
      const counts = await data.tables.memberCounts(ids);
      return ids.map((id) => counts.get(id) ?? 0);
    }),
  };
}

export type Loaders = ReturnType<typeof createLoaders>;
