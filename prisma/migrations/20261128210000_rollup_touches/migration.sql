-- Rollups that follow the writes (issue 44). A change row now also says what its statement touched:
-- `touched` holds the keys of the statement's old and new rows (one JSON object per row, de-duplicated),
-- so the refresher re-applies only those units (src/rollups/refresh.ts, the families' applyTouches).
-- NULL means "rebuild the whole pair": a statement over more than 5,000 rows (a bulk load), any
-- change to `properties` (a time zone moves every local bucket), and the rows written before this
-- migration or by a migration.
ALTER TABLE "metric_rollup_changes" ADD COLUMN "touched" JSONB;

-- One function per table, with its keys as static SQL (a cached plan on every write):
--   reservations          {"r": id, "g": guest_profile_id}
--   transactions          {"r": reservation_id}
--   guest_profiles        {"g": id, "m": master_profile_id, "e": lower(btrim(email)), "p": phone}
--   loyalty_members       {"g": guest_profile_id}
--   consent_observations  {"t": contact_type, "v": contact_value}
--   reviews               {"p": property_id, "d": published_at, "s": source}
-- Still one change row per statement, group and family (TG_ARGV), never an update of a shared row.
DO $$
DECLARE
  keys CONSTANT text[][] := ARRAY[
    ['reservations', 'jsonb_build_object(''r'', id, ''g'', guest_profile_id)'],
    ['transactions', 'jsonb_build_object(''r'', reservation_id)'],
    ['guest_profiles', 'jsonb_build_object(''g'', id, ''m'', master_profile_id, ''e'', lower(btrim(email)), ''p'', phone)'],
    ['loyalty_members', 'jsonb_build_object(''g'', guest_profile_id)'],
    ['consent_observations', 'jsonb_build_object(''t'', contact_type, ''v'', contact_value)'],
    ['reviews', 'jsonb_build_object(''p'', property_id, ''d'', published_at, ''s'', source)']];
  t text;
  k text;
BEGIN
  FOR i IN 1 .. array_length(keys, 1) LOOP
    t := keys[i][1];
    k := keys[i][2];
    EXECUTE format($f$
      CREATE FUNCTION %1$I() RETURNS trigger LANGUAGE plpgsql AS $body$
      DECLARE
        rows_changed bigint;
      BEGIN
        -- Past 5,000 rows the keys would cost more to record and apply than a whole rebuild.
        IF TG_OP = 'DELETE' THEN
          SELECT count(*) INTO rows_changed FROM old_rows;
        ELSE
          SELECT count(*) INTO rows_changed FROM new_rows;
        END IF;
        IF rows_changed > 5000 THEN
          IF TG_OP = 'DELETE' THEN
            INSERT INTO metric_rollup_changes (property_group_id, metric)
              SELECT g, m FROM (SELECT DISTINCT property_group_id AS g FROM old_rows) o, unnest(TG_ARGV) AS m;
          ELSE
            INSERT INTO metric_rollup_changes (property_group_id, metric)
              SELECT g, m FROM (SELECT DISTINCT property_group_id AS g FROM new_rows) n, unnest(TG_ARGV) AS m;
          END IF;
        ELSIF TG_OP = 'INSERT' THEN
          INSERT INTO metric_rollup_changes (property_group_id, metric, touched)
            SELECT c.g, m, c.touched
            FROM (SELECT property_group_id AS g, jsonb_agg(DISTINCT %2$s) AS touched FROM new_rows GROUP BY property_group_id) c,
                 unnest(TG_ARGV) AS m;
        ELSIF TG_OP = 'DELETE' THEN
          INSERT INTO metric_rollup_changes (property_group_id, metric, touched)
            SELECT c.g, m, c.touched
            FROM (SELECT property_group_id AS g, jsonb_agg(DISTINCT %2$s) AS touched FROM old_rows GROUP BY property_group_id) c,
                 unnest(TG_ARGV) AS m;
        ELSE
          -- An update's old rows say where a unit was counted, its new rows where it is counted now
          -- (a stay moved to another guest, a guest to another master, a row to another group).
          INSERT INTO metric_rollup_changes (property_group_id, metric, touched)
            SELECT c.g, m, c.touched
            FROM (SELECT property_group_id AS g, jsonb_agg(DISTINCT k) AS touched
                  FROM (SELECT property_group_id, %2$s AS k FROM old_rows
                        UNION ALL
                        SELECT property_group_id, %2$s AS k FROM new_rows) r
                  GROUP BY property_group_id) c,
                 unnest(TG_ARGV) AS m;
        END IF;
        RETURN NULL;
      END $body$
    $f$, 'metric_rollups_changed_' || t, k);
  END LOOP;
END $$;

-- The same triggers as migration 20261127150000_metric_rollups, on the per-table functions; updates
-- now see both transition tables. `properties` keeps metric_rollups_changed (touched NULL).
DO $$
DECLARE
  feeds CONSTANT text[][] := ARRAY[
    ['reservations', 'stays'],
    ['transactions', 'stays'],
    ['guest_profiles', 'stays,guests,consent'],
    ['loyalty_members', 'guests'],
    ['consent_observations', 'guests,consent'],
    ['reviews', 'reviews']];
  t text;
  fn text;
  args text;
BEGIN
  FOR i IN 1 .. array_length(feeds, 1) LOOP
    t := feeds[i][1];
    fn := 'metric_rollups_changed_' || t;
    args := (SELECT string_agg(quote_literal(m), ', ') FROM unnest(string_to_array(feeds[i][2], ',')) AS m);
    EXECUTE format('DROP TRIGGER metric_rollups_insert ON %I', t);
    EXECUTE format('DROP TRIGGER metric_rollups_update ON %I', t);
    EXECUTE format('DROP TRIGGER metric_rollups_delete ON %I', t);
    EXECUTE format('CREATE TRIGGER metric_rollups_insert AFTER INSERT ON %I REFERENCING NEW TABLE AS new_rows FOR EACH STATEMENT EXECUTE FUNCTION %I(%s)', t, fn, args);
    EXECUTE format('CREATE TRIGGER metric_rollups_update AFTER UPDATE ON %I REFERENCING OLD TABLE AS old_rows NEW TABLE AS new_rows FOR EACH STATEMENT EXECUTE FUNCTION %I(%s)', t, fn, args);
    EXECUTE format('CREATE TRIGGER metric_rollups_delete AFTER DELETE ON %I REFERENCING OLD TABLE AS old_rows FOR EACH STATEMENT EXECUTE FUNCTION %I(%s)', t, fn, args);
    -- Bulk loads and fixture resets run with session_replication_role = replica: still record.
    EXECUTE format('ALTER TABLE %I ENABLE ALWAYS TRIGGER metric_rollups_insert', t);
    EXECUTE format('ALTER TABLE %I ENABLE ALWAYS TRIGGER metric_rollups_update', t);
    EXECUTE format('ALTER TABLE %I ENABLE ALWAYS TRIGGER metric_rollups_delete', t);
  END LOOP;
END $$;
