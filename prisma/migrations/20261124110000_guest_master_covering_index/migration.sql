-- The guests of a page of master profiles (guest_profile_ids) are read by master_profile_id, held to
-- the group and ordered by (created_at, id): with every one of those columns in the index the read is
-- index-only, instead of one heap page per guest (a cache miss each once the data outgrows memory).
-- It replaces the index on master_profile_id alone, which it also serves (ON DELETE SET NULL).
CREATE INDEX "guest_profiles_master_profile_group_created_idx"
  ON "guest_profiles" ("master_profile_id", "property_group_id", "created_at", "id");
DROP INDEX "guest_profiles_master_profile_id_idx";
