-- Tenant-scoped tables (spec §2.3). Every one: tenant_id NOT NULL, keys and foreign keys
-- composite with tenant_id (FK and unique checks bypass RLS otherwise), indexes leading with
-- tenant_id, ENABLE + FORCE RLS, policy tenant_isolation on both USING and WITH CHECK.

-- Event store: append-only facts; streams are ordered per (tenant, stream).
CREATE TABLE events (
  tenant_id uuid NOT NULL REFERENCES tenants (id),
  id bigint GENERATED ALWAYS AS IDENTITY,
  stream_type text NOT NULL CHECK (stream_type ~ '^[a-z][a-z0-9_]{0,63}$'),
  stream_id uuid NOT NULL,
  stream_seq integer NOT NULL CHECK (stream_seq >= 1),
  type text NOT NULL CHECK (type ~ '^[a-z][a-z0-9_.]{0,127}$'),
  payload jsonb NOT NULL DEFAULT '{}',
  -- Who caused it, in audit vocabulary (User, Worker, System, Adapter).
  actor text,
  occurred_at timestamptz NOT NULL,
  recorded_at timestamptz NOT NULL DEFAULT now(),
  PRIMARY KEY (tenant_id, id),
  -- Optimistic concurrency: two writers cannot append the same position of a stream.
  UNIQUE (tenant_id, stream_id, stream_seq)
);
CREATE INDEX events_tenant_occurred_idx ON events (tenant_id, occurred_at DESC);
CREATE INDEX events_tenant_type_occurred_idx ON events (tenant_id, type, occurred_at);

-- Investigation read model, projected from the event store.
CREATE TABLE investigations (
  tenant_id uuid NOT NULL REFERENCES tenants (id),
  id uuid NOT NULL DEFAULT gen_random_uuid(),
  title text NOT NULL CHECK (length(title) BETWEEN 1 AND 500),
  summary text,
  status text NOT NULL DEFAULT 'open'
    CHECK (status IN ('open', 'triaging', 'awaiting_review', 'resolved', 'closed')),
  severity text NOT NULL CHECK (severity IN ('info', 'low', 'medium', 'high', 'critical')),
  verdict text CHECK (verdict IN ('true_positive', 'false_positive', 'benign', 'inconclusive')),
  source text,
  source_ref text,
  assignee_id uuid REFERENCES users (id),
  opened_at timestamptz NOT NULL DEFAULT now(),
  updated_at timestamptz NOT NULL DEFAULT now(),
  resolved_at timestamptz,
  closed_at timestamptz,
  -- Position of the last event folded into this row (idempotent projection).
  last_event_id bigint NOT NULL DEFAULT 0,
  PRIMARY KEY (tenant_id, id)
);
CREATE INDEX investigations_tenant_status_idx ON investigations (tenant_id, status, updated_at DESC);
CREATE INDEX investigations_tenant_opened_idx ON investigations (tenant_id, opened_at DESC);

CREATE TABLE metrics_hourly (
  tenant_id uuid NOT NULL REFERENCES tenants (id),
  bucket timestamptz NOT NULL CHECK (date_trunc('hour', bucket) = bucket),
  metric text NOT NULL CHECK (metric ~ '^[a-z][a-z0-9_.]{0,127}$'),
  value double precision NOT NULL,
  PRIMARY KEY (tenant_id, metric, bucket)
);
CREATE INDEX metrics_hourly_tenant_bucket_idx ON metrics_hourly (tenant_id, bucket);

CREATE TABLE ioc_stats (
  tenant_id uuid NOT NULL REFERENCES tenants (id),
  ioc_type text NOT NULL CHECK (ioc_type IN ('ip', 'domain', 'url', 'hash', 'email', 'other')),
  ioc_value text NOT NULL CHECK (length(ioc_value) BETWEEN 1 AND 2048),
  hits bigint NOT NULL DEFAULT 0 CHECK (hits >= 0),
  malicious_verdicts bigint NOT NULL DEFAULT 0 CHECK (malicious_verdicts >= 0),
  first_seen_at timestamptz NOT NULL,
  last_seen_at timestamptz NOT NULL,
  PRIMARY KEY (tenant_id, ioc_type, ioc_value)
);
CREATE INDEX ioc_stats_tenant_last_seen_idx ON ioc_stats (tenant_id, last_seen_at DESC);

