// Per-request DataLoaders: every relation is fetched in one batched query per level, through the
// request's scoped client (so with the same tenant scope as root queries), in key order.
import DataLoader from "dataloader";
import type { PrismaClient } from "../generated/prisma/client";

/** One row per key (or null), matched by `id`. */
function byId<T extends { id: string }>(fetch: (ids: string[]) => Promise<T[]>) {
  return new DataLoader<string, T | null>(async (ids) => {
    const rows = new Map((await fetch([...ids])).map((row) => [row.id, row]));
    return ids.map((id) => rows.get(id) ?? null);
  });
}

/** All rows per key, matched by a foreign key, in the order the query returns them. */
function byForeignKey<T>(fetch: (keys: string[]) => Promise<T[]>, keyOf: (row: T) => string | null) {
  return new DataLoader<string, T[]>(async (keys) => {
    const groups = new Map<string, T[]>(keys.map((k) => [k, []]));
    for (const row of await fetch([...keys])) groups.get(keyOf(row) ?? "")?.push(row);
    return keys.map((k) => groups.get(k)!);
  });
}

const oldestFirst = [{ createdAt: "asc" as const }, { id: "asc" as const }];

export function createLoaders(db: PrismaClient) {
  return {
    property: byId((ids) => db.property.findMany({ where: { id: { in: ids } } })),
    integration: byId((ids) => db.integration.findMany({ where: { id: { in: ids } } })),
    masterProfile: byId((ids) => db.masterProfile.findMany({ where: { id: { in: ids } } })),
    guest: byId((ids) => db.guestProfile.findMany({ where: { id: { in: ids } } })),
    guestsByMasterProfile: byForeignKey(
      (ids) => db.guestProfile.findMany({ where: { masterProfileId: { in: ids } }, orderBy: oldestFirst }),
      (row) => row.masterProfileId,
    ),
    reservationsByGuest: byForeignKey(
      (ids) => db.reservation.findMany({ where: { guestProfileId: { in: ids } }, orderBy: oldestFirst }),
      (row) => row.guestProfileId,
    ),
    transactionsByGuest: byForeignKey(
      (ids) => db.transaction.findMany({ where: { guestProfileId: { in: ids } }, orderBy: oldestFirst }),
      (row) => row.guestProfileId,
    ),
    transactionsByReservation: byForeignKey(
      (ids) => db.transaction.findMany({ where: { reservationId: { in: ids } }, orderBy: oldestFirst }),
      (row) => row.reservationId,
    ),
    consentsByGuest: byForeignKey(
      (ids) => db.consentObservation.findMany({ where: { guestProfileId: { in: ids } }, orderBy: oldestFirst }),
      (row) => row.guestProfileId,
    ),
    reviewsByGuest: byForeignKey(
      (ids) => db.review.findMany({ where: { guestProfileId: { in: ids } }, orderBy: oldestFirst }),
      (row) => row.guestProfileId,
    ),
    actionsByGuest: byForeignKey(
      (ids) => db.action.findMany({ where: { guestProfileId: { in: ids } }, orderBy: oldestFirst }),
      (row) => row.guestProfileId,
    ),
    loyaltyByGuest: byForeignKey(
      (ids) => db.loyaltyMember.findMany({ where: { guestProfileId: { in: ids } }, orderBy: oldestFirst }),
      (row) => row.guestProfileId,
    ),
    loyaltyByMaster: byForeignKey(
      (ids) => db.loyaltyMember.findMany({ where: { masterProfileId: { in: ids } }, orderBy: oldestFirst }),
      (row) => row.masterProfileId,
    ),
    bindingsByTable: byForeignKey(
      (ids) => db.destinationBinding.findMany({ where: { tableId: { in: ids } }, orderBy: { provider: "asc" } }),
      (row) => row.tableId,
    ),
    memberCountByTable: new DataLoader<string, number>(async (ids) => {
      const counts = await db.tableMember.groupBy({ by: ["tableId"], where: { tableId: { in: [...ids] } }, _count: { _all: true } });
      const byTable = new Map(counts.map((c) => [c.tableId, c._count._all]));
      return ids.map((id) => byTable.get(id) ?? 0);
    }),
  };
}

export type Loaders = ReturnType<typeof createLoaders>;
