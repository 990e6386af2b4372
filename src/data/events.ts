// The guest event log (spec 4.4, 6).
//
// Timeline walks must never skip a row because sequence values commit out of order: a transaction
// that took seq 100 can commit after one that took seq 101. So the timeline is ordered by the
// writing transaction id, then seq, and only rows of transactions older than the snapshot's xmin
// (every older transaction has finished) are returned. A transaction still in flight, or one that
// has not written yet, always gets a larger transaction id than any returned row, so it sorts after
// any cursor a reader holds: late commits appear later in the walk, never behind it.
import type { Scope } from "./scope";
import type { CursorKey } from "../pagination/cursor";
import { isUuid } from "../validate";
import type { Readers } from "./readers";
import { columns, equals, join, raw, selectList, sql, type RowShape, type Sql, type TenantPredicate } from "./sql";
import { guestConditions, guestIdsOfMaster } from "./where";
import { Event, type RowOf } from "./models";

export interface EventFilter {
  entityType?: string | null;
  entityId?: string | null;
  guestProfileId?: string | null;
  masterProfileId?: string | null;
}

/** An event as data/ returns it: seq and txid (bigint) as decimal text, instants as ISO text. */
export type EventRow = RowOf<typeof Event>;

const EVENT_ROW: RowShape = Event.row;
/** The row's fields as named in a subquery of the select list (timelineWithin). */
const PAGE_FIELDS = raw(Object.keys(EVENT_ROW).map((field) => `page."${field}"`).join(", "));

/** The timeline's position: (txid, seq). */
export const eventKeyOf = (e: EventRow): CursorKey => [e.txid, e.seq];

const c = columns("Event");
/** The same columns on `events h`, the latest mode's heads. */
const HEAD = columns("Event", "h");
const BIGINT = /^-?\d{1,19}$/;

/** The timeline's direction: ascending (oldest first) or descending (the same key walked backwards). */
export type TimelineOrder = "asc" | "desc";

/**
 * (txid, seq) > (t, s), or < for a descending walk, written so that the index range starts at the
 * cursor (a descending walk reads the same index backwards).
 */
function afterKey(key: CursorKey | null, order: TimelineOrder = "asc"): Sql | undefined {
  if (!key) return undefined;
  const [txid, seq] = key.map(String);
  // A signed key of the wrong shape cannot come from us; match nothing rather than fail.
  if (key.length !== 2 || !BIGINT.test(txid) || !BIGINT.test(seq)) return sql`FALSE`;
  if (order === "desc") return sql`${c("txid")} <= ${txid}::bigint AND (${c("txid")} < ${txid}::bigint OR ${c("seq")} < ${seq}::bigint)`;
  return sql`${c("txid")} >= ${txid}::bigint AND (${c("txid")} > ${txid}::bigint OR ${c("seq")} > ${seq}::bigint)`;
}

const TIMELINE_ORDER = { asc: sql`${c("txid")}, ${c("seq")}`, desc: sql`${c("txid")} DESC, ${c("seq")} DESC` };

// Every finished transaction is older than the statement's snapshot xmin: read in the same statement,
// the watermark and the rows come from one snapshot.
const FINISHED = sql`${c("txid")} < (SELECT pg_snapshot_xmin(pg_current_snapshot())::text::bigint)`;

/** events().matcher's test, outside `events` so that it keeps only what it tests (not the request's readers). */
function rowMatcher(scope: Scope, f: EventFilter, guestsOfMaster: string[] | undefined): (e: EventRow) => boolean {
  if (f.entityId != null && !isUuid(f.entityId)) return () => false;
  const lower = (v: string | null | undefined) => (v == null ? undefined : v.toLowerCase());
  const { propertyGroupId, propertyId } = scope;
  const [entityType, entityId, guestId] = [f.entityType ?? undefined, lower(f.entityId), lower(f.guestProfileId)];
  const ofMaster = guestsOfMaster && new Set(guestsOfMaster.map((id) => id.toLowerCase()));
  return (e) =>
    e.propertyGroupId === propertyGroupId &&
    (propertyId === null || e.propertyId === propertyId) &&
    (entityType === undefined || e.entityType === entityType) &&
    (entityId === undefined || e.entityId === entityId) &&
    (guestId === undefined || e.guestProfileId === guestId) &&
    (ofMaster === undefined || (e.guestProfileId !== null && ofMaster.has(e.guestProfileId)));
}

