-- The audit role (issue 27 item 1). `svc psql` used to open svc_app: read-write, and allowed to
-- read and rewrite password_credentials and sessions, which have no RLS. svc_audit is what a
-- person auditing one tenant gets instead: SELECT only, bound by RLS like svc_app, and no
-- column that holds a credential, a secret's hash, token material or a key. docs/auditing.md
-- explains the fourth role next to spec §5.7's three.
--
-- Read-only comes from these grants, not from a session setting: the role's
-- default_transaction_read_only (set by the bootstrap step) is defence in depth, and a session
-- may turn it off. Grants are per column, so a column added later is invisible to the role
-- until a migration grants it; test/db/audit-role.test.ts fails on any readable column whose
-- name looks secret unless it is on that test's allow-list.

-- Roles are cluster-wide and need a superuser to create, so the bootstrap step creates
-- svc_audit (src/db/bootstrap.ts); on a database whose roles an operator made by hand, create
-- it as docs/auditing.md shows. Refuse a role that would defeat the point.
DO $$
DECLARE
  audit oid := (SELECT oid FROM pg_roles WHERE rolname = 'svc_audit');
BEGIN
  IF audit IS NULL THEN
    RAISE EXCEPTION 'role svc_audit is missing; run the bootstrap step first or create it: '
      'CREATE ROLE svc_audit NOLOGIN NOSUPERUSER NOCREATEDB NOCREATEROLE NOBYPASSRLS '
      '(docs/auditing.md)';
  END IF;
  IF EXISTS (SELECT 1 FROM pg_roles WHERE oid = audit
              AND (rolsuper OR rolbypassrls OR rolcreaterole OR rolcreatedb OR rolreplication)) THEN
    RAISE EXCEPTION 'role svc_audit must be NOSUPERUSER NOBYPASSRLS NOCREATEROLE NOCREATEDB NOREPLICATION';
  END IF;
  -- A membership would lend it another role's grants (svc_app's, say).
  IF EXISTS (SELECT 1 FROM pg_auth_members WHERE member = audit) THEN
    RAISE EXCEPTION 'role svc_audit must not be a member of any role';
  END IF;
  -- An owner holds every privilege on what it owns and escapes non-forced RLS.
  IF EXISTS (SELECT 1 FROM pg_class WHERE relowner = audit)
     OR EXISTS (SELECT 1 FROM pg_proc WHERE proowner = audit)
     OR EXISTS (SELECT 1 FROM pg_namespace WHERE nspowner = audit) THEN
    RAISE EXCEPTION 'role svc_audit must not own objects in this database';
  END IF;
END
$$;

GRANT USAGE ON SCHEMA public TO svc_audit;

-- Tenant-scoped tables, all under tenant_isolation (audit_log under audit_read): every column
-- except the few named below.
GRANT SELECT (tenant_id, first_seen_at, last_seen_at, adapter_version, status)
  ON adapter_heartbeats TO svc_audit;
GRANT SELECT (tenant_id, investigation_id, rule_id, agent_id, last_alert_at, alert_count, closed_at)
  ON alert_groups TO svc_audit;
GRANT SELECT (tenant_id, analyzer, runs, failures, total_duration_ms, last_run_at)
  ON analyzer_stats TO svc_audit;
GRANT SELECT (id, "timestamp", tenant_id, actor_principal, actor_id, action, resource_type,
              resource_id, before, after, acting_as, request_id, details)
  ON audit_log TO svc_audit;
GRANT SELECT (tenant_id, app_name, logo_url, primary_color, secondary_color, favicon, updated_at)
  ON branding_configs TO svc_audit;
GRANT SELECT (tenant_id, id, stream_type, stream_id, stream_seq, type, payload, actor,
              occurred_at, recorded_at)
  ON events TO svc_audit;
GRANT SELECT (tenant_id, source, position, alerts_total, updated_at)
  ON ingest_checkpoints TO svc_audit;
-- secret_id is a reference to tenant_secrets, never a value (the database holds no secrets).
GRANT SELECT (tenant_id, id, kind, name, endpoint_url, settings, thresholds, secret_id, enabled,
              created_at, updated_at)
  ON integration_configs TO svc_audit;
