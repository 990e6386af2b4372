// Properties, their integrations and integration connections, channels and spaces: small sets read
// through Prisma.
import type { Prisma } from "../generated/prisma/client";
import type { CursorKey } from "../pagination/cursor";
import { createdAtKeyOfDate, createdAtPrisma } from "./keyset";
import type { Readers } from "./readers";
import { given } from "./where";

export interface ChannelFilter {
  propertyId?: string | null;
  kind?: string | null;
  active?: boolean | null;
}

export interface SpaceFilter extends ChannelFilter {
  minCapacity?: number | null;
}

export type PropertyRow = Prisma.PropertyGetPayload<object>;
export type IntegrationRow = Prisma.IntegrationGetPayload<object>;

export const resourceKeyOf = createdAtKeyOfDate;

const byName = [{ name: "asc" as const }, { id: "asc" as const }];

export function properties(r: Readers) {
  return {
    all: () => r.prisma.property.findMany({ orderBy: byName }),
    byIds: (ids: readonly string[]) => r.prisma.property.findMany({ where: { id: { in: [...ids] } } }),

    integrations: () => r.prisma.integration.findMany({ orderBy: byName }),
    integrationsByIds: (ids: readonly string[]) => r.prisma.integration.findMany({ where: { id: { in: [...ids] } } }),
    /** An integration's connection; the ciphertext never leaves the database. */
    connectionOf: (integrationId: string) =>
      r.prisma.integrationConnection.findFirst({ where: { integrationId }, omit: { secretCiphertext: true } }),

    channelPage: (f: ChannelFilter, after: CursorKey | null, take: number) =>
      r.prisma.channel.findMany({
        where: { AND: [given({ propertyId: f.propertyId, kind: f.kind, active: f.active }), createdAtPrisma.after(after)] },
        orderBy: createdAtPrisma.orderBy,
        take,
      }),
    spacePage: (f: SpaceFilter, after: CursorKey | null, take: number) =>
      r.prisma.space.findMany({
        where: {
          AND: [
            given({ propertyId: f.propertyId, kind: f.kind, active: f.active, capacity: f.minCapacity == null ? undefined : { gte: f.minCapacity } }),
            createdAtPrisma.after(after),
          ],
        },
        orderBy: createdAtPrisma.orderBy,
        take,
      }),
  };
}
