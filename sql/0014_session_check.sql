-- The session check of every signed-in request in one round trip (issue 11 item 4): spec §5.5
-- needs the live session found by its secret's hash, its user read (customer users are under
-- RLS, so in the session's tenant context) and the idle expiry slid at most once per throttle
-- interval. As separate statements that was three or four round trips per request.
--
-- SECURITY INVOKER: it runs as svc_app under RLS like any handler query. It sets the tenant
-- context RLS applies to the session's tenant (none for MSSP staff) and leaves it so for the
-- rest of the transaction: the request's own queries on that tenant then need no set_config of
-- their own (src/db/unit-of-work.ts records it from the returned tenant_context). Returns no row
-- for a missing, revoked or expired session and for a disabled or invisible user; the session
-- returned carries the expiries after this check.
CREATE FUNCTION svc_session_check(
  p_secret_hash text, p_at timestamptz, p_idle_ms integer, p_throttle_ms integer
) RETURNS TABLE (
  user_id uuid, tenant_id uuid, email text, display_name text, role text, must_change boolean,
  session_id uuid, tenant_context uuid, created_at timestamptz, last_seen_at timestamptz,
  absolute_expiry timestamptz, idle_expiry timestamptz
) LANGUAGE plpgsql SECURITY INVOKER SET search_path = pg_catalog AS $$
#variable_conflict use_column
DECLARE
  s public.sessions%ROWTYPE;
  u record;
  touched_seen timestamptz;
  touched_idle timestamptz;
BEGIN
  SELECT * INTO s FROM public.sessions
   WHERE secret_hash = p_secret_hash AND revoked_at IS NULL
     AND p_at < absolute_expiry AND p_at < idle_expiry;
  IF NOT FOUND THEN RETURN; END IF;

  PERFORM set_config('app.current_tenant_id', coalesce(s.tenant_context::text, ''), true);
  SELECT users.id, users.tenant_id, users.email, users.display_name, users.role,
         coalesce(c.must_change, false) AS must_change
    INTO u
    FROM public.users LEFT JOIN public.password_credentials c ON c.user_id = users.id
   WHERE users.id = s.user_id AND users.disabled_at IS NULL;
  IF u.id IS NULL THEN RETURN; END IF;

  IF p_at - s.last_seen_at >= make_interval(secs => p_throttle_ms / 1000.0) THEN
    UPDATE public.sessions
       SET last_seen_at = p_at,
           idle_expiry = least(p_at + make_interval(secs => p_idle_ms / 1000.0), s.absolute_expiry)
     WHERE id = s.id AND revoked_at IS NULL AND last_seen_at < p_at
     RETURNING last_seen_at, idle_expiry INTO touched_seen, touched_idle;
    IF FOUND THEN
      s.last_seen_at := touched_seen;
      s.idle_expiry := touched_idle;
    END IF;
  END IF;

  RETURN QUERY SELECT u.id, u.tenant_id, u.email, u.display_name, u.role, u.must_change,
                      s.id, s.tenant_context, s.created_at, s.last_seen_at, s.absolute_expiry,
                      s.idle_expiry;
END
$$;

REVOKE ALL ON FUNCTION svc_session_check(text, timestamptz, integer, integer) FROM PUBLIC;
GRANT EXECUTE ON FUNCTION svc_session_check(text, timestamptz, integer, integer) TO svc_app;
