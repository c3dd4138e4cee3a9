-- Report projections (spec §2.2 "cross-tenant reporting"; docs/reports.md): what the reports
-- read per tenant and period, folded from the event store by the projector
-- (docs/projections.md) so a report never scans `events`.

-- One row per investigation: when it opened, when an analyst first acted on it (the
-- "acknowledged" of docs/reports.md) and how it ended, if it has. A reopen clears the ending;
-- the next close or resolution sets it again.
CREATE TABLE report_investigations (
  tenant_id uuid NOT NULL REFERENCES tenants (id),
  investigation_id uuid NOT NULL,
  -- Null while only later events of it were folded (a malformed or missing opening).
  opened_at timestamptz,
  acknowledged_at timestamptz,
  ended_at timestamptz,
  -- closed: investigation.closed or a rejected review; resolved: a case was opened.
  ended_as text CHECK (ended_as IN ('closed', 'resolved')),
  -- Who ended it: the pipeline on its own, an approved or rejected review, or an analyst by hand.
  ended_by text CHECK (ended_by IN ('pipeline', 'review', 'analyst')),
  last_event_id bigint NOT NULL CHECK (last_event_id > 0),
  PRIMARY KEY (tenant_id, investigation_id),
  CHECK ((ended_at IS NULL) = (ended_as IS NULL)),
  CHECK (ended_by IS NULL OR ended_at IS NOT NULL)
);
CREATE INDEX report_investigations_opened_idx ON report_investigations (tenant_id, opened_at);
CREATE INDEX report_investigations_acknowledged_idx
  ON report_investigations (tenant_id, acknowledged_at);
CREATE INDEX report_investigations_ended_idx ON report_investigations (tenant_id, ended_at);

-- One row per review (its review_id): exact waiting times, so the percentiles are exact
-- (percentile_cont over the period's rows) instead of a histogram's bucket bounds. Reviews are
-- human-scale (a few per investigation at most), so the rows stay small.
CREATE TABLE report_reviews (
  tenant_id uuid NOT NULL REFERENCES tenants (id),
  review_id uuid NOT NULL,
  investigation_id uuid,
  requested_at timestamptz,
  decided_at timestamptz,
  decision text CHECK (decision IN ('approved', 'rejected')),
  last_event_id bigint NOT NULL CHECK (last_event_id > 0),
  PRIMARY KEY (tenant_id, review_id),
  CHECK ((decided_at IS NULL) = (decision IS NULL))
);
CREATE INDEX report_reviews_requested_idx ON report_reviews (tenant_id, requested_at);
CREATE INDEX report_reviews_decided_idx ON report_reviews (tenant_id, decided_at);

ALTER TABLE report_investigations ENABLE ROW LEVEL SECURITY;
ALTER TABLE report_investigations FORCE ROW LEVEL SECURITY;
CREATE POLICY tenant_isolation ON report_investigations
  USING (tenant_id = (SELECT NULLIF(current_setting('app.current_tenant_id', true), '')::uuid))
  WITH CHECK (tenant_id = (SELECT NULLIF(current_setting('app.current_tenant_id', true), '')::uuid));

ALTER TABLE report_reviews ENABLE ROW LEVEL SECURITY;
ALTER TABLE report_reviews FORCE ROW LEVEL SECURITY;
CREATE POLICY tenant_isolation ON report_reviews
  USING (tenant_id = (SELECT NULLIF(current_setting('app.current_tenant_id', true), '')::uuid))
  WITH CHECK (tenant_id = (SELECT NULLIF(current_setting('app.current_tenant_id', true), '')::uuid));

-- As sql/0016: the projector writes them under the tenant's RLS context, and a rebuild empties
-- the tenant's rows first (both are derived through and through).
GRANT SELECT, INSERT, UPDATE, DELETE ON report_investigations, report_reviews TO svc_app;
GRANT SELECT, INSERT, UPDATE, DELETE ON report_investigations, report_reviews TO svc_mssp;
