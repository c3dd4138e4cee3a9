-- Install-scoped tables (spec §2.4): no tenant_id, no RLS.

CREATE TABLE organization (
  -- One row per install; the constant key makes a second row impossible.
  singleton boolean PRIMARY KEY DEFAULT true CHECK (singleton),
  mssp_id uuid NOT NULL,
  mssp_name text NOT NULL CHECK (length(mssp_name) BETWEEN 1 AND 200),
  install_id uuid NOT NULL,
  install_label text NOT NULL CHECK (length(install_label) BETWEEN 1 AND 200),
  -- Reserved for the future license (spec §1 item 8); never read in this release.
  license_jwt text,
  created_at timestamptz NOT NULL DEFAULT now(),
  updated_at timestamptz NOT NULL DEFAULT now()
);

CREATE TABLE releases (
  version text PRIMARY KEY CHECK (version ~ '^[0-9]+\.[0-9]+\.[0-9]+(-[0-9A-Za-z.-]+)?$'),
  kind text NOT NULL CHECK (kind IN ('system', 'tenant')),
  released_at timestamptz,
  installed_at timestamptz NOT NULL DEFAULT now(),
  notes text
);

CREATE TABLE install_settings (
  key text PRIMARY KEY CHECK (key ~ '^[a-z][a-z0-9_.]{0,99}$'),
  value jsonb NOT NULL,
  updated_at timestamptz NOT NULL DEFAULT now(),
  updated_by text
);

CREATE TABLE chart_compatibility (
  system_version text NOT NULL,
  tenant_chart_version text NOT NULL,
  status text NOT NULL CHECK (status IN ('supported', 'deprecated', 'blocked')),
  notes text,
  PRIMARY KEY (system_version, tenant_chart_version)
);

CREATE TABLE tenants (
  id uuid PRIMARY KEY DEFAULT gen_random_uuid(),
  -- DNS-1123 label that still fits once prefixed with "tenant-" (63 - 7 = 56).
  slug text NOT NULL UNIQUE CHECK (slug ~ '^[a-z0-9]([a-z0-9-]{0,54}[a-z0-9])?$'),
  display_name text NOT NULL CHECK (length(display_name) BETWEEN 1 AND 200),
  state text NOT NULL DEFAULT 'pending'
    CHECK (state IN ('pending', 'provisioning', 'active', 'decommissioning', 'soft-deleted')),
  -- Last failure of a provisioning step, kept for the operator (spec §3.1, §7).
  error_details jsonb,
  config_revision integer NOT NULL DEFAULT 1 CHECK (config_revision >= 1),
  deleted_at timestamptz,
  created_at timestamptz NOT NULL DEFAULT now(),
  updated_at timestamptz NOT NULL DEFAULT now(),
  CHECK ((state = 'soft-deleted') = (deleted_at IS NOT NULL))
);
CREATE INDEX tenants_state_idx ON tenants (state);

GRANT SELECT ON organization, releases, chart_compatibility TO svc_app;
GRANT SELECT, INSERT, UPDATE ON install_settings, tenants TO svc_app;
GRANT UPDATE (mssp_name, install_label, updated_at) ON organization TO svc_app;
GRANT SELECT, INSERT, UPDATE, DELETE
  ON organization, releases, install_settings, chart_compatibility, tenants TO svc_mssp;