export function events(r: Readers) {
  /** The filter's conditions on the events table `col` names, or undefined when it matches nothing. */
  function conditions(f: EventFilter, col = c): Sql[] | undefined {
    // Entity ids are uuids: any other string names no entity (the column would reject it).
    if (f.entityId != null && !isUuid(f.entityId)) return undefined;
    return [
      equals(col("entityType"), f.entityType),
      f.entityId == null ? undefined : sql`${col("entityId")} = ${f.entityId}::uuid`,
      // Unclustered guests have no master profile, so they never match a master_profile_id.
      ...guestConditions(r, f, col("guestProfileId")),
    ].filter((w): w is Sql => w !== undefined);
  }

  return {
    /**
     * Events the filter selects after `after` in (txid, seq) order, of finished transactions only.
     * Descending: the same rows backwards from the newest finished event. A transaction that finishes
     * later has a larger txid than every row served, so it lands at the head, never inside a walk.
     */
    async timeline(filter: EventFilter, after: CursorKey | null, take: number, order: TimelineOrder = "asc"): Promise<EventRow[]> {
      const where = conditions(filter);
      if (!where) return [];
      return r.sql.rows<EventRow>({
        from: "Event",
        shape: EVENT_ROW,
        where: [...where, FINISHED, afterKey(after, order)],
        orderBy: TIMELINE_ORDER[order],
        limit: take,
        // A person's timeline reads the (group, guest, txid, seq) index whatever the values, so its
        // plan is kept per connection (checked at 1M guests, keyset page included). A group-wide filter
        // (an entity type alone) keeps a fresh plan: kept, it read 421,000 rows for a rare type.
        prepare: filter.guestProfileId != null || filter.masterProfileId != null,
      });
    },

    /**
     * The timeline's next rows as `timeline` reads them, stopped once they hold `maxBytes` of
     * delta (as JSON text): the first row always, so at most `maxBytes` plus one event. For the
     * event streams (streams/event-hub.ts), whose reads must be bounded in bytes, not rows: one event
     * may be megabytes. `more`: rows may follow (the page was full, or cut at `maxBytes`).
     */
    async timelineWithin(filter: EventFilter, after: CursorKey | null, take: number, maxBytes: number): Promise<{ rows: EventRow[]; more: boolean }> {
      const where = conditions(filter);
      if (!where) return { rows: [], more: false };
      // The running size is a window over the page's own rows (LIMIT bounds the read first: the
      // window runs as the index scan yields, in order); the page is counted before it is cut.
      const rows = await r.sql.query<EventRow & { pageRows: string }>((scoped) => sql`WITH page AS (
          SELECT ${selectList("Event", EVENT_ROW)}, sum(octet_length(t.delta::text)) OVER (ORDER BY ${c("txid")}, ${c("seq")}) - octet_length(t.delta::text) AS bytes_before
          FROM events t WHERE ${join([scoped("Event", "t"), ...where, FINISHED, afterKey(after)].filter((w): w is Sql => w !== undefined), " AND ")}
          ORDER BY ${c("txid")}, ${c("seq")} LIMIT ${take})
        SELECT ${PAGE_FIELDS}, (SELECT count(*) FROM page)::text AS "pageRows" FROM page WHERE bytes_before < ${maxBytes} ORDER BY bytes_before`);
      const pageRows = rows.length > 0 ? Number(rows[0].pageRows) : 0;
      return { rows, more: pageRows === take || rows.length < pageRows };
    },

    /**
     * The filter and the caller's scope as a test of one row of its group's timeline: true exactly
     * for the rows `timeline` with this filter returns (`conditions` and the tenant rule of Event,
     * data/tenant.ts). For one group-wide read fanned out to many filters (streams/event-hub.ts). A
     * master_profile_id is resolved to its guests now: ask again to see later clustering.
     */
    async matcher(f: EventFilter): Promise<(e: EventRow) => boolean> {
      const ofMaster = await guestIdsOfMaster(r, f.masterProfileId);
      return rowMatcher(r.scope, f, ofMaster);
    },

    /**
     * The newest event of up to `take` entities the filter selects, most recently changed first.
     * `heads` counts the entities found, up to take + 1: more than `take` means more matched.
     */
    async latest(filter: EventFilter, take: number): Promise<{ heads: number; nodes: EventRow[] }> {
      const where = conditions(filter, HEAD);
      if (!where) return { heads: 0, nodes: [] };
      const rows = await r.sql.query<EventRow>((scoped: TenantPredicate) => {
        const headWhere = join([scoped("Event", "h"), ...where], " AND ");
        return sql`SELECT ${selectList("Event", EVENT_ROW)} FROM events t WHERE ${scoped("Event", "t")} AND ${c("seq")} = ANY(ARRAY(
          SELECT max(h.seq) FROM events h WHERE ${headWhere}
          GROUP BY h.entity_type, h.entity_id ORDER BY max(h.seq) DESC LIMIT ${take + 1}))
          ORDER BY ${c("seq")} DESC`;
      });
      return { heads: rows.length, nodes: rows.slice(0, take) };
    },

    /**
     * The latest events of these guests by when they happened (occurred_at, ties by seq), newest
     * first: a backfilled history appended last is old news. One statement: each guest's newest
     * `take` read backwards on the (group, guest, occurred_at, seq) index, then merged; with
     * `guest_profile_id = ANY(…)` instead, PostgreSQL sorts the person's whole history (28 ms at 20,000
     * events, against well under 1 ms).
     */
    ofGuests: (guestIds: readonly string[], take: number) =>
      r.sql.query<EventRow>(
        (scoped) => sql`SELECT ${PAGE_FIELDS} FROM unnest(${`{${guestIds.join(",")}}`}::uuid[]) AS g(id)
          CROSS JOIN LATERAL (SELECT ${selectList("Event", EVENT_ROW)}, t.occurred_at AS sort_at, t.seq AS sort_seq
            FROM events t WHERE ${scoped("Event", "t")} AND ${c("guestProfileId")} = g.id ORDER BY ${c("occurredAt")} DESC, ${c("seq")} DESC LIMIT ${take}) page
          ORDER BY page.sort_at DESC, page.sort_seq DESC LIMIT ${take}`,
        { prepare: true },
      ),
  };
}
