-- The lookups keep their indexes under the policies without marking a function LEAKPROOF that can
-- raise an error depending on a row's value (docs/security.md, "Indexes under the policies").
-- regexp_replace(text, text, text, text) and textlike(text, text) can: a statement that escapes the
-- first wall may pass a column as the flags or the pattern, and a LEAKPROOF function may run on other
-- groups' rows before the policy filters them ('invalid regular expression option: "X"' prints a
-- character of another tenant's data; LIKE's escape error answers yes or no about a row).
--   phone digits  gcs_phone_digits(phone): the project's own function, its pattern a constant, so it
--                 cannot raise for any input; LEAKPROOF. SET search_path keeps it from being inlined,
--                 so the planner judges this function, not the regexp_replace inside it.
--   name prefix   a range of the text_pattern_ops index (data/search.ts), no LIKE.

-- compose/postgres-init.sql makes this function, LEAKPROOF, before the first migration when a
-- superuser is not the one migrating: made here only where it is missing (the two bodies are equal).
DO $$
BEGIN
  IF to_regprocedure('public.gcs_phone_digits(text)') IS NULL THEN
    CREATE FUNCTION public.gcs_phone_digits(text) RETURNS text LANGUAGE sql IMMUTABLE STRICT PARALLEL SAFE
      SET search_path = pg_catalog AS 'SELECT regexp_replace($1, ''[^0-9]'', '''', ''g'')';
  END IF;
END $$;

DROP INDEX "guest_profiles_group_phone_digits_idx";
CREATE INDEX "guest_profiles_group_phone_digits_idx" ON "guest_profiles" ("property_group_id", gcs_phone_digits("phone"));

DO $$
BEGIN
  IF (SELECT rolsuper FROM pg_roles WHERE rolname = current_user) THEN
    ALTER FUNCTION public.gcs_phone_digits(text) LEAKPROOF;
    ALTER FUNCTION pg_catalog.regexp_replace(text, text, text, text) NOT LEAKPROOF;
    ALTER FUNCTION pg_catalog.textlike(text, text) NOT LEAKPROOF;
  ELSIF NOT (SELECT proleakproof FROM pg_proc WHERE oid = 'public.gcs_phone_digits(text)'::regprocedure) THEN
    RAISE NOTICE 'Row Level Security: a superuser must mark public.gcs_phone_digits(text) LEAKPROOF, or lookups by phone read whole groups (docs/security.md)';
  END IF;
  IF (SELECT bool_or(proleakproof) FROM pg_proc WHERE oid IN ('pg_catalog.regexp_replace(text, text, text, text)'::regprocedure, 'pg_catalog.textlike(text, text)'::regprocedure)) THEN
    RAISE NOTICE 'Row Level Security: a superuser must mark pg_catalog.regexp_replace(text, text, text, text) and pg_catalog.textlike(text, text) NOT LEAKPROOF: both can raise an error that shows a row''s value (docs/security.md)';
  END IF;
END $$;

ANALYZE "guest_profiles";
