-- Live fan-out of the tenant event stream (spec §5.7 item 8, §6.2). See docs/events.md.
--
-- 1. Appends are serialized per tenant, so that within one tenant the order of event ids is
--    the order in which they become visible. Identity values are handed out at insert time but
--    become visible at commit, so without this two concurrent writers could commit id 11
--    before id 10 and a reader resuming "after 11" would miss 10 for ever. The lock is taken
--    BEFORE the statement, hence before any id is drawn, and held until commit.
--    An inserter bound by RLS can only write rows of its tenant context (WITH CHECK), so a
--    per-tenant lock covers it; an inserter that bypasses RLS (svc_mssp) may write any tenant,
--    so it takes the install-wide key exclusively, which every per-tenant append holds shared.
--    This relies on the identity sequence of events.id keeping its default CACHE 1.
CREATE FUNCTION events_serialize_appends() RETURNS trigger
  LANGUAGE plpgsql
  SET search_path = pg_catalog
AS $$
BEGIN
  IF row_security_active(TG_RELID) THEN
    PERFORM pg_advisory_xact_lock_shared(727008, 0);
    PERFORM pg_advisory_xact_lock(
      727009, hashtext(coalesce(current_setting('app.current_tenant_id', true), '')));
  ELSE
    PERFORM pg_advisory_xact_lock(727008, 0);
  END IF;
  RETURN NULL;
END
$$;

-- 2. One notification per new row, delivered at commit (never for a rolled-back append).
--    It carries the tenant and the event id only: no payload data crosses the channel (any
--    role that can connect may LISTEN), it stays far below NOTIFY's 8000-byte limit, and
--    listeners read the rows themselves under the tenant's RLS context. The id is text
--    because JSON numbers lose precision beyond 2^53 in JavaScript.
--    SECURITY INVOKER (the default): it runs as the inserting role and reads only NEW.
CREATE FUNCTION events_notify() RETURNS trigger
  LANGUAGE plpgsql
  SET search_path = pg_catalog
AS $$
BEGIN
  PERFORM pg_notify(
    'svc_events', json_build_object('tenant_id', NEW.tenant_id, 'id', NEW.id::text)::text);
  RETURN NULL;
END
$$;

CREATE TRIGGER events_serialize_appends BEFORE INSERT ON events
  FOR EACH STATEMENT EXECUTE FUNCTION events_serialize_appends();
CREATE TRIGGER events_notify AFTER INSERT ON events
  FOR EACH ROW EXECUTE FUNCTION events_notify();

-- Triggers fire without an EXECUTE check, so nobody needs to call these directly.
REVOKE ALL ON FUNCTION events_serialize_appends(), events_notify() FROM PUBLIC;
