-- Roles are cluster-wide and need a superuser to create (BYPASSRLS), so the bootstrap step
-- creates them (src/db/bootstrap.ts). This migration refuses to continue on a database whose
-- roles do not have the properties the isolation model depends on (spec §5.7).
DO $$
DECLARE
  r record;
BEGIN
  FOR r IN
    SELECT v.name, v.bypass
    FROM (VALUES ('svc_admin', false), ('svc_app', false), ('svc_mssp', true)) AS v(name, bypass)
  LOOP
    IF NOT EXISTS (SELECT 1 FROM pg_roles WHERE rolname = r.name) THEN
      RAISE EXCEPTION 'role % is missing; run the bootstrap step first', r.name;
    END IF;
    IF EXISTS (
      SELECT 1 FROM pg_roles
      WHERE rolname = r.name AND (rolsuper OR rolbypassrls <> r.bypass)
    ) THEN
      RAISE EXCEPTION 'role % has the wrong attributes (superuser or BYPASSRLS <> %)', r.name, r.bypass;
    END IF;
  END LOOP;
END
$$;

REVOKE ALL ON SCHEMA public FROM PUBLIC;
GRANT USAGE ON SCHEMA public TO svc_app, svc_mssp;
