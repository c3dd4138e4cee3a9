-- Users of both kinds live in one table (spec §2.2); the kind follows from role + tenant_id.
CREATE TABLE users (
  id uuid PRIMARY KEY DEFAULT gen_random_uuid(),
  tenant_id uuid REFERENCES tenants (id),
  email text NOT NULL CHECK (email = lower(email) AND email ~ '^[^@\s]+@[^@\s]+$' AND length(email) <= 254),
  display_name text CHECK (length(display_name) <= 200),
  role text NOT NULL CHECK (role IN ('platform_admin', 'mssp_admin', 'analyst', 'customer_viewer')),
  disabled_at timestamptz,
  created_at timestamptz NOT NULL DEFAULT now(),
  updated_at timestamptz NOT NULL DEFAULT now(),
  -- tenant_id is NULL exactly for the three MSSP roles.
  CONSTRAINT users_scope_matches_role CHECK ((role = 'customer_viewer') = (tenant_id IS NOT NULL)),
  -- Email is the login name, so it is unique across the whole install.
  CONSTRAINT users_email_key UNIQUE (email),
  -- Lets tenant-scoped tables reference a customer user without crossing tenants.
  CONSTRAINT users_tenant_id_id_key UNIQUE (tenant_id, id)
);
CREATE INDEX users_tenant_id_idx ON users (tenant_id, role);

ALTER TABLE users ENABLE ROW LEVEL SECURITY;
ALTER TABLE users FORCE ROW LEVEL SECURITY;
-- Spec §5.7 item 2: rows with a tenant follow the tenant policy; MSSP rows (NULL) stay visible.
CREATE POLICY tenant_isolation ON users
  USING (tenant_id IS NULL
         OR tenant_id = (SELECT NULLIF(current_setting('app.current_tenant_id', true), '')::uuid))
  WITH CHECK (tenant_id IS NULL
         OR tenant_id = (SELECT NULLIF(current_setting('app.current_tenant_id', true), '')::uuid));

CREATE TABLE password_credentials (
  user_id uuid PRIMARY KEY REFERENCES users (id) ON DELETE CASCADE,
  password_hash text NOT NULL CHECK (password_hash LIKE '$argon2id$%'),
  must_change boolean NOT NULL DEFAULT false,
  updated_at timestamptz NOT NULL DEFAULT now(),
  last_used_at timestamptz,
  consecutive_failures integer NOT NULL DEFAULT 0 CHECK (consecutive_failures >= 0),
  -- Start of the current failure streak, so "10 failures within 15 min" is decidable.
  first_failure_at timestamptz,
  locked_until timestamptz
);

CREATE TABLE sessions (
  id uuid PRIMARY KEY,
  user_id uuid NOT NULL REFERENCES users (id) ON DELETE CASCADE,
  tenant_context uuid REFERENCES tenants (id),
  created_at timestamptz NOT NULL DEFAULT now(),
  last_seen_at timestamptz NOT NULL DEFAULT now(),
  absolute_expiry timestamptz NOT NULL,
  idle_expiry timestamptz NOT NULL,
  revoked_at timestamptz,
  ip_created inet,
  user_agent text CHECK (length(user_agent) <= 1024),
  CHECK (absolute_expiry > created_at),
  CHECK (idle_expiry <= absolute_expiry)
);
CREATE INDEX sessions_user_id_revoked_at_idx ON sessions (user_id, revoked_at);

GRANT SELECT, INSERT, UPDATE, DELETE ON users TO svc_app;
GRANT SELECT, INSERT, UPDATE ON password_credentials TO svc_app;
-- Expired and revoked sessions are retained for audit (spec §3.2): no DELETE.
GRANT SELECT, INSERT, UPDATE ON sessions TO svc_app;
GRANT SELECT, INSERT, UPDATE, DELETE ON users, password_credentials, sessions TO svc_mssp;
