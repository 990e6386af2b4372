// The guest rollups that follow the writes (issue 44). A guest bucket counts guest profiles, their
// distinct master profiles and the ones reachable by e-mail and SMS, per kept purpose. Profiles add
// up; master profiles do too across disjoint sets of masters, so the units are master profiles (a
// guest without one is its own unit): a change re-applies the guests it touched together with every
// other guest of their masters, old and new.
//
// The facts, as last applied (guest_rollup_facts, migration 20261128212000_contact_consent_state):
// per guest profile its property, master, country, loyalty tier (the active membership with the most
// lifetime points, as data/metrics.ts guestsIn picks it), VIP flag, and the kept purposes its e-mail
// and phone are granted for (decided across the whole group, as guestsIn decides reachability).
import type { PoolClient } from "pg";
import { GUEST_SHAPES, dimsKey } from "../data/metric-rollups";
import { applyBucketDeltas, replaceBuckets, wholeGroup, type BucketCount } from "./bucket-deltas";
import { touchedPoints } from "./consent-family";
import type { IncrementalFamily } from "./family";
import { assertPurposesKept } from "./purposes";

const COLUMN: Record<string, string> = { property: "f.property_id", country: "f.country", loyalty_tier: "f.loyalty_tier", vip: "f.vip" };
const GROUPED = ["property", "country", "loyalty_tier", "vip"];
const FIELD: Record<string, string> = { property: "propertyId", country: "country", loyalty_tier: "loyaltyTier", vip: "vip" };

/** The guests `ids` ($3), or all of the group's, with what their buckets need, from the live tables; $2: the kept purposes. */
const liveFacts = (ids: "ids" | "all") => `
  SELECT g.id AS guest_profile_id, g.property_id, g.master_profile_id, g.country_code::text AS country, lt.tier AS loyalty_tier,
    (g.vip_code IS NOT NULL) AS vip,
    -- Granted for a purpose: observed granted and never withdrawn or denied (filter-document.ts effectiveConsentSql).
    coalesce((SELECT array_agg(x.purpose ORDER BY x.purpose) FROM (SELECT co.purpose FROM consent_observations co
      WHERE co.property_group_id = $1 AND co.purpose = ANY($2::text[]) AND co.contact_type = 'email' AND co.contact_value = lower(btrim(g.email))
      GROUP BY co.purpose HAVING bool_and(co.status = 'granted')) x), '{}') AS email_granted,
    coalesce((SELECT array_agg(x.purpose ORDER BY x.purpose) FROM (SELECT co.purpose FROM consent_observations co
      WHERE co.property_group_id = $1 AND co.purpose = ANY($2::text[]) AND co.contact_type = 'phone' AND co.contact_value = g.phone
      GROUP BY co.purpose HAVING bool_and(co.status = 'granted')) x), '{}') AS sms_granted
  FROM guest_profiles g
  LEFT JOIN LATERAL (SELECT lm.tier FROM loyalty_members lm
    WHERE lm.property_group_id = $1 AND lm.guest_profile_id = g.id AND lm.status = 'active'
    ORDER BY lm.lifetime_points DESC, lm.id LIMIT 1) lt ON true
  WHERE g.property_group_id = $1${ids === "ids" ? " AND g.id = ANY($3::uuid[])" : ""}`;

const INSERT_FACTS = `INSERT INTO guest_rollup_facts (property_group_id, guest_profile_id, property_id, master_profile_id, country, loyalty_tier, vip, email_granted, sms_granted)`;

/** A dimension's column in a per-set statement, or NULL when the set does not group by it. */
const keyColumns = (dims: readonly string[]) =>
  GROUPED.map((d) => (dims.includes(d) ? COLUMN[d] : `NULL::${d === "vip" ? "boolean" : "text"}`) + ` AS "${FIELD[d]}"`).join(", ");

