-- AuditLog (spec §2.6): one row per mutation, append-only for everyone but the retention
-- purge (which runs through the System gate as svc_mssp).
CREATE TABLE audit_log (
  id uuid NOT NULL DEFAULT gen_random_uuid(),
  "timestamp" timestamptz NOT NULL DEFAULT now(),
  tenant_id uuid REFERENCES tenants (id),
  actor_principal text NOT NULL CHECK (actor_principal IN ('User', 'Worker', 'System', 'Adapter')),
  actor_id text NOT NULL CHECK (length(actor_id) BETWEEN 1 AND 200),
  action text NOT NULL CHECK (action ~ '^[a-z][a-z_]*(\.[a-z][a-z_]*)+$'),
  resource_type text NOT NULL CHECK (length(resource_type) BETWEEN 1 AND 100),
  resource_id text CHECK (length(resource_id) <= 200),
  before jsonb,
  after jsonb,
  -- The tenant an MSSP user acted as (impersonation); NULL otherwise.
  acting_as uuid REFERENCES tenants (id),
  request_id text CHECK (length(request_id) <= 128),
  -- Action-specific facts that are not snapshots, e.g. auth.login.failure's reason.
  details jsonb NOT NULL DEFAULT '{}',
  PRIMARY KEY (id),
  CHECK (actor_principal <> 'Worker' OR actor_id LIKE 'worker:%'),
  CHECK (actor_principal <> 'System' OR actor_id LIKE 'system:%'),
  CHECK (acting_as IS NULL OR acting_as = tenant_id)
);
CREATE INDEX audit_log_tenant_time_idx ON audit_log (tenant_id, "timestamp" DESC);
CREATE INDEX audit_log_time_idx ON audit_log ("timestamp");

ALTER TABLE audit_log ENABLE ROW LEVEL SECURITY;
ALTER TABLE audit_log FORCE ROW LEVEL SECURITY;
-- Reads: the current tenant's rows only (spec §5.7 item 3). Install-scoped rows (NULL tenant)
-- are read through the System gate.
CREATE POLICY audit_read ON audit_log FOR SELECT
  USING (tenant_id = (SELECT NULLIF(current_setting('app.current_tenant_id', true), '')::uuid));
-- Writes: into the current tenant, or install-scoped rows; never into another tenant.
CREATE POLICY audit_write ON audit_log FOR INSERT
  WITH CHECK (tenant_id IS NULL
    OR tenant_id = (SELECT NULLIF(current_setting('app.current_tenant_id', true), '')::uuid));

GRANT SELECT, INSERT ON audit_log TO svc_app;
GRANT SELECT, INSERT, DELETE ON audit_log TO svc_mssp;
