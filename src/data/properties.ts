// Properties, their integrations and integration connections, channels and spaces: small sets, read
// in scoped SQL (data/sql.ts) like the large ones: through Prisma a list cost the service about 1 ms of
// CPU per query in its query compiler, whatever the rows. A connection (operators only) stays on Prisma.
import type { CursorKey } from "../pagination/cursor";
import { createdAtKey, createdAtSql } from "./keyset";
import { Channel, Integration, Property, Space, type RowOf } from "./models";
import { instantsAsText } from "./prisma-rows";
import type { Readers } from "./readers";
import { anyOf, columns, equals, raw, sql } from "./sql";

export interface ChannelFilter {
  propertyId?: string | null;
  kind?: string | null;
  active?: boolean | null;
}

export interface SpaceFilter extends ChannelFilter {
  minCapacity?: number | null;
}

export type PropertyRow = RowOf<typeof Property>;
export type IntegrationRow = RowOf<typeof Integration>;
export type ChannelRow = RowOf<typeof Channel>;
export type SpaceRow = RowOf<typeof Space>;

export const resourceKeyOf = createdAtKey;

const channels = createdAtSql("Channel");
const spaces = createdAtSql("Space");
const C = columns("Channel");
const S = columns("Space");
const byName = sql`t.name, t.id`;

export function properties(r: Readers) {
  return {
    all: (): Promise<PropertyRow[]> => r.sql.rows<PropertyRow>({ from: "Property", shape: Property.row, orderBy: byName, prepare: true }),
    byIds: (ids: readonly string[]): Promise<PropertyRow[]> =>
      r.sql.rows<PropertyRow>({ from: "Property", shape: Property.row, where: [anyOf(raw("t.id"), ids)], prepare: true }),

    /** The names of these properties, one SQL statement (the guest context names its rows' properties). */
    namesByIds: (ids: readonly string[]) =>
      r.sql.query<{ id: string; name: string }>((scoped) => sql`SELECT t.id, t.name FROM properties t WHERE ${scoped("Property", "t")} AND ${anyOf(raw("t.id"), ids)}`, { prepare: true }),
    /** The source systems (providers) of these integrations, one SQL statement. */
    providersByIds: (ids: readonly string[]) =>
      r.sql.query<{ id: string; provider: string }>(
        (scoped) => sql`SELECT t.id, t.provider FROM integrations t WHERE ${scoped("Integration", "t")} AND ${anyOf(raw("t.id"), ids)}`,
        { prepare: true },
      ),

    integrations: (): Promise<IntegrationRow[]> => r.sql.rows<IntegrationRow>({ from: "Integration", shape: Integration.row, orderBy: byName, prepare: true }),
    integrationsByIds: (ids: readonly string[]): Promise<IntegrationRow[]> =>
      r.sql.rows<IntegrationRow>({ from: "Integration", shape: Integration.row, where: [anyOf(raw("t.id"), ids)], prepare: true }),
    /** An integration's connection; the ciphertext never leaves the database. */
    connectionOf: async (integrationId: string) =>
      instantsAsText(await r.prisma.integrationConnection.findFirst({ where: { integrationId }, omit: { secretCiphertext: true } })),

    channelPage: (f: ChannelFilter, after: CursorKey | null, take: number): Promise<ChannelRow[]> =>
      channels.page<ChannelRow>(r.sql, [equals(C("propertyId"), f.propertyId), equals(C("kind"), f.kind), equals(C("active"), f.active)], after, take, Channel.row),
    spacePage: (f: SpaceFilter, after: CursorKey | null, take: number): Promise<SpaceRow[]> => {
      const conditions = [
        equals(S("propertyId"), f.propertyId),
        equals(S("kind"), f.kind),
        equals(S("active"), f.active),
        f.minCapacity == null ? undefined : sql`${S("capacity")} >= ${f.minCapacity}`,
      ];
      return spaces.page<SpaceRow>(r.sql, conditions, after, take, Space.row);
    },
  };
}
