-- Durable alert ingest (issue 12): the write-side state of POST /api/internal/adapter/alerts.
-- Both tables are tenant-scoped like sql/0004 (composite keys with tenant_id, indexes leading
-- with it, ENABLE + FORCE RLS, policy tenant_isolation on USING and WITH CHECK). Neither is a
-- projection: a projection rebuild never touches them. See docs/ingest.md.

-- Where the tenant's adapter stands in its source: the position it sent with the last batch
-- svc stored, written in the same transaction as that batch's events, so a restarted adapter
-- neither re-sends nor skips. One row per tenant and source.
CREATE TABLE ingest_checkpoints (
  tenant_id uuid NOT NULL REFERENCES tenants (id),
  source text NOT NULL DEFAULT 'wazuh' CHECK (source ~ '^[a-z][a-z0-9_-]{0,63}$'),
  -- The source's own cursor, opaque to svc (Wazuh: `{ "search_after": [...], "index": "..." }`).
  position jsonb NOT NULL CHECK (jsonb_typeof(position) = 'object'),
  -- Alerts this source has delivered that were new (duplicates not counted).
  alerts_total bigint NOT NULL DEFAULT 0 CHECK (alerts_total >= 0),
  updated_at timestamptz NOT NULL DEFAULT now(),
  PRIMARY KEY (tenant_id, source)
);

-- The grouping rule's memory: one row per investigation ingest opened, keyed by the
-- investigation's id (its event stream id). The open group of a (rule, agent) pair is the one
-- an alert may join; opening the next group for the pair closes the previous one. There is no
-- foreign key to investigations: that table is a projection, filled after this commits.
CREATE TABLE alert_groups (
  tenant_id uuid NOT NULL REFERENCES tenants (id),
  investigation_id uuid NOT NULL,
  rule_id text NOT NULL CHECK (length(rule_id) BETWEEN 1 AND 64),
  agent_id text NOT NULL CHECK (length(agent_id) BETWEEN 1 AND 64),
  -- The latest alert timestamp of the group (alerts may arrive out of order).
  last_alert_at timestamptz NOT NULL,
  alert_count bigint NOT NULL CHECK (alert_count >= 1),
  closed_at timestamptz,
  PRIMARY KEY (tenant_id, investigation_id)
);
-- At most one open group per (rule, agent); also the lookup of a batch's open groups.
CREATE UNIQUE INDEX alert_groups_tenant_open_key
  ON alert_groups (tenant_id, rule_id, agent_id) WHERE closed_at IS NULL;

ALTER TABLE ingest_checkpoints ENABLE ROW LEVEL SECURITY;
ALTER TABLE ingest_checkpoints FORCE ROW LEVEL SECURITY;
CREATE POLICY tenant_isolation ON ingest_checkpoints
  USING (tenant_id = (SELECT NULLIF(current_setting('app.current_tenant_id', true), '')::uuid))
  WITH CHECK (tenant_id = (SELECT NULLIF(current_setting('app.current_tenant_id', true), '')::uuid));

ALTER TABLE alert_groups ENABLE ROW LEVEL SECURITY;
ALTER TABLE alert_groups FORCE ROW LEVEL SECURITY;
CREATE POLICY tenant_isolation ON alert_groups
  USING (tenant_id = (SELECT NULLIF(current_setting('app.current_tenant_id', true), '')::uuid))
  WITH CHECK (tenant_id = (SELECT NULLIF(current_setting('app.current_tenant_id', true), '')::uuid));

-- svc_app upserts both and never deletes (a tenant's rows go with the tenant, through the
-- System gate's purge).
GRANT SELECT, INSERT ON ingest_checkpoints, alert_groups TO svc_app;
GRANT UPDATE (position, alerts_total, updated_at) ON ingest_checkpoints TO svc_app;
GRANT UPDATE (last_alert_at, alert_count, closed_at) ON alert_groups TO svc_app;
GRANT SELECT, INSERT, UPDATE, DELETE ON ingest_checkpoints, alert_groups TO svc_mssp;
