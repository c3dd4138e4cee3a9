-- The install's version history (spec §3 entity Release, "version metadata, install-wide";
-- docs/packaging.md "Upgrade"): one row per svc version that has migrated this database, written
-- by `svc migrate` (and every svc start that migrates) under the migration lock. It names the
-- schema level each version left behind, so a downgrade is refused with the version that wrote
-- the database, and an operator sees when each upgrade happened. Versions before 0.2.0 did not
-- record themselves.
--
-- 0002 keyed `releases` by version alone, which cannot hold the system package and a tenant
-- package of the same number; the table was never written, so the key is simply replaced.
ALTER TABLE releases DROP CONSTRAINT releases_pkey;
ALTER TABLE releases ADD PRIMARY KEY (kind, version);
ALTER TABLE releases ADD COLUMN schema_version integer CHECK (schema_version >= 1);
ALTER TABLE releases ADD COLUMN last_migrated_at timestamptz;
ALTER TABLE releases ADD CONSTRAINT releases_schema_only_system
  CHECK (schema_version IS NULL OR kind = 'system');
COMMENT ON TABLE releases IS
  'Versions of svc (kind system) that migrated this database: installed_at is the first start, last_migrated_at the latest, schema_version the level it left.';
