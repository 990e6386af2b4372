-- CreateIndex
CREATE INDEX "events_property_group_id_txid_seq_idx" ON "events"("property_group_id", "txid", "seq");

-- CreateIndex
CREATE INDEX "events_property_group_id_guest_profile_id_txid_seq_idx" ON "events"("property_group_id", "guest_profile_id", "txid", "seq");

