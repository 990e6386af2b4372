// Tables: curated or filter-defined working lists, their stored members, and the members a filter
// document selects (evaluated in one SQL statement, data/filter-document.ts).
import type { Prisma } from "../generated/prisma/client";
import { filterSql, MEMBER_MODEL, type MemberType } from "./filter-document";
import type { Readers } from "./readers";
import { allInstantsAsText, instantsAsText, type AsText } from "./prisma-rows";
import { columns, sql, type RowShape } from "./sql";
import { given } from "./where";

export interface TableFilter {
  kind?: string | null;
  memberType?: string | null;
  propertyId?: string | null;
}

export type TableRow = AsText<Prisma.GuestTableGetPayload<object>>;

const ID_ONLY: RowShape = { id: "value" };
const oldestFirst = (model: "GuestProfile" | "MasterProfile") => sql`${columns(model)("createdAt")}, ${columns(model)("id")}`;

export function tables(r: Readers) {
  const tableWhere = (f: TableFilter): Prisma.GuestTableWhereInput => given({ kind: f.kind, memberType: f.memberType, propertyId: f.propertyId });
  return {
    page: async (f: TableFilter, skip: number, take: number): Promise<TableRow[]> =>
      allInstantsAsText(await r.prisma.guestTable.findMany({ where: tableWhere(f), orderBy: [{ createdAt: "asc" }, { id: "asc" }], skip, take })),
    count: (f: TableFilter) => r.prisma.guestTable.count({ where: tableWhere(f) }),
    byId: async (id: string): Promise<TableRow | null> => instantsAsText(await r.prisma.guestTable.findUnique({ where: { id } })),

    /** A curated table's stored members, in the order they were added. */
    members: async (tableId: string, skip: number, take: number) =>
      allInstantsAsText(await r.prisma.tableMember.findMany({ where: { tableId }, orderBy: [{ addedAt: "asc" }, { memberId: "asc" }], skip, take })),
    memberCount: (tableId: string) => r.prisma.tableMember.count({ where: { tableId } }),

    /** Stored member counts of these curated tables (0 for none). */
    async memberCounts(tableIds: readonly string[]): Promise<Map<string, number>> {
      const counts = await r.prisma.tableMember.groupBy({ by: ["tableId"], where: { tableId: { in: [...tableIds] } }, _count: { _all: true } });
      return new Map(counts.map((c) => [c.tableId, c._count._all]));
    },

    /**
     * The members of `memberType` a filter document selects now, oldest first. The document is
     * validated here, before anything is read (an invalid one is a 400).
     */
    matching(memberType: MemberType, filterDoc: unknown) {
      const where = [filterSql(r.scope, memberType, filterDoc)];
      const from = MEMBER_MODEL[memberType];
      return {
        ids: (skip: number, take: number) => r.sql.rows<{ id: string }>({ from, shape: ID_ONLY, where, orderBy: oldestFirst(from), limit: take, offset: skip }),
        count: () => r.sql.count({ from, where }),
      };
    },
  };
}
