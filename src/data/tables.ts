// Tables: curated or filter-defined working lists, their stored members, and the members a filter
// document selects (evaluated in one SQL statement, data/filter-document.ts).
import type { Prisma } from "../generated/prisma/client";
import { filterSql, MEMBER_MODEL, type MemberType } from "./filter-document";
import type { Readers } from "./readers";
import { allInstantsAsText, type AsText } from "./prisma-rows";
import { GuestTable, pick, tableOf, TableMember } from "./models";
import { columns, empty, raw, sql, type RowShape, type Sql } from "./sql";
import { tenantSql } from "./tenant";
import { given } from "./where";

export interface TableFilter {
  kind?: string | null;
  memberType?: string | null;
  propertyId?: string | null;
}

export type TableRow = AsText<Prisma.GuestTableGetPayload<object>>;

const ID_ONLY: RowShape = { id: "value" };
const MEMBER_ROW: RowShape = pick(TableMember, "memberId", "addedAt");
/** Every column of a table row, as Prisma's row with its instants as text (TableRow). */
const TABLE_ROW: RowShape = GuestTable.row;
interface MemberRow {
  memberId: string;
  addedAt: string;
}
/** A member with its own contact points (what a destination would deliver to) and its person. */
export interface MemberContactRow {
  memberId: string;
  /** The member's master profile (a guest profile member's; a master profile member's own id); null for none. */
  masterProfileId: string | null;
  /** Null when the member's profile is gone. */
  email: string | null;
  phone: string | null;
}
const member = columns("TableMember");
const oldestFirst = (model: "GuestProfile" | "MasterProfile") => sql`${columns(model)("createdAt")}, ${columns(model)("id")}`;

