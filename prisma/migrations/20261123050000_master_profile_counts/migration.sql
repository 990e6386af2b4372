-- Exact master profile totals per property group, kept by statement triggers: include_total on an
-- unfiltered search reads one row instead of counting every profile of the group. Writers that add
-- or remove master profiles of one group queue on its counter row until they commit.

-- CreateTable
CREATE TABLE "master_profile_counts" (
    "property_group_id" UUID NOT NULL,
    "total" BIGINT NOT NULL DEFAULT 0,

    CONSTRAINT "master_profile_counts_pkey" PRIMARY KEY ("property_group_id")
);

CREATE FUNCTION master_profile_counts_add() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
  -- Groups in a fixed order, so two statements touching the same groups cannot deadlock.
  INSERT INTO master_profile_counts (property_group_id, total)
    SELECT property_group_id, count(*) FROM added GROUP BY property_group_id ORDER BY property_group_id
  ON CONFLICT (property_group_id) DO UPDATE SET total = master_profile_counts.total + EXCLUDED.total;
  RETURN NULL;
END $$;

CREATE FUNCTION master_profile_counts_remove() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
  UPDATE master_profile_counts c SET total = c.total - r.n
    FROM (SELECT property_group_id, count(*) AS n FROM removed GROUP BY property_group_id ORDER BY property_group_id) r
   WHERE c.property_group_id = r.property_group_id;
  RETURN NULL;
END $$;

CREATE FUNCTION master_profile_counts_truncate() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
  DELETE FROM master_profile_counts;
  RETURN NULL;
END $$;

CREATE FUNCTION master_profiles_stay_in_group() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
  RAISE EXCEPTION 'a master profile cannot move to another property group';
END $$;

CREATE TRIGGER master_profile_counts_add AFTER INSERT ON master_profiles
  REFERENCING NEW TABLE AS added FOR EACH STATEMENT EXECUTE FUNCTION master_profile_counts_add();
CREATE TRIGGER master_profile_counts_remove AFTER DELETE ON master_profiles
  REFERENCING OLD TABLE AS removed FOR EACH STATEMENT EXECUTE FUNCTION master_profile_counts_remove();
CREATE TRIGGER master_profile_counts_truncate AFTER TRUNCATE ON master_profiles
  FOR EACH STATEMENT EXECUTE FUNCTION master_profile_counts_truncate();
CREATE TRIGGER master_profiles_stay_in_group BEFORE UPDATE OF property_group_id ON master_profiles
  FOR EACH ROW WHEN (OLD.property_group_id IS DISTINCT FROM NEW.property_group_id) EXECUTE FUNCTION master_profiles_stay_in_group();

-- Counts must hold when bulk deletes run with session_replication_role = replica (fixture reset).
ALTER TABLE master_profiles ENABLE ALWAYS TRIGGER master_profile_counts_add;
ALTER TABLE master_profiles ENABLE ALWAYS TRIGGER master_profile_counts_remove;
ALTER TABLE master_profiles ENABLE ALWAYS TRIGGER master_profile_counts_truncate;

INSERT INTO master_profile_counts (property_group_id, total)
  SELECT property_group_id, count(*) FROM master_profiles GROUP BY property_group_id;
