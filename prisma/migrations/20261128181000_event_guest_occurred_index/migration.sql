-- A person's newest events by when they happened (guest context: occurred_at DESC, seq DESC), read
-- from the index instead of sorting the person's whole history.
-- CreateIndex
CREATE INDEX "events_property_group_id_guest_profile_id_occurred_at_seq_idx" ON "events"("property_group_id", "guest_profile_id", "occurred_at", "seq");
