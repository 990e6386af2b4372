-- Table filters decide a member's consent in SQL (src/tables/filter.ts): per member they look up
-- (group, purpose, 'email', lower(email)) and read status, observed_at and id; for many members
-- PostgreSQL hashes the group's observations of one purpose instead. This index serves both from
-- the index alone. The (group, contact_value, purpose) index stays for effective-consent pages.

-- CreateIndex
CREATE INDEX "consent_observations_group_purpose_contact_idx" ON "consent_observations"("property_group_id", "purpose", "contact_type", "contact_value", "status", "observed_at", "id");

ANALYZE "consent_observations";
