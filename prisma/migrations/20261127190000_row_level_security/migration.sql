-- The second tenant wall (docs/security.md): Row Level Security on every table that holds a group's
-- data. The service runs each statement as one of two roles (db/tenant-pool.ts):
--   gcs_tenant  the caller's group only: property_group_id = the statement's gcs.group_id setting;
--               with no setting, no rows.
--   gcs_system  the documented cross-group paths (db/session.ts CROSS_GROUP_PATHS).
-- Neither owns a table, logs in or has BYPASSRLS. Migrations run as the login role that owns the
-- tables; FORCE makes the owner subject to the policies too: its policy `migrations` lets it see
-- rows only inside a migration (db/migrate.ts sets gcs.migrating there), so a data migration works
-- under an owner that is not a superuser, and the owner's other connections see nothing.

-- Roles are the cluster's, not the database's: a superuser may have made them before (the documented
-- layout, docs/security.md), or another database of the cluster. CREATE ROLE needs CREATEROLE even
-- for a role that exists, so it is tried only for a role that does not.
DO $$
DECLARE
  r text;
BEGIN
  FOREACH r IN ARRAY ARRAY['gcs_tenant', 'gcs_system'] LOOP
    IF NOT EXISTS (SELECT 1 FROM pg_roles WHERE rolname = r) THEN
      BEGIN
        EXECUTE format('CREATE ROLE %I NOLOGIN NOBYPASSRLS', r);
      EXCEPTION WHEN duplicate_object OR unique_violation THEN NULL;
      END;
    END IF;
  END LOOP;
END $$;

-- The login role switches to them per statement (SET ROLE needs membership), and the owner gives
-- gcs_system its functions below (which needs membership too). A GRANT needs ADMIN OPTION or
-- CREATEROLE even when the membership exists, so it is made only when missing.
DO $$
DECLARE
  r text;
BEGIN
  FOREACH r IN ARRAY ARRAY['gcs_tenant', 'gcs_system'] LOOP
    IF NOT pg_has_role(current_user, r, 'MEMBER') THEN
      EXECUTE format('GRANT %I TO %I', r, current_user);
    END IF;
  END LOOP;
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
    -- The group as a subquery: evaluated once per statement (an InitPlan), not once per row.
    EXECUTE format(
      'CREATE POLICY tenant_wall ON %I TO gcs_tenant USING (property_group_id = (SELECT nullif(current_setting(''gcs.group_id'', true), '''')::uuid)) WITH CHECK (property_group_id = (SELECT nullif(current_setting(''gcs.group_id'', true), '''')::uuid))',
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

-- The credential lookup, before any group is known: one SECURITY DEFINER function per kind of token,
-- owned by gcs_system (whose policy sees every group). The service calls them as its login, with no
-- settings sent before (db/tenant-pool.ts): no second statement on the hottest path of all. Each
-- answers one row, for the hash it is given, and nothing else.
CREATE FUNCTION gcs_credential_api_key(hash text)
  RETURNS TABLE (id uuid, property_group_id uuid, property_id uuid, scopes text, revoked boolean, expired boolean)
  LANGUAGE plpgsql STABLE SECURITY DEFINER SET search_path = public AS $$
#variable_conflict use_column
BEGIN
  RETURN QUERY SELECT k.id, k.property_group_id, k.property_id, array_to_string(k.scopes, ' '), k.revoked_at IS NOT NULL, false
    FROM api_keys k WHERE k.token_hash = hash;
END $$;
CREATE FUNCTION gcs_credential_partner(hash text)
  RETURNS TABLE (id uuid, property_group_id uuid, property_id uuid, scopes text, revoked boolean, expired boolean)
  LANGUAGE plpgsql STABLE SECURITY DEFINER SET search_path = public AS $$
#variable_conflict use_column
BEGIN
  RETURN QUERY SELECT a.id, p.property_group_id, NULL::uuid, array_to_string(p.scopes, ' '),
      (a.revoked_at IS NOT NULL OR p.revoked_at IS NOT NULL), a.expires_at <= now()
    FROM partner_access_tokens a JOIN partner_credentials p ON p.id = a.partner_credential_id WHERE a.token_hash = hash;
END $$;
CREATE FUNCTION gcs_credential_mcp(hash text)
  RETURNS TABLE (id uuid, property_group_id uuid, property_id uuid, scopes text, revoked boolean, expired boolean)
  LANGUAGE plpgsql STABLE SECURITY DEFINER SET search_path = public AS $$
#variable_conflict use_column
BEGIN
  RETURN QUERY SELECT m.id, m.property_group_id, NULL::uuid, array_to_string(m.scopes, ' '), m.revoked_at IS NOT NULL, m.expires_at <= now()
    FROM mcp_tokens m WHERE m.token_hash = hash;
END $$;
CREATE FUNCTION gcs_credential_static(hash text)
  RETURNS TABLE (id uuid, property_group_id uuid, property_id uuid, scopes text, revoked boolean, expired boolean)
  LANGUAGE plpgsql STABLE SECURITY DEFINER SET search_path = public AS $$
#variable_conflict use_column
BEGIN
  RETURN QUERY SELECT s.id, s.property_group_id, NULL::uuid, array_to_string(s.scopes, ' '), s.revoked_at IS NOT NULL, false
    FROM static_tokens s WHERE s.token_hash = hash;
END $$;
-- A role that is not a superuser may give a function only to a role that can create in its schema.
GRANT CREATE ON SCHEMA public TO gcs_system;
ALTER FUNCTION gcs_credential_api_key(text) OWNER TO gcs_system;
ALTER FUNCTION gcs_credential_partner(text) OWNER TO gcs_system;
ALTER FUNCTION gcs_credential_mcp(text) OWNER TO gcs_system;
ALTER FUNCTION gcs_credential_static(text) OWNER TO gcs_system;
REVOKE CREATE ON SCHEMA public FROM gcs_system;

-- Indexes under the policies. PostgreSQL applies a policy's condition before any condition of the
-- statement that calls a function not marked LEAKPROOF on a column, and such a condition cannot be
-- an index condition: lower(email) = lower($1), a folded-name prefix (gcs_fold(family_name) LIKE
-- 'smi%') or a phone's digits would each read the whole group's rows (7.7 s for one e-mail lookup at
-- 1,000,000 guests). These functions raise no error that depends on a row's value and reveal nothing
-- but their result, so they are marked LEAKPROOF. Only a superuser may do that: a migration run by
-- another owner says so, and docs/security.md lists the statements for a superuser to run once.
DO $$
DECLARE
  f text;
  leakproof text[] := ARRAY[
    'pg_catalog.lower(text)', 'pg_catalog.btrim(text)', 'pg_catalog.translate(text, text, text)',
    'pg_catalog.regexp_replace(text, text, text, text)', 'pg_catalog.textlike(text, text)',
    'pg_catalog.text_pattern_lt(text, text)', 'pg_catalog.text_pattern_le(text, text)',
    'pg_catalog.text_pattern_ge(text, text)', 'pg_catalog.text_pattern_gt(text, text)', 'public.gcs_fold(text)'];
BEGIN
  IF (SELECT rolsuper FROM pg_roles WHERE rolname = current_user) THEN
    FOREACH f IN ARRAY leakproof LOOP
      EXECUTE format('ALTER FUNCTION %s LEAKPROOF', f);
    END LOOP;
  ELSE
    RAISE NOTICE 'Row Level Security: a superuser must mark these functions LEAKPROOF, or lookups by e-mail, name and phone read whole groups (docs/security.md): %', leakproof;
  END IF;
END $$;
