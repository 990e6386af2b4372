// The guest search statement (find_guests): every branch is an equality or a prefix on an index
// (migration 20261124060000_guest_search_indexes), so a lookup is a few index probes at any size;
// names, accents and case are folded by gcs_fold() on both sides.
import { toE164 } from "../consent/precedence";
import type { Readers } from "./readers";
import { join, sql, type Sql, type TenantPredicate } from "./sql";

/** Rows each branch may contribute before ranking: more than any page, few enough to stay fast. */
const BRANCH_CAP = 200;
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
export type MatchField = keyof typeof SCORES;

export interface Hit {
  masterProfileId: string | null;
  guestProfileId: string | null;
  score: number;
  matchedOn: (MatchField | CloseField)[];
  /** Only on a closest candidate (nothing matched exactly): how close, 0 to 1. */
  similarity?: number;
}

/** Why a closest candidate is offered: it is no match (issue 42). */
export type CloseField = "similar_name" | "phone_national";


const fold = (column: Sql) => sql`gcs_fold(${column})`;
/**
 * The folded column starts with the folded text: the range [text, text || U+10FFFF) of the
 * text_pattern_ops index (byte order), which holds every string that starts with it but one that goes
 * on with U+10FFFF, a noncharacter. Not LIKE: under the policies an index serves only LEAKPROOF
 * conditions, and LIKE's function raises on a bad pattern, so it cannot be (docs/security.md).
 */
const startsWith = (column: Sql, text: string) =>
  sql`${fold(column)} ~>=~ gcs_fold(${text}) AND ${fold(column)} ~<~ (gcs_fold(${text}) || chr(1114111))`;
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
// planner walks the index and stops at the branch cap: a common name is at most BRANCH_CAP index
// entries, never a scan of the group. With OR-ed conditions and no order, PostgreSQL chooses a
// sequential scan for one-word names in a large group.
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
    if (digits) branches.push(guestBranch("phone", sql`gcs_phone_digits(gp.phone) = ${digits}`));
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

// Closest candidates (issue 42): when nothing matches exactly, a near-miss name ("Lucia Browne" for
// Lucia Brown) or a phone without its country code ("020 7946 0958") still finds the person, as a
// candidate with its similarity, never as a match. No extension (pg_trgm, fuzzystrmatch): PGlite
// runs the same migrations. A bounded set is read by the name indexes' prefixes (each name part's
// first letters) and by phone digits, then scored here.

/** A closest candidate is offered from this similarity on. */
export const CLOSE_ENOUGH = 0.5;
/** Similarity of a phone that is the query's digits behind a country code. */
const NATIONAL_PHONE_SIMILARITY = 0.9;
/** Letters of each name part the candidate set is read by: a typo after them is still found. */
const PREFIX_LETTERS = 3;
/** Country calling codes a national number is tried behind (those of the groups' markets, then the most common). */
const COUNTRY_CODES = [
  "1", "7", "20", "27", "30", "31", "32", "33", "34", "36", "39", "40", "41", "43", "44", "45", "46", "47", "48", "49",
  "52", "54", "55", "56", "57", "60", "61", "62", "63", "64", "65", "66", "81", "82", "84", "86", "90", "91", "351",
  "352", "353", "354", "356", "357", "358", "359", "370", "371", "372", "385", "386", "420", "421", "852", "971", "972",
];

