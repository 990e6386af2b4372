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

/** All rows per key, matched by a foreign key. */
function byForeignKey<T>(fetch: (keys: string[]) => Promise<T[]>, keyOf: (row: T) => string | null) {
  return new DataLoader<string, T[]>(async (keys) => {
    const groups = new Map<string, T[]>(keys.map((k) => [k, []]));
    for (const row of await fetch([...keys])) groups.get(keyOf(row) ?? "")?.push(row);
    return keys.map((k) => groups.get(k)!);
  });
}

export function createLoaders(db: PrismaClient) {
  return {
    property: byId((ids) => db.property.findMany({ where: { id: { in: ids } } })),
    integration: byId((ids) => db.integration.findMany({ where: { id: { in: ids } } })),
    masterProfile: byId((ids) => db.masterProfile.findMany({ where: { id: { in: ids } } })),
    guestsByMasterProfile: byForeignKey(
      (ids) =>
        db.guestProfile.findMany({
          where: { masterProfileId: { in: ids } },
          orderBy: [{ createdAt: "asc" }, { id: "asc" }],
        }),
      (row) => row.masterProfileId,
    ),
  };
}

export type Loaders = ReturnType<typeof createLoaders>;