GRANT SELECT (tenant_id, id, title, summary, status, severity, verdict, source, source_ref,
              assignee_id, opened_at, updated_at, resolved_at, closed_at, last_event_id,
              alert_count, last_alert_at)
  ON investigations TO svc_audit;
GRANT SELECT (tenant_id, ioc_type, ioc_value, hits, malicious_verdicts, first_seen_at, last_seen_at)
  ON ioc_stats TO svc_audit;
GRANT SELECT (tenant_id, day, input_tokens, output_tokens, cost_usd, reserved_tokens, calls,
              cache_hits, cache_misses, refused_over_budget)
  ON llm_usage TO svc_audit;
GRANT SELECT (tenant_id, bucket, metric, value) ON metrics_hourly TO svc_audit;
GRANT SELECT (tenant_id, id, job_type, input, parked_at) ON parked_jobs TO svc_audit;
GRANT SELECT (tenant_id, id, investigation_id, proposed_action, action_params, rationale,
              evidence, risk, confidence, requested_by, requested_at, expires_at, decision,
              decided_by, decided_at, decision_note)
  ON pending_reviews TO svc_audit;
GRANT SELECT (tenant_id, projection, last_event_id, updated_at)
  ON projection_checkpoints TO svc_audit;
GRANT SELECT (tenant_id, rule_id, rule_name, fired, true_positives, false_positives, last_fired_at)
  ON rule_stats TO svc_audit;
GRANT SELECT (tenant_id, id, kind, from_state, to_state, step, config_revision, details, actor,
              occurred_at)
  ON tenant_lifecycle_events TO svc_audit;
-- Where the tenant's Secrets live (namespace, name, version), never their values.
GRANT SELECT (tenant_id, id, purpose, namespace, name, version, created_at, rotated_at)
  ON tenant_secrets TO svc_audit;
GRANT SELECT (tenant_id, policy, updated_at, updated_by) ON triage_policies TO svc_audit;
-- Not credential_hash: when the adapter's credential was made, used and rotated, not its hash.
GRANT SELECT (tenant_id, created_at, last_used_at, rotated_at) ON adapter_credentials TO svc_audit;
-- Not prompt_hash: the cache key, of no use to an audit.
GRANT SELECT (tenant_id, provider, model, response, input_tokens, output_tokens, created_at, hits,
              last_hit_at)
  ON llm_cache TO svc_audit;

-- Users: the tenant's own only. tenant_isolation shows MSSP staff (tenant_id NULL) to every
-- tenant context and login_lookup shows whichever user app.login_email names, which a psql
-- session can set; this restrictive policy (ANDed with those) confines svc_audit to the
-- tenant's rows. Not email_skeleton (a derived lookup key).
GRANT SELECT (id, tenant_id, email, display_name, role, disabled_at, created_at, updated_at)
  ON users TO svc_audit;
CREATE POLICY audit_tenant_only ON users AS RESTRICTIVE FOR SELECT TO svc_audit
  USING (tenant_id = (SELECT NULLIF(current_setting('app.current_tenant_id', true), '')::uuid));

-- The tenant being audited. tenants has no RLS (svc_app lists every tenant), so svc_audit gets
-- this view of the one row its context names instead of the table. The view runs with its
-- owner's (svc_admin's) rights; security_barrier keeps the filter ahead of any function in
-- the caller's query.
CREATE VIEW audit_current_tenant WITH (security_barrier) AS
  SELECT id, slug, display_name, state, state_changed_at, config_revision, chart_version,
         upgrade_target, decommission_at, deleted_at, created_at, updated_at
    FROM tenants
   WHERE id = (SELECT NULLIF(current_setting('app.current_tenant_id', true), '')::uuid);
GRANT SELECT ON audit_current_tenant TO svc_audit;

-- Not granted, on purpose: password_credentials and sessions (argon2id hashes, session secret
-- hashes; no RLS), tenants (every tenant), organization (license_jwt), install_settings,
-- releases, chart_compatibility, schema_migrations, schema_seeds (install-wide), the job queue
-- schema, and EXECUTE on svc_session_check, svc_session_assert, can_upgrade and
-- audit_purge_batch (each already revoked from PUBLIC).
