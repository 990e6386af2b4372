// guestSearch (the find_guests MCP tool): one free-text box over name, e-mail, phone, source id,
// loyalty member number and confirmation number, answered with ranked candidates: one per master
// profile, or a guest profile of its own when it belongs to none. Every branch is an equality or a
// prefix on an index (migration 20261124060000_guest_search_indexes), so a lookup is a few index
// probes at any size; names, accents and case are folded by gcs_fold() on both sides.
import type { GraphQLContext } from "../../context";
import { toE164 } from "../../consent/precedence";
import { escapeLike } from "../../db/like";
import { join, sql, type Sql, type TenantPredicate } from "../../db/scoped-sql";
import { invalidRequest } from "../errors";
import { isStorableText, unstorableDetail } from "../text";

export const SEARCH_LIMIT = { default: 5, max: 25 };
/** Rows each branch may contribute before ranking: more than any page, few enough to stay fast. */
const BRANCH_CAP = 200;
const MAX_QUERY_LENGTH = 200;
/** Names of more words than this are searched by their first ones only. */
const MAX_NAME_WORDS = 4;

/** Why a candidate matched, best first; the score ranks candidates. */
const SCORES = {
  email: 100,
  phone: 100,
  confirmation_number: 100,
  member_number: 100,
  source_id: 100,
  name: 90,
  name_prefix: 60,
} as const;
type MatchField = keyof typeof SCORES;

interface Hit {
  masterProfileId: string | null;
  guestProfileId: string | null;
  score: number;
  matchedOn: MatchField[];
}

export interface GuestCandidate {
  masterProfileId: string | null;
  guestProfileIds: string[];
  name: string | null;
  emails: string[];
  phones: string[];
  properties: string[];
  lastStay: string | null;
  matchedOn: MatchField[];
  score: number;
}

const fold = (column: Sql) => sql`gcs_fold(${column})`;
/** `column LIKE '<folded text>%'`: the folded, LIKE-escaped text is a constant when planned, so the index serves it. */
const startsWith = (column: Sql, text: string) => sql`${fold(column)} LIKE gcs_fold(${escapeLike(text)}) || '%'`;
const sameFolded = (column: Sql, text: string) => sql`${fold(column)} = gcs_fold(${text})`;

const GIVEN = sql`gp.given_name`;
const FAMILY = sql`gp.family_name`;

/**
 * Every way the words split into a given name and a family name, in both orders: "Olivia Smith" is
 * (Olivia, Smith) or (Smith, Olivia); "Anna de Vries" also (Anna de, Vries) and so on.
 */
function nameSplits(words: string[]): { given: string; family: string }[] {
  const splits: { given: string; family: string }[] = [];
  for (let k = 1; k < words.length; k++) {
    const a = words.slice(0, k).join(" ");
    const b = words.slice(k).join(" ");
    splits.push({ given: a, family: b }, { given: b, family: a });
  }
  return splits;
}

// Each name branch is read in its index's order (USING ~<~, the text_pattern_ops order), so the
// planner walks the index and stops at the branch cap: a common name ("Smith": 1 guest in 40) is
// 200 index entries, never a scan of the group. (With OR-ed conditions and no order, PostgreSQL
// chose a sequential scan for one-word names at 1,000,000 guests: 150 ms.)
const BY_FAMILY = sql`gcs_fold(gp.family_name) USING ~<~, gcs_fold(gp.given_name) USING ~<~`;
const BY_GIVEN = sql`gcs_fold(gp.given_name) USING ~<~`;

interface NameBranch {
  field: "name" | "name_prefix";
  condition: Sql;
  orderBy: Sql;
}

/** The name branches: exact (every word equal) and prefix (each part starts with its words). */
function nameBranches(words: string[]): NameBranch[] {
  if (words.length === 1) {
    const [w] = words;
    return [
      { field: "name", condition: sameFolded(FAMILY, w), orderBy: BY_FAMILY },
      { field: "name", condition: sameFolded(GIVEN, w), orderBy: BY_GIVEN },
      { field: "name_prefix", condition: startsWith(FAMILY, w), orderBy: BY_FAMILY },
      { field: "name_prefix", condition: startsWith(GIVEN, w), orderBy: BY_GIVEN },
    ];
  }
  return nameSplits(words).flatMap((s): NameBranch[] => [
    { field: "name", condition: sql`${sameFolded(FAMILY, s.family)} AND ${sameFolded(GIVEN, s.given)}`, orderBy: BY_FAMILY },
    { field: "name_prefix", condition: sql`${startsWith(FAMILY, s.family)} AND ${startsWith(GIVEN, s.given)}`, orderBy: BY_FAMILY },
  ]);
}

