-- Orchestration state on the install-scoped tenants row (spec §3.1, §9.4): what the
-- orchestrator polls for without a tenant context. Step history stays in
-- tenant_lifecycle_events; these columns only say when the current state began, which chart
-- version is installed, which upgrade is asked for, and the edge-proxy port pair.

ALTER TABLE tenants
  -- When the current state began: the decommission grace period and the readiness timeout
  -- count from it. Maintained by the trigger below, never by hand.
  ADD COLUMN state_changed_at timestamptz NOT NULL DEFAULT now(),
  ADD COLUMN chart_version text
    CHECK (chart_version ~ '^[0-9]+\.[0-9]+\.[0-9]+(-[0-9A-Za-z.-]+)?$'),
  ADD COLUMN upgrade_target text
    CHECK (upgrade_target ~ '^[0-9]+\.[0-9]+\.[0-9]+(-[0-9A-Za-z.-]+)?$'),
  -- Edge-proxy mode (spec §2.9 monitorIngress.edgePorts): pair k means ports base+2k (events)
  -- and base+2k+1 (enrollment). UNIQUE makes two tenants sharing a pair impossible.
  ADD COLUMN edge_port_pair integer UNIQUE CHECK (edge_port_pair BETWEEN 0 AND 32767);

CREATE FUNCTION tenants_state_changed() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
  IF NEW.state IS DISTINCT FROM OLD.state THEN
    NEW.state_changed_at := now();
  END IF;
  RETURN NEW;
END
$$;
CREATE TRIGGER tenants_state_changed BEFORE UPDATE OF state ON tenants
  FOR EACH ROW EXECUTE FUNCTION tenants_state_changed();

-- The audit trail outlives the tenant (spec §8: 90-day audit retention). A hard-deleted
-- tenant's rows keep its id; a foreign key would force the purge to erase them.
ALTER TABLE audit_log DROP CONSTRAINT audit_log_tenant_id_fkey;
ALTER TABLE audit_log DROP CONSTRAINT audit_log_acting_as_fkey;

-- Lifecycle events reach the tenant's event stream (issue: "lifecycle events go to the MSSP
-- event stream"), so /api/mssp/tenants/{id}/events shows provisioning progress live. One
-- trigger covers every writer (API, orchestrator, adapter heartbeat). The transaction-scoped
-- advisory lock serialises writers of the same tenant's lifecycle stream, so the position
-- max+1 never collides.
CREATE FUNCTION tenant_lifecycle_to_stream() RETURNS trigger LANGUAGE plpgsql AS $$
DECLARE
  next_seq integer;
BEGIN
  PERFORM pg_advisory_xact_lock(hashtextextended('tenant_lifecycle:' || NEW.tenant_id::text, 0));
  SELECT coalesce(max(stream_seq), 0) + 1 INTO next_seq
    FROM events WHERE tenant_id = NEW.tenant_id AND stream_id = NEW.tenant_id;
  INSERT INTO events (tenant_id, stream_type, stream_id, stream_seq, type, payload, actor, occurred_at)
  VALUES (NEW.tenant_id, 'tenant_lifecycle', NEW.tenant_id, next_seq,
          'tenant.lifecycle.' || NEW.kind,
          jsonb_build_object('lifecycle_id', NEW.id::text, 'kind', NEW.kind,
                             'from_state', NEW.from_state, 'to_state', NEW.to_state,
                             'step', NEW.step, 'details', NEW.details),
          NEW.actor, NEW.occurred_at);
  RETURN NULL;
END
$$;
CREATE TRIGGER tenant_lifecycle_to_stream AFTER INSERT ON tenant_lifecycle_events
  FOR EACH ROW EXECUTE FUNCTION tenant_lifecycle_to_stream();