CREATE TABLE rule_stats (
  tenant_id uuid NOT NULL REFERENCES tenants (id),
  rule_id text NOT NULL CHECK (length(rule_id) BETWEEN 1 AND 200),
  rule_name text,
  fired bigint NOT NULL DEFAULT 0 CHECK (fired >= 0),
  true_positives bigint NOT NULL DEFAULT 0 CHECK (true_positives >= 0),
  false_positives bigint NOT NULL DEFAULT 0 CHECK (false_positives >= 0),
  last_fired_at timestamptz,
  PRIMARY KEY (tenant_id, rule_id)
);

CREATE TABLE analyzer_stats (
  tenant_id uuid NOT NULL REFERENCES tenants (id),
  analyzer text NOT NULL CHECK (length(analyzer) BETWEEN 1 AND 200),
  runs bigint NOT NULL DEFAULT 0 CHECK (runs >= 0),
  failures bigint NOT NULL DEFAULT 0 CHECK (failures >= 0),
  total_duration_ms bigint NOT NULL DEFAULT 0 CHECK (total_duration_ms >= 0),
  last_run_at timestamptz,
  PRIMARY KEY (tenant_id, analyzer)
);

-- Human-in-the-loop queue: one proposed action an analyst approves or rejects.
CREATE TABLE pending_reviews (
  tenant_id uuid NOT NULL REFERENCES tenants (id),
  id uuid NOT NULL DEFAULT gen_random_uuid(),
  investigation_id uuid NOT NULL,
  proposed_action text NOT NULL CHECK (length(proposed_action) BETWEEN 1 AND 200),
  action_params jsonb NOT NULL DEFAULT '{}',
  rationale text NOT NULL,
  evidence jsonb NOT NULL DEFAULT '[]',
  risk text NOT NULL CHECK (risk IN ('low', 'medium', 'high')),
  confidence real CHECK (confidence BETWEEN 0 AND 1),
  requested_by text NOT NULL,
  requested_at timestamptz NOT NULL DEFAULT now(),
  expires_at timestamptz,
  decision text CHECK (decision IN ('approved', 'rejected', 'expired')),
  decided_by uuid REFERENCES users (id),
  decided_at timestamptz,
  decision_note text,
  PRIMARY KEY (tenant_id, id),
  FOREIGN KEY (tenant_id, investigation_id) REFERENCES investigations (tenant_id, id),
  CHECK ((decision IS NULL) = (decided_at IS NULL))
);
CREATE INDEX pending_reviews_tenant_open_idx ON pending_reviews (tenant_id, requested_at)
  WHERE decision IS NULL;
CREATE INDEX pending_reviews_tenant_investigation_idx
  ON pending_reviews (tenant_id, investigation_id);

-- References to cluster Secrets; never the secret material (spec §2.3).
CREATE TABLE tenant_secrets (
  tenant_id uuid NOT NULL REFERENCES tenants (id),
  id uuid NOT NULL DEFAULT gen_random_uuid(),
  purpose text NOT NULL CHECK (purpose ~ '^[a-z][a-z0-9_.-]{0,63}$'),
  namespace text NOT NULL CHECK (namespace ~ '^[a-z0-9]([a-z0-9-]{0,61}[a-z0-9])?$'),
  name text NOT NULL CHECK (name ~ '^[a-z0-9]([a-z0-9.-]{0,251}[a-z0-9])?$'),
  version integer NOT NULL DEFAULT 1 CHECK (version >= 1),
  created_at timestamptz NOT NULL DEFAULT now(),
  rotated_at timestamptz,
  PRIMARY KEY (tenant_id, id),
  UNIQUE (tenant_id, namespace, name),
  UNIQUE (tenant_id, purpose)
);

