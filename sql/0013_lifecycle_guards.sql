-- Issue 18 items 4, 5 and 7: when a decommission may start, and what the reconciler found.

ALTER TABLE tenants
  -- When the orchestrator may start removing the tenant: the grace end the API announced
  -- (state change + SVC_DECOMMISSION_GRACE), or the decommission itself for a tenant that never
  -- became active (no customer data, nothing to regret). NULL on rows decommissioned before
  -- this column existed: the orchestrator then counts the grace from state_changed_at.
  ADD COLUMN decommission_at timestamptz,
  -- The reconciler's last finding (docs/orchestrator.md "Reconciliation"): null when the
  -- cluster matched svc's record, else {detected_at, findings: [{object, name, problem,
  -- repair}]}. Shown on the tenant as `drift`.
  ADD COLUMN drift jsonb CHECK (drift IS NULL OR jsonb_typeof(drift) = 'object');

-- Drift reaches the tenant's event stream as `tenant.lifecycle.drift` (the 0010 trigger).
ALTER TABLE tenant_lifecycle_events DROP CONSTRAINT tenant_lifecycle_events_kind_check;
ALTER TABLE tenant_lifecycle_events ADD CONSTRAINT tenant_lifecycle_events_kind_check
  CHECK (kind IN ('transition', 'step', 'config_revision', 'error', 'drift'));
