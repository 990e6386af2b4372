-- A credential the service remembers from an earlier request is proved again by the first statement
-- of each request that uses it (db/tenant-pool.ts): the settings statement calls this function in the
-- same round trip, before the statement's own work. It raises (SQLSTATE 28000) unless the token's row
-- still grants what the service remembered: the same row, not revoked, not expired, the same pinned
-- property and scopes. The
-- statement then fails with nothing run, and the request is answered 401 as a fresh lookup would be.
-- Owned by gcs_system like the lookup functions it calls (SECURITY DEFINER: gcs_tenant sees no credentials).
GRANT CREATE ON SCHEMA public TO gcs_system;
CREATE FUNCTION gcs_credential_check(kind text, hash text, id uuid, property_id uuid, scopes text)
  RETURNS void
  LANGUAGE plpgsql STABLE SECURITY DEFINER SET search_path = public AS $$
DECLARE
  granted boolean;
BEGIN
  IF kind = 'api_key' THEN
    SELECT c.id = gcs_credential_check.id AND c.property_id IS NOT DISTINCT FROM gcs_credential_check.property_id
      AND NOT c.revoked AND NOT c.expired AND c.scopes = gcs_credential_check.scopes INTO granted FROM gcs_credential_api_key(hash) c;
  ELSIF kind = 'partner' THEN
    SELECT c.id = gcs_credential_check.id AND c.property_id IS NOT DISTINCT FROM gcs_credential_check.property_id
      AND NOT c.revoked AND NOT c.expired AND c.scopes = gcs_credential_check.scopes INTO granted FROM gcs_credential_partner(hash) c;
  ELSIF kind = 'mcp' THEN
    SELECT c.id = gcs_credential_check.id AND c.property_id IS NOT DISTINCT FROM gcs_credential_check.property_id
      AND NOT c.revoked AND NOT c.expired AND c.scopes = gcs_credential_check.scopes INTO granted FROM gcs_credential_mcp(hash) c;
  ELSIF kind = 'static' THEN
    SELECT c.id = gcs_credential_check.id AND c.property_id IS NOT DISTINCT FROM gcs_credential_check.property_id
      AND NOT c.revoked AND NOT c.expired AND c.scopes = gcs_credential_check.scopes INTO granted FROM gcs_credential_static(hash) c;
  END IF;
  IF granted IS NOT TRUE THEN
    RAISE EXCEPTION 'gcs: the credential no longer grants this request' USING ERRCODE = '28000';
  END IF;
END $$;
ALTER FUNCTION gcs_credential_check(text, text, uuid, uuid, text) OWNER TO gcs_system;
REVOKE CREATE ON SCHEMA public FROM gcs_system;
