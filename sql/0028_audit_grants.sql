-- Audit grants: the tenant an audit session may read is named by svc, not by the session.
--
-- svc_audit (0026) is bound by tenant_isolation like svc_app, and app.current_tenant_id is an
-- ordinary setting: a person inside `svc psql --tenant A` could `SET app.current_tenant_id` to
-- tenant B's id and read B. So `svc psql` mints a grant for the one tenant it resolved: a
-- random 32-byte secret, stored here only as its SHA-256 (hex), valid while the psql session
-- lasts (deleted when psql exits, expiring on its own if svc is killed). The session carries
-- the secret in app.audit_grant; a restrictive policy on every table svc_audit reads ANDs
-- "the row belongs to the granted tenant" with the permissive policies, so changing the tenant
-- context only shows zero rows, and naming another tenant takes another grant's secret, which
-- nobody can read back. The column is audited_tenant, not tenant_id: this is install-scoped
-- bookkeeping (like tenants itself), not tenant data.
CREATE TABLE audit_grants (
  secret_hash text PRIMARY KEY CHECK (secret_hash ~ '^[0-9a-f]{64}$'),
  audited_tenant uuid NOT NULL REFERENCES tenants (id) ON DELETE CASCADE,
  created_at timestamptz NOT NULL DEFAULT now(),
  expires_at timestamptz NOT NULL,
  CHECK (expires_at > created_at)
);
CREATE INDEX audit_grants_expires ON audit_grants (expires_at);

-- svc_app mints and withdraws grants for `svc psql` (which resolves the slug as svc_app too).
-- It may read back the hash and the expiry (to delete its own grant and expired ones), which
-- sign nothing in; svc_audit gets nothing on the table.
GRANT SELECT (secret_hash, expires_at), INSERT (secret_hash, audited_tenant, expires_at), DELETE
  ON audit_grants TO svc_app;

-- The granted tenant of the calling session, or NULL. SECURITY DEFINER because svc_audit may
-- not read the table; it learns only the one tenant its own secret names.
CREATE FUNCTION audit_granted_tenant() RETURNS uuid
  LANGUAGE sql STABLE SECURITY DEFINER
  SET search_path = pg_catalog, public
AS $$
  SELECT g.audited_tenant FROM public.audit_grants g
   WHERE g.secret_hash = encode(
           sha256(convert_to(coalesce(current_setting('app.audit_grant', true), ''), 'UTF8')),
           'hex')
     AND g.expires_at > now()
$$;
REVOKE ALL ON FUNCTION audit_granted_tenant() FROM PUBLIC;
GRANT EXECUTE ON FUNCTION audit_granted_tenant() TO svc_audit;

-- One restrictive policy on every table svc_audit can read that carries a tenant_id.
DO $$
DECLARE
  t record;
BEGIN
  FOR t IN
    SELECT c.relname
      FROM pg_class c
      JOIN pg_namespace n ON n.oid = c.relnamespace AND n.nspname = 'public'
      JOIN pg_attribute a ON a.attrelid = c.oid AND a.attname = 'tenant_id' AND NOT a.attisdropped
     WHERE c.relkind IN ('r', 'p')
       AND has_column_privilege('svc_audit', c.oid, a.attnum, 'SELECT')
  LOOP
    EXECUTE format(
      'CREATE POLICY audit_granted_tenant ON %I AS RESTRICTIVE FOR SELECT TO svc_audit '
      'USING (tenant_id = (SELECT audit_granted_tenant()))', t.relname);
  END LOOP;
END
$$;

-- The one-row view of the audited tenant follows the grant as well.
CREATE OR REPLACE VIEW audit_current_tenant WITH (security_barrier) AS
  SELECT id, slug, display_name, state, state_changed_at, config_revision, chart_version,
         upgrade_target, decommission_at, deleted_at, created_at, updated_at
    FROM tenants
   WHERE id = (SELECT NULLIF(current_setting('app.current_tenant_id', true), '')::uuid)
     AND id = (SELECT audit_granted_tenant());
