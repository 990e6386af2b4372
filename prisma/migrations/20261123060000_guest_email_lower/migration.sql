-- Guests are looked up by e-mail as lower(email) = lower($1) (src/db/scoped-sql.ts). A btree on the
-- plain column served neither that nor ILIKE: at 1,000,000 guests per group a lookup scanned the
-- group (about 0.6 s). Prisma cannot declare expression indexes, so this one lives here only.

-- DropIndex
DROP INDEX "guest_profiles_property_group_id_email_idx";

CREATE INDEX "guest_profiles_property_group_id_lower_email_idx" ON "guest_profiles" ("property_group_id", lower("email"));

-- Statistics on lower(email) exist only once ANALYZE has seen the expression; until then the planner
-- guesses that many guests share an address and walks the created_at index instead.
ANALYZE "guest_profiles";
