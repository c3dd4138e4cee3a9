-- One notification per tenant per INSERT statement instead of one per row (issue 12). Alert
-- ingest appends up to 1,000 events in one statement; a NOTIFY per row cost about a fifth of
-- its throughput (docs/ingest.md), and every listener reads "everything after its cursor" on
-- any notice anyway (docs/events.md), so the highest id per tenant says all a row-level notice
-- did. The payload keeps its shape: {"tenant_id": …, "id": "<highest new id of that tenant>"}.
-- Delivery stays at commit and never for a rolled-back statement.
CREATE FUNCTION events_notify_statement() RETURNS trigger
  LANGUAGE plpgsql
  SET search_path = pg_catalog
AS $$
DECLARE
  r record;
BEGIN
  FOR r IN SELECT tenant_id, max(id) AS id FROM new_events GROUP BY tenant_id LOOP
    PERFORM pg_notify(
      'svc_events', json_build_object('tenant_id', r.tenant_id, 'id', r.id::text)::text);
  END LOOP;
  RETURN NULL;
END
$$;

DROP TRIGGER events_notify ON events;
DROP FUNCTION events_notify();
CREATE TRIGGER events_notify AFTER INSERT ON events
  REFERENCING NEW TABLE AS new_events
  FOR EACH STATEMENT EXECUTE FUNCTION events_notify_statement();

REVOKE ALL ON FUNCTION events_notify_statement() FROM PUBLIC;
