-- A whole rebuild of a group's stay facts (src/rollups/stays-family.ts) is followed by passes that look
-- them up by person: the planner needs the table's statistics at once, or it takes a lookup for a scan
-- of the group's facts until autovacuum analyzes the table. ANALYZE needs the table's owner, and the
-- service runs as gcs_tenant and gcs_system: this function runs it as the owner, for them.
CREATE FUNCTION stay_rollup_facts_analyze() RETURNS void LANGUAGE plpgsql SECURITY DEFINER SET search_path = public AS $$
BEGIN
  ANALYZE stay_rollup_facts;
END $$;
REVOKE ALL ON FUNCTION stay_rollup_facts_analyze() FROM PUBLIC;
GRANT EXECUTE ON FUNCTION stay_rollup_facts_analyze() TO gcs_tenant, gcs_system;
