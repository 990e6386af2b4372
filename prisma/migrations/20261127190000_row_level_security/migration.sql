-- The second tenant wall (docs/security.md): Row Level Security on every table that holds a group's
-- data. The service runs each statement as one of two roles (db/tenant-pool.ts):
--   gcs_tenant  the caller's group only: property_group_id = the statement's gcs.group_id setting;
--               with no setting, no rows.
--   gcs_system  the documented cross-group paths (db/session.ts CROSS_GROUP_PATHS).
-- Neither owns a table, logs in or has BYPASSRLS. Migrations run as the login role that owns the
-- tables; FORCE makes the owner subject to the policies too: its policy `migrations` lets it see
-- rows only inside a migration (db/migrate.ts sets gcs.migrating there), so a data migration works
-- under an owner that is not a superuser, and the owner's other connections see nothing.
DO $$
BEGIN
  -- Roles are the cluster's, not the database's: another database of the cluster may have made them.
  BEGIN
    CREATE ROLE gcs_tenant NOLOGIN NOBYPASSRLS;
  EXCEPTION WHEN duplicate_object OR unique_violation THEN NULL;
  END;
  BEGIN
    CREATE ROLE gcs_system NOLOGIN NOBYPASSRLS;
  EXCEPTION WHEN duplicate_object OR unique_violation THEN NULL;
  END;
END $$;

-- The login role switches to them per statement (SET ROLE needs membership).
DO $$
BEGIN
  IF NOT (SELECT rolsuper FROM pg_roles WHERE rolname = current_user) THEN
    EXECUTE format('GRANT gcs_tenant, gcs_system TO %I', current_user);
  END IF;
END $$;

GRANT USAGE ON SCHEMA public TO gcs_tenant, gcs_system;
GRANT SELECT, INSERT, UPDATE, DELETE ON ALL TABLES IN SCHEMA public TO gcs_tenant, gcs_system;
GRANT USAGE, SELECT, UPDATE ON ALL SEQUENCES IN SCHEMA public TO gcs_tenant, gcs_system;
-- Tables made by later migrations get the same grants (their policies they must add themselves:
-- test/integration/row-level-security.test.ts fails on a group table without them).
ALTER DEFAULT PRIVILEGES IN SCHEMA public GRANT SELECT, INSERT, UPDATE, DELETE ON TABLES TO gcs_tenant, gcs_system;
ALTER DEFAULT PRIVILEGES IN SCHEMA public GRANT USAGE, SELECT, UPDATE ON SEQUENCES TO gcs_tenant, gcs_system;
-- The migrations' own bookkeeping is not the service's to touch.
REVOKE ALL ON gcs_schema_migrations FROM gcs_tenant, gcs_system;

DO $$
DECLARE
  t text;
BEGIN
  FOR t IN
    SELECT c.table_name FROM information_schema.columns c
    JOIN information_schema.tables tb ON tb.table_schema = c.table_schema AND tb.table_name = c.table_name AND tb.table_type = 'BASE TABLE'
    WHERE c.table_schema = 'public' AND c.column_name = 'property_group_id'
    ORDER BY c.table_name
  LOOP
    EXECUTE format('ALTER TABLE %I ENABLE ROW LEVEL SECURITY', t);
    EXECUTE format('ALTER TABLE %I FORCE ROW LEVEL SECURITY', t);
    EXECUTE format(
      'CREATE POLICY tenant_wall ON %I TO gcs_tenant USING (property_group_id = nullif(current_setting(''gcs.group_id'', true), '''')::uuid) WITH CHECK (property_group_id = nullif(current_setting(''gcs.group_id'', true), '''')::uuid)',
      t);
    EXECUTE format('CREATE POLICY cross_group_paths ON %I TO gcs_system USING (true) WITH CHECK (true)', t);
    EXECUTE format(
      'CREATE POLICY migrations ON %I TO CURRENT_USER USING (current_setting(''gcs.migrating'', true) = ''on'') WITH CHECK (current_setting(''gcs.migrating'', true) = ''on'')',
      t);
  END LOOP;
END $$;

-- Partner access tokens have no group column: they are their partner credential's, and a role sees a
-- token only when it can see that credential (whose own policy applies inside this one).
ALTER TABLE partner_access_tokens ENABLE ROW LEVEL SECURITY;
ALTER TABLE partner_access_tokens FORCE ROW LEVEL SECURITY;
CREATE POLICY tenant_wall ON partner_access_tokens TO gcs_tenant
  USING (EXISTS (SELECT 1 FROM partner_credentials p WHERE p.id = partner_credential_id))
  WITH CHECK (EXISTS (SELECT 1 FROM partner_credentials p WHERE p.id = partner_credential_id));
CREATE POLICY cross_group_paths ON partner_access_tokens TO gcs_system USING (true) WITH CHECK (true);
CREATE POLICY migrations ON partner_access_tokens TO CURRENT_USER
  USING (current_setting('gcs.migrating', true) = 'on') WITH CHECK (current_setting('gcs.migrating', true) = 'on');
