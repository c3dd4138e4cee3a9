-- The triage pipeline reads an investigation's alerts by the investigation id its
-- `alert.received` events carry (src/domains/pipeline/pipeline-repository.ts).
CREATE INDEX events_alert_investigation_idx
  ON events (tenant_id, (payload->>'investigation_id'))
  WHERE type = 'alert.received';