CREATE TABLE integration_configs (
  tenant_id uuid NOT NULL REFERENCES tenants (id),
  id uuid NOT NULL DEFAULT gen_random_uuid(),
  kind text NOT NULL CHECK (kind ~ '^[a-z][a-z0-9_-]{0,63}$'),
  name text NOT NULL CHECK (length(name) BETWEEN 1 AND 200),
  endpoint_url text CHECK (endpoint_url ~ '^https?://'),
  settings jsonb NOT NULL DEFAULT '{}',
  thresholds jsonb NOT NULL DEFAULT '{}',
  secret_id uuid,
  enabled boolean NOT NULL DEFAULT true,
  created_at timestamptz NOT NULL DEFAULT now(),
  updated_at timestamptz NOT NULL DEFAULT now(),
  PRIMARY KEY (tenant_id, id),
  UNIQUE (tenant_id, kind, name),
  FOREIGN KEY (tenant_id, secret_id) REFERENCES tenant_secrets (tenant_id, id)
);

CREATE TABLE branding_configs (
  tenant_id uuid NOT NULL REFERENCES tenants (id),
  app_name text NOT NULL CHECK (length(app_name) BETWEEN 1 AND 100),
  logo_url text CHECK (logo_url ~ '^(https://|data:image/)'),
  primary_color text NOT NULL CHECK (primary_color ~ '^#([0-9a-fA-F]{3}|[0-9a-fA-F]{6})$'),
  secondary_color text NOT NULL CHECK (secondary_color ~ '^#([0-9a-fA-F]{3}|[0-9a-fA-F]{6})$'),
  favicon text NOT NULL DEFAULT '',
  updated_at timestamptz NOT NULL DEFAULT now(),
  PRIMARY KEY (tenant_id)
);

-- Append-only: state transitions, completed provisioning steps (for resumable retry) and
-- configuration revisions (spec §6.2).
CREATE TABLE tenant_lifecycle_events (
  tenant_id uuid NOT NULL REFERENCES tenants (id),
  id bigint GENERATED ALWAYS AS IDENTITY,
  kind text NOT NULL CHECK (kind IN ('transition', 'step', 'config_revision', 'error')),
  from_state text,
  to_state text,
  step text,
  config_revision integer,
  details jsonb NOT NULL DEFAULT '{}',
  actor text NOT NULL,
  occurred_at timestamptz NOT NULL DEFAULT now(),
  PRIMARY KEY (tenant_id, id),
  CHECK (kind <> 'transition' OR (from_state IS NOT NULL AND to_state IS NOT NULL)),
  CHECK (kind <> 'step' OR step IS NOT NULL)
);
CREATE INDEX tenant_lifecycle_events_tenant_time_idx
  ON tenant_lifecycle_events (tenant_id, occurred_at);

ALTER TABLE events ENABLE ROW LEVEL SECURITY;
ALTER TABLE events FORCE ROW LEVEL SECURITY;
CREATE POLICY tenant_isolation ON events
  USING (tenant_id = (SELECT NULLIF(current_setting('app.current_tenant_id', true), '')::uuid))
  WITH CHECK (tenant_id = (SELECT NULLIF(current_setting('app.current_tenant_id', true), '')::uuid));

ALTER TABLE investigations ENABLE ROW LEVEL SECURITY;
ALTER TABLE investigations FORCE ROW LEVEL SECURITY;
CREATE POLICY tenant_isolation ON investigations
  USING (tenant_id = (SELECT NULLIF(current_setting('app.current_tenant_id', true), '')::uuid))
  WITH CHECK (tenant_id = (SELECT NULLIF(current_setting('app.current_tenant_id', true), '')::uuid));

ALTER TABLE metrics_hourly ENABLE ROW LEVEL SECURITY;
ALTER TABLE metrics_hourly FORCE ROW LEVEL SECURITY;
CREATE POLICY tenant_isolation ON metrics_hourly
  USING (tenant_id = (SELECT NULLIF(current_setting('app.current_tenant_id', true), '')::uuid))
  WITH CHECK (tenant_id = (SELECT NULLIF(current_setting('app.current_tenant_id', true), '')::uuid));

ALTER TABLE ioc_stats ENABLE ROW LEVEL SECURITY;
ALTER TABLE ioc_stats FORCE ROW LEVEL SECURITY;
CREATE POLICY tenant_isolation ON ioc_stats
  USING (tenant_id = (SELECT NULLIF(current_setting('app.current_tenant_id', true), '')::uuid))
  WITH CHECK (tenant_id = (SELECT NULLIF(current_setting('app.current_tenant_id', true), '')::uuid));

