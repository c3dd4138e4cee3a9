-- The LLM side of the triage pipeline (issue 13): the response cache, the daily usage that
-- budgets are checked against, and the MSSP's triage policy per tenant. All three are
-- tenant-scoped like sql/0004 (tenant_id NOT NULL, keys leading with it, ENABLE + FORCE RLS,
-- policy tenant_isolation on USING and WITH CHECK). See docs/llm.md.

-- Spec §5.7.7: keyed on (tenant_id, prompt_hash), so an identical prompt of another tenant is
-- a miss (§9.5.5). prompt_hash is the hex sha256 of the canonical request (provider, base URL,
-- model, system, user, output schema); see src/domains/llm/llm-service.ts.
CREATE TABLE llm_cache (
  tenant_id uuid NOT NULL REFERENCES tenants (id),
  prompt_hash text NOT NULL CHECK (prompt_hash ~ '^[0-9a-f]{64}$'),
  provider text NOT NULL CHECK (length(provider) BETWEEN 1 AND 64),
  -- The model the server says answered.
  model text NOT NULL CHECK (length(model) BETWEEN 1 AND 200),
  response text NOT NULL,
  input_tokens integer NOT NULL CHECK (input_tokens >= 0),
  output_tokens integer NOT NULL CHECK (output_tokens >= 0),
  created_at timestamptz NOT NULL DEFAULT now(),
  hits bigint NOT NULL DEFAULT 0 CHECK (hits >= 0),
  last_hit_at timestamptz,
  PRIMARY KEY (tenant_id, prompt_hash)
);

-- One row per tenant and UTC day. reserved_tokens are held by calls in flight (reserved
-- before the provider is called, released when it answers or fails), so concurrent calls
-- cannot together pass the token budget.
CREATE TABLE llm_usage (
  tenant_id uuid NOT NULL REFERENCES tenants (id),
  day date NOT NULL,
  input_tokens bigint NOT NULL DEFAULT 0 CHECK (input_tokens >= 0),
  output_tokens bigint NOT NULL DEFAULT 0 CHECK (output_tokens >= 0),
  cost_usd numeric(18, 6) NOT NULL DEFAULT 0 CHECK (cost_usd >= 0),
  reserved_tokens bigint NOT NULL DEFAULT 0 CHECK (reserved_tokens >= 0),
  calls bigint NOT NULL DEFAULT 0 CHECK (calls >= 0),
  cache_hits bigint NOT NULL DEFAULT 0 CHECK (cache_hits >= 0),
  cache_misses bigint NOT NULL DEFAULT 0 CHECK (cache_misses >= 0),
  refused_over_budget bigint NOT NULL DEFAULT 0 CHECK (refused_over_budget >= 0),
  PRIMARY KEY (tenant_id, day)
);

-- The policy as the MSSP last put it (contracts/triage-policy.ts); absent keys take the
-- defaults when read, so a tenant without a row runs on DEFAULT_TRIAGE_POLICY.
CREATE TABLE triage_policies (
  tenant_id uuid NOT NULL REFERENCES tenants (id),
  policy jsonb NOT NULL CHECK (jsonb_typeof(policy) = 'object'),
  updated_at timestamptz NOT NULL DEFAULT now(),
  updated_by uuid REFERENCES users (id),
  PRIMARY KEY (tenant_id)
);

ALTER TABLE llm_cache ENABLE ROW LEVEL SECURITY;
ALTER TABLE llm_cache FORCE ROW LEVEL SECURITY;
CREATE POLICY tenant_isolation ON llm_cache
  USING (tenant_id = (SELECT NULLIF(current_setting('app.current_tenant_id', true), '')::uuid))
  WITH CHECK (tenant_id = (SELECT NULLIF(current_setting('app.current_tenant_id', true), '')::uuid));

ALTER TABLE llm_usage ENABLE ROW LEVEL SECURITY;
ALTER TABLE llm_usage FORCE ROW LEVEL SECURITY;
CREATE POLICY tenant_isolation ON llm_usage
  USING (tenant_id = (SELECT NULLIF(current_setting('app.current_tenant_id', true), '')::uuid))
  WITH CHECK (tenant_id = (SELECT NULLIF(current_setting('app.current_tenant_id', true), '')::uuid));

ALTER TABLE triage_policies ENABLE ROW LEVEL SECURITY;
ALTER TABLE triage_policies FORCE ROW LEVEL SECURITY;
CREATE POLICY tenant_isolation ON triage_policies
  USING (tenant_id = (SELECT NULLIF(current_setting('app.current_tenant_id', true), '')::uuid))
  WITH CHECK (tenant_id = (SELECT NULLIF(current_setting('app.current_tenant_id', true), '')::uuid));

-- svc_app inserts and updates only the columns it moves, and never deletes (a tenant's rows go
-- with the tenant, through the System gate's purge).
GRANT SELECT, INSERT ON llm_cache, llm_usage, triage_policies TO svc_app;
GRANT UPDATE (hits, last_hit_at) ON llm_cache TO svc_app;
GRANT UPDATE (input_tokens, output_tokens, cost_usd, reserved_tokens, calls, cache_hits,
  cache_misses, refused_over_budget) ON llm_usage TO svc_app;
GRANT UPDATE (policy, updated_at, updated_by) ON triage_policies TO svc_app;
GRANT SELECT, INSERT, UPDATE, DELETE ON llm_cache, llm_usage, triage_policies TO svc_mssp;
