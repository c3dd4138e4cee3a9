-- The session check in the same round trip as a read's first statement (issue 11, API bench).
--
-- A GET whose session the app checked a few seconds ago proceeds on that identity while this
-- function re-checks it at the head of the request's transaction, written in one batch with the
-- handler's first statement (src/db/unit-of-work.ts, "guard"). It is svc_session_check (§5.5:
-- live session, enabled user, idle slide at most once per throttle interval, the session's
-- tenant context set for the rest of the transaction) plus a comparison with what the app
-- believed: when the session is no longer live it raises SV401, and when its user's role or
-- tenant context differs, or a password change is now required that the app did not know of,
-- it raises SV409. Either error aborts the transaction before the handler's statement runs,
-- so nothing is read under an identity the database no longer vouches for.
--
-- SECURITY INVOKER like the check: it runs as svc_app under RLS.
CREATE FUNCTION svc_session_assert(
  p_secret_hash text, p_at timestamptz, p_idle_ms integer, p_throttle_ms integer,
  p_user_id uuid, p_role text, p_tenant_context uuid, p_must_change boolean
) RETURNS void
LANGUAGE plpgsql SECURITY INVOKER SET search_path = pg_catalog AS $$
DECLARE
  found_row record;
BEGIN
  SELECT * INTO found_row
    FROM public.svc_session_check(p_secret_hash, p_at, p_idle_ms, p_throttle_ms);
  IF NOT FOUND THEN
    RAISE EXCEPTION 'session is not live' USING ERRCODE = 'SV401';
  END IF;
  IF found_row.user_id <> p_user_id
     OR found_row.role <> p_role
     OR found_row.tenant_context IS DISTINCT FROM p_tenant_context
     OR (found_row.must_change AND NOT p_must_change) THEN
    RAISE EXCEPTION 'session identity changed' USING ERRCODE = 'SV409';
  END IF;
END
$$;

REVOKE ALL ON FUNCTION svc_session_assert(text, timestamptz, integer, integer, uuid, text, uuid, boolean)
  FROM PUBLIC;
GRANT EXECUTE ON FUNCTION svc_session_assert(text, timestamptz, integer, integer, uuid, text, uuid, boolean)
  TO svc_app;