/** Accents, case, apostrophes and spacing folded, as gcs_fold does in SQL. */
const foldText = (text: string) =>
  text.normalize("NFD").replace(/\p{M}/gu, "").replace(/['’]/g, "").toLowerCase().replace(/\s+/g, " ").trim();

function editDistance(a: string, b: string): number {
  let prev = Array.from({ length: b.length + 1 }, (_, j) => j);
  for (let i = 1; i <= a.length; i++) {
    const row = [i];
    for (let j = 1; j <= b.length; j++) row[j] = Math.min(prev[j] + 1, row[j - 1] + 1, prev[j - 1] + (a[i - 1] === b[j - 1] ? 0 : 1));
    prev = row;
  }
  return prev[b.length];
}

const ratio = (a: string, b: string) => (a.length + b.length === 0 ? 0 : 1 - editDistance(a, b) / Math.max(a.length, b.length));

/**
 * How close a name query is to a person's name, 0 to 1: one minus the edit distance over the longer
 * text, folded, the name in either order (a one-word query is also held to each part alone), to two
 * decimals.
 */
export function nameSimilarity(query: string, given: string | null, family: string | null): number {
  const q = foldText(query.replace(/,/g, " "));
  const [g, f] = [foldText(given ?? ""), foldText(family ?? "")];
  const forms = [`${g} ${f}`.trim(), `${f} ${g}`.trim(), ...(q.includes(" ") ? [] : [g, f])].filter(Boolean);
  return Math.round(Math.max(0, ...forms.map((form) => ratio(q, form))) * 100) / 100;
}

/** The words of a name query (letters only), at most MAX_NAME_WORDS; none for an e-mail. */
export function nameWords(query: string): string[] {
  if (query.includes("@") || !/\p{L}/u.test(query)) return [];
  return query.split(/[\s,]+/).filter((w) => /\p{L}/u.test(w)).slice(0, MAX_NAME_WORDS);
}

const start = (w: string) => w.slice(0, PREFIX_LETTERS);

/**
 * The family name starts with the word's first letter or, for a swap of the first two ("Msith"),
 * its second: with the given name's prefix, a typo in the family name's first letters is still read.
 */
const familyInitial = (family: Sql, w: string) =>
  w.length > 1 && w[0] !== w[1]
    ? sql`(${startsWith(family, w.slice(0, 1))} OR ${startsWith(family, w.slice(1, 2))})`
    : startsWith(family, w.slice(0, 1));

/**
 * Conditions that hold for every name close to the query's words, for each given/family split:
 * both parts start with their first letters; or the family part does (a typo in the given name's
 * first letters); or the given part does and the family name starts with its initial (a typo in
 * the family name's: "Olivia Smyth" for Olivia Smith). One word: the given or the family name
 * starts with its first letters.
 */
export function closeNameConditions(words: string[], given: Sql, family: Sql): { condition: Sql; byFamily: boolean }[] {
  if (words.length === 1) {
    return [
      { condition: startsWith(family, start(words[0])), byFamily: true },
      { condition: startsWith(given, start(words[0])), byFamily: false },
    ];
  }
  return nameSplits(words).flatMap((s) => [
    { condition: sql`${startsWith(family, start(s.family))} AND ${startsWith(given, start(s.given))}`, byFamily: true },
    { condition: startsWith(family, start(s.family)), byFamily: true },
    { condition: sql`${startsWith(given, start(s.given))} AND ${familyInitial(family, s.family)}`, byFamily: false },
  ]);
}

/**
 * How near a name is to the query's words, in SQL, for reading a capped candidate set best first
 * (higher is nearer): per given/family split, a point for each part equal to its words and for each
 * part starting with their first letters, the best split counting; without an extension, so only a
 * coarse rank, which the edit distance then refines.
 */
export function closeNameRank(words: string[], given: Sql, family: Sql): Sql {
  const point = (condition: Sql) => sql`(CASE WHEN ${condition} THEN 1 ELSE 0 END)`;
  const splits = words.length === 1 ? [{ given: words[0], family: words[0] }] : nameSplits(words);
  const ranks = splits.map(
    (s) =>
      sql`${point(sameFolded(family, s.family))} + ${point(sameFolded(given, s.given))}
        + ${point(startsWith(family, start(s.family)))} + ${point(startsWith(given, start(s.given)))}`,
  );
  return sql`GREATEST(${join(ranks, ", ")})`;
}

/** The stored phone digits a number written without its country code may be: each code before it, with or without its trunk 0. */
function nationalPhoneDigits(query: string): string[] {
  if (toE164(query) || !/^[\d\s().\-/]+$/.test(query)) return [];
  const digits = query.replace(/\D/g, "");
  const national = digits.replace(/^0/, "");
  if (national.length < 6 || national.length > 13) return [];
  return [...new Set(COUNTRY_CODES.flatMap((cc) => [cc + national, cc + digits]))].filter((d) => d.length <= 15);
}

interface CloseRow {
  masterProfileId: string | null;
  guestProfileId: string;
  givenName: string | null;
  familyName: string | null;
  field: CloseField;
}

/** The closest-candidate statement: capped branches on the name and phone indexes. Exported for the EXPLAIN test. */
export function closestStatement(query: string) {
  return (scoped: TenantPredicate): Sql => {
    const branch = (field: CloseField, condition: Sql, orderBy?: Sql) =>
      sql`(SELECT gp.master_profile_id AS "masterProfileId", gp.id AS "guestProfileId", gp.given_name AS "givenName",
             gp.family_name AS "familyName", ${field}::text AS field
           FROM guest_profiles gp WHERE ${scoped("GuestProfile", "gp")} AND ${condition}
           ${orderBy ? sql`ORDER BY ${orderBy}` : sql``} LIMIT ${BRANCH_CAP})`;
    const branches = closeNameConditions(nameWords(query), GIVEN, FAMILY).map((b) => branch("similar_name", b.condition, b.byFamily ? BY_FAMILY : BY_GIVEN));
    const phones = nationalPhoneDigits(query);
    if (phones.length) branches.push(branch("phone_national", sql`gcs_phone_digits(gp.phone) = ANY(${phones}::text[])`));
    if (branches.length === 0) branches.push(branch("similar_name", sql`false`));
    return join(branches, " UNION ALL ");
  };
}

/** Scored closest candidates, one per person (a master profile, or a guest profile of none), best first. */
async function closestHits(r: Readers, query: string, limit: number): Promise<Hit[]> {
  const rows = await r.sql.query<CloseRow>(closestStatement(query));
  const best = new Map<string, Hit>();
  for (const row of rows) {
    const similarity = row.field === "phone_national" ? NATIONAL_PHONE_SIMILARITY : nameSimilarity(query, row.givenName, row.familyName);
    if (similarity < CLOSE_ENOUGH) continue;
    const key = row.masterProfileId ?? row.guestProfileId;
    const kept = best.get(key);
    if (kept && kept.similarity! >= similarity) continue;
    best.set(key, {
      masterProfileId: row.masterProfileId,
      guestProfileId: row.masterProfileId ? null : row.guestProfileId,
      // Below every match's score (a name prefix is 60).
      score: Math.round(similarity * 50),
      matchedOn: [row.field],
      similarity,
    });
  }
  return [...best.values()]
    .sort((a, b) => b.similarity! - a.similarity! || String(a.masterProfileId ?? a.guestProfileId).localeCompare(String(b.masterProfileId ?? b.guestProfileId)))
    .slice(0, limit + 1);
}

export interface CandidateGuestRow {
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
function candidateGuests(r: Readers, masterIds: string[], guestIds: string[]) {
  return r.sql.query<CandidateGuestRow>(
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

export interface CandidateMasterRow {
  id: string;
  givenName: string | null;
  familyName: string | null;
  email: string | null;
  phone: string | null;
}
const CANDIDATE_MASTER: Record<string, "value"> = { id: "value", givenName: "value", familyName: "value", email: "value", phone: "value" };

export function search(r: Readers) {
  return {
    /** The ranked hits of a query: `limit + 1` at most, so the caller knows whether there were more. */
    hits: (query: string, limit: number) => r.sql.query<Hit>(searchStatement(query, limit)),
    /** When hits finds nothing: the closest candidates, `limit + 1` at most, each with its similarity. */
    closest: (query: string, limit: number) => closestHits(r, query, limit),
    /** The candidates' guest profiles, with their property's name and latest begun stay. */
    guests: (masterIds: string[], guestIds: string[]) => candidateGuests(r, masterIds, guestIds),
    masters: (ids: string[]) =>
      ids.length === 0
        ? Promise.resolve([])
        : r.sql.rows<CandidateMasterRow>({ from: "MasterProfile", shape: CANDIDATE_MASTER, where: [sql`t.id = ANY(${ids}::uuid[])`] }),
  };
}
