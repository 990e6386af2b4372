// Properties, their integrations and integration connections, channels and spaces: small sets read
// through Prisma.
import type { Prisma } from "../generated/prisma/client";
import type { CursorKey } from "../pagination/cursor";
import { createdAtKey, createdAtPrisma } from "./keyset";
import { allInstantsAsText, instantsAsText, type AsText } from "./prisma-rows";
import type { Readers } from "./readers";
import { given } from "./where";
import { anyOf, raw, sql } from "./sql";

export interface ChannelFilter {
  propertyId?: string | null;
  kind?: string | null;
  active?: boolean | null;
}

export interface SpaceFilter extends ChannelFilter {
  minCapacity?: number | null;
}

export type PropertyRow = AsText<Prisma.PropertyGetPayload<object>>;
export type IntegrationRow = AsText<Prisma.IntegrationGetPayload<object>>;

export const resourceKeyOf = createdAtKey;

const byName = [{ name: "asc" as const }, { id: "asc" as const }];

export function properties(r: Readers) {
  return {
    all: async (): Promise<PropertyRow[]> => allInstantsAsText(await r.prisma.property.findMany({ orderBy: byName })),
    byIds: async (ids: readonly string[]): Promise<PropertyRow[]> =>
      allInstantsAsText(await r.prisma.property.findMany({ where: { id: { in: [...ids] } } })),

    /** The names of these properties, one SQL statement (the guest context names its rows' properties). */
    namesByIds: (ids: readonly string[]) =>
      r.sql.query<{ id: string; name: string }>((scoped) => sql`SELECT t.id, t.name FROM properties t WHERE ${scoped("Property", "t")} AND ${anyOf(raw("t.id"), ids)}`, { prepare: true }),
    /** The source systems (providers) of these integrations, one SQL statement. */
    providersByIds: (ids: readonly string[]) =>
      r.sql.query<{ id: string; provider: string }>(
        (scoped) => sql`SELECT t.id, t.provider FROM integrations t WHERE ${scoped("Integration", "t")} AND ${anyOf(raw("t.id"), ids)}`,
        { prepare: true },
      ),

    integrations: async (): Promise<IntegrationRow[]> => allInstantsAsText(await r.prisma.integration.findMany({ orderBy: byName })),
    integrationsByIds: async (ids: readonly string[]): Promise<IntegrationRow[]> =>
      allInstantsAsText(await r.prisma.integration.findMany({ where: { id: { in: [...ids] } } })),
    /** An integration's connection; the ciphertext never leaves the database. */
    connectionOf: async (integrationId: string) =>
      instantsAsText(await r.prisma.integrationConnection.findFirst({ where: { integrationId }, omit: { secretCiphertext: true } })),

    channelPage: async (f: ChannelFilter, after: CursorKey | null, take: number) =>
      allInstantsAsText(await r.prisma.channel.findMany(createdAtPrisma.page(given({ propertyId: f.propertyId, kind: f.kind, active: f.active }), after, take))),
    spacePage: async (f: SpaceFilter, after: CursorKey | null, take: number) => {
      const where = given({ propertyId: f.propertyId, kind: f.kind, active: f.active, capacity: f.minCapacity == null ? undefined : { gte: f.minCapacity } });
      return allInstantsAsText(await r.prisma.space.findMany(createdAtPrisma.page(where, after, take)));
    },
  };
}
