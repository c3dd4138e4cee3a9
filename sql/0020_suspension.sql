-- Issue 15, suspension (spec §3.1: "transitions for suspension ... not shown"; decisions in
-- docs/operations.md "Suspension" and docs/orchestrator.md "Suspension").

ALTER TABLE tenants DROP CONSTRAINT tenants_state_check;
ALTER TABLE tenants ADD CONSTRAINT tenants_state_check
  CHECK (state IN ('pending', 'provisioning', 'active', 'suspended', 'decommissioning',
                   'soft-deleted'));

-- What the orchestrator last did to the tenant's workloads, so it can tell work left over from
-- a crash: `stopping` is written before the first workload is scaled to zero, `stopped` once all
-- are, `running` again once all are restored. A suspended tenant not `stopped`, or an active
-- one not `running`, has data-plane work due (provisioning-repository.ts dueWork). The state
-- alone cannot say it: a suspend undone by a resume before the orchestrator finished scaling
-- down would leave workloads at zero replicas on an active tenant.
ALTER TABLE tenants
  ADD COLUMN data_plane text NOT NULL DEFAULT 'running'
    CHECK (data_plane IN ('running', 'stopping', 'stopped'));

-- Pipeline jobs that came due while their tenant was suspended: kept here instead of running
-- the model, and put back on the queue by the resume, in its transaction. Tenant-scoped like
-- every table holding a tenant's work.
CREATE TABLE parked_jobs (
  tenant_id uuid NOT NULL REFERENCES tenants (id),
  id bigint GENERATED ALWAYS AS IDENTITY,
  job_type text NOT NULL CHECK (length(job_type) BETWEEN 1 AND 100),
  input jsonb NOT NULL CHECK (jsonb_typeof(input) = 'object'),
  parked_at timestamptz NOT NULL DEFAULT now(),
  PRIMARY KEY (tenant_id, id)
);

ALTER TABLE parked_jobs ENABLE ROW LEVEL SECURITY;
ALTER TABLE parked_jobs FORCE ROW LEVEL SECURITY;
CREATE POLICY tenant_isolation ON parked_jobs
  USING (tenant_id = (SELECT NULLIF(current_setting('app.current_tenant_id', true), '')::uuid))
  WITH CHECK (tenant_id = (SELECT NULLIF(current_setting('app.current_tenant_id', true), '')::uuid));

GRANT SELECT, INSERT, DELETE ON parked_jobs TO svc_app;
GRANT SELECT, INSERT, UPDATE, DELETE ON parked_jobs TO svc_mssp;
