// Tables: curated or filter-defined working lists (not consent records, not segments). Offset pages.
// A curated table's members are stored; a filter-defined table's members are whoever its filter
// document selects now, evaluated exactly like a preview.
import type { GraphQLResolveInfo } from "graphql";
import type { RequestContext } from "../../context";
import type { TableFilter } from "../../data/tables";
import { offsetPage } from "../../pagination/offset";
import type { MemberType } from "../../data/filter-document";
import { invalidRequest, notFound } from "../../errors";
import { selectedUnder } from "../selection";

interface OffsetArgs {
  limit?: number | null;
  offset?: number | null;
  includeTotal?: boolean | null;
}

interface MemberNode {
  memberId: string;
  memberType: MemberType;
  addedAt: string | null;
  /** The member's row, read with the page (withRows); undefined: its resolver loads it. */
  row?: Record<string, unknown> | null;
}

const MEMBER_TYPES: MemberType[] = ["guest_profile", "master_profile"];

/** Members selected by a filter document, oldest first: one SQL statement (and one for the total). */
async function evaluate(ctx: RequestContext, info: GraphQLResolveInfo, memberType: MemberType, filterDoc: unknown, args: OffsetArgs) {
  const members = ctx.data.tables.matching(memberType, filterDoc);
  const page = await offsetPage({ ...args, fetch: members.ids, count: members.count });
  return { ...page, nodes: await withRows(ctx, info, memberType, page.nodes.map((r): MemberNode => ({ memberId: r.id, memberType, addedAt: null }))) };
}

/**
 * The page's members with their guest or master profile rows, when the selection asks for them: one
 * read of every member's row by id, the statement the loader batches, without a load and a promise
 * per member (a page of 100 members spent more on those than on its rows).
 */
async function withRows(ctx: RequestContext, info: GraphQLResolveInfo, memberType: MemberType, nodes: MemberNode[]) {
  const field = memberType === "guest_profile" ? "guest" : "masterProfile";
  if (nodes.length === 0 || !selectedUnder(info, "nodes").has(field)) return nodes;
  const ids = nodes.map((n) => n.memberId);
  const rows = memberType === "guest_profile" ? await ctx.data.guests.byIds(ids) : await ctx.data.masterProfiles.byIds(ids);
  const byId = new Map<string, Record<string, unknown>>(rows.map((r) => [r.id, r]));
  for (const n of nodes) n.row = byId.get(n.memberId) ?? null;
  return nodes;
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

    tableMembers: async (_: unknown, args: OffsetArgs & { tableId: string }, ctx: RequestContext, info: GraphQLResolveInfo) => {
      const table = await loadTable(ctx, args.tableId);
      if (table.kind === "filter") return evaluate(ctx, info, table.memberType, table.filterDoc, args);
      const page = await offsetPage({
        ...args,
        fetch: (skip, take) => ctx.data.tables.members(table.id, table.memberType, skip, take),
        count: () => ctx.data.tables.memberCount(table.id),
      });
      const nodes = page.nodes.map((m): MemberNode => ({ memberId: m.memberId, memberType: table.memberType, addedAt: m.addedAt }));
      return { ...page, nodes: await withRows(ctx, info, table.memberType, nodes) };
    },

    tablePreview: (_: unknown, args: OffsetArgs & { memberType: MemberType; filterDoc: unknown }, ctx: RequestContext, info: GraphQLResolveInfo) => {
      if (!MEMBER_TYPES.includes(args.memberType)) throw invalidRequest(`member_type must be one of ${MEMBER_TYPES.join(", ")}`);
      return evaluate(ctx, info, args.memberType, args.filterDoc, args);
    },
  },

  Table: {
    memberCount: (t: { id: string; kind: string }, _: unknown, ctx: RequestContext) =>
      t.kind === "curated" ? ctx.loaders.memberCountByTable.load(t.id) : null,
  },

  TableMember: {
    guest: (m: MemberNode, _: unknown, ctx: RequestContext) =>
      m.memberType !== "guest_profile" ? null : m.row !== undefined ? m.row : ctx.loaders.guest.load(m.memberId),
    masterProfile: (m: MemberNode, _: unknown, ctx: RequestContext) =>
      m.memberType !== "master_profile" ? null : m.row !== undefined ? m.row : ctx.loaders.masterProfile.load(m.memberId),
  },
};