/**
 * The contribution of the guests `ids` and of every guest of the masters `masters`, as the facts
 * hold them, to every stored bucket per kept purpose: guestsIn's counts over the facts. `ids` null:
 * every guest (the rebuild). Without kept purposes, one variant "" without reach (as the rebuild
 * stores it). No DISTINCT aggregate (PostgreSQL sorts each group's values for one, 100 times slower
 * under grouping sets): distinct masters are counted per set over guests grouped by master first.
 */
async function contribution(client: PoolClient, groupId: string, variants: string[], ids: string[] | null, masters: string[]): Promise<BucketCount[]> {
  const params = [groupId, ...(ids === null ? [] : [ids, masters])];
  const facts = `SELECT f.property_id::text AS property_id, f.country, f.loyalty_tier, f.vip, f.master_profile_id, f.email_granted, f.sms_granted
    FROM guest_rollup_facts f
    WHERE f.property_group_id = $1${ids === null ? "" : " AND (f.guest_profile_id = ANY($2::uuid[]) OR f.master_profile_id = ANY($3::uuid[]))"}`;
  const grouped = (dims: readonly string[]) => dims.map((d) => COLUMN[d]);
  // Guests, and distinct masters (a master's guests are one row of the inner grouping), per set.
  const { rows: counts } = await client.query<Record<string, unknown> & { set: number; guests: number; masterProfiles: number }>(
    `WITH f AS MATERIALIZED (${facts})
     ${GUEST_SHAPES.map((dims, i) => `SELECT ${i} AS set, ${keyColumns(dims)}, coalesce(sum(f.n), 0)::int AS guests, count(f.master_profile_id)::int AS "masterProfiles"
       FROM (SELECT ${[...grouped(dims), "f.master_profile_id"].join(", ")}, count(*) AS n FROM f GROUP BY ${[...grouped(dims), "f.master_profile_id"].join(", ")}) f
       ${dims.length ? `GROUP BY ${grouped(dims).join(", ")}` : ""}`).join("\n     UNION ALL ")}`,
    params,
  );
  // Reach per purpose: each guest once per purpose its e-mail (kind e) or phone (kind s) is granted for.
  const { rows: reach } = await client.query<Record<string, unknown> & { kind: "e" | "s"; purpose: string; grouping: number; n: number }>(
    `SELECT r.kind, r.purpose, GROUPING(${GROUPED.map((d) => COLUMN[d]).join(", ")}) AS grouping, ${keyColumns(GROUPED)}, count(*)::int AS n
     FROM (${facts}) f
     CROSS JOIN LATERAL (SELECT 'e', x FROM unnest(f.email_granted) x UNION ALL SELECT 's', x FROM unnest(f.sms_granted) x) AS r(kind, purpose)
     GROUP BY r.kind, r.purpose, GROUPING SETS (${GUEST_SHAPES.map((dims) => `(${grouped(dims).join(", ")})`).join(", ")})`,
    params,
  );
  const keysOf = (dims: readonly string[], row: Record<string, unknown>) => Object.fromEntries(dims.map((d) => [FIELD[d], row[FIELD[d]]]));
  const reached = new Map<string, number>();
  for (const row of reach) {
    // GROUPING()'s bits, first argument highest: a set bit is a column not grouped by.
    const dims = GROUPED.filter((_, i) => !(row.grouping & (1 << (GROUPED.length - 1 - i))));
    reached.set(JSON.stringify([row.kind, row.purpose, dimsKey(dims), keysOf(dims, row)]), row.n);
  }
  return counts.flatMap((row) => {
    const dims = GUEST_SHAPES[row.set];
    const keys = keysOf(dims, row);
    const reachOf = (kind: "e" | "s", purpose: string) => reached.get(JSON.stringify([kind, purpose, dimsKey(dims), keys])) ?? 0;
    return (variants.length ? variants : [""]).map((variant) => ({
      shape: dimsKey(dims),
      variant,
      keys,
      measures: {
        guests: row.guests,
        masterProfiles: row.masterProfiles,
        reachableByEmail: variants.length ? reachOf("e", variant) : null,
        reachableBySms: variants.length ? reachOf("s", variant) : null,
      },
    }));
  });
}

