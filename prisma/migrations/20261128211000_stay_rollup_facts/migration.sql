-- The stays family's facts (issue 44, src/rollups/stays-family.ts): one row per stay the stay
-- rollups count (kind stay, not cancelled or no-show), as last applied to the stored buckets. A
-- refresh that applies a change's touches subtracts the touched persons' facts from the buckets,
-- recomputes those facts from the live rows, and adds them back: the buckets move by the delta.
CREATE TABLE "stay_rollup_facts" (
    "property_group_id" UUID NOT NULL,
    "reservation_id" UUID NOT NULL,
    -- What a delta is applied per: the person (coalesce(master_profile_id, guest_profile_id)), or
    -- the stay itself when it has no guest profile (it counts in stays, nights and revenue only).
    "unit" UUID NOT NULL,
    -- The person, as distinctGuests and returningGuests count them; null without a guest profile.
    "person" UUID,
    "guest_profile_id" UUID,
    "property_id" UUID NOT NULL,
    "arrival_date" DATE NOT NULL,
    "nights" INTEGER NOT NULL,
    "channel" TEXT,
    "guest_country" TEXT,
    -- The stay's folio per currency: [{"c": currency, "r": revenue, "a": accommodation revenue or null}].
    "folio" JSONB NOT NULL DEFAULT '[]',

    CONSTRAINT "stay_rollup_facts_pkey" PRIMARY KEY ("property_group_id", "reservation_id")
);
-- A pass reads the touched persons' facts, and finds them from a touched guest profile.
CREATE INDEX "stay_rollup_facts_unit_idx" ON "stay_rollup_facts" ("property_group_id", "unit");
CREATE INDEX "stay_rollup_facts_guest_idx" ON "stay_rollup_facts" ("property_group_id", "guest_profile_id");

ALTER TABLE "stay_rollup_facts" ENABLE ROW LEVEL SECURITY;
ALTER TABLE "stay_rollup_facts" FORCE ROW LEVEL SECURITY;
CREATE POLICY tenant_wall ON "stay_rollup_facts" TO gcs_tenant
  USING (property_group_id = (SELECT nullif(current_setting('gcs.group_id', true), '')::uuid))
  WITH CHECK (property_group_id = (SELECT nullif(current_setting('gcs.group_id', true), '')::uuid));
CREATE POLICY cross_group_paths ON "stay_rollup_facts" TO gcs_system USING (true) WITH CHECK (true);
CREATE POLICY migrations ON "stay_rollup_facts" TO CURRENT_USER
  USING (current_setting('gcs.migrating', true) = 'on') WITH CHECK (current_setting('gcs.migrating', true) = 'on');
GRANT SELECT, INSERT, UPDATE, DELETE ON "stay_rollup_facts" TO gcs_tenant, gcs_system;

-- Whether the pair's last whole rebuild also built its family's facts. A pair built before this
-- release has none: the refresher rebuilds it whole once, then applies touches. last_path: which
-- path the last refresh took ('touches' or 'whole').
ALTER TABLE "metric_rollup_state" ADD COLUMN "facts_built" BOOLEAN NOT NULL DEFAULT false;
ALTER TABLE "metric_rollup_state" ADD COLUMN "last_path" TEXT NOT NULL DEFAULT 'whole';