ALTER TABLE rule_stats ENABLE ROW LEVEL SECURITY;
ALTER TABLE rule_stats FORCE ROW LEVEL SECURITY;
CREATE POLICY tenant_isolation ON rule_stats
  USING (tenant_id = (SELECT NULLIF(current_setting('app.current_tenant_id', true), '')::uuid))
  WITH CHECK (tenant_id = (SELECT NULLIF(current_setting('app.current_tenant_id', true), '')::uuid));

ALTER TABLE analyzer_stats ENABLE ROW LEVEL SECURITY;
ALTER TABLE analyzer_stats FORCE ROW LEVEL SECURITY;
CREATE POLICY tenant_isolation ON analyzer_stats
  USING (tenant_id = (SELECT NULLIF(current_setting('app.current_tenant_id', true), '')::uuid))
  WITH CHECK (tenant_id = (SELECT NULLIF(current_setting('app.current_tenant_id', true), '')::uuid));

ALTER TABLE pending_reviews ENABLE ROW LEVEL SECURITY;
ALTER TABLE pending_reviews FORCE ROW LEVEL SECURITY;
CREATE POLICY tenant_isolation ON pending_reviews
  USING (tenant_id = (SELECT NULLIF(current_setting('app.current_tenant_id', true), '')::uuid))
  WITH CHECK (tenant_id = (SELECT NULLIF(current_setting('app.current_tenant_id', true), '')::uuid));

ALTER TABLE tenant_secrets ENABLE ROW LEVEL SECURITY;
ALTER TABLE tenant_secrets FORCE ROW LEVEL SECURITY;
CREATE POLICY tenant_isolation ON tenant_secrets
  USING (tenant_id = (SELECT NULLIF(current_setting('app.current_tenant_id', true), '')::uuid))
  WITH CHECK (tenant_id = (SELECT NULLIF(current_setting('app.current_tenant_id', true), '')::uuid));

ALTER TABLE integration_configs ENABLE ROW LEVEL SECURITY;
ALTER TABLE integration_configs FORCE ROW LEVEL SECURITY;
CREATE POLICY tenant_isolation ON integration_configs
  USING (tenant_id = (SELECT NULLIF(current_setting('app.current_tenant_id', true), '')::uuid))
  WITH CHECK (tenant_id = (SELECT NULLIF(current_setting('app.current_tenant_id', true), '')::uuid));

ALTER TABLE branding_configs ENABLE ROW LEVEL SECURITY;
ALTER TABLE branding_configs FORCE ROW LEVEL SECURITY;
CREATE POLICY tenant_isolation ON branding_configs
  USING (tenant_id = (SELECT NULLIF(current_setting('app.current_tenant_id', true), '')::uuid))
  WITH CHECK (tenant_id = (SELECT NULLIF(current_setting('app.current_tenant_id', true), '')::uuid));

ALTER TABLE tenant_lifecycle_events ENABLE ROW LEVEL SECURITY;
ALTER TABLE tenant_lifecycle_events FORCE ROW LEVEL SECURITY;
CREATE POLICY tenant_isolation ON tenant_lifecycle_events
  USING (tenant_id = (SELECT NULLIF(current_setting('app.current_tenant_id', true), '')::uuid))
  WITH CHECK (tenant_id = (SELECT NULLIF(current_setting('app.current_tenant_id', true), '')::uuid));

-- Append-only tables get no UPDATE or DELETE for the application role.
GRANT SELECT, INSERT ON events, tenant_lifecycle_events TO svc_app;
GRANT SELECT, INSERT, UPDATE ON investigations, metrics_hourly, ioc_stats, rule_stats,
  analyzer_stats, pending_reviews, tenant_secrets, integration_configs, branding_configs TO svc_app;
GRANT DELETE ON integration_configs TO svc_app;
GRANT SELECT, INSERT, UPDATE, DELETE ON events, investigations, metrics_hourly, ioc_stats,
  rule_stats, analyzer_stats, pending_reviews, tenant_secrets, integration_configs,
  branding_configs, tenant_lifecycle_events TO svc_mssp;
