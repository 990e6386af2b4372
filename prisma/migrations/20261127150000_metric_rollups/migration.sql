-- Pre-aggregated dashboard answers (issue 28). metric_rollups holds, per group, the buckets the
-- aggregate statements of src/data/metrics.ts return for a fixed set of shapes (src/rollups/shapes.ts);
-- a request whose arguments match a shape reads them instead of grouping every row. Statement
-- triggers on the tables they count append a change row (no row is updated, so writers never queue
-- on each other); the refresher (src/rollups/refresh.ts) rebuilds a group's family after a change.

CREATE TABLE "metric_rollups" (
    "id" BIGSERIAL NOT NULL,
    "property_group_id" UUID NOT NULL,
    "metric" TEXT NOT NULL,
    "shape" TEXT NOT NULL,
    "variant" TEXT NOT NULL DEFAULT '',
    "period" DATE,
    "bucket" JSONB NOT NULL,

    CONSTRAINT "metric_rollups_pkey" PRIMARY KEY ("id")
);
CREATE INDEX "metric_rollups_lookup_idx" ON "metric_rollups" ("property_group_id", "metric", "shape", "variant", "period");

-- Reviews are additive, so they are kept as counts per property, local day or month, and source,
-- and summed per request: any range of whole local days, any rating bounds.
CREATE TABLE "review_rollups" (
    "property_group_id" UUID NOT NULL,
    "property_id" UUID NOT NULL,
    "grain" TEXT NOT NULL,
    "period" DATE NOT NULL,
    "source" TEXT NOT NULL,
    "reviews" INTEGER NOT NULL,
    "rating_sum" BIGINT NOT NULL,
    "r1" INTEGER NOT NULL,
    "r2" INTEGER NOT NULL,
    "r3" INTEGER NOT NULL,
    "r4" INTEGER NOT NULL,
    "r5" INTEGER NOT NULL,

    CONSTRAINT "review_rollups_pkey" PRIMARY KEY ("property_group_id", "grain", "property_id", "period", "source")
);

-- The part of a day before or after a review range's bound that is not a local midnight is counted
-- from the reviews themselves.
CREATE INDEX "reviews_property_group_id_property_id_published_at_idx" ON "reviews" ("property_group_id", "property_id", "published_at");

CREATE TABLE "metric_rollup_state" (
    "property_group_id" UUID NOT NULL,
    "metric" TEXT NOT NULL,
    "computed_from" TIMESTAMPTZ(3) NOT NULL,
    "refreshed_at" TIMESTAMPTZ(3) NOT NULL,
    "duration_ms" INTEGER NOT NULL,
    -- The consent purposes the guests and consent rollups were computed for.
    "variants" TEXT[] NOT NULL DEFAULT '{}',

    CONSTRAINT "metric_rollup_state_pkey" PRIMARY KEY ("property_group_id", "metric")
);

CREATE TABLE "metric_rollup_changes" (
    "id" BIGSERIAL NOT NULL,
    "property_group_id" UUID NOT NULL,
    "metric" TEXT NOT NULL,
    "changed_at" TIMESTAMPTZ(3) NOT NULL DEFAULT now(),

    CONSTRAINT "metric_rollup_changes_pkey" PRIMARY KEY ("id")
);
CREATE INDEX "metric_rollup_changes_group_idx" ON "metric_rollup_changes" ("property_group_id", "metric", "changed_at");

-- One change row per statement and group for each family the table feeds (TG_ARGV).
CREATE FUNCTION metric_rollups_changed() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
  IF TG_OP = 'DELETE' THEN
    INSERT INTO metric_rollup_changes (property_group_id, metric)
      SELECT g, m FROM (SELECT DISTINCT property_group_id AS g FROM old_rows) o, unnest(TG_ARGV) AS m;
  ELSE
    INSERT INTO metric_rollup_changes (property_group_id, metric)
      SELECT g, m FROM (SELECT DISTINCT property_group_id AS g FROM new_rows) n, unnest(TG_ARGV) AS m;
  END IF;
  RETURN NULL;
END $$;

-- A truncated table leaves no group's rollups true: they are dropped, and reads count live until
-- the refresher has rebuilt them.
CREATE FUNCTION metric_rollups_truncated() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
  DELETE FROM metric_rollup_state;
  DELETE FROM metric_rollups;
  DELETE FROM review_rollups;
  RETURN NULL;
END $$;

DO $$
DECLARE
  feeds CONSTANT text[][] := ARRAY[
    ['reservations', 'stays'],
    ['transactions', 'stays'],
    ['guest_profiles', 'stays,guests,consent'],
    ['loyalty_members', 'guests'],
    ['consent_observations', 'guests,consent'],
    ['reviews', 'reviews'],
    ['properties', 'stays,guests,consent,reviews']];
  t text;
  args text;
BEGIN
  FOR i IN 1 .. array_length(feeds, 1) LOOP
    t := feeds[i][1];
    args := (SELECT string_agg(quote_literal(m), ', ') FROM unnest(string_to_array(feeds[i][2], ',')) AS m);
    EXECUTE format('CREATE TRIGGER metric_rollups_insert AFTER INSERT ON %I REFERENCING NEW TABLE AS new_rows FOR EACH STATEMENT EXECUTE FUNCTION metric_rollups_changed(%s)', t, args);
    EXECUTE format('CREATE TRIGGER metric_rollups_update AFTER UPDATE ON %I REFERENCING NEW TABLE AS new_rows FOR EACH STATEMENT EXECUTE FUNCTION metric_rollups_changed(%s)', t, args);
    EXECUTE format('CREATE TRIGGER metric_rollups_delete AFTER DELETE ON %I REFERENCING OLD TABLE AS old_rows FOR EACH STATEMENT EXECUTE FUNCTION metric_rollups_changed(%s)', t, args);
    EXECUTE format('CREATE TRIGGER metric_rollups_truncate AFTER TRUNCATE ON %I FOR EACH STATEMENT EXECUTE FUNCTION metric_rollups_truncated()', t);
    -- Bulk loads and fixture resets run with session_replication_role = replica: still record.
    EXECUTE format('ALTER TABLE %I ENABLE ALWAYS TRIGGER metric_rollups_insert', t);
    EXECUTE format('ALTER TABLE %I ENABLE ALWAYS TRIGGER metric_rollups_update', t);
    EXECUTE format('ALTER TABLE %I ENABLE ALWAYS TRIGGER metric_rollups_delete', t);
    EXECUTE format('ALTER TABLE %I ENABLE ALWAYS TRIGGER metric_rollups_truncate', t);
  END LOOP;
END $$;