/** The one bucket the live statement returns even over no guests: no grouping. */
const grandTotal = (shape: string) => shape === dimsKey([]);

/** The guests a change touched: the profiles and memberships it wrote, and the guests of the contact points it observed. */
async function touchedGuests(client: PoolClient, groupId: string, touched: unknown[][], observed: { type: string; value: string }[]): Promise<string[]> {
  const ids = new Set<string>();
  for (const key of touched.flat() as Record<string, unknown>[]) {
    if (key && typeof key === "object" && typeof key.g === "string") ids.add(key.g);
  }
  if (observed.length) {
    // Two index probes: guest_profiles_group_contact_email_idx and guest_profiles_group_phone_idx.
    const { rows } = await client.query<{ id: string }>(
      `SELECT g.id FROM guest_profiles g WHERE g.property_group_id = $1 AND (lower(btrim(g.email)) COLLATE "C") = ANY($2::text[])
       UNION SELECT g.id FROM guest_profiles g WHERE g.property_group_id = $1 AND g.phone = ANY($3::text[])`,
      [groupId, observed.filter((p) => p.type === "email").map((p) => p.value), observed.filter((p) => p.type === "phone").map((p) => p.value)],
    );
    for (const { id } of rows) ids.add(id);
  }
  return [...ids];
}

export const guestsFamily: IncrementalFamily = {
  // Its whole rebuild stores the buckets from the facts it builds, so the two agree whatever commits meanwhile.
  rebuildsBuckets: true,

  async rebuildFacts(client, groupId, variants) {
    await client.query("DELETE FROM guest_rollup_facts WHERE property_group_id = $1", [groupId]);
    await client.query(`${INSERT_FACTS} SELECT $1::uuid, l.* FROM (${liveFacts("all")}) l`, [groupId, variants]);
    // Every set's guests come from one aggregate row per bucket; the grand total's even over no guest.
    const counts = await wholeGroup(client, () => contribution(client, groupId, variants, null, []));
    await replaceBuckets(client, groupId, "guests", counts);
  },

  async applyTouches(client, groupId, variants, touched) {
    const { observed } = touchedPoints(touched);
    if (observed.length) await assertPurposesKept(client, groupId, variants, observed.map((p) => p.value));
    const ids = await touchedGuests(client, groupId, touched, observed);
    if (!ids.length) return 0;
    // The guests' facts as they are now, read once: what is inserted is what the masters are taken from.
    const { rows: fresh } = await client.query<{ master_profile_id: string | null }>(liveFacts("ids"), [groupId, variants, ids]);
    const { rows: old } = await client.query<{ master_profile_id: string }>(
      "SELECT DISTINCT master_profile_id FROM guest_rollup_facts WHERE property_group_id = $1 AND guest_profile_id = ANY($2::uuid[]) AND master_profile_id IS NOT NULL",
      [groupId, ids],
    );
    // Every master the guests left or joined: its distinct count is re-applied with all its guests.
    const masters = [...new Set([...old, ...fresh].map((r) => r.master_profile_id).filter((m): m is string => m !== null))];
    const before = await contribution(client, groupId, variants, ids, masters);
    await client.query("DELETE FROM guest_rollup_facts WHERE property_group_id = $1 AND guest_profile_id = ANY($2::uuid[])", [groupId, ids]);
    await client.query(
      `${INSERT_FACTS} SELECT $1, x.guest_profile_id, x.property_id, x.master_profile_id, x.country, x.loyalty_tier, x.vip, x.email_granted, x.sms_granted
       FROM jsonb_to_recordset($2::jsonb) AS x(guest_profile_id uuid, property_id uuid, master_profile_id uuid, country text, loyalty_tier text, vip boolean, email_granted text[], sms_granted text[])`,
      [groupId, JSON.stringify(fresh)],
    );
    const after = await contribution(client, groupId, variants, ids, masters);
    await applyBucketDeltas(client, groupId, "guests", before, after, grandTotal);
    return ids.length;
  },
};
