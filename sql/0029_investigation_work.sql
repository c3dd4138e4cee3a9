-- The analyst's desk (docs/investigations.md): what investigation work adds to the read model,
-- and the indexes the incident detail, its alerts and the filtered queues read through.

-- An analyst's severity change pins the severity: later alerts no longer raise it
-- (investigation.severity_changed; the investigations projection keeps it).
ALTER TABLE investigations
  ADD COLUMN severity_pinned boolean NOT NULL DEFAULT false;

-- "Assigned to me" and "unassigned" on one tenant's list, newest opened first.
CREATE INDEX investigations_tenant_assignee_idx
  ON investigations (tenant_id, assignee_id, opened_at DESC, id DESC);

-- Related incidents on the same agent: ingest writes source_ref as `rule:<id>/agent:<id>`
-- (docs/ingest.md, the grouping rule), so the agent is the part after '/agent:'.
CREATE INDEX investigations_tenant_agent_idx
  ON investigations (tenant_id, (split_part(source_ref, '/agent:', 2)), opened_at DESC)
  WHERE source_ref LIKE '%/agent:%';

-- An incident's alerts, newest first, a keyset page at a time (alert streams have one event
-- each, so the stream id keys an alert).
CREATE INDEX events_alert_investigation_time_idx
  ON events (tenant_id, (payload->>'investigation_id'), occurred_at DESC, stream_id DESC)
  WHERE type = 'alert.received';

-- The indicators of each investigation's alerts (the investigation_iocs projection, folded from
-- alert.received with the ioc_stats extraction rule): the detail's IOCs, and the incidents that
-- share one, found by (ioc_type, ioc_value) rather than by scanning the event store.
CREATE TABLE investigation_iocs (
  tenant_id uuid NOT NULL REFERENCES tenants (id),
  investigation_id uuid NOT NULL,
  ioc_type text NOT NULL CHECK (ioc_type IN ('ip', 'domain', 'url', 'hash', 'email', 'other')),
  ioc_value text NOT NULL CHECK (length(ioc_value) BETWEEN 1 AND 2048),
  alerts bigint NOT NULL DEFAULT 0 CHECK (alerts >= 0),
  first_seen_at timestamptz NOT NULL,
  last_seen_at timestamptz NOT NULL,
  PRIMARY KEY (tenant_id, investigation_id, ioc_type, ioc_value)
);
CREATE INDEX investigation_iocs_tenant_value_idx
  ON investigation_iocs (tenant_id, ioc_type, ioc_value);

ALTER TABLE investigation_iocs ENABLE ROW LEVEL SECURITY;
ALTER TABLE investigation_iocs FORCE ROW LEVEL SECURITY;
CREATE POLICY tenant_isolation ON investigation_iocs
  USING (tenant_id = (SELECT NULLIF(current_setting('app.current_tenant_id', true), '')::uuid))
  WITH CHECK (tenant_id = (SELECT NULLIF(current_setting('app.current_tenant_id', true), '')::uuid));

-- A rebuild empties the tenant's rows under its own RLS context before folding again.
GRANT SELECT, INSERT, UPDATE, DELETE ON investigation_iocs TO svc_app;
GRANT SELECT, INSERT, UPDATE, DELETE ON investigation_iocs TO svc_mssp;
