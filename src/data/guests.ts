// Guest profiles: one guest as one source system knows them. Read in SQL: the guests page is the
// hottest path of the API, and nested pages load hundreds of guests per request.
import type { CursorKey } from "../pagination/cursor";
import { createdAtKey, createdAtSql } from "./keyset";
import type { Readers } from "./readers";
import { flatRowSql, jsonRowSql, type JsonObject, type JsonRow } from "./json-rows";
import { GuestProfile, pick, type RowOf } from "./models";
import { anyOf, columns, equals, equalsEmail, join, raw, renderColumn, sql, type RowShape, type Sql, type TenantPredicate } from "./sql";

/** Every column of a guest, as the API renders it (data/models.ts). */
export const GUEST_ROW: RowShape = GuestProfile.row;

/** A guest as data/ returns it: instants and dates as the API's ISO text. */
export type GuestRow = RowOf<typeof GuestProfile>;

/** Just enough of a guest to list the ids under a master profile. */
export const GUEST_KEYS: RowShape = pick(GuestProfile, "id", "masterProfileId");

export interface GuestFilter {
  sourceId?: string | null;
  integrationId?: string | null;
  propertyId?: string | null;
  masterProfileId?: string | null;
  email?: string | null;
  updatedSince?: Date | null;
}

const c = columns("GuestProfile");
const byCreatedAt = createdAtSql("GuestProfile");
const CREATED_AT_TEXT = raw(renderColumn("instant", "t.created_at"));

function conditions(f: GuestFilter) {
  return [
    equals(c("sourceId"), f.sourceId),
    equals(c("integrationId"), f.integrationId),
    equals(c("propertyId"), f.propertyId),
    equals(c("masterProfileId"), f.masterProfileId),
    equalsEmail(c("email"), f.email),
    f.updatedSince == null ? undefined : sql`${c("updatedAt")} >= ${f.updatedSince}`,
  ];
}

export const guestKeyOf = createdAtKey;

/** The tenant predicate, the filter and the position of a page on `guest_profiles t`. */
const pageWhere = (scoped: TenantPredicate, filter: GuestFilter, after: CursorKey | null) =>
  join([scoped("GuestProfile", "t"), ...conditions(filter), byCreatedAt.after(after)].filter((w): w is Sql => w !== undefined), " AND ");

/**
 * A page keeps one plan per connection (prepared, its generic plan: db/tenant-pool.ts) unless it
 * filters on updated_since: no index has that column, and the kept plan walks the group's index in
 * order, reading every guest when few were updated (4.7 s at 1M, where a fresh plan's scan takes 0.4 s).
 * Checked at 1M with EXPLAIN ANALYZE: the first and a 90 % deep page, and the property, source_id and
 * e-mail filters each read their index.
 */
const keepsPlan = (filter: GuestFilter) => filter.updatedSince == null;

export function guests(r: Readers) {
  return {
    /** Guests matching the filter after `after`, oldest first, with the columns of `shape`. */
    page: <Row = GuestRow>(filter: GuestFilter, after: CursorKey | null, take: number, shape: RowShape) =>
      byCreatedAt.page<Row>(r.sql, conditions(filter), after, take, shape),
    /** The same page with each guest as the JSON text of `object` (data/json-rows.ts). */
    pageJson: (filter: GuestFilter, after: CursorKey | null, take: number, object: JsonObject) =>
      r.sql.query<JsonRow>((scoped) => {
        const where = pageWhere(scoped, filter, after);
        const row = jsonRowSql(object, "t", scoped);
        return sql`SELECT ${CREATED_AT_TEXT} AS "createdAt", ${c("id")} AS id, ${row.json} AS json
          FROM guest_profiles t ${row.from} WHERE ${where} ORDER BY ${byCreatedAt.orderBy} LIMIT ${take}`;
      }, { prepare: keepsPlan(filter) }),
    /** The same page of a flat `object`: each row is its member object (data/json-rows.ts flatRowSql). */
    pageRows: (filter: GuestFilter, after: CursorKey | null, take: number, object: JsonObject) =>
      r.sql.query<Record<string, unknown>>((scoped) => {
        const where = pageWhere(scoped, filter, after);
        return sql`SELECT ${flatRowSql(object, "t")} FROM guest_profiles t WHERE ${where} ORDER BY ${byCreatedAt.orderBy} LIMIT ${take}`;
      }, { prepare: keepsPlan(filter) }),
    byId: <Row = GuestRow>(id: string, shape: RowShape) => byCreatedAt.byId<Row>(r.sql, id, shape),

    /** Prepared (its kept plan: the primary key, one probe per id), the one statement of the guest loader. */
    byIds: (ids: readonly string[]) => r.sql.rows<GuestRow>({ from: "GuestProfile", shape: GUEST_ROW, where: [anyOf(c("id"), ids)], prepare: true }),

    /**
     * The guests of these master profiles, oldest first. Their ids alone (GUEST_KEYS: a master
     * profile's guest_profile_ids, a person's timeline) and their whole rows (GUEST_ROW: the guest
     * context) are prepared, on the (master profile, group, created_at, id) index; other shapes follow
     * GraphQL selections, too many to keep.
     */
    byMasterProfiles: <Row = GuestRow>(ids: readonly string[], shape: RowShape) =>
      r.sql.rows<Row>({ from: "GuestProfile", shape, where: [anyOf(c("masterProfileId"), ids)], orderBy: byCreatedAt.orderBy, prepare: shape === GUEST_KEYS || shape === GUEST_ROW }),

    /**
     * Who holds these contact points (lower-case e-mails, E.164 phones as consent stores them): per
     * contact, the oldest guest profile in scope and how many people (master profiles, or unclustered
     * profiles) hold it. One statement on the lower(email) and phone-digits indexes.
     */
    holdersOfContacts: (emails: readonly string[], phones: readonly string[]) =>
      emails.length + phones.length === 0
        ? Promise.resolve([])
        : r.sql.query<{ contact: string; id: string; persons: number }>((scoped) => sql`WITH held AS (
            SELECT lower(t.email) AS contact, t.id, t.master_profile_id, t.created_at FROM guest_profiles t
              WHERE ${scoped("GuestProfile", "t")} AND lower(t.email) = ANY(${[...emails]}::text[])
            UNION ALL
            SELECT '+' || gcs_phone_digits(t.phone), t.id, t.master_profile_id, t.created_at FROM guest_profiles t
              WHERE ${scoped("GuestProfile", "t")} AND gcs_phone_digits(t.phone) = ANY(${phones.map((p) => p.replace(/^\+/, ""))}::text[]))
          SELECT contact, (array_agg(id ORDER BY created_at, id))[1] AS id, count(DISTINCT coalesce(master_profile_id, id))::int AS persons
          FROM held GROUP BY contact`),

    /** The guest an e-mail address names: profiles with a master profile first, then the oldest. */
    async firstByEmail(email: string): Promise<GuestRow | undefined> {
      const [row] = await r.sql.rows<GuestRow>({
        from: "GuestProfile",
        shape: GUEST_ROW,
        where: [sql`lower(${c("email")}) = lower(${email})`],
        orderBy: sql`${c("masterProfileId")} IS NULL, ${byCreatedAt.orderBy}`,
        limit: 1,
      });
      return row;
    },
  };
}
