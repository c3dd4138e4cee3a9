-- Issue 27 items 3 and 7: revocations reach every replica's open event streams through a
-- notification, and ended sessions are purged after the audit retention.
--
-- 1. A revocation is a notification on 'svc_revocation', sent by the revoking transaction
--    itself, so it is delivered at its commit and never for a rollback. PostgreSQL delivers
--    the notifications of different transactions in commit order, and every API process
--    receives both channels on its one LISTEN connection (src/domains/events/listener.ts): an
--    event committed after a revocation is notified after it on every replica. The payload is
--    a hint like the events channel's — `{"session": id}`, `{"user": id}` or
--    `{"tenant": id}` — and no more: any role that can connect may NOTIFY, so a listener
--    only pauses the matching streams and re-reads their credentials (docs/events.md,
--    "Revocation"); a forged notice costs one re-check. Triggers rather than application
--    code, so that every path (logout, password change or reset, the CLI, deactivation, a
--    role change, suspension, an operator's UPDATE in psql) notifies.
--    Rows that ended more than a day ago are left out: no stream holds them (a stream ends at
--    its session's expiry by itself), and a password reset or a purge that touches thousands
--    of old rows would otherwise notify each one. The day absorbs a clock of svc that is ahead
--    of the database's.
CREATE FUNCTION revocation_notify() RETURNS trigger
  LANGUAGE plpgsql
  SET search_path = pg_catalog
AS $$
DECLARE
  row_data jsonb := to_jsonb(CASE WHEN TG_OP = 'DELETE' THEN OLD ELSE NEW END);
BEGIN
  PERFORM pg_notify(
    'svc_revocation',
    json_build_object(TG_ARGV[0], row_data ->> TG_ARGV[1])::text);
  RETURN NULL;
END
$$;

CREATE TRIGGER sessions_revocation_notify AFTER UPDATE OF revoked_at ON sessions
  FOR EACH ROW
  WHEN (OLD.revoked_at IS NULL AND NEW.revoked_at IS NOT NULL
        AND OLD.idle_expiry > now() - interval '1 day')
  EXECUTE FUNCTION revocation_notify('session', 'id');
CREATE TRIGGER sessions_deletion_notify AFTER DELETE ON sessions
  FOR EACH ROW
  WHEN (OLD.revoked_at IS NULL AND OLD.idle_expiry > now() - interval '1 day')
  EXECUTE FUNCTION revocation_notify('session', 'id');
-- Deactivation (disabled_at), a role change, a move between tenants, a deletion.
CREATE TRIGGER users_revocation_notify AFTER UPDATE OF disabled_at, role, tenant_id ON users
  FOR EACH ROW
  WHEN (OLD.disabled_at IS DISTINCT FROM NEW.disabled_at
        OR OLD.role IS DISTINCT FROM NEW.role
        OR OLD.tenant_id IS DISTINCT FROM NEW.tenant_id)
  EXECUTE FUNCTION revocation_notify('user', 'id');
CREATE TRIGGER users_deletion_notify AFTER DELETE ON users
  FOR EACH ROW EXECUTE FUNCTION revocation_notify('user', 'id');
-- A forced password change (admin reset, `svc auth set-password`).
CREATE TRIGGER password_credentials_revocation_notify
  AFTER UPDATE OF must_change ON password_credentials
  FOR EACH ROW WHEN (NEW.must_change AND NOT OLD.must_change)
  EXECUTE FUNCTION revocation_notify('user', 'user_id');
-- Suspension (and every other state change: the listener re-checks, the state decides).
CREATE TRIGGER tenants_revocation_notify AFTER UPDATE OF state ON tenants
  FOR EACH ROW WHEN (OLD.state IS DISTINCT FROM NEW.state)
  EXECUTE FUNCTION revocation_notify('tenant', 'id');

-- Triggers fire without an EXECUTE check, so nobody needs to call this directly.
REVOKE ALL ON FUNCTION revocation_notify() FROM PUBLIC;

-- 2. The retention purge (src/domains/audit/audit-retention.ts) deletes sessions that ended
--    before its cutoff. A session ends at least when it is created, so every such row was
--    created before the cutoff: this index finds the candidates without reading the live
--    rows. It is on created_at, which never changes, rather than on the end itself
--    (least(revoked_at, idle_expiry)): idle_expiry slides on every request of a session, and
--    an index over it would turn each slide from a HOT update into one that writes the index.
--    svc_mssp (the system gate) already holds DELETE on sessions (sql/0003), so no grant
--    changes.
CREATE INDEX sessions_created_at_idx ON sessions (created_at);
