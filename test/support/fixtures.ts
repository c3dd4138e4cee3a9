import { randomUUID } from 'node:crypto';
import type pg from 'pg';

interface Queryable {
  query<R extends object>(text: string, values?: unknown[]): Promise<{ rows: R[] }>;
}

/** Inserts a tenant row (tenants is install-scoped, so any role with INSERT may do it). */
export async function createTenant(db: Queryable | pg.Pool, slug?: string): Promise<string> {
  const s = slug ?? `t-${randomUUID().slice(0, 8)}`;
  const { rows } = await (db as Queryable).query<{ id: string }>(
    'INSERT INTO tenants (slug, display_name) VALUES ($1, $2) RETURNING id',
    [s, `Tenant ${s}`],
  );
  const id = rows[0]?.id;
  if (!id) throw new Error('tenant insert returned no id');
  return id;
}

type Inserter = (tx: Queryable, tenantId: string) => Promise<void>;

async function investigation(tx: Queryable, tenantId: string): Promise<string> {
  const { rows } = await tx.query<{ id: string }>(
    `INSERT INTO investigations (tenant_id, title, severity) VALUES ($1, 'Suspicious login', 'high')
     RETURNING id`,
    [tenantId],
  );
  return rows[0]?.id ?? '';
}

/**
 * One valid row for every table that has a tenant_id column. The catalog test fails when a
 * table exists without an entry here, so every new table gets the isolation probes for free.
 */