export function tables(r: Readers) {
  /**
   * For a property-narrowed caller, "the stored member on `alias` is in scope": a guest profile at its
   * property, a master profile with a guest there (the members' own tenant rules), of `memberType` or
   * of either. A group-wide table holds guests of every property, and no identifier of another
   * property's guest may reach a narrowed caller: its pages, offsets and counts are over these members
   * only. Undefined for a group-wide caller, who sees every member.
   */
  function memberInScope(alias: string, memberType?: MemberType): Sql | undefined {
    if (!r.scope.propertyId) return undefined;
    const exists = (model: "GuestProfile" | "MasterProfile") =>
      sql`EXISTS (SELECT 1 FROM ${raw(tableOf(model))} m WHERE m.id = ${raw(alias)}.member_id AND ${tenantSql(model, r.scope, "m")})`;
    return memberType ? exists(MEMBER_MODEL[memberType]) : sql`(${exists("GuestProfile")} OR ${exists("MasterProfile")})`;
  }

  /**
   * Stored member counts of these curated tables (0 for none) in the caller's scope. Group-wide:
   * positions are consecutive, so a table's count is last − first + 1, two index probes per table
   * instead of counting every member; narrowed to a property: the members in scope, counted.
   */
  async function memberCounts(tableIds: readonly string[]): Promise<Map<string, number>> {
    const narrowed = memberInScope("t");
    const rows = await r.sql.query<{ id: string; n: number | null }>((scoped) => sql`
      SELECT k.id, (SELECT ${narrowed ? sql`count(*)::int` : sql`max(${member("position")}) - min(${member("position")}) + 1`}
        FROM table_members t WHERE t.table_id = k.id AND ${scoped("TableMember", "t")}${narrowed ? sql` AND ${narrowed}` : empty}) AS n
      FROM unnest(${[...tableIds]}::uuid[]) AS k(id)`);
    return new Map(rows.map((row) => [row.id, row.n ?? 0]));
  }

  const tableWhere = (f: TableFilter): Prisma.GuestTableWhereInput => given({ kind: f.kind, memberType: f.memberType, propertyId: f.propertyId });
  return {
    page: async (f: TableFilter, skip: number, take: number): Promise<TableRow[]> =>
      allInstantsAsText(await r.prisma.guestTable.findMany({ where: tableWhere(f), orderBy: [{ createdAt: "asc" }, { id: "asc" }], skip, take })),
    count: (f: TableFilter) => r.prisma.guestTable.count({ where: tableWhere(f) }),
    // In SQL, not Prisma: every members page reads its table first, and Prisma's per-query cost was a
    // fifth of that request's CPU.
    byId: async (id: string): Promise<TableRow | null> => {
      const [row] = await r.sql.rows<TableRow>({ from: "GuestTable", shape: TABLE_ROW, where: [sql`${columns("GuestTable")("id")} = ${id}::uuid`], limit: 1, prepare: true });
      return row ?? null;
    },

    /**
     * A curated table's stored members in the caller's scope (memberInScope) in the order they were
     * added, from the `skip`-th on. Group-wide: a seek past the first position (positions are
     * consecutive, data/stores/table-membership.ts keeps them so), so a deep page costs what the first does;
     * narrowed to a property: an offset over the members in scope.
     */
    members: (tableId: string, memberType: MemberType, skip: number, take: number) => {
      const narrowed = memberInScope("t", memberType);
      if (narrowed) {
        return r.sql.rows<MemberRow>({
          from: "TableMember", shape: MEMBER_ROW, where: [sql`${member("tableId")} = ${tableId}::uuid`, narrowed],
          orderBy: member("position"), limit: take, offset: skip,
        });
      }
      const first = sql`(SELECT min(f.position) FROM table_members f WHERE f.table_id = ${tableId}::uuid AND ${tenantSql("TableMember", r.scope, "f")})`;
      // Prepared: its kept plan seeks the (table_id, position) index from the first position on.
      return r.sql.rows<MemberRow>({
        from: "TableMember", shape: MEMBER_ROW, where: [sql`${member("tableId")} = ${tableId}::uuid`, sql`${member("position")} >= ${first} + ${skip}`],
        orderBy: member("position"), limit: take, prepare: true,
      });
    },
    /**
     * Every member in the caller's scope with its e-mail and phone, in one statement: a curated
     * table's stored members (one whose profile is gone has no contact), a filter-defined table's
     * current selection. A table's reachability counts these in one pass.
     */
    memberContacts(table: Pick<TableRow, "id" | "kind" | "memberType" | "filterDoc">): Promise<MemberContactRow[]> {
      const memberType = table.memberType as MemberType;
      const model = MEMBER_MODEL[memberType];
      const master = memberType === "guest_profile" ? sql`m.master_profile_id` : sql`m.id`;
      if (table.kind === "filter") {
        const where = filterSql(r.scope, memberType, table.filterDoc);
        return r.sql.query<MemberContactRow>(
          (scoped) => sql`SELECT t.id AS "memberId", ${raw(memberType === "guest_profile" ? "t.master_profile_id" : "t.id")} AS "masterProfileId", t.email, t.phone
            FROM ${raw(tableOf(model))} t WHERE ${scoped(model, "t")} AND ${where}`,
        );
      }
      // Group-wide, every stored member counts (as member_count does); narrowed to a property, only
      // those whose profile is in scope (memberInScope: the joined profile's own tenant rule).
      return r.sql.query<MemberContactRow>(
        (scoped) => sql`SELECT t.member_id AS "memberId", ${master} AS "masterProfileId", m.email, m.phone
          FROM table_members t LEFT JOIN ${raw(tableOf(model))} m ON m.id = t.member_id AND ${scoped(model, "m")}
          WHERE ${scoped("TableMember", "t")} AND t.table_id = ${table.id}::uuid${r.scope.propertyId ? sql` AND m.id IS NOT NULL` : empty}`,
      );
    },
    memberCount: async (tableId: string) => (await memberCounts([tableId])).get(tableId) ?? 0,
    memberCounts,
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
