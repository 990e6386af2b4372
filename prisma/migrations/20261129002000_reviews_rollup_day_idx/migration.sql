-- The reviews rollup applies a touched review by recomputing its property's local day for its source
-- (src/rollups/reviews-family.ts): one range of this index, read without the table (the rating is
-- included). The (group, property, published_at) index alone read every source of three days, and
-- under the tenant wall's policy the range computed in the join was no index condition at all: every
-- review of the group per pass (300,000 at a million guests per group, 0.3 s of CPU a pass).
CREATE INDEX "reviews_rollup_day_idx" ON "reviews" ("property_group_id", "property_id", "source", "published_at") INCLUDE ("rating");
