-- Outbound webhooks (docs/notifications.md): configured for the whole install or for one
-- tenant, signed as Standard Webhooks describes, delivered by the job queue.
--
-- The signing secret lives in a cluster Secret of the install namespace; a webhook row holds
-- only where (namespace, Secret name, key) and which version, like tenant_secrets.

-- Install webhooks hear every tenant's notifications: install-scoped, no tenant_id, no RLS,
-- like install_settings (only MSSP operators reach them, through their routes).
CREATE TABLE install_webhooks (
  id uuid PRIMARY KEY DEFAULT gen_random_uuid(),
  name text NOT NULL CHECK (length(name) BETWEEN 1 AND 100),
  url text NOT NULL CHECK (length(url) BETWEEN 1 AND 2048),
  format text NOT NULL CHECK (format IN ('standard', 'slack')),
  events text[] NOT NULL CHECK (
    cardinality(events) >= 1 AND events <@ ARRAY['review.waiting', 'provisioning.failed',
      'drift.detected', 'adapter.silent', 'llm.budget_exhausted', 'incident.severity']::text[]),
  review_wait_minutes integer NOT NULL CHECK (review_wait_minutes BETWEEN 1 AND 10080),
  min_severity text NOT NULL CHECK (min_severity IN ('info', 'low', 'medium', 'high', 'critical')),
  adapter_silent_minutes integer NOT NULL CHECK (adapter_silent_minutes BETWEEN 1 AND 10080),
  enabled boolean NOT NULL DEFAULT true,
  signing_namespace text NOT NULL CHECK (signing_namespace ~ '^[a-z0-9]([a-z0-9-]{0,61}[a-z0-9])?$'),
  signing_secret_name text NOT NULL CHECK (signing_secret_name ~ '^[a-z0-9]([a-z0-9.-]{0,251}[a-z0-9])?$'),
  signing_secret_key text NOT NULL CHECK (signing_secret_key ~ '^[A-Za-z0-9._-]{1,253}$'),
  signing_version integer NOT NULL DEFAULT 1 CHECK (signing_version >= 1),
  created_at timestamptz NOT NULL DEFAULT now(),
  updated_at timestamptz NOT NULL DEFAULT now(),
  created_by text NOT NULL
);

-- A tenant's own webhooks: tenant-scoped like every table holding a tenant's data.
CREATE TABLE tenant_webhooks (
  tenant_id uuid NOT NULL REFERENCES tenants (id),
  id uuid NOT NULL DEFAULT gen_random_uuid(),
  name text NOT NULL CHECK (length(name) BETWEEN 1 AND 100),
  url text NOT NULL CHECK (length(url) BETWEEN 1 AND 2048),
  format text NOT NULL CHECK (format IN ('standard', 'slack')),
  events text[] NOT NULL CHECK (
    cardinality(events) >= 1 AND events <@ ARRAY['review.waiting', 'provisioning.failed',
      'drift.detected', 'adapter.silent', 'llm.budget_exhausted', 'incident.severity']::text[]),
  review_wait_minutes integer NOT NULL CHECK (review_wait_minutes BETWEEN 1 AND 10080),
  min_severity text NOT NULL CHECK (min_severity IN ('info', 'low', 'medium', 'high', 'critical')),
  adapter_silent_minutes integer NOT NULL CHECK (adapter_silent_minutes BETWEEN 1 AND 10080),
  enabled boolean NOT NULL DEFAULT true,
  signing_namespace text NOT NULL CHECK (signing_namespace ~ '^[a-z0-9]([a-z0-9-]{0,61}[a-z0-9])?$'),
  signing_secret_name text NOT NULL CHECK (signing_secret_name ~ '^[a-z0-9]([a-z0-9.-]{0,251}[a-z0-9])?$'),
  signing_secret_key text NOT NULL CHECK (signing_secret_key ~ '^[A-Za-z0-9._-]{1,253}$'),
  signing_version integer NOT NULL DEFAULT 1 CHECK (signing_version >= 1),
  created_at timestamptz NOT NULL DEFAULT now(),
  updated_at timestamptz NOT NULL DEFAULT now(),
  created_by text NOT NULL,
  PRIMARY KEY (tenant_id, id)
);

-- One notification to one webhook: its id is the `webhook-id` every attempt sends, and
-- (webhook, dedupe_key) is unique, so a condition the sweep finds again notifies once.
-- Every notification concerns one tenant, install webhooks' included: tenant-scoped.
CREATE TABLE webhook_deliveries (
  tenant_id uuid NOT NULL REFERENCES tenants (id),
  id uuid NOT NULL DEFAULT gen_random_uuid(),
  scope text NOT NULL CHECK (scope IN ('install', 'tenant')),
  webhook_id uuid NOT NULL,
  event_type text NOT NULL CHECK (length(event_type) BETWEEN 1 AND 100),
  dedupe_key text NOT NULL CHECK (length(dedupe_key) BETWEEN 1 AND 300),
  payload jsonb NOT NULL CHECK (jsonb_typeof(payload) = 'object'),
  status text NOT NULL DEFAULT 'pending' CHECK (status IN ('pending', 'delivered', 'failed')),
  attempts integer NOT NULL DEFAULT 0 CHECK (attempts >= 0),
  next_attempt_at timestamptz,
  created_at timestamptz NOT NULL DEFAULT now(),
  finished_at timestamptz,
  PRIMARY KEY (tenant_id, id),
  UNIQUE (tenant_id, scope, webhook_id, dedupe_key)
);

