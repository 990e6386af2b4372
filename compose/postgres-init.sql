-- The role layout of docs/security.md, made once by the postgres image's superuser when it creates
-- the database (compose.yaml mounts this into /docker-entrypoint-initdb.d; psql runs it there,
-- connected to POSTGRES_DB). Passwords come from the postgres container's environment.
-- test/integration/row-level-security.test.ts runs this same file against the tests' PostgreSQL.
--   gcs_tenant, gcs_system  what the service's statements run as (NOLOGIN, no BYPASSRLS).
--   gcs_owner               owns the tables and applies migrations: no superuser, no CREATEROLE.
--                           NOINHERIT: it may give gcs_system its functions, and gets no policy of
--                           either role (outside a migration it sees no tenant row).
--   gcs_app                 DATABASE_URL: a member of gcs_tenant only; owns and inherits nothing.
--   gcs_app_system          DATABASE_SYSTEM_URL: the cross-group paths, a member of gcs_system (and
--                           gcs_tenant, for a group's statement inside a cross-group one); inherits nothing.
\getenv owner_password GCS_OWNER_PASSWORD
\getenv app_password GCS_APP_PASSWORD
\getenv system_password GCS_SYSTEM_PASSWORD

-- Roles are the cluster's: made only where missing, so that this runs again harmlessly.
DO $$
DECLARE
  r text[];
BEGIN
  FOREACH r SLICE 1 IN ARRAY ARRAY[
    ['gcs_tenant', 'NOLOGIN NOBYPASSRLS'],
    ['gcs_system', 'NOLOGIN NOBYPASSRLS'],
    ['gcs_owner', 'LOGIN NOINHERIT NOSUPERUSER NOCREATEROLE NOBYPASSRLS'],
    ['gcs_app', 'LOGIN NOINHERIT NOSUPERUSER NOCREATEROLE NOBYPASSRLS'],
    ['gcs_app_system', 'LOGIN NOINHERIT NOSUPERUSER NOCREATEROLE NOBYPASSRLS']] LOOP
    IF NOT EXISTS (SELECT 1 FROM pg_roles WHERE rolname = r[1]) THEN
      EXECUTE format('CREATE ROLE %I %s', r[1], r[2]);
    END IF;
  END LOOP;
END $$;

ALTER ROLE gcs_owner PASSWORD :'owner_password';
ALTER ROLE gcs_app PASSWORD :'app_password';
ALTER ROLE gcs_app_system PASSWORD :'system_password';

GRANT gcs_tenant, gcs_system TO gcs_owner;
GRANT gcs_tenant TO gcs_app;
GRANT gcs_tenant, gcs_system TO gcs_app_system;

-- The owner owns this database and its schema public: by name, since a NOINHERIT owner of the
-- database would not have the rights of pg_database_owner, public's owner by default.
DO $$
BEGIN
  EXECUTE format('ALTER DATABASE %I OWNER TO gcs_owner', current_database());
END $$;
ALTER SCHEMA public OWNER TO gcs_owner;

-- What only a superuser may do for the migrations (docs/security.md, "Indexes under the policies"):
-- the functions of the e-mail and name lookups are LEAKPROOF, so that those keep their indexes under
-- the policies (gcs_fold, made by a migration, is inlined into these). None of them can raise an
-- error for any input; regexp_replace and textlike can, and are not marked.
ALTER FUNCTION pg_catalog.lower(text) LEAKPROOF;
ALTER FUNCTION pg_catalog.btrim(text) LEAKPROOF;
ALTER FUNCTION pg_catalog.translate(text, text, text) LEAKPROOF;
ALTER FUNCTION pg_catalog.text_pattern_lt(text, text) LEAKPROOF;
ALTER FUNCTION pg_catalog.text_pattern_le(text, text) LEAKPROOF;
ALTER FUNCTION pg_catalog.text_pattern_ge(text, text) LEAKPROOF;
ALTER FUNCTION pg_catalog.text_pattern_gt(text, text) LEAKPROOF;
-- The phone lookup's own function, LEAKPROOF (its pattern is a constant, so it cannot raise), made
-- here as migration 20261128170000_own_leakproof_lookups makes it (which then leaves this one be).
CREATE OR REPLACE FUNCTION public.gcs_phone_digits(text) RETURNS text LANGUAGE sql IMMUTABLE STRICT PARALLEL SAFE
  SET search_path = pg_catalog AS 'SELECT regexp_replace($1, ''[^0-9]'', '''', ''g'')';
ALTER FUNCTION public.gcs_phone_digits(text) OWNER TO gcs_owner;
ALTER FUNCTION public.gcs_phone_digits(text) LEAKPROOF;
