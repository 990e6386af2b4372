-- Delivery claims a binding with a lease instead of a row lock held across destination calls: a
-- flush writes its token and an expiry in one short statement, renews it before each destination
-- call, and clears it when done. Another instance skips a binding whose lease has not expired; a
-- crashed instance's lease simply runs out. Pause and resume never wait for a flush.
ALTER TABLE "destination_bindings" ADD COLUMN "lease_token" UUID;
ALTER TABLE "destination_bindings" ADD COLUMN "lease_until" TIMESTAMPTZ(3);
-- Addresses a flush's destination calls confirmed beyond confirmed_seq (calls run in parallel and
-- finish out of order): a key of the address → the log position it was sent for. The next flush
-- skips exactly those, so a confirmed change is not sent again. Keys are hashes, not addresses.
ALTER TABLE "destination_bindings" ADD COLUMN "sent_ahead" JSONB;
