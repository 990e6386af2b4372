-- The second wall on the tables without a property_group_id column (docs/security.md). A statement
-- that escapes the first wall runs as gcs_tenant: it must not read the service's secrets, change
-- another tenant's organisation or group, or touch the shared rate-limit counters.
--   gcs_tenant  no privilege on the tables no request of a group needs (the service's secrets, the
--               rate-limit counters, OAuth clients: all read on cross-group paths only); its own
--               property group and organisation, read only.
--   gcs_system  every row, as on the group tables (the cross-group paths, db/session.ts).
--   the owner   rows only inside a migration (gcs.migrating, db/migrate.ts), as on the group tables.
REVOKE ALL ON service_secrets, rate_limit_counters, oauth_clients FROM gcs_tenant;
REVOKE INSERT, UPDATE, DELETE ON property_groups, organisations FROM gcs_tenant;

DO $$
DECLARE
  t text;
BEGIN
  FOREACH t IN ARRAY ARRAY['service_secrets', 'rate_limit_counters', 'oauth_clients', 'property_groups', 'organisations'] LOOP
    EXECUTE format('ALTER TABLE %I ENABLE ROW LEVEL SECURITY', t);
    EXECUTE format('ALTER TABLE %I FORCE ROW LEVEL SECURITY', t);
    EXECUTE format('CREATE POLICY cross_group_paths ON %I TO gcs_system USING (true) WITH CHECK (true)', t);
    EXECUTE format(
      'CREATE POLICY migrations ON %I TO CURRENT_USER USING (current_setting(''gcs.migrating'', true) = ''on'') WITH CHECK (current_setting(''gcs.migrating'', true) = ''on'')',
      t);
  END LOOP;
END $$;

-- A group sees its own row and its organisation's, and no other (with no group set, none).
CREATE POLICY tenant_wall ON property_groups FOR SELECT TO gcs_tenant
  USING (id = (SELECT nullif(current_setting('gcs.group_id', true), '')::uuid));
CREATE POLICY tenant_wall ON organisations FOR SELECT TO gcs_tenant
  USING (EXISTS (SELECT 1 FROM property_groups g WHERE g.organisation_id = organisations.id));
