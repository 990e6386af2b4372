// Destination bindings of tables: the pause/resume mutations and Table.bindings. The state machine
// itself lives in src/delivery/bindings.ts; this maps it onto the schema.
import type { RequestContext } from "../../context";
import { bindingView, type BindingRow } from "../../delivery/bindings";
import { notFound } from "../../errors";

type BindingArgs = { tableId: string; provider: string };

function toGraphQL(row: BindingRow) {
  const v = bindingView(row);
  const c = v.last_flush_counts;
  return {
    id: v.id,
    tableId: v.table_id,
    connectionId: v.connection_id,
    provider: v.provider,
    remoteListId: v.remote_list_id,
    state: v.state,
    confirmedSeq: v.confirmed_seq,
    logHead: v.log_head,
    lag: v.lag,
    lastFlushAt: v.last_flush_at,
    lastError: v.last_error,
    lastFlushCounts: {
      pushed: c.pushed,
      subscribed: c.subscribed,
      skippedNoConsentSubscribe: c.skipped_no_consent_subscribe,
      skippedSuppressed: c.skipped_suppressed,
      skippedUnresolved: c.skipped_unresolved,
      removed: c.removed,
      failed: c.failed,
    },
    lastResyncRunHandle: v.last_resync_run_handle,
    guidance: {
      recommendsConsentFilter: v.guidance.recommends_consent_filter,
      consentFilterField: v.guidance.consent_filter_field,
      consentFilterPresent: v.guidance.consent_filter_present,
    },
  };
}

function mutation(transition: "pause" | "resume") {
  return async (_: unknown, args: BindingArgs, ctx: RequestContext) => {
    const row = await ctx.data.destinations[transition]({ tableId: args.tableId, provider: args.provider });
    if (!row) throw notFound("destination binding", `${args.provider} of table ${args.tableId}`);
    return toGraphQL(row);
  };
}

export const destinationResolvers = {
  Mutation: {
    pauseDestination: mutation("pause"),
    resumeDestination: mutation("resume"),
  },
  Table: {
    bindings: async (t: { id: string }, _: unknown, ctx: RequestContext) => (await ctx.loaders.bindingsByTable.load(t.id)).map(toGraphQL),
  },
};
