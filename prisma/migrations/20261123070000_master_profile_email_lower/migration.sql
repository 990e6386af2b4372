-- Master profiles are looked up by e-mail as lower(email) = lower($1), like guests (migration
-- 20261123060000_guest_email_lower); Prisma cannot declare expression indexes, so this one lives here.

-- DropIndex
DROP INDEX "master_profiles_property_group_id_email_idx";

CREATE INDEX "master_profiles_property_group_id_lower_email_idx" ON "master_profiles" ("property_group_id", lower("email"));

-- Statistics on lower(email) exist only once ANALYZE has seen the expression.
ANALYZE "master_profiles";
