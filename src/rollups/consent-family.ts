// The consent rollups that follow the writes (issue 44). Every consent bucket counts distinct contact
// points, and a point is decided across the whole group, so contact points are the units: a bucket is
// the sum of its points' contributions, and a change moves only the points it touched.
//
// The facts, as last applied (migration 20261128212000_contact_consent_state):
// - consent_rollup_points: each contact point in scope and the properties whose guests have it
//   (data/metrics.ts consentIn's `cp`);
// - contact_consent_state: each observed point's effective consent per kept purpose, with the
//   deciding observation's instant (its local month is the bucket's period).
// Applying touches re-reads the touched points' rows from the live tables: their contribution before
// and after is counted with the live statement's own grouping sets, and the difference moves the stored
// buckets (bucket-deltas.ts). A point re-applied twice adds nothing the second time.
import type { PoolClient } from "pg";
import { CONSENT_SHAPES, consentShapeKey } from "../data/metric-rollups";
import { applyBucketDeltas, replaceBuckets, wholeGroup, type BucketCount } from "./bucket-deltas";
import type { IncrementalFamily } from "./family";
import { assertPurposesKept } from "./purposes";

type ContactType = "email" | "phone";
interface Point {
  type: ContactType;
  value: string;
}

/** The contact points a change touched: observations name theirs; a guest profile its e-mail and phone, old and new. */
export function touchedPoints(touched: unknown[][]): { points: Point[]; observed: Point[] } {
  const points = new Map<string, Point>();
  const observed = new Map<string, Point>();
  const put = (map: Map<string, Point>, type: ContactType, value: unknown) => {
    if (typeof value === "string" && value !== "") map.set(`${type}:${value}`, { type, value });
  };
  for (const key of touched.flat() as Record<string, unknown>[]) {
    if (!key || typeof key !== "object") continue;
    if ("t" in key) {
      put(observed, key.t as ContactType, key.v);
      put(points, key.t as ContactType, key.v);
    }
    if ("e" in key) put(points, "email", key.e);
    if ("p" in key) put(points, "phone", key.p);
  }
  return { points: [...points.values()], observed: [...observed.values()] };
}

/** The live statement's groupings: each contact type (or both) by nothing, property, month, or both. */
const SETS = [...new Map(CONSENT_SHAPES.map(({ contactType, dims }) => (contactType ? ["contact_type", ...dims] : dims)).map((s) => [s.join(","), s])).values()];

/** The touched points as a relation `t(contact_type, contact_value)`, from parameters $n (types) and $n+1 (values). */
const touchedRelation = (n: number) => `unnest($${n}::"ContactType"[], $${n + 1}::text[]) AS t(contact_type, contact_value)`;
const arrays = (points: Point[]) => [points.map((p) => p.type), points.map((p) => p.value)];

/**
 * The points' contribution to every stored bucket, per kept purpose, as the facts hold it: consentIn's
 * counts over the facts instead of the live rows. `points` null: every point (the rebuild).
 */
async function contribution(client: PoolClient, groupId: string, variants: string[], points: Point[] | null): Promise<BucketCount[]> {
  // The touched points' facts are primary-key lookups (one per point, property and purpose).
  const from = points === null
    ? "consent_rollup_points p"
    : `${touchedRelation(3)} JOIN consent_rollup_points p ON p.property_group_id = $1 AND p.contact_type = t.contact_type AND p.contact_value = t.contact_value`;
  const column = (dim: string) => ({ contact_type: "contact_type", property: "property_id", month: "period" })[dim]!;
  // Per set, each point once per bucket (DISTINCT over the set's keys and the point), then counted
  // by status: no DISTINCT aggregate, which PostgreSQL sorts group by group (100 times slower here).
  const { rows } = await client.query<{ set: number; purpose: string; contactType: string | null; propertyId: string | null; period: string | null; granted: number; withdrawn: number; denied: number; unknown: number }>(
    `WITH d AS MATERIALIZED (
       SELECT p.contact_type::text AS contact_type, p.contact_value, p.property_id::text AS property_id, v.purpose, s.status::text AS status,
         to_char(date_trunc('month', s.decided_at AT TIME ZONE pr.timezone), 'YYYY-MM-DD') AS period
       FROM ${from}
       JOIN properties pr ON pr.id = p.property_id AND pr.property_group_id = $1
       CROSS JOIN unnest($2::text[]) AS v(purpose)
       LEFT JOIN contact_consent_state s ON s.property_group_id = $1 AND s.contact_type = p.contact_type
         AND s.contact_value = p.contact_value AND s.purpose = v.purpose
       WHERE p.property_group_id = $1)
     ${SETS.map((set, i) => {
       const keys = set.map(column);
       const key = (dim: string, name: string) => `${set.includes(dim) ? column(dim) : "NULL::text"} AS "${name}"`;
       return `SELECT ${i} AS set, purpose, ${key("contact_type", "contactType")}, ${key("property", "propertyId")}, ${key("month", "period")},
         count(*) FILTER (WHERE status = 'granted')::int AS granted, count(*) FILTER (WHERE status = 'withdrawn')::int AS withdrawn,
         count(*) FILTER (WHERE status = 'denied')::int AS denied, count(*) FILTER (WHERE status IS NULL)::int AS unknown
       FROM (SELECT DISTINCT ${["purpose", ...keys, "contact_value", ...(set.includes("contact_type") ? [] : ["contact_type"]), "status"].join(", ")} FROM d) x
       GROUP BY ${["purpose", ...keys].join(", ")}`;
     }).join("\n     UNION ALL ")}`,
    [groupId, variants, ...(points === null ? [] : arrays(points))],
  );
  return rows.map((row) => {
    const dims = SETS[row.set];
    const keys: Record<string, unknown> = {};
    if (dims.includes("property")) keys.propertyId = row.propertyId;
    if (dims.includes("month")) keys.period = row.period;
    return {
      shape: consentShapeKey(dims.includes("contact_type") ? row.contactType : null, dims.filter((x) => x !== "contact_type")),
      variant: row.purpose,
      keys,
      measures: { granted: row.granted, withdrawn: row.withdrawn, denied: row.denied, unknown: row.unknown },
    };
  });
}

