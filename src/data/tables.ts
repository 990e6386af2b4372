// Tables: curated or filter-defined working lists, their stored members, and the members a filter
// document selects (evaluated in one SQL statement, data/filter-document.ts).
import { decidingObservationSql, e164Sql, filterSql, MEMBER_MODEL, type MemberType } from "./filter-document";
import type { Readers } from "./readers";
import { GuestTable, pick, tableOf, TableMember, type RowOf } from "./models";
import { columns, empty, equals, equalsText, raw, sql, type RowShape, type Sql, type TenantPredicate } from "./sql";
import { tenantSql } from "./tenant";

export interface TableFilter {
  kind?: string | null;
  memberType?: string | null;
  propertyId?: string | null;
}

/** A table as read in SQL; its member_type label is one of MemberType. */
export type TableRow = RowOf<typeof GuestTable> & { memberType: MemberType };

const ID_ONLY: RowShape = { id: "value" };
const MEMBER_ROW: RowShape = pick(TableMember, "memberId", "addedAt");
/** Every column of a table row, instants as text (TableRow). */
const TABLE_ROW: RowShape = GuestTable.row;
interface MemberRow {
  memberId: string;
  addedAt: string;
}
/** Members per effective consent of one contact type; noContact: no usable contact point of the type. */
export interface VerdictCounts {
  granted: number;
  withdrawn: number;
  denied: number;
  unknown: number;
  noContact: number;
}
/** A table's reachability for one purpose, counted (tables.reachability). */
export interface ReachabilityCounts {
  memberCount: number;
  /** A person is a master profile, or a guest profile without one. */
  personCount: number;
  byContactType: { email: VerdictCounts; phone: VerdictCounts };
  /** Members whose e-mail, phone, or either is granted. */
  reachable: { email: number; phone: number; any: number };
}
const member = columns("TableMember");
const tableColumn = columns("GuestTable");
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

  const tableConditions = (f: TableFilter) => [equalsText(tableColumn("kind"), f.kind), equalsText(tableColumn("memberType"), f.memberType), equals(tableColumn("propertyId"), f.propertyId)];
  // In SQL, not Prisma: Prisma's per-query cost was a fifth of a members page's CPU (it reads its table first).
  return {
    page: (f: TableFilter, skip: number, take: number): Promise<TableRow[]> =>
      r.sql.rows<TableRow>({ from: "GuestTable", shape: TABLE_ROW, where: tableConditions(f), orderBy: sql`${tableColumn("createdAt")}, ${tableColumn("id")}`, limit: take, offset: skip }),
    count: (f: TableFilter) => r.sql.count({ from: "GuestTable", where: tableConditions(f) }),
    byId: async (id: string): Promise<TableRow | null> => {
      const [row] = await r.sql.rows<TableRow>({ from: "GuestTable", shape: TABLE_ROW, where: [sql`${tableColumn("id")} = ${id}::uuid`], limit: 1, prepare: true });
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
     * Who on the table may be contacted for `purpose`, counted in one statement (a few integers,
     * whatever the table's size): every member in the caller's scope (a curated table's stored
     * members, one whose profile is gone having no contact; a filter-defined table's current
     * selection) with its own e-mail and phone as observations store them (e164Sql; an e-mail
     * trimmed of any whitespace, as JavaScript's trim, and lower-cased), each decided by its deciding observation across the group
     * (decidingObservationSql: the order of consent/precedence.ts, as check_contact_permission).
     */
    async reachability(table: Pick<TableRow, "id" | "kind" | "memberType" | "filterDoc">, purpose: string): Promise<ReachabilityCounts> {
      const memberType = table.memberType;
      const model = MEMBER_MODEL[memberType];
      const members = (scoped: TenantPredicate) => {
        if (table.kind === "filter") {
          const master = memberType === "guest_profile" ? sql`t.master_profile_id` : sql`t.id`;
          return sql`SELECT t.id AS member_id, ${master} AS master_id, t.email, t.phone
            FROM ${raw(tableOf(model))} t WHERE ${scoped(model, "t")} AND ${filterSql(r.scope, memberType, table.filterDoc)}`;
        }
        // Group-wide, every stored member counts (as member_count does); narrowed to a property, only
        // those whose profile is in scope (the joined profile's own tenant rule).
        const master = memberType === "guest_profile" ? sql`m.master_profile_id` : sql`m.id`;
        return sql`SELECT t.member_id, ${master} AS master_id, m.email, m.phone
          FROM table_members t LEFT JOIN ${raw(tableOf(model))} m ON m.id = t.member_id AND ${scoped(model, "m")}
          WHERE ${scoped("TableMember", "t")} AND t.table_id = ${table.id}::uuid${r.scope.propertyId ? sql` AND m.id IS NOT NULL` : empty}`;
      };
      const counts = (type: "email" | "phone") => {
        const at = (status: string) => sql`count(*) FILTER (WHERE d.${raw(type)}_status = ${status})::int`;
        return sql`json_build_object('granted', ${at("granted")}, 'withdrawn', ${at("withdrawn")}, 'denied', ${at("denied")},
          'unknown', count(*) FILTER (WHERE d.${raw(type)} IS NOT NULL AND d.${raw(type)}_status IS NULL)::int,
          'noContact', count(*) FILTER (WHERE d.${raw(type)} IS NULL)::int)`;
      };
      const [row] = await r.sql.query<ReachabilityCounts>((scoped) => sql`WITH m AS (${members(scoped)}),
        c AS (SELECT m.member_id, m.master_id, nullif(lower(regexp_replace(m.email, ${"^[[:space:]]+|[[:space:]]+$"}::text, '', 'g')), '') AS email, ${e164Sql(sql`m.phone`)} AS phone FROM m),
        d AS (
          SELECT c.*, e.status::text AS email_status, p.status::text AS phone_status FROM c
          LEFT JOIN LATERAL ${decidingObservationSql(r.scope, sql`'email'::"ContactType"`, sql`c.email`, purpose)} AS e ON true
          LEFT JOIN LATERAL ${decidingObservationSql(r.scope, sql`'phone'::"ContactType"`, sql`c.phone`, purpose)} AS p ON true)
        SELECT count(*)::int AS "memberCount", count(DISTINCT coalesce(d.master_id, d.member_id))::int AS "personCount",
          json_build_object('email', ${counts("email")}, 'phone', ${counts("phone")}) AS "byContactType",
          json_build_object('email', count(*) FILTER (WHERE d.email_status = 'granted')::int, 'phone', count(*) FILTER (WHERE d.phone_status = 'granted')::int,
            'any', count(*) FILTER (WHERE d.email_status = 'granted' OR d.phone_status = 'granted')::int) AS reachable
        FROM d`);
      return row;
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