-- The last attempts per webhook (time, answer, excerpt, error, duration): what the delivery
-- log shows. Kept short: each insert trims the webhook's log to its newest rows.
CREATE TABLE tenant_webhook_attempts (
  tenant_id uuid NOT NULL REFERENCES tenants (id),
  id bigint GENERATED ALWAYS AS IDENTITY,
  webhook_id uuid NOT NULL,
  delivery_id uuid NOT NULL,
  event_type text NOT NULL,
  attempt integer NOT NULL CHECK (attempt >= 1),
  attempted_at timestamptz NOT NULL,
  status_code integer CHECK (status_code BETWEEN 100 AND 599),
  response_excerpt text CHECK (length(response_excerpt) <= 500),
  error text CHECK (length(error) <= 500),
  duration_ms integer NOT NULL CHECK (duration_ms >= 0),
  PRIMARY KEY (tenant_id, id),
  FOREIGN KEY (tenant_id, webhook_id) REFERENCES tenant_webhooks (tenant_id, id) ON DELETE CASCADE
);
CREATE INDEX tenant_webhook_attempts_webhook_idx
  ON tenant_webhook_attempts (tenant_id, webhook_id, id DESC);

-- The same log for install webhooks: install-scoped, so no tenant column.
CREATE TABLE install_webhook_attempts (
  webhook_id uuid NOT NULL REFERENCES install_webhooks (id) ON DELETE CASCADE,
  id bigint GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
  delivery_id uuid NOT NULL,
  event_type text NOT NULL,
  attempt integer NOT NULL CHECK (attempt >= 1),
  attempted_at timestamptz NOT NULL,
  status_code integer CHECK (status_code BETWEEN 100 AND 599),
  response_excerpt text CHECK (length(response_excerpt) <= 500),
  error text CHECK (length(error) <= 500),
  duration_ms integer NOT NULL CHECK (duration_ms >= 0)
);
CREATE INDEX install_webhook_attempts_webhook_idx ON install_webhook_attempts (webhook_id, id DESC);

ALTER TABLE tenant_webhooks ENABLE ROW LEVEL SECURITY;
ALTER TABLE tenant_webhooks FORCE ROW LEVEL SECURITY;
CREATE POLICY tenant_isolation ON tenant_webhooks
  USING (tenant_id = (SELECT NULLIF(current_setting('app.current_tenant_id', true), '')::uuid))
  WITH CHECK (tenant_id = (SELECT NULLIF(current_setting('app.current_tenant_id', true), '')::uuid));

ALTER TABLE webhook_deliveries ENABLE ROW LEVEL SECURITY;
ALTER TABLE webhook_deliveries FORCE ROW LEVEL SECURITY;
CREATE POLICY tenant_isolation ON webhook_deliveries
  USING (tenant_id = (SELECT NULLIF(current_setting('app.current_tenant_id', true), '')::uuid))
  WITH CHECK (tenant_id = (SELECT NULLIF(current_setting('app.current_tenant_id', true), '')::uuid));

ALTER TABLE tenant_webhook_attempts ENABLE ROW LEVEL SECURITY;
ALTER TABLE tenant_webhook_attempts FORCE ROW LEVEL SECURITY;
CREATE POLICY tenant_isolation ON tenant_webhook_attempts
  USING (tenant_id = (SELECT NULLIF(current_setting('app.current_tenant_id', true), '')::uuid))
  WITH CHECK (tenant_id = (SELECT NULLIF(current_setting('app.current_tenant_id', true), '')::uuid));

GRANT SELECT, INSERT, UPDATE, DELETE ON install_webhooks, tenant_webhooks, tenant_webhook_attempts,
  install_webhook_attempts TO svc_app;
GRANT SELECT, INSERT, UPDATE, DELETE ON webhook_deliveries TO svc_app;
GRANT SELECT, INSERT, UPDATE, DELETE ON install_webhooks, tenant_webhooks, webhook_deliveries,
  tenant_webhook_attempts, install_webhook_attempts TO svc_mssp;

-- The audit role reads a tenant's webhooks and what was sent, not where the signing secret is.
GRANT SELECT (tenant_id, id, name, url, format, events, review_wait_minutes, min_severity,
              adapter_silent_minutes, enabled, created_at, updated_at, created_by)
  ON tenant_webhooks TO svc_audit;
GRANT SELECT (tenant_id, id, scope, webhook_id, event_type, payload, status, attempts,
              next_attempt_at, created_at, finished_at)
  ON webhook_deliveries TO svc_audit;
GRANT SELECT (tenant_id, id, webhook_id, delivery_id, event_type, attempt, attempted_at,
              status_code, response_excerpt, error, duration_ms)
  ON tenant_webhook_attempts TO svc_audit;
-- And only under an audit grant for that tenant, as every table it reads (0028).
CREATE POLICY audit_granted_tenant ON tenant_webhooks AS RESTRICTIVE FOR SELECT TO svc_audit
  USING (tenant_id = (SELECT audit_granted_tenant()));
CREATE POLICY audit_granted_tenant ON webhook_deliveries AS RESTRICTIVE FOR SELECT TO svc_audit
  USING (tenant_id = (SELECT audit_granted_tenant()));
CREATE POLICY audit_granted_tenant ON tenant_webhook_attempts AS RESTRICTIVE FOR SELECT TO svc_audit
  USING (tenant_id = (SELECT audit_granted_tenant()));
