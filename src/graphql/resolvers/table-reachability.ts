// Table.reachability (GET /v1/tables/{id}/reachability, the table_reachability MCP tool): who on a
// table may be contacted for a purpose, counted. Each member's own e-mail and phone (what a
// destination delivers to) get the effective consent contactPermission gives them: the same
// normalisation and the same decision (consent/precedence.ts), counted in SQL in one statement
// (data/tables.ts reachability), so neither the statement count nor what reaches Node grows with the table.
import type { GraphQLResolveInfo } from "graphql";
import type { RequestContext } from "../../context";
import { bindingView } from "../../delivery/bindings";
import type { TableRow } from "../../data/tables";
import { invalidRequest, notFound } from "../../errors";
import { checkedPurpose } from "./contact-permission";

/** The field sits under a list (an index in its path): `tables { nodes { reachability } }`. */
function inList(info: GraphQLResolveInfo): boolean {
  for (let p = info.path.prev; p; p = p.prev) if (typeof p.key === "number") return true;
  return false;
}

async function reachability(table: TableRow, args: { purpose: string }, ctx: RequestContext) {
  const purpose = await checkedPurpose(ctx, args.purpose);
  const [counts, bindings] = await Promise.all([ctx.data.tables.reachability(table, purpose), ctx.loaders.bindingsByTable.load(table.id)]);
  return {
    tableId: table.id,
    purpose,
    memberType: table.memberType,
    ...counts,
    destinations: bindings.map((b) => {
      const v = bindingView(b);
      return { provider: v.provider, state: v.state, lag: v.lag, lastFlushAt: v.last_flush_at, lastError: v.last_error };
    }),
  };
}

export const tableReachabilityResolvers = {
  Query: {
    tableReachability: async (_: unknown, args: { tableId: string; purpose: string }, ctx: RequestContext) => {
      const table = await ctx.data.tables.byId(args.tableId);
      if (!table) throw notFound("table", args.tableId);
      return reachability(table, args, ctx);
    },
  },
  Table: {
    // Each table's count scans its members and their consent: one table per request, never a page of them.
    reachability: (table: TableRow, args: { purpose: string }, ctx: RequestContext, info: GraphQLResolveInfo) => {
      if (inList(info)) throw invalidRequest("Table.reachability answers one table at a time: ask table(id) { reachability } or tableReachability, not inside a list of tables");
      return reachability(table, args, ctx);
    },
  },
};
