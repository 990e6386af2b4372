// guestSearch (the find_guests MCP tool): one free-text box over name, e-mail, phone, source id,
// loyalty member number and confirmation number, answered with ranked candidates: one per master
// profile, or a guest profile of its own when it belongs to none. The statement is data/search.ts.
import type { RequestContext } from "../../context";
import type { CloseField, MatchField } from "../../data/search";
import { invalidRequest } from "../../errors";
import { isStorableText, unstorableDetail } from "../text";


export const SEARCH_LIMIT = { default: 5, max: 25 };
const MAX_QUERY_LENGTH = 200;

export interface GuestCandidate {
  masterProfileId: string | null;
  guestProfileIds: string[];
  name: string | null;
  emails: string[];
  phones: string[];
  properties: string[];
  lastStay: string | null;
  matchedOn: (MatchField | CloseField)[];
  score: number;
  /** A closest candidate's similarity (0 to 1); null for a match. */
  similarity: number | null;
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

const distinct = (values: (string | null | undefined)[]) => [...new Set(values.filter((v): v is string => Boolean(v)))];
const fullName = (given: string | null, family: string | null) => [given, family].filter(Boolean).join(" ") || null;
const latest = (dates: (string | null)[]) => dates.reduce<string | null>((a, d) => (d && (!a || d > a) ? d : a), null);

export async function guestSearch(_: unknown, args: { query: string; limit?: number | null }, ctx: RequestContext) {
  const { query, limit } = parseSearchArgs(args);
  const exact = await ctx.data.search.hits(query, limit);
  // Nothing matched: the closest names and phones, said to be candidates, not matches (issue 42).
  const closest = exact.length === 0;
  const hits = closest ? await ctx.data.search.closest(query, limit) : exact;
  const truncated = hits.length > limit;
  const shown = hits.slice(0, limit);
  if (shown.length === 0) return { query, closest, candidates: [], truncated: false };

  const masterIds = distinct(shown.map((h) => h.masterProfileId));
  const guestIds = distinct(shown.map((h) => h.guestProfileId));
  const [guests, masters] = await Promise.all([ctx.data.search.guests(masterIds, guestIds), ctx.data.search.masters(masterIds)]);
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
      similarity: hit.similarity ?? null,
    };
  });
  return { query, closest, candidates, truncated };
}

export const guestSearchResolvers = { Query: { guestSearch } };
