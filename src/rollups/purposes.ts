// The consent purposes the guest and consent rollups keep (their `variants`): the group's most
// observed ones. A pass that applies touches keeps the stored variants; when new observations would
// change that set, the pair needs its whole rebuild (PurposesChanged), which recomputes it.
import type { PoolClient } from "pg";

/** At most this many consent purposes per group get guest and consent rollups (the most observed). */
export const MAX_PURPOSES = 20;

/** The consent purposes the group's observations name, most observed first (at most MAX_PURPOSES), sorted. */
export async function purposesOf(client: PoolClient, groupId: string): Promise<string[]> {
  const { rows } = await client.query<{ purpose: string }>(
    `SELECT purpose FROM consent_observations WHERE property_group_id = $1 GROUP BY purpose ORDER BY count(*) DESC, purpose LIMIT ${MAX_PURPOSES}`,
    [groupId],
  );
  return rows.map((r) => r.purpose).sort();
}

/** Thrown by applyTouches when the kept purposes would change: the refresher rebuilds the pair instead. */
export class PurposesChanged extends Error {
  constructor(readonly groupId: string, readonly variants: string[]) {
    super(`the consent purposes kept for group ${groupId} changed; the pair needs a whole rebuild`);
    this.name = "PurposesChanged";
  }
}

/**
 * Throws PurposesChanged when observations of `values` (the touched contact points) may have changed
 * the kept purposes. Under MAX_PURPOSES the kept set is every purpose observed, so it changes only when
 * a touched point names one not kept, or a kept one has no observation left: index probes. At the cap,
 * counts decide the ranking: the group's purposes are counted again.
 */
export async function assertPurposesKept(client: PoolClient, groupId: string, variants: string[], values: string[]): Promise<void> {
  if (variants.length >= MAX_PURPOSES) {
    const now = await purposesOf(client, groupId);
    if (now.join("\u0000") !== [...variants].sort().join("\u0000")) throw new PurposesChanged(groupId, variants);
    return;
  }
  const { rows: [probe] } = await client.query<{ changed: boolean }>(
    `SELECT EXISTS (SELECT 1 FROM consent_observations co
         WHERE co.property_group_id = $1 AND co.contact_value = ANY($3::text[]) AND co.purpose <> ALL($2::text[]))
       OR EXISTS (SELECT 1 FROM unnest($2::text[]) AS v(purpose)
         WHERE NOT EXISTS (SELECT 1 FROM consent_observations co WHERE co.property_group_id = $1 AND co.purpose = v.purpose)) AS changed`,
    [groupId, variants, values],
  );
  if (probe.changed) throw new PurposesChanged(groupId, variants);
}
