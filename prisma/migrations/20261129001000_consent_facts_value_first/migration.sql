-- The consent rollups' facts are keyed by (group, contact_value, contact_type, …), the value before
-- the type. The refresher reads and deletes a touched point's rows as its group (the tenant wall's
-- policy, migration 20261127190000_row_level_security), and under a policy PostgreSQL may seek an index
-- only with LEAKPROOF operators: text and uuid equality are, enum equality (contact_type) is not. With
-- the type second, the seek had only the group and read every point of it (a sequential scan per
-- statement, three per consent refresh: 80,000 rows at 20,000 guests per group, 2,000,000 at a
-- million). With the value second, (group, value) is the seek and the type a filter on its one or two rows.
ALTER TABLE "contact_consent_state" DROP CONSTRAINT "contact_consent_state_pkey";
ALTER TABLE "contact_consent_state" ADD CONSTRAINT "contact_consent_state_pkey" PRIMARY KEY ("property_group_id", "contact_value", "contact_type", "purpose");
ALTER TABLE "consent_rollup_points" DROP CONSTRAINT "consent_rollup_points_pkey";
ALTER TABLE "consent_rollup_points" ADD CONSTRAINT "consent_rollup_points_pkey" PRIMARY KEY ("property_group_id", "contact_value", "contact_type", "property_id");
