// Master profiles: one per real guest, clustering guest profiles across sources and properties.
// Read in SQL like guests, at the root and through the loaders alike: agents look master profiles
// up by e-mail and search them by name.
import type { CursorKey } from "../pagination/cursor";
import { escapeLike } from "../db/like";
import { createdAtKey, createdAtSql } from "./keyset";
import type { Readers } from "./readers";
import { anyOf, columns, equals, equalsEmail, sql, type RowShape } from "./sql";
import { masterAtProperty } from "./tenant";
import { MasterProfile, MasterProfileCount, pick, type RowOf } from "./models";

/** Every column of a master profile, as the API renders it (data/models.ts). */
export const MASTER_PROFILE_ROW: RowShape = MasterProfile.row;

/** A master profile as data/ returns it: instants and dates as the API's ISO text. */
export type MasterProfileRow = RowOf<typeof MasterProfile>;

export interface MasterProfileFilter {
  q?: string | null;
  email?: string | null;
  propertyId?: string | null;
  vip?: boolean | null;
  updatedSince?: Date | null;
}

const c = columns("MasterProfile");
const byCreatedAt = createdAtSql("MasterProfile");

export const masterProfileKeyOf = createdAtKey;

export function masterProfiles(r: Readers) {
  const conditions = (f: MasterProfileFilter) => {
    const search = f.q?.trim();
    const pattern = search ? `%${escapeLike(search)}%` : undefined;
    return [
      equalsEmail(c("email"), f.email),
      equals(c("vip"), f.vip),
      f.updatedSince == null ? undefined : sql`${c("updatedAt")} >= ${f.updatedSince}`,
      f.propertyId == null ? undefined : masterAtProperty("t", sql`${r.scope.propertyGroupId}::uuid`, sql`= ${f.propertyId}::uuid`),
      pattern === undefined
        ? undefined
        : sql`(${c("givenName")} ILIKE ${pattern} OR ${c("familyName")} ILIKE ${pattern} OR ${c("email")} ILIKE ${pattern})`,
    ];
  };

  return {
    page: <Row = MasterProfileRow>(filter: MasterProfileFilter, after: CursorKey | null, take: number, shape: RowShape) =>
      byCreatedAt.page<Row>(r.sql, conditions(filter), after, take, shape),

    /**
     * How many master profiles match. The whole group's total is kept by triggers
     * (master_profile_counts), so the common unfiltered count reads one row; a filter or a
     * narrowed property counts the matches.
     */
    async count(filter: MasterProfileFilter): Promise<number> {
      const unfiltered = Object.entries(filter).every(([key, value]) => value == null || (key === "q" && !String(value).trim()));
      if (unfiltered && r.scope.propertyId === null) {
        const [row] = await r.sql.rows<{ total: string }>({ from: "MasterProfileCount", shape: pick(MasterProfileCount, "total"), prepare: true });
        return Number(row?.total ?? 0);
      }
      return r.sql.count({ from: "MasterProfile", where: conditions(filter) });
    },

    byId: <Row = MasterProfileRow>(id: string, shape: RowShape = MASTER_PROFILE_ROW) => byCreatedAt.byId<Row>(r.sql, id, shape),

    byIds: <Row = MasterProfileRow>(ids: readonly string[], shape: RowShape = MASTER_PROFILE_ROW) =>
      r.sql.rows<Row & { id: string }>({ from: "MasterProfile", shape, where: [anyOf(c("id"), ids)] }),

    /** The oldest master profile with this e-mail address. */
    async idByEmail(email: string): Promise<string | undefined> {
      const [row] = await r.sql.rows<{ id: string }>({
        from: "MasterProfile",
        shape: pick(MasterProfile, "id"),
        where: [sql`lower(${c("email")}) = lower(${email})`],
        orderBy: byCreatedAt.orderBy,
        limit: 1,
      });
      return row?.id;
    },
  };
}