export const TENANT_ROW_FIXTURES: Record<string, Inserter> = {
  events: async (tx, t) => {
    await tx.query(
      `INSERT INTO events (tenant_id, stream_type, stream_id, stream_seq, type, payload, occurred_at)
       VALUES ($1, 'investigation', $2, 1, 'investigation.opened', '{"source":"test"}', now())`,
      [t, randomUUID()],
    );
  },
  investigations: async (tx, t) => {
    await investigation(tx, t);
  },
  metrics_hourly: async (tx, t) => {
    await tx.query(
      `INSERT INTO metrics_hourly (tenant_id, bucket, metric, value)
       VALUES ($1, date_trunc('hour', now()) - make_interval(hours => (random() * 1000)::int), 'alerts.ingested', 1)`,
      [t],
    );
  },
  ioc_stats: async (tx, t) => {
    await tx.query(
      `INSERT INTO ioc_stats (tenant_id, ioc_type, ioc_value, hits, first_seen_at, last_seen_at)
       VALUES ($1, 'ip', $2, 3, now(), now())`,
      [t, `198.51.100.${Math.floor(Math.random() * 250)}-${randomUUID()}`],
    );
  },
  rule_stats: async (tx, t) => {
    await tx.query(`INSERT INTO rule_stats (tenant_id, rule_id, fired) VALUES ($1, $2, 5)`, [
      t,
      `rule-${randomUUID()}`,
    ]);
  },
  investigation_iocs: async (tx, t) => {
    await tx.query(
      `INSERT INTO investigation_iocs (tenant_id, investigation_id, ioc_type, ioc_value, alerts,
                                       first_seen_at, last_seen_at)
       VALUES ($1, $2, 'ip', $3, 1, now(), now())`,
      [t, randomUUID(), `203.0.113.${Math.floor(Math.random() * 250)}`],
    );
  },
  report_investigations: async (tx, t) => {
    await tx.query(
      `INSERT INTO report_investigations (tenant_id, investigation_id, opened_at, last_event_id)
       VALUES ($1, $2, now(), 1)`,
      [t, randomUUID()],
    );
  },
  report_reviews: async (tx, t) => {
    await tx.query(
      `INSERT INTO report_reviews (tenant_id, review_id, requested_at, last_event_id)
       VALUES ($1, $2, now(), 1)`,
      [t, randomUUID()],
    );
  },
  analyzer_stats: async (tx, t) => {
    await tx.query(`INSERT INTO analyzer_stats (tenant_id, analyzer, runs) VALUES ($1, $2, 2)`, [
      t,
      `analyzer-${randomUUID()}`,
    ]);
  },
  projection_checkpoints: async (tx, t) => {
    await tx.query(
      `INSERT INTO projection_checkpoints (tenant_id, projection, last_event_id) VALUES ($1, $2, 7)`,
      [t, `p_${randomUUID().slice(0, 8).replaceAll('-', '')}`],
    );
  },
  pending_reviews: async (tx, t) => {
    const inv = await investigation(tx, t);
    await tx.query(
      `INSERT INTO pending_reviews (tenant_id, investigation_id, proposed_action, rationale, risk, requested_by)
       VALUES ($1, $2, 'isolate_host', 'Beaconing to known C2', 'high', 'worker:triage')`,
      [t, inv],
    );
  },
  integration_configs: async (tx, t) => {
    await tx.query(
      `INSERT INTO integration_configs (tenant_id, kind, name, endpoint_url)
       VALUES ($1, 'siem', $2, 'https://siem.example.test')`,
      [t, `siem-${randomUUID()}`],
    );
  },
  branding_configs: async (tx, t) => {
    await tx.query(
      `INSERT INTO branding_configs (tenant_id, app_name, primary_color, secondary_color)
       VALUES ($1, 'Acme SOC', '#112233', '#abcdef')
       ON CONFLICT (tenant_id) DO UPDATE SET app_name = excluded.app_name`,
      [t],
    );
  },
  tenant_secrets: async (tx, t) => {
    const suffix = randomUUID().slice(0, 8);
    await tx.query(
      `INSERT INTO tenant_secrets (tenant_id, purpose, namespace, name)
       VALUES ($1, $2, 'svc-system', $3)`,
      [t, `llm-${suffix}`, `tenant-${t}-llm-${suffix}`],
    );
  },
  tenant_lifecycle_events: async (tx, t) => {
    await tx.query(
      `INSERT INTO tenant_lifecycle_events (tenant_id, kind, from_state, to_state, actor)
       VALUES ($1, 'transition', 'pending', 'provisioning', 'system:orchestrator')`,
      [t],
    );
  },
  audit_log: async (tx, t) => {
    await tx.query(
      `INSERT INTO audit_log (tenant_id, actor_principal, actor_id, action, resource_type)
       VALUES ($1, 'System', 'system:test', 'tenant.create', 'tenant')`,
      [t],
    );
  },
  users: async (tx, t) => {
    await tx.query(
      `INSERT INTO users (tenant_id, email, role) VALUES ($1, $2, 'customer_viewer')`,
      [t, `viewer-${randomUUID().slice(0, 8)}@customer.test`],
    );
  },
  adapter_credentials: async (tx, t) => {
    await tx.query(
      `INSERT INTO adapter_credentials (tenant_id, credential_hash) VALUES ($1, $2)
       ON CONFLICT (tenant_id) DO UPDATE SET credential_hash = excluded.credential_hash`,
      [t, randomUUID().replaceAll('-', '').repeat(2)],
    );
  },
  ingest_checkpoints: async (tx, t) => {
    await tx.query(
      `INSERT INTO ingest_checkpoints (tenant_id, position, alerts_total)
       VALUES ($1, '{"search_after":[1764164701123,"a"]}', 2)
       ON CONFLICT (tenant_id, source) DO UPDATE SET alerts_total = excluded.alerts_total`,
      [t],
    );
  },
  alert_groups: async (tx, t) => {
    await tx.query(
      `INSERT INTO alert_groups (tenant_id, investigation_id, rule_id, agent_id, last_alert_at,
                                 alert_count, closed_at)
       VALUES ($1, $2, '5712', $3, now(), 1, now())`,
      [t, randomUUID(), `agent-${randomUUID().slice(0, 8)}`],
    );
  },
  adapter_heartbeats: async (tx, t) => {
    await tx.query(
      `INSERT INTO adapter_heartbeats (tenant_id, first_seen_at, last_seen_at, adapter_version)
       VALUES ($1, now(), now(), '1.0.0')
       ON CONFLICT (tenant_id) DO UPDATE SET last_seen_at = excluded.last_seen_at`,
      [t],
    );
  },
  llm_cache: async (tx, t) => {
    await tx.query(
      `INSERT INTO llm_cache (tenant_id, prompt_hash, provider, model, response, input_tokens, output_tokens)
       VALUES ($1, encode(sha256($2::bytea), 'hex'), 'openai', 'gpt-test', '{"verdict":"benign"}', 10, 5)`,
      [t, randomUUID()],
    );
  },
  llm_usage: async (tx, t) => {
    await tx.query(
      `INSERT INTO llm_usage (tenant_id, day, input_tokens, output_tokens, calls)
       VALUES ($1, current_date - (random() * 1000)::int, 10, 5, 1)
       ON CONFLICT (tenant_id, day) DO UPDATE SET calls = llm_usage.calls + 1`,
      [t],
    );
  },
  triage_policies: async (tx, t) => {
    await tx.query(
      `INSERT INTO triage_policies (tenant_id, policy) VALUES ($1, '{"auto_close_below_level":5}')
       ON CONFLICT (tenant_id) DO UPDATE SET policy = excluded.policy`,
      [t],
    );
  },
  parked_jobs: async (tx, t) => {
    await tx.query(
      `INSERT INTO parked_jobs (tenant_id, job_type, input) VALUES ($1, 'triage', $2)`,
      [t, JSON.stringify({ investigation_id: randomUUID() })],
    );
  },
  tenant_webhooks: async (tx, t) => {
    await webhook(tx, t);
  },
  webhook_deliveries: async (tx, t) => {
    await tx.query(
      `INSERT INTO webhook_deliveries (tenant_id, scope, webhook_id, event_type, dedupe_key, payload)
       VALUES ($1, 'tenant', $2, 'drift.detected', $3, '{}')`,
      [t, randomUUID(), `drift.detected:${randomUUID()}`],
    );
  },
  tenant_webhook_attempts: async (tx, t) => {
    await tx.query(
      `INSERT INTO tenant_webhook_attempts (tenant_id, webhook_id, delivery_id, event_type, attempt,
         attempted_at, status_code, duration_ms)
       VALUES ($1, $2, $3, 'webhook.test', 1, now(), 200, 12)`,
      [t, await webhook(tx, t), randomUUID()],
    );
  },
};

/** A tenant webhook row (docs/notifications.md); its Secret reference points nowhere real. */
async function webhook(tx: Queryable, tenantId: string): Promise<string> {
  const id = randomUUID();
  await tx.query(
    `INSERT INTO tenant_webhooks (tenant_id, id, name, url, format, events, review_wait_minutes,
       min_severity, adapter_silent_minutes, signing_namespace, signing_secret_name,
       signing_secret_key, created_by)
     VALUES ($1, $2, 'fixture', 'https://hooks.example.test/', 'standard', '{drift.detected}', 30,
       'high', 15, 'svc-system', $3, 'signing-secret', 'user:fixture')`,
    [tenantId, id, `svc-webhook-${id}`],
  );
  return id;
}
