-- Foreign keys get indexes led by their own column: deletes of guests, master profiles, reservations
-- and partner credentials look rows up by it, and so do joins that do not filter by group. Loaders
-- filter by group too; the group check is cheap on the few rows one id selects.
-- Offset pages of a table's members walk (table_id, added_at, member_id) without sorting.
-- DropIndex
DROP INDEX "guest_profiles_property_group_id_master_profile_id_idx";

-- DropIndex
DROP INDEX "reservations_property_group_id_guest_profile_id_idx";

-- DropIndex
DROP INDEX "transactions_property_group_id_guest_profile_id_idx";

-- DropIndex
DROP INDEX "transactions_property_group_id_reservation_id_idx";

-- CreateIndex
CREATE INDEX "guest_profiles_master_profile_id_idx" ON "guest_profiles"("master_profile_id");

-- CreateIndex
CREATE INDEX "reservations_guest_profile_id_idx" ON "reservations"("guest_profile_id");

-- CreateIndex
CREATE INDEX "transactions_guest_profile_id_idx" ON "transactions"("guest_profile_id");

-- CreateIndex
CREATE INDEX "transactions_reservation_id_idx" ON "transactions"("reservation_id");

-- CreateIndex
CREATE INDEX "table_members_table_id_added_at_member_id_idx" ON "table_members"("table_id", "added_at", "member_id");

-- CreateIndex
CREATE INDEX "partner_access_tokens_partner_credential_id_idx" ON "partner_access_tokens"("partner_credential_id");

