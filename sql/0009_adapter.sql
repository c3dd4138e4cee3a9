-- The tenant adapter (spec §2.1 row 5, §4.4, §6.2): its bootstrap credential and its liveness.
-- Both tables are tenant-scoped like sql/0004: one row per tenant, keyed by tenant_id, under
-- RLS policy tenant_isolation, so the adapter of tenant A can neither read B's credential hash
-- nor write B's heartbeat even through a bug in a handler.

-- The exchange secret the adapter trades for its JWT (POST /api/internal/adapter/bootstrap).
-- Only the SHA-256 of the secret is stored: the secret is 32 random bytes, so a slow password
-- hash would add nothing against guessing and a fast one keeps the exchange cheap. The secret
-- itself lives only in a Secret in the tenant's namespace.
CREATE TABLE adapter_credentials (
  tenant_id uuid NOT NULL REFERENCES tenants (id),
  credential_hash text NOT NULL CHECK (credential_hash ~ '^[0-9a-f]{64}$'),
  created_at timestamptz NOT NULL DEFAULT now(),
  last_used_at timestamptz,
  -- Set when a credential replaces an earlier one (re-issue); NULL for the first.
  rotated_at timestamptz,
  PRIMARY KEY (tenant_id)
);

-- Last heartbeat per tenant (POST /api/internal/adapter/health). Liveness, not history: one
-- row that each heartbeat overwrites; the state transition it may cause is recorded in
-- tenant_lifecycle_events and audit_log instead.
CREATE TABLE adapter_heartbeats (
  tenant_id uuid NOT NULL REFERENCES tenants (id),
  first_seen_at timestamptz NOT NULL,
  last_seen_at timestamptz NOT NULL,
  adapter_version text NOT NULL CHECK (adapter_version ~ '^[0-9A-Za-z][0-9A-Za-z.+_-]{0,63}$'),
  status jsonb NOT NULL DEFAULT '{}' CHECK (jsonb_typeof(status) = 'object'),
  PRIMARY KEY (tenant_id),
  CHECK (last_seen_at >= first_seen_at)
);

ALTER TABLE adapter_credentials ENABLE ROW LEVEL SECURITY;
ALTER TABLE adapter_credentials FORCE ROW LEVEL SECURITY;
CREATE POLICY tenant_isolation ON adapter_credentials
  USING (tenant_id = (SELECT NULLIF(current_setting('app.current_tenant_id', true), '')::uuid))
  WITH CHECK (tenant_id = (SELECT NULLIF(current_setting('app.current_tenant_id', true), '')::uuid));

ALTER TABLE adapter_heartbeats ENABLE ROW LEVEL SECURITY;
ALTER TABLE adapter_heartbeats FORCE ROW LEVEL SECURITY;
CREATE POLICY tenant_isolation ON adapter_heartbeats
  USING (tenant_id = (SELECT NULLIF(current_setting('app.current_tenant_id', true), '')::uuid))
  WITH CHECK (tenant_id = (SELECT NULLIF(current_setting('app.current_tenant_id', true), '')::uuid));

-- svc_app issues, verifies and rotates credentials and upserts heartbeats; it may change only
-- the columns those operations write, and never deletes (a tenant's rows go with the tenant,
-- through the System gate).
GRANT SELECT, INSERT ON adapter_credentials, adapter_heartbeats TO svc_app;
GRANT UPDATE (credential_hash, last_used_at, rotated_at) ON adapter_credentials TO svc_app;
GRANT UPDATE (last_seen_at, adapter_version, status) ON adapter_heartbeats TO svc_app;
GRANT SELECT, INSERT, UPDATE, DELETE ON adapter_credentials, adapter_heartbeats TO svc_mssp;
