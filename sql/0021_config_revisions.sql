-- Issue 15, configuration revisions (spec §6.2: the lifecycle records configuration revisions;
-- docs/operations.md "Configuration revisions").
--
-- tenants.config_revision stays what it always meant: the revision the tenant package runs
-- with (the APPLIED one; rendering reads that revision, never a newer one). config_target is
-- the revision the orchestrator is rolling out: set by an accepted PUT …/config, cleared when
-- the rollout is applied (config_revision moves to it) or failed and rolled back. Like
-- upgrade_target, the orchestrator polls for it without a tenant context.
ALTER TABLE tenants
  ADD COLUMN config_target integer,
  ADD CONSTRAINT tenants_config_target_check
    CHECK (config_target IS NULL OR config_target > config_revision);

-- One lifecycle event per revision number and tenant: two racing changes cannot both become
-- revision n+1 (the loser gets a unique violation, answered 409 revision_conflict). Also the
-- lookup of a revision by number.
ALTER TABLE tenant_lifecycle_events
  ADD CONSTRAINT tenant_lifecycle_events_revision_check
    CHECK (kind <> 'config_revision' OR config_revision >= 1);
CREATE UNIQUE INDEX tenant_lifecycle_events_config_revision_key
  ON tenant_lifecycle_events (tenant_id, config_revision) WHERE kind = 'config_revision';
