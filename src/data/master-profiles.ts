// Master profiles: one per real guest, clustering guest profiles across sources and properties.
// Read in SQL like guests, at the root and through the loaders alike: agents look master profiles
// up by e-mail and search them by name.
import type { CursorKey } from "../pagination/cursor";
import { escapeLike } from "../db/like";
import { createdAtKey, createdAtSql } from "./keyset";
import type { Readers } from "./readers";
import { anyOf, columns, equals, equalsEmail, join, sql, type RowShape } from "./sql";
import { masterAtProperty } from "./tenant";
import { closeNameConditions, closeNameRank, CLOSE_ENOUGH, nameSimilarity, nameWords } from "./search";
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

/** Master profiles a closest-name search scores at most. */
const CLOSEST_CAP = 500;

export function masterProfiles(r: Readers) {
  const conditions = (f: MasterProfileFilter) => {
    const search = f.q?.trim();
    const pattern = search ? `%${escapeLike(search)}%` : undefined;
    return [
      equalsEmail(c("email"), f.email),
      equals(c("vip"), f.vip),
      f.updatedSince == null ? undefined : sql`${c("updatedAt")} >= ${f.updatedSince}`,
      f.propertyId == null ? undefined : masterAtProperty("t", sql`${r.scope.propertyGroupId}::uuid`, sql`= ${f.propertyId}::uuid`),
      // A full name in either order ("Olivia Smith", "Smith Olivia") matches across the two fields too.
      pattern === undefined
        ? undefined
        : sql`(${c("givenName")} ILIKE ${pattern} OR ${c("familyName")} ILIKE ${pattern} OR ${c("email")} ILIKE ${pattern}
            OR concat_ws(' ', ${c("givenName")}, ${c("familyName")}) ILIKE ${pattern} OR concat_ws(' ', ${c("familyName")}, ${c("givenName")}) ILIKE ${pattern})`,
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

    /**
     * When q matched nothing: the master profiles (under the other filters) whose name is closest to
     * q, best first, with their similarity (0 to 1; data/search.ts). One statement over a bounded set
     * read by the name parts' first letters, nearest first.
     */
    async closest(filter: MasterProfileFilter, limit: number): Promise<{ id: string; similarity: number }[]> {
      const words = nameWords(filter.q?.trim() ?? "");
      if (words.length === 0) return [];
      const near = closeNameConditions(words, c("givenName"), c("familyName"));
      // Capped: the nearest names first (not the oldest rows), so the real near miss is within the cap.
      const nearest = closeNameRank(words, c("givenName"), c("familyName"));
      const rows = await r.sql.rows<{ id: string; givenName: string | null; familyName: string | null }>({
        from: "MasterProfile",
        shape: pick(MasterProfile, "id", "givenName", "familyName"),
        where: [...conditions({ ...filter, q: null }), sql`(${join(near.map((n) => n.condition), " OR ")})`],
        orderBy: sql`${nearest} DESC, ${byCreatedAt.orderBy}`,
        limit: CLOSEST_CAP,
      });
      return rows
        .map((row) => ({ id: row.id, similarity: nameSimilarity(filter.q!, row.givenName, row.familyName) }))
        .filter((row) => row.similarity >= CLOSE_ENOUGH)
        .sort((a, b) => b.similarity - a.similarity || a.id.localeCompare(b.id))
        .slice(0, limit);
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
