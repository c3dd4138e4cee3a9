-- Audit retention (spec §8: audit rows are kept 90 days, install setting
-- audit.retention_days). The purge is the only way an audit row ever leaves the table.
--
-- Until now svc_mssp held DELETE on audit_log, so any code inside the system gate (the fleet
-- summary, the cross-tenant lists) could erase the trail by mistake or by injection. From here
-- on no login role may DELETE audit rows; svc_mssp may only call audit_purge_batch, which
-- deletes the oldest rows strictly before a cutoff at least 23 hours old, one bounded batch
-- per call. svc_app keeps SELECT and INSERT only and gets no EXECUTE.
REVOKE DELETE ON audit_log FROM svc_mssp;

-- The function runs as its owner, svc_admin, which FORCE RLS binds and whose audit policies
-- let it see nothing without a tenant context. These two policies open the table to svc_admin
-- only while the session belongs to svc_mssp, which happens only inside a SECURITY DEFINER
-- function owned by svc_admin and called through the system gate: this one is the only such
-- function that touches audit_log. A svc_admin session of its own (migrations, psql) still
-- sees zero tenant rows without a context.
CREATE POLICY audit_purge_read ON audit_log FOR SELECT TO svc_admin
  USING (session_user = 'svc_mssp');
CREATE POLICY audit_purge ON audit_log FOR DELETE TO svc_admin
  USING (session_user = 'svc_mssp');

-- Deletes up to p_limit rows older than p_before, oldest first, through audit_log_time_idx;
-- returns how many. One call is one short statement in the caller's transaction: the caller
-- commits between batches so no transaction holds many row locks or a long snapshot. A DELETE
-- takes ROW EXCLUSIVE like an INSERT, so audit writers are never blocked by a purge.
CREATE FUNCTION audit_purge_batch(p_before timestamptz, p_limit integer) RETURNS integer
LANGUAGE plpgsql SECURITY DEFINER SET search_path = pg_catalog AS $$
DECLARE
  deleted integer;
BEGIN
  -- The retention setting accepts 1..3650 days, so a cutoff inside the last day is a bug in
  -- the caller or a wrong clock, and recent audit rows must survive it. The hour of slack lets
  -- a one-day retention work while svc's clock runs a little ahead of the database's.
  IF p_before IS NULL OR p_before > now() - interval '23 hours' THEN
    RAISE EXCEPTION 'audit purge cutoff % is within the last 23 hours', p_before
      USING ERRCODE = '22023';
  END IF;
  IF p_limit IS NULL OR p_limit < 1 OR p_limit > 50000 THEN
    RAISE EXCEPTION 'audit purge batch size % is not within 1..50000', p_limit
      USING ERRCODE = '22023';
  END IF;
  -- EXECUTE plans the statement afresh on every call, with the actual cutoff and limit. A
  -- static statement would be planned once per connection: after five calls on a small table
  -- PL/pgSQL keeps a generic plan (a nested loop that rescans the subquery per row), which took
  -- 27 s for 5,000 of 20,000 rows here instead of 60 ms.
  EXECUTE 'DELETE FROM public.audit_log
            WHERE id IN (SELECT id FROM public.audit_log
                          WHERE "timestamp" < $1
                          ORDER BY "timestamp"
                          LIMIT $2)'
    USING p_before, p_limit;
  GET DIAGNOSTICS deleted = ROW_COUNT;
  RETURN deleted;
END
$$;
REVOKE ALL ON FUNCTION audit_purge_batch(timestamptz, integer) FROM PUBLIC;
GRANT EXECUTE ON FUNCTION audit_purge_batch(timestamptz, integer) TO svc_mssp;
