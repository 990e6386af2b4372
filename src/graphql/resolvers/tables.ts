// Tables: curated or filter-defined working lists (not consent records, not segments). Offset pages.
// A curated table's members are stored; a filter-defined table's members are whoever its filter
// document selects now, evaluated exactly like a preview.
import type { RequestContext } from "../../context";
import type { TableFilter } from "../../data/tables";
import { offsetPage } from "../../pagination/offset";
import type { MemberType } from "../../data/filter-document";
import { invalidRequest, notFound } from "../../errors";

interface OffsetArgs {
  limit?: number | null;
  offset?: number | null;
  includeTotal?: boolean | null;
}

interface MemberNode {
  memberId: string;
  memberType: MemberType;
  addedAt: string | null;
}

const MEMBER_TYPES: MemberType[] = ["guest_profile", "master_profile"];

/** Members selected by a filter document, oldest first: one SQL statement (and one for the total). */
async function evaluate(ctx: RequestContext, memberType: MemberType, filterDoc: unknown, args: OffsetArgs) {
  const members = ctx.data.tables.matching(memberType, filterDoc);
  const page = await offsetPage({ ...args, fetch: members.ids, count: members.count });
  return { ...page, nodes: page.nodes.map((r): MemberNode => ({ memberId: r.id, memberType, addedAt: null })) };
}

async function loadTable(ctx: RequestContext, id: string) {
  const table = await ctx.data.tables.byId(id);
  if (!table) throw notFound("table", id);
  return table;
}

export const tableResolvers = {
  Query: {
    tables: (_: unknown, args: OffsetArgs & { filter?: TableFilter | null }, ctx: RequestContext) => {
      const f = args.filter ?? {};
      return offsetPage({
        ...args,
        fetch: (skip, take) => ctx.data.tables.page(f, skip, take),
        count: () => ctx.data.tables.count(f),
      });
    },

    table: (_: unknown, args: { id: string }, ctx: RequestContext) => loadTable(ctx, args.id),

    tableMembers: async (_: unknown, args: OffsetArgs & { tableId: string }, ctx: RequestContext) => {
      const table = await loadTable(ctx, args.tableId);
      if (table.kind === "filter") return evaluate(ctx, table.memberType, table.filterDoc, args);
      const page = await offsetPage({
        ...args,
        fetch: (skip, take) => ctx.data.tables.members(table.id, table.memberType, skip, take),
        count: () => ctx.data.tables.memberCount(table.id),
      });
      return { ...page, nodes: page.nodes.map((m): MemberNode => ({ memberId: m.memberId, memberType: table.memberType, addedAt: m.addedAt })) };
    },

    tablePreview: (_: unknown, args: OffsetArgs & { memberType: MemberType; filterDoc: unknown }, ctx: RequestContext) => {
      if (!MEMBER_TYPES.includes(args.memberType)) throw invalidRequest(`member_type must be one of ${MEMBER_TYPES.join(", ")}`);
      return evaluate(ctx, args.memberType, args.filterDoc, args);
    },
  },

  Table: {
    memberCount: (t: { id: string; kind: string }, _: unknown, ctx: RequestContext) =>
      t.kind === "curated" ? ctx.loaders.memberCountByTable.load(t.id) : null,
  },

  TableMember: {
    guest: (m: MemberNode, _: unknown, ctx: RequestContext) => (m.memberType === "guest_profile" ? ctx.loaders.guest.load(m.memberId) : null),
    masterProfile: (m: MemberNode, _: unknown, ctx: RequestContext) =>
      m.memberType === "master_profile" ? ctx.loaders.masterProfile.load(m.memberId) : null,
  },
};
