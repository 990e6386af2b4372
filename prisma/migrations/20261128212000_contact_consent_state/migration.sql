-- Guest and consent rollups that follow the writes (issue 44): the state they are applied from, so a
-- refresh adjusts only the buckets a change touched (src/rollups/consent-family.ts, guests-family.ts).
-- Written only by the refresher, under the family's advisory lock; rebuilt whole with the pair.

-- Each contact point's effective consent per purpose, across the whole group (spec 1.5), for the
-- purposes the rollups keep (metric_rollup_state.variants): the deciding observation as
-- data/filter-document.ts decidingObservationSql picks it. No row: unknown.
CREATE TABLE "contact_consent_state" (
  "property_group_id" UUID NOT NULL,
  "contact_type" "ContactType" NOT NULL,
  "contact_value" TEXT NOT NULL,
  "purpose" TEXT NOT NULL,
  "status" "ConsentStatus" NOT NULL,
  "decided_at" TIMESTAMPTZ(3) NOT NULL,
  "observation_id" UUID NOT NULL,
  CONSTRAINT "contact_consent_state_pkey" PRIMARY KEY ("property_group_id", "contact_type", "contact_value", "purpose")
);

-- The consent family's contact points in scope, as last applied: each property where a guest
-- profile has the point (data/metrics.ts consentIn's `cp`).
CREATE TABLE "consent_rollup_points" (
  "property_group_id" UUID NOT NULL,
  "contact_type" "ContactType" NOT NULL,
  "contact_value" TEXT NOT NULL,
  "property_id" UUID NOT NULL,
  CONSTRAINT "consent_rollup_points_pkey" PRIMARY KEY ("property_group_id", "contact_type", "contact_value", "property_id")
);

-- The guests family's facts, as last applied: one row per guest profile with what its buckets need.
-- email_granted / sms_granted: the kept purposes its e-mail / phone is granted for.
CREATE TABLE "guest_rollup_facts" (
  "property_group_id" UUID NOT NULL,
  "guest_profile_id" UUID NOT NULL,
  "property_id" UUID NOT NULL,
  "master_profile_id" UUID,
  "country" TEXT,
  "loyalty_tier" TEXT,
  "vip" BOOLEAN NOT NULL,
  "email_granted" TEXT[] NOT NULL DEFAULT '{}',
  "sms_granted" TEXT[] NOT NULL DEFAULT '{}',
  CONSTRAINT "guest_rollup_facts_pkey" PRIMARY KEY ("property_group_id", "guest_profile_id")
);
-- A master's other profiles, for its distinct count when one of them changes.
CREATE INDEX "guest_rollup_facts_master_idx" ON "guest_rollup_facts" ("property_group_id", "master_profile_id");

-- The guests with a contact point, as consent observations name it (e-mail trimmed and lower-case,
-- phone as stored): a touched contact point is re-applied with two index probes.
-- Under the "C" collation, and probed only with that collation (rollups/guests-family.ts,
-- consent-family.ts): an index on the plain lower(btrim(email)) also matched the consent filters'
-- `contact_value = lower(btrim(t.email))`, and PostgreSQL then drove a table preview with ten consent
-- conditions over 70,000 guests from it for minutes (table-consent.test.ts; 0.1 s without it).
CREATE INDEX "guest_profiles_group_contact_email_idx" ON "guest_profiles" ("property_group_id", (lower(btrim("email")) COLLATE "C"));
CREATE INDEX "guest_profiles_group_phone_idx" ON "guest_profiles" ("property_group_id", "phone");

-- The second wall (migration 20261127190000_row_level_security): the same policies as every group table.
DO $$
DECLARE
  t text;
BEGIN
  FOREACH t IN ARRAY ARRAY['contact_consent_state', 'consent_rollup_points', 'guest_rollup_facts'] LOOP
    EXECUTE format('ALTER TABLE %I ENABLE ROW LEVEL SECURITY', t);
    EXECUTE format('ALTER TABLE %I FORCE ROW LEVEL SECURITY', t);
    EXECUTE format($p$CREATE POLICY tenant_wall ON %I TO gcs_tenant
      USING (property_group_id = (SELECT nullif(current_setting('gcs.group_id', true), '')::uuid))
      WITH CHECK (property_group_id = (SELECT nullif(current_setting('gcs.group_id', true), '')::uuid))$p$, t);
    EXECUTE format('CREATE POLICY cross_group_paths ON %I TO gcs_system USING (true) WITH CHECK (true)', t);
    EXECUTE format($p$CREATE POLICY migrations ON %I TO CURRENT_USER
      USING (current_setting('gcs.migrating', true) = 'on') WITH CHECK (current_setting('gcs.migrating', true) = 'on')$p$, t);
    EXECUTE format('GRANT SELECT, INSERT, UPDATE, DELETE ON %I TO gcs_tenant, gcs_system', t);
  END LOOP;
END $$;

-- Statistics on the new expression exist only once ANALYZE has seen it.
ANALYZE "guest_profiles";

