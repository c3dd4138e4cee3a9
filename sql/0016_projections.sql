-- Projections (spec §2.3; docs/projections.md): the projector folds each tenant's events, in
-- id order, into the read models of 0004. Where it got to is kept per tenant and projection,
-- advanced in the same transaction as the rows it folded, so a crash never counts twice.
CREATE TABLE projection_checkpoints (
  tenant_id uuid NOT NULL REFERENCES tenants (id),
  projection text NOT NULL CHECK (projection ~ '^[a-z][a-z0-9_]{0,63}$'),
  -- The id of the last event folded into this projection (0: none yet).
  last_event_id bigint NOT NULL DEFAULT 0 CHECK (last_event_id >= 0),
  updated_at timestamptz NOT NULL DEFAULT now(),
  PRIMARY KEY (tenant_id, projection)
);

ALTER TABLE projection_checkpoints ENABLE ROW LEVEL SECURITY;
ALTER TABLE projection_checkpoints FORCE ROW LEVEL SECURITY;
CREATE POLICY tenant_isolation ON projection_checkpoints
  USING (tenant_id = (SELECT NULLIF(current_setting('app.current_tenant_id', true), '')::uuid))
  WITH CHECK (tenant_id = (SELECT NULLIF(current_setting('app.current_tenant_id', true), '')::uuid));

-- What the fold of alert.received keeps on the investigation read model.
ALTER TABLE investigations
  ADD COLUMN alert_count integer NOT NULL DEFAULT 0 CHECK (alert_count >= 0),
  ADD COLUMN last_alert_at timestamptz;

GRANT SELECT, INSERT, UPDATE, DELETE ON projection_checkpoints TO svc_app, svc_mssp;
-- A rebuild (`svc projections rebuild`) empties the tenant's derived tables under its own RLS
-- context before folding again; investigations are rebuilt in place instead (pending_reviews
-- refer to them), so they get no DELETE.
GRANT DELETE ON metrics_hourly, ioc_stats, rule_stats, analyzer_stats TO svc_app;
