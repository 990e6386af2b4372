-- A credential the service remembers from an earlier request is proved again by the first statement
-- of each request that uses it (db/tenant-pool.ts): the settings statement calls this function in the
-- same round trip, before the statement's own work. It raises (SQLSTATE 28000) unless the token's row
-- still grants what the service remembered: the same row, not revoked, not expired, the same pinned
-- property and scopes. The statement then fails with nothing run, and the request is answered 401 as
-- a fresh lookup would be. Owned by gcs_system like the lookup functions (SECURITY DEFINER: gcs_tenant
-- sees no credentials). Each kind's condition is its lookup function's (gcs_credential_api_key …,
-- migration 20261127190000_row_level_security) read as "grants": written out here, not called,
-- because a nested set-returning call cost 10 µs of the database's CPU per request more (measured:
-- 13 against 22 µs over the bare settings statement; a separate lookup statement costs 33).
GRANT CREATE ON SCHEMA public TO gcs_system;
CREATE FUNCTION gcs_credential_check(kind text, hash text, id uuid, property_id uuid, scopes text)
  RETURNS void
  LANGUAGE plpgsql STABLE SECURITY DEFINER SET search_path = public AS $$
BEGIN
  IF kind = 'api_key' THEN
    PERFORM FROM api_keys k
      WHERE k.token_hash = hash AND k.id = gcs_credential_check.id AND k.property_id IS NOT DISTINCT FROM gcs_credential_check.property_id
        AND k.revoked_at IS NULL AND array_to_string(k.scopes, ' ') = gcs_credential_check.scopes;
  ELSIF kind = 'partner' THEN
    PERFORM FROM partner_access_tokens a JOIN partner_credentials p ON p.id = a.partner_credential_id
      WHERE a.token_hash = hash AND a.id = gcs_credential_check.id AND gcs_credential_check.property_id IS NULL
        AND a.revoked_at IS NULL AND p.revoked_at IS NULL AND a.expires_at > now() AND array_to_string(p.scopes, ' ') = gcs_credential_check.scopes;
  ELSIF kind = 'mcp' THEN
    PERFORM FROM mcp_tokens m
      WHERE m.token_hash = hash AND m.id = gcs_credential_check.id AND gcs_credential_check.property_id IS NULL
        AND m.revoked_at IS NULL AND m.expires_at > now() AND array_to_string(m.scopes, ' ') = gcs_credential_check.scopes;
  ELSIF kind = 'static' THEN
    PERFORM FROM static_tokens s
      WHERE s.token_hash = hash AND s.id = gcs_credential_check.id AND gcs_credential_check.property_id IS NULL
        AND s.revoked_at IS NULL AND array_to_string(s.scopes, ' ') = gcs_credential_check.scopes;
  END IF;
  IF kind NOT IN ('api_key', 'partner', 'mcp', 'static') OR NOT FOUND THEN
    RAISE EXCEPTION 'gcs: the credential no longer grants this request' USING ERRCODE = '28000';
  END IF;
END $$;
ALTER FUNCTION gcs_credential_check(text, text, uuid, uuid, text) OWNER TO gcs_system;
REVOKE CREATE ON SCHEMA public FROM gcs_system;
