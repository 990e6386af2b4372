// Table.reachability (GET /v1/tables/{id}/reachability, the table_reachability MCP tool): who on a
// table may be contacted for a purpose, counted. Each member's own e-mail and phone (what a
// destination delivers to) get the effective consent contactPermission gives them: the same
// normalisation and the same decision (data/consents.ts decideInSql, consent/precedence.ts), read
// for all members at once, so the statement count does not grow with the table.
import type { RequestContext } from "../../context";
import { normaliseContact, type ContactType, type EffectiveStatus } from "../../consent/precedence";
import { bindingView } from "../../delivery/bindings";
import type { MemberContactRow, TableRow } from "../../data/tables";
import { notFound } from "../../errors";
import { checkedPurpose } from "./contact-permission";

type Verdict = EffectiveStatus | "noContact";
type Counts = Record<Verdict, number>;

const zero = (): Counts => ({ granted: 0, withdrawn: 0, denied: 0, unknown: 0, noContact: 0 });
const TYPES: ContactType[] = ["email", "phone"];

/** The member's contact point of `type` as observations store it; null when it has none usable. */
const contactOf = (m: MemberContactRow, type: ContactType) => {
  const raw = type === "email" ? m.email : m.phone;
  return raw ? normaliseContact(type, raw) : null;
};

async function reachability(table: TableRow, args: { purpose: string }, ctx: RequestContext) {
  const purpose = await checkedPurpose(ctx, args.purpose);
  const [members, bindings] = await Promise.all([ctx.data.tables.memberContacts(table), ctx.loaders.bindingsByTable.load(table.id)]);

  const values = members.flatMap((m) => TYPES.map((type) => contactOf(m, type)).filter((v): v is string => v !== null));
  const decisions = await ctx.data.consents.decideInSql(values, { purpose });
  const status = new Map(decisions.map((d) => [`${d.contactType}\u0000${d.contactValue}`, d.effective.status]));

  const byType: Record<ContactType, Counts> = { email: zero(), phone: zero() };
  const reachable = { email: 0, phone: 0, any: 0 };
  for (const m of members) {
    let any = false;
    for (const type of TYPES) {
      const value = contactOf(m, type);
      const verdict: Verdict = value === null ? "noContact" : (status.get(`${type}\u0000${value}`) ?? "unknown");
      byType[type][verdict]++;
      if (verdict === "granted") {
        reachable[type]++;
        any = true;
      }
    }
    if (any) reachable.any++;
  }

  return {
    tableId: table.id,
    purpose,
    memberType: table.memberType,
    memberCount: members.length,
    // A person is a master profile, or a guest profile without one.
    personCount: new Set(members.map((m) => m.masterProfileId ?? m.memberId)).size,
    byContactType: byType,
    reachable,
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
  Table: { reachability },
};
