-- Stay rollups gain the week-in-month shapes (src/data/metric-rollups.ts STAY_SHAPES): the part
-- weeks at the ends of a range of whole months. No schema change: one change row per built group
-- makes the refresher rebuild its stays family. Until then the stored answers serve as before,
-- and a range that needs a part week counts it live (the read finds no row of the new shape).
INSERT INTO metric_rollup_changes (property_group_id, metric)
SELECT property_group_id, metric FROM metric_rollup_state WHERE metric = 'stays';
