// Tables: curated or filter-defined working lists (not consent records, not segments). Offset pages.
// A curated table's members are stored; a filter-defined table's members are whoever its filter
// document selects now, evaluated exactly like a preview.
import type { GraphQLContext } from "../../context";
import type { Prisma } from "../../generated/prisma/client";
import { offsetPage } from "../../pagination/offset";
import { filterSql, type MemberType } from "../../tables/filter";
import { col, sql, type RowShape } from "../../db/scoped-sql";
import { invalidRequest, notFound } from "../errors";
import { given } from "./lists";

interface OffsetArgs {
  limit?: number | null;
  offset?: number | null;
  includeTotal?: boolean | null;
}

interface TableFilter {
  kind?: string | null;
  memberType?: string | null;
  propertyId?: string | null;
}

interface MemberNode {
  memberId: string;
  memberType: MemberType;
  addedAt: Date | null;
}

const MEMBER_TYPES: MemberType[] = ["guest_profile", "master_profile"];

const ID_ONLY: RowShape = { id: "value" };
const OLDEST_FIRST = sql`${col("createdAt")}, ${col("id")}`;

/** Members selected by a filter document, oldest first: one SQL statement (and one for the total). */
async function evaluate(ctx: GraphQLContext, memberType: MemberType, filterDoc: unknown, args: OffsetArgs) {
  const where = [filterSql(ctx.scope, memberType, filterDoc)];
  const from = memberType === "guest_profile" ? "GuestProfile" : "MasterProfile";
  const page = await offsetPage({
    ...args,
    fetch: (skip, take) => ctx.sql.rows<{ id: string }>({ from, shape: ID_ONLY, where, orderBy: OLDEST_FIRST, limit: take, offset: skip }),
    count: () => ctx.sql.count({ from, where }),
  });
  return { ...page, nodes: page.nodes.map((r): MemberNode => ({ memberId: r.id, memberType, addedAt: null })) };
}

async function loadTable(ctx: GraphQLContext, id: string) {
  const table = await ctx.db.guestTable.findUnique({ where: { id } });
  if (!table) throw notFound("table", id);
  return table;
}

export const tableResolvers = {
  Query: {
    tables: (_: unknown, args: OffsetArgs & { filter?: TableFilter | null }, ctx: GraphQLContext) => {
      const f = args.filter ?? {};
      const where: Prisma.GuestTableWhereInput = given({ kind: f.kind, memberType: f.memberType, propertyId: f.propertyId });
      return offsetPage({
        ...args,
        fetch: (skip, take) => ctx.db.guestTable.findMany({ where, orderBy: [{ createdAt: "asc" }, { id: "asc" }], skip, take }),
        count: () => ctx.db.guestTable.count({ where }),
      });
    },

    table: (_: unknown, args: { id: string }, ctx: GraphQLContext) => loadTable(ctx, args.id),

    tableMembers: async (_: unknown, args: OffsetArgs & { tableId: string }, ctx: GraphQLContext) => {
      const table = await loadTable(ctx, args.tableId);
      if (table.kind === "filter") return evaluate(ctx, table.memberType, table.filterDoc, args);
      const where = { tableId: table.id };
      const page = await offsetPage({
        ...args,
        fetch: (skip, take) => ctx.db.tableMember.findMany({ where, orderBy: [{ addedAt: "asc" }, { memberId: "asc" }], skip, take }),
        count: () => ctx.db.tableMember.count({ where }),
      });
      return { ...page, nodes: page.nodes.map((m): MemberNode => ({ memberId: m.memberId, memberType: table.memberType, addedAt: m.addedAt })) };
    },

    tablePreview: (_: unknown, args: OffsetArgs & { memberType: MemberType; filterDoc: unknown }, ctx: GraphQLContext) => {
      if (!MEMBER_TYPES.includes(args.memberType)) throw invalidRequest(`member_type must be one of ${MEMBER_TYPES.join(", ")}`);
      return evaluate(ctx, args.memberType, args.filterDoc, args);
    },
  },

  Table: {
    memberCount: (t: { id: string; kind: string }, _: unknown, ctx: GraphQLContext) =>
      t.kind === "curated" ? ctx.loaders.memberCountByTable.load(t.id) : null,
  },

  TableMember: {
    guest: (m: MemberNode, _: unknown, ctx: GraphQLContext) => (m.memberType === "guest_profile" ? ctx.loaders.guest.load(m.memberId) : null),
    masterProfile: (m: MemberNode, _: unknown, ctx: GraphQLContext) =>
      m.memberType === "master_profile" ? ctx.loaders.masterProfile.load(m.memberId) : null,
  },
};
