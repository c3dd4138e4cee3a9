-- The triage pipeline reads an investigation's alerts by the investigation id its
-- `alert.received` events carry (src/domains/pipeline/pipeline-repository.ts).
CREATE INDEX events_alert_investigation_idx
  ON events (tenant_id, (payload->>'investigation_id'))
  WHERE type = 'alert.received';

-- A review is written by the pipeline's decide step in the transaction that checks the
-- investigation's stream (the source of truth); the `investigations` row is a projection the
-- projector may fold a moment later. A foreign key to it made the write side wait on the read
-- model, so it goes; the stream check replaces it (docs/pipeline.md).
ALTER TABLE pending_reviews DROP CONSTRAINT pending_reviews_tenant_id_investigation_id_fkey;
