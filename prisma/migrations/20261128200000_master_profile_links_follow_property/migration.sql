-- A link's property_id is its guest profile's (the tenant rule of guest profiles, data/tenant.ts), but
-- the trigger of 20261128190000_master_profile_links fired only when master_profile_id changed: a
-- guest profile moved to another property left its link at the old one, whose pinned keys kept seeing
-- it. The same trigger now also fires on property_id and moves the link with its profile (the profile
-- is still in its master, so the link, and its evidence, still hold). Same function and trigger names,
-- so the distribution blockers' declared list is unchanged.
CREATE OR REPLACE FUNCTION master_profile_links_follow_guest() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
  -- A profile that leaves its master takes its link, and the links matched to it, with it.
  IF OLD.master_profile_id IS DISTINCT FROM NEW.master_profile_id THEN
    DELETE FROM master_profile_links l
    WHERE l.property_group_id = NEW.property_group_id
      AND (l.guest_profile_id = NEW.id OR l.linked_guest_profile_id = NEW.id)
      AND l.master_profile_id IS DISTINCT FROM NEW.master_profile_id;
  END IF;
  -- A profile that moves to another property takes its link there.
  IF OLD.property_id IS DISTINCT FROM NEW.property_id THEN
    UPDATE master_profile_links l SET property_id = NEW.property_id
    WHERE l.property_group_id = NEW.property_group_id AND l.guest_profile_id = NEW.id;
  END IF;
  RETURN NULL;
END $$;

DROP TRIGGER master_profile_links_follow_guest ON guest_profiles;
CREATE TRIGGER master_profile_links_follow_guest AFTER UPDATE OF master_profile_id, property_id ON guest_profiles
  FOR EACH ROW WHEN (OLD.master_profile_id IS DISTINCT FROM NEW.master_profile_id OR OLD.property_id IS DISTINCT FROM NEW.property_id)
  EXECUTE FUNCTION master_profile_links_follow_guest();
