-- Why profiles merged (docs/identity-resolution.md): one link per guest profile of a master profile,
-- recording how identity resolution joined it: the profile it was matched to (null for the master's
-- first profile), the rule, the fields that matched with their value, a confidence, when and by whom.
-- property_id is the guest profile's: a property-pinned caller sees the links of its own profiles,
-- as it sees those profiles (data/tenant.ts).
CREATE TYPE "MasterProfileLinkRule" AS ENUM ('first_profile', 'exact_email', 'exact_phone', 'name_birth_date', 'loyalty_number', 'manual');

CREATE TABLE "master_profile_links" (
  "id" UUID NOT NULL,
  "property_group_id" UUID NOT NULL,
  "master_profile_id" UUID NOT NULL,
  "guest_profile_id" UUID NOT NULL,
  "linked_guest_profile_id" UUID,
  "property_id" UUID NOT NULL,
  "rule" "MasterProfileLinkRule" NOT NULL,
  "matched_fields" JSONB NOT NULL DEFAULT '[]',
  "confidence" DECIMAL(4,3) NOT NULL,
  "linked_at" TIMESTAMPTZ(3) NOT NULL,
  "linked_by" TEXT NOT NULL DEFAULT 'identity_resolution',
  "created_at" TIMESTAMPTZ(3) NOT NULL DEFAULT CURRENT_TIMESTAMP,
  CONSTRAINT "master_profile_links_pkey" PRIMARY KEY ("id"),
  CONSTRAINT "master_profile_links_confidence_check" CHECK ("confidence" >= 0 AND "confidence" <= 1),
  -- The first profile of a master was matched to nothing; every other link names its match.
  CONSTRAINT "master_profile_links_first_check" CHECK (("rule" = 'first_profile') = ("linked_guest_profile_id" IS NULL)),
  CONSTRAINT "master_profile_links_not_self_check" CHECK ("linked_guest_profile_id" <> "guest_profile_id")
);

-- One link per guest profile: the profile's own record of how it joined its master.
CREATE UNIQUE INDEX "master_profile_links_guest_profile_id_key" ON "master_profile_links" ("guest_profile_id");
-- A master's links in order (MasterProfile.links, the REST route): one range of this index.
CREATE INDEX "master_profile_links_master_group_linked_idx" ON "master_profile_links" ("master_profile_id", "property_group_id", "linked_at", "id");
CREATE INDEX "master_profile_links_linked_guest_profile_id_idx" ON "master_profile_links" ("linked_guest_profile_id");

ALTER TABLE "master_profile_links" ADD CONSTRAINT "master_profile_links_master_profile_id_fkey"
  FOREIGN KEY ("master_profile_id") REFERENCES "master_profiles" ("id") ON DELETE CASCADE;
ALTER TABLE "master_profile_links" ADD CONSTRAINT "master_profile_links_guest_profile_id_fkey"
  FOREIGN KEY ("guest_profile_id") REFERENCES "guest_profiles" ("id") ON DELETE CASCADE;
ALTER TABLE "master_profile_links" ADD CONSTRAINT "master_profile_links_linked_guest_profile_id_fkey"
  FOREIGN KEY ("linked_guest_profile_id") REFERENCES "guest_profiles" ("id") ON DELETE CASCADE;

-- A guest profile that leaves its master (moved to another, or unlinked) takes its link with it, and
-- the links that were matched to it lose their evidence inside this master: both are removed, so no
-- link ever claims a join that guest_profiles.master_profile_id no longer holds. Whoever moves a
-- profile writes its new link (docs/identity-resolution.md, "What writes links").
CREATE FUNCTION master_profile_links_follow_guest() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
  DELETE FROM master_profile_links l
  WHERE l.property_group_id = NEW.property_group_id
    AND (l.guest_profile_id = NEW.id OR l.linked_guest_profile_id = NEW.id)
    AND l.master_profile_id IS DISTINCT FROM NEW.master_profile_id;
  RETURN NULL;
END $$;
CREATE TRIGGER master_profile_links_follow_guest AFTER UPDATE OF master_profile_id ON guest_profiles
  FOR EACH ROW WHEN (OLD.master_profile_id IS DISTINCT FROM NEW.master_profile_id) EXECUTE FUNCTION master_profile_links_follow_guest();

-- The second wall (migration 20261127190000_row_level_security): the same policies as every group table.
ALTER TABLE "master_profile_links" ENABLE ROW LEVEL SECURITY;
ALTER TABLE "master_profile_links" FORCE ROW LEVEL SECURITY;
CREATE POLICY tenant_wall ON "master_profile_links" TO gcs_tenant
  USING (property_group_id = (SELECT nullif(current_setting('gcs.group_id', true), '')::uuid))
  WITH CHECK (property_group_id = (SELECT nullif(current_setting('gcs.group_id', true), '')::uuid));
CREATE POLICY cross_group_paths ON "master_profile_links" TO gcs_system USING (true) WITH CHECK (true);
CREATE POLICY migrations ON "master_profile_links" TO CURRENT_USER
  USING (current_setting('gcs.migrating', true) = 'on') WITH CHECK (current_setting('gcs.migrating', true) = 'on');
GRANT SELECT, INSERT, UPDATE, DELETE ON "master_profile_links" TO gcs_tenant, gcs_system;
