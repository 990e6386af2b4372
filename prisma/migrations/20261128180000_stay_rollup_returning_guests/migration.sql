-- Stay rollups gain returningGuests (and, in the shapes by property, each property's own count for
-- narrowed callers): src/data/metric-rollups.ts. No schema change: one change row per built group
-- makes the refresher rebuild its stays family. Until then a request that asks for returning
-- guests is counted live (the stored rows lack them); the other measures serve as before.
INSERT INTO metric_rollup_changes (property_group_id, metric)
SELECT property_group_id, metric FROM metric_rollup_state WHERE metric = 'stays';
