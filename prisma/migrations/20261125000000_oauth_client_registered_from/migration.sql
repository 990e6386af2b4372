-- Who registered each OAuth client (src/oauth/register.ts): the per-address limit on dynamic client
-- registration (20 per hour) is a count of this table's rows, so every instance sees the same count.
-- Clients registered before this migration have no address and count for nobody. created_at alone
-- serves the retention sweep (clients that never obtained a token are deleted after 24 hours).

-- AlterTable
ALTER TABLE "oauth_clients" ADD COLUMN "registered_from" TEXT;

-- CreateIndex
CREATE INDEX "oauth_clients_registered_from_created_at_idx" ON "oauth_clients"("registered_from", "created_at");

-- CreateIndex
CREATE INDEX "oauth_clients_created_at_idx" ON "oauth_clients"("created_at");