/** The digits a stored phone must have: E.164 without "+", or the bare digits of an unformatted number. */
function phoneDigits(query: string): string | null {
  const e164 = toE164(query);
  if (e164) return e164.slice(1);
  if (!/^[\d\s().\-/]+$/.test(query)) return null;
  const digits = query.replace(/\D/g, "");
  return digits.length >= 7 && digits.length <= 15 ? digits : null;
}

export function parseSearchArgs(args: { query: string; limit?: number | null }) {
  // MCP calls run the operation in-process: check here too what /graphql's input guard checks.
  if (!isStorableText(args.query)) throw invalidRequest(unstorableDetail("query"));
  const query = args.query.trim().replace(/\s+/g, " ");
  if (query === "") throw invalidRequest("query must not be empty: a name, e-mail, phone, source id, member number or confirmation number");
  if (query.length > MAX_QUERY_LENGTH) throw invalidRequest(`query must be at most ${MAX_QUERY_LENGTH} characters`);
  const limit = args.limit ?? SEARCH_LIMIT.default;
  if (!Number.isInteger(limit) || limit < 1 || limit > SEARCH_LIMIT.max) {
    throw invalidRequest(`limit must be an integer from 1 to ${SEARCH_LIMIT.max}, e.g. 5`);
  }
  return { query, limit };
}

/**
 * The search statement: every branch the query's shape allows, each capped, grouped per candidate
 * and ranked; `limit + 1` rows so the caller knows whether there were more. Exported for the EXPLAIN test.
 */
export function searchStatement(query: string, limit: number) {
  return (scoped: TenantPredicate): Sql => {
    const guestBranch = (field: MatchField, condition: Sql, orderBy?: Sql) =>
      sql`(SELECT gp.master_profile_id, gp.id AS guest_profile_id, ${field}::text AS field
           FROM guest_profiles gp WHERE ${scoped("GuestProfile", "gp")} AND ${condition}
           ${orderBy ? sql`ORDER BY ${orderBy}` : sql``} LIMIT ${BRANCH_CAP})`;
    const branches: Sql[] = [];
    const oneWord = !query.includes(" ");
    if (query.includes("@")) {
      branches.push(guestBranch("email", sql`lower(gp.email) = lower(${query})`));
    }
    const digits = phoneDigits(query);
    if (digits) branches.push(guestBranch("phone", sql`regexp_replace(gp.phone, '[^0-9]', '', 'g') = ${digits}`));
    if (oneWord) {
      branches.push(guestBranch("source_id", sql`gp.source_id = ${query}`));
      // Identifiers people read out are usually upper case in the source system.
      const ids = sql`(${query}, ${query.toUpperCase()})`;
      branches.push(
        sql`(SELECT gp.master_profile_id, gp.id AS guest_profile_id, 'confirmation_number'::text AS field
             FROM reservations r JOIN guest_profiles gp ON gp.id = r.guest_profile_id AND ${scoped("GuestProfile", "gp")}
             WHERE ${scoped("Reservation", "r")} AND r.confirmation_number IN ${ids} LIMIT ${BRANCH_CAP})`,
        // A membership may name a master profile, a guest profile or both.
        sql`(SELECT coalesce(lm.master_profile_id, gp.master_profile_id) AS master_profile_id, gp.id AS guest_profile_id,
               'member_number'::text AS field
             FROM loyalty_members lm LEFT JOIN guest_profiles gp ON gp.id = lm.guest_profile_id AND ${scoped("GuestProfile", "gp")}
             WHERE ${scoped("LoyaltyMember", "lm")} AND lm.member_number IN ${ids}
               AND (lm.master_profile_id IS NOT NULL OR gp.id IS NOT NULL) LIMIT ${BRANCH_CAP})`,
      );
    }
    if (/\p{L}/u.test(query) && !query.includes("@")) {
      const words = query.split(/[\s,]+/).filter(Boolean).slice(0, MAX_NAME_WORDS);
      for (const b of nameBranches(words)) branches.push(guestBranch(b.field, b.condition, b.orderBy));
    }
    // Punctuation only ("?? !!"): nothing to look up, and still one scoped statement.
    if (branches.length === 0) branches.push(guestBranch("name", sql`false`));
    const scores = join(
      Object.entries(SCORES).map(([field, score]) => sql`WHEN ${field} THEN ${score}::int`),
      " ",
    );
    return sql`SELECT "masterProfileId", "guestProfileId", max(score)::int AS score,
        array_agg(DISTINCT field ORDER BY field) AS "matchedOn"
      FROM (
        SELECT h.master_profile_id AS "masterProfileId",
          CASE WHEN h.master_profile_id IS NULL THEN h.guest_profile_id END AS "guestProfileId",
          h.field, CASE h.field ${scores} END AS score
        FROM (${join(branches, " UNION ALL ")}) h
      ) c
      GROUP BY "masterProfileId", "guestProfileId"
      ORDER BY score DESC, "masterProfileId", "guestProfileId"
      LIMIT ${limit + 1}`;
  };
}