/** The one bucket the live statement returns even over no points: both types, no grouping. */
const grandTotal = (shape: string) => shape === consentShapeKey(null, []);

/** Re-reads the facts of `points` (null: all of the group's) from the live tables. */
async function refreshFacts(client: PoolClient, groupId: string, variants: string[], points: Point[] | null): Promise<void> {
  for (const table of ["consent_rollup_points", "contact_consent_state"]) {
    if (points === null) await client.query(`DELETE FROM ${table} WHERE property_group_id = $1`, [groupId]);
    else {
      await client.query(
        `DELETE FROM ${table} x USING ${touchedRelation(2)} WHERE x.property_group_id = $1 AND x.contact_type = t.contact_type AND x.contact_value = t.contact_value`,
        [groupId, ...arrays(points)],
      );
    }
  }
  // Each e-mail as observations store it (trimmed, lower-case), phones as stored: consentIn's points.
  // A touched point's guests are two index probes (guest_profiles_group_contact_email_idx, _phone_idx).
  const emails = (points ?? []).filter((p) => p.type === "email").map((p) => p.value);
  const phones = (points ?? []).filter((p) => p.type === "phone").map((p) => p.value);
  await client.query(
    `INSERT INTO consent_rollup_points (property_group_id, contact_type, contact_value, property_id)
     SELECT DISTINCT $1::uuid, 'email'::"ContactType", lower(btrim(g.email)), g.property_id FROM guest_profiles g
     WHERE g.property_group_id = $1 AND lower(btrim(g.email)) <> ''${points === null ? "" : " AND (lower(btrim(g.email)) COLLATE \"C\") = ANY($2::text[])"}
     UNION
     SELECT DISTINCT $1::uuid, 'phone'::"ContactType", g.phone, g.property_id FROM guest_profiles g
     WHERE g.property_group_id = $1 AND g.phone <> ''${points === null ? "" : " AND g.phone = ANY($3::text[])"}`,
    points === null ? [groupId] : [groupId, emails, phones],
  );
  // The deciding observation of each point and kept purpose, in consent/precedence.ts's order (as
  // data/filter-document.ts decidingObservationSql): any withdrawn or denied first, then the latest,
  // at equal instants the smaller id. A touched point: one range of
  // consent_observations_group_purpose_contact_idx per kept purpose.
  await client.query(
    `INSERT INTO contact_consent_state (property_group_id, contact_type, contact_value, purpose, status, decided_at, observation_id)
     SELECT DISTINCT ON (co.contact_type, co.contact_value, co.purpose) $1::uuid, co.contact_type, co.contact_value, co.purpose, co.status, co.observed_at, co.id
     FROM ${points === null ? "consent_observations co" : `${touchedRelation(3)} JOIN consent_observations co ON co.contact_type = t.contact_type AND co.contact_value = t.contact_value`}
     WHERE co.property_group_id = $1 AND co.purpose = ANY($2::text[])
     ORDER BY co.contact_type, co.contact_value, co.purpose, co.status = 'granted', co.observed_at DESC, co.id`,
    [groupId, variants, ...(points === null ? [] : arrays(points))],
  );
}

export const consentFamily: IncrementalFamily = {
  // Its whole rebuild stores the buckets from the facts it builds, so the two agree whatever commits meanwhile.
  rebuildsBuckets: true,

  async rebuildFacts(client, groupId, variants) {
    await refreshFacts(client, groupId, variants, null);
    const counts = await wholeGroup(client, () => contribution(client, groupId, variants, null));
    // A purpose with no point still has its grand total, zeros (the live statement's empty grouping set).
    for (const purpose of variants) {
      if (!counts.some((c) => c.variant === purpose && grandTotal(c.shape))) {
        counts.push({ shape: consentShapeKey(null, []), variant: purpose, keys: {}, measures: { granted: 0, withdrawn: 0, denied: 0, unknown: 0 } });
      }
    }
    await replaceBuckets(client, groupId, "consent", counts);
  },

  async applyTouches(client, groupId, variants, touched) {
    const { points, observed } = touchedPoints(touched);
    if (!points.length) return 0;
    if (observed.length) await assertPurposesKept(client, groupId, variants, observed.map((p) => p.value));
    const before = await contribution(client, groupId, variants, points);
    await refreshFacts(client, groupId, variants, points);
    const after = await contribution(client, groupId, variants, points);
    await applyBucketDeltas(client, groupId, "consent", before, after, grandTotal);
    return points.length;
  },
};
