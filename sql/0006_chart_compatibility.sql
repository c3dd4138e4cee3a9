-- Answers whether a tenant package version may run under a system version (spec §9.2).
-- A pair absent from the matrix is out of range and refused like a blocked one.
CREATE FUNCTION can_upgrade(system text, tenant text) RETURNS text
  LANGUAGE sql STABLE
  AS $$
    SELECT coalesce(
      (SELECT status FROM chart_compatibility
        WHERE system_version = system AND tenant_chart_version = tenant),
      'out-of-range')
  $$;

REVOKE ALL ON FUNCTION can_upgrade(text, text) FROM PUBLIC;
GRANT EXECUTE ON FUNCTION can_upgrade(text, text) TO svc_app, svc_mssp;