interface CandidateGuestRow {
  id: string;
  masterProfileId: string | null;
  givenName: string | null;
  familyName: string | null;
  email: string | null;
  phone: string | null;
  property: string;
  lastStay: string | null;
}

/** The candidates' guest profiles (in scope) with their property's name and latest begun stay: one statement. */
function candidateGuests(ctx: GraphQLContext, masterIds: string[], guestIds: string[]) {
  return ctx.sql.query<CandidateGuestRow>(
    (scoped) => sql`SELECT gp.id, gp.master_profile_id AS "masterProfileId", gp.given_name AS "givenName",
        gp.family_name AS "familyName", gp.email, gp.phone, p.name AS property,
        (SELECT to_char(max(r.arrival_date), 'YYYY-MM-DD') FROM reservations r
          WHERE r.guest_profile_id = gp.id AND ${scoped("Reservation", "r")} AND r.kind = 'stay'
            AND r.status NOT IN ('cancelled', 'no_show') AND r.arrival_date <= current_date) AS "lastStay"
      FROM guest_profiles gp JOIN properties p ON p.id = gp.property_id AND ${scoped("Property", "p")}
      WHERE ${scoped("GuestProfile", "gp")}
        AND (gp.master_profile_id = ANY(${masterIds}::uuid[]) OR gp.id = ANY(${guestIds}::uuid[]))
      ORDER BY gp.created_at, gp.id`,
  );
}

const distinct = (values: (string | null | undefined)[]) => [...new Set(values.filter((v): v is string => Boolean(v)))];
const fullName = (given: string | null, family: string | null) => [given, family].filter(Boolean).join(" ") || null;
const latest = (dates: (string | null)[]) => dates.reduce<string | null>((a, d) => (d && (!a || d > a) ? d : a), null);

export async function guestSearch(_: unknown, args: { query: string; limit?: number | null }, ctx: GraphQLContext) {
  const { query, limit } = parseSearchArgs(args);
  const hits = await ctx.sql.query<Hit>(searchStatement(query, limit));
  const truncated = hits.length > limit;
  const shown = hits.slice(0, limit);
  if (shown.length === 0) return { query, candidates: [], truncated: false };

  const masterIds = distinct(shown.map((h) => h.masterProfileId));
  const guestIds = distinct(shown.map((h) => h.guestProfileId));
  const [guests, masters] = await Promise.all([
    candidateGuests(ctx, masterIds, guestIds),
    masterIds.length === 0
      ? Promise.resolve([])
      : ctx.sql.rows<{ id: string; givenName: string | null; familyName: string | null; email: string | null; phone: string | null }>({
          from: "MasterProfile",
          shape: { id: "value", givenName: "value", familyName: "value", email: "value", phone: "value" },
          where: [sql`t.id = ANY(${masterIds}::uuid[])`],
        }),
  ]);
  const masterById = new Map(masters.map((m) => [m.id, m]));

  const candidates: GuestCandidate[] = shown.map((hit) => {
    const mine = guests.filter((g) => (hit.masterProfileId ? g.masterProfileId === hit.masterProfileId : g.id === hit.guestProfileId));
    const master = hit.masterProfileId ? masterById.get(hit.masterProfileId) : undefined;
    const first = mine[0];
    return {
      masterProfileId: hit.masterProfileId,
      guestProfileIds: mine.map((g) => g.id),
      name: master ? fullName(master.givenName, master.familyName) : first ? fullName(first.givenName, first.familyName) : null,
      emails: distinct([master?.email, ...mine.map((g) => g.email)].map((e) => e?.toLowerCase())),
      phones: distinct([master?.phone, ...mine.map((g) => g.phone)]),
      properties: distinct(mine.map((g) => g.property)),
      lastStay: latest(mine.map((g) => g.lastStay)),
      // An exact name match says all a prefix match would.
      matchedOn: hit.matchedOn.includes("name") ? hit.matchedOn.filter((f) => f !== "name_prefix") : hit.matchedOn,
      score: hit.score,
    };
  });
  return { query, candidates, truncated };
}

export const guestSearchResolvers = { Query: { guestSearch } };
