import type { NotificationType } from '../../../contracts/mssp/notifications.ts';
import type { AppTx, InstallTx, TenantTx } from '../../db/tenant-context.ts';
import type { AttemptResult, StoredWebhook, WebhookScope } from './notification-types.ts';

/**
 * SQL on the webhook tables of sql/0031: `install_webhooks` (install-scoped), `tenant_webhooks`,
 * `webhook_deliveries` and the two attempt logs, plus the reads the sweep makes of the tables
 * where each notified condition shows (pending reviews, lifecycle events, heartbeats, LLM use,
 * investigations). Tenant rows are read under RLS only.
 */

/** How many attempts the delivery log keeps per webhook. */
export const LOG_LENGTH = 50;

const COLUMNS = `id, name, url, format, events, review_wait_minutes, min_severity,
  adapter_silent_minutes, enabled, signing_namespace, signing_secret_name, signing_secret_key,
  signing_version, created_at, updated_at, created_by`;

function tableOf(scope: WebhookScope): { table: string; tenant: string } {
  return scope.kind === 'install'
    ? { table: 'install_webhooks', tenant: 'NULL::uuid AS tenant_id' }
    : { table: 'tenant_webhooks', tenant: 'tenant_id' };
}

export async function listWebhooks(tx: AppTx, scope: WebhookScope): Promise<StoredWebhook[]> {
  const { table, tenant } = tableOf(scope);
  const { rows } = await tx.query<StoredWebhook>(
    `SELECT ${tenant}, ${COLUMNS} FROM ${table} ORDER BY created_at, id`,
  );
  return rows;
}

export async function findWebhook(
  tx: AppTx,
  scope: WebhookScope,
  id: string,
): Promise<StoredWebhook | undefined> {
  const { table, tenant } = tableOf(scope);
  const { rows } = await tx.query<StoredWebhook>(
    `SELECT ${tenant}, ${COLUMNS} FROM ${table} WHERE id = $1`,
    [id],
  );
  return rows[0];
}

export type WebhookFields = Pick<
  StoredWebhook,
  | 'name'
  | 'url'
  | 'format'
  | 'events'
  | 'review_wait_minutes'
  | 'min_severity'
  | 'adapter_silent_minutes'
  | 'enabled'
>;

export async function insertWebhook(
  tx: AppTx,
  scope: WebhookScope,
  row: WebhookFields & {
    id: string;
    signing_namespace: string;
    signing_secret_name: string;
    signing_secret_key: string;
    created_by: string;
    now: Date;
  },
): Promise<StoredWebhook> {
  const { table, tenant } = tableOf(scope);
  const tenantColumn = scope.kind === 'tenant' ? 'tenant_id, ' : '';
  const tenantValue = scope.kind === 'tenant' ? '$14, ' : '';
  const { rows } = await tx.query<StoredWebhook>(
    `INSERT INTO ${table} (${tenantColumn}id, name, url, format, events, review_wait_minutes,
       min_severity, adapter_silent_minutes, enabled, signing_namespace, signing_secret_name,
       signing_secret_key, created_by, created_at, updated_at)
     VALUES (${tenantValue}$1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11, $12, $13, now(), now())
     RETURNING ${tenant}, ${COLUMNS}`,
    [
      row.id,
      row.name,
      row.url,
      row.format,
      row.events,
      row.review_wait_minutes,
      row.min_severity,
      row.adapter_silent_minutes,
      row.enabled,
      row.signing_namespace,
      row.signing_secret_name,
      row.signing_secret_key,
      row.created_by,
      ...(scope.kind === 'tenant' ? [scope.tenantId] : []),
    ],
  );
  const stored = rows[0];
  if (!stored) throw new Error('INSERT … RETURNING gave no row');
  return stored;
}

export async function updateWebhook(
  tx: AppTx,
  scope: WebhookScope,
  id: string,
  fields: WebhookFields,
): Promise<StoredWebhook | undefined> {
  const { table, tenant } = tableOf(scope);
  const { rows } = await tx.query<StoredWebhook>(
    `UPDATE ${table} SET name = $2, url = $3, format = $4, events = $5, review_wait_minutes = $6,
            min_severity = $7, adapter_silent_minutes = $8, enabled = $9, updated_at = now()
      WHERE id = $1
      RETURNING ${tenant}, ${COLUMNS}`,
    [
      id,
      fields.name,
      fields.url,
      fields.format,
      fields.events,
      fields.review_wait_minutes,
      fields.min_severity,
      fields.adapter_silent_minutes,
      fields.enabled,
    ],
  );
  return rows[0];
}

/** Deletes the webhook (its attempt log goes with it) and the tenant's pending deliveries to it. */
export async function deleteWebhook(
  tx: AppTx,
  scope: WebhookScope,
  id: string,
): Promise<StoredWebhook | undefined> {
  const { table, tenant } = tableOf(scope);
  if (scope.kind === 'tenant') {
    await tx.query(
      `DELETE FROM webhook_deliveries WHERE scope = 'tenant' AND webhook_id = $1 AND status = 'pending'`,
      [id],
    );
  }
  const { rows } = await tx.query<StoredWebhook>(
    `DELETE FROM ${table} WHERE id = $1 RETURNING ${tenant}, ${COLUMNS}`,
    [id],
  );
  return rows[0];
}

export interface AttemptRow {
  delivery_id: string;
  event_type: string;
  attempt: number;
  attempted_at: Date;
  status_code: number | null;
  response_excerpt: string | null;
  error: string | null;
  duration_ms: number;
}

export async function listAttempts(
  tx: AppTx,
  scope: WebhookScope,
  webhookId: string,
): Promise<AttemptRow[]> {
  const table = scope.kind === 'install' ? 'install_webhook_attempts' : 'tenant_webhook_attempts';
  const { rows } = await tx.query<AttemptRow>(
    `SELECT delivery_id, event_type, attempt, attempted_at, status_code, response_excerpt, error,
            duration_ms
       FROM ${table} WHERE webhook_id = $1 ORDER BY id DESC LIMIT ${LOG_LENGTH}`,
    [webhookId],
  );
  return rows;
}

/** Appends one attempt to the webhook's log and trims the log to its newest LOG_LENGTH. */
export async function insertAttempt(
  tx: AppTx,
  webhook: Pick<StoredWebhook, 'id' | 'tenant_id'>,
  attempt: { deliveryId: string; eventType: string; number: number; result: AttemptResult },
): Promise<void> {
  const r = attempt.result;
  const values = [
    webhook.id,
    attempt.deliveryId,
    attempt.eventType,
    attempt.number,
    r.attemptedAt,
    r.statusCode,
    r.excerpt,
    r.error,
    r.durationMs,
  ];
  if (webhook.tenant_id === null) {
    await tx.query(
      `INSERT INTO install_webhook_attempts (webhook_id, delivery_id, event_type, attempt,
         attempted_at, status_code, response_excerpt, error, duration_ms)
       VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9)`,
      values,
    );
    await tx.query(
      `DELETE FROM install_webhook_attempts WHERE webhook_id = $1 AND id <= (
         SELECT id FROM install_webhook_attempts WHERE webhook_id = $1
          ORDER BY id DESC OFFSET ${LOG_LENGTH} LIMIT 1)`,
      [webhook.id],
    );
    return;
  }
  await tx.query(
    `INSERT INTO tenant_webhook_attempts (tenant_id, webhook_id, delivery_id, event_type, attempt,
       attempted_at, status_code, response_excerpt, error, duration_ms)
     VALUES ($10, $1, $2, $3, $4, $5, $6, $7, $8, $9)`,
    [...values, webhook.tenant_id],
  );
  await tx.query(
    `DELETE FROM tenant_webhook_attempts WHERE tenant_id = $2 AND webhook_id = $1 AND id <= (
       SELECT id FROM tenant_webhook_attempts WHERE tenant_id = $2 AND webhook_id = $1
        ORDER BY id DESC OFFSET ${LOG_LENGTH} LIMIT 1)`,
    [webhook.id, webhook.tenant_id],
  );
}

// --- deliveries ------------------------------------------------------------------------------

export interface DeliveryRow {
  tenant_id: string;
  id: string;
  scope: 'install' | 'tenant';
  webhook_id: string;
  event_type: string;
  payload: Record<string, unknown>;
  status: 'pending' | 'delivered' | 'failed';
  attempts: number;
}

/** The new delivery's id, or undefined when this condition notified this webhook already. */
export async function insertDelivery(
  tx: TenantTx,
  row: {
    tenantId: string;
    scope: 'install' | 'tenant';
    webhookId: string;
    eventType: string;
    dedupeKey: string;
    payload: Record<string, unknown>;
  },
): Promise<string | undefined> {
  const { rows } = await tx.query<{ id: string }>(
    `INSERT INTO webhook_deliveries (tenant_id, scope, webhook_id, event_type, dedupe_key, payload)
     VALUES ($1, $2, $3, $4, $5, $6::jsonb)
     ON CONFLICT (tenant_id, scope, webhook_id, dedupe_key) DO NOTHING
     RETURNING id`,
    [
      row.tenantId,
      row.scope,
      row.webhookId,
      row.eventType,
      row.dedupeKey,
      JSON.stringify(row.payload),
    ],
  );
  return rows[0]?.id;
}

export async function findDelivery(tx: TenantTx, id: string): Promise<DeliveryRow | undefined> {
  const { rows } = await tx.query<DeliveryRow>(
    `SELECT tenant_id, id, scope, webhook_id, event_type, payload, status, attempts
       FROM webhook_deliveries WHERE id = $1`,
    [id],
  );
  return rows[0];
}

/**
 * Records an attempt's outcome, only if no other run recorded one since `attempts` was read
 * (false then: that run owns what follows, the retry included).
 */
export async function settleDelivery(
  tx: TenantTx,
  id: string,
  seenAttempts: number,
  outcome: { status: DeliveryRow['status']; nextAttemptAt: Date | null; at: Date },
): Promise<boolean> {
  const { rowCount } = await tx.query(
    `UPDATE webhook_deliveries
        SET attempts = attempts + 1, status = $3, next_attempt_at = $4,
            finished_at = CASE WHEN $3 = 'pending' THEN NULL ELSE $5::timestamptz END
      WHERE id = $1 AND attempts = $2 AND status = 'pending'`,
    [id, seenAttempts, outcome.status, outcome.nextAttemptAt, outcome.at],
  );
  return rowCount === 1;
}

// --- what the sweep reads -------------------------------------------------------------------

export interface SweepTenant {
  id: string;
  slug: string;
  display_name: string;
  state: string;
}

/** Every tenant not deleted: the sweep visits each under its own RLS context. */
export async function sweepTenants(tx: InstallTx): Promise<SweepTenant[]> {
  const { rows } = await tx.query<SweepTenant>(
    `SELECT id, slug, display_name, state FROM tenants WHERE state <> 'soft-deleted' ORDER BY id`,
  );
  return rows;
}

/** The enabled webhooks that hear this tenant: the install's and its own. */
export async function enabledWebhooks(tx: TenantTx): Promise<StoredWebhook[]> {
  const { rows } = await tx.query<StoredWebhook>(
    `SELECT NULL::uuid AS tenant_id, ${COLUMNS} FROM install_webhooks WHERE enabled
     UNION ALL
     SELECT tenant_id, ${COLUMNS} FROM tenant_webhooks WHERE enabled`,
  );
  return rows;
}

/** One occurrence of a condition: the key that makes it notify once, and what it says. */
export interface Occurrence {
  type: NotificationType;
  key: string;
  data: Record<string, unknown>;
}

const SEVERITIES = `ARRAY['info', 'low', 'medium', 'high', 'critical']`;

/** Reviews undecided for longer than the webhook's threshold. */
export async function reviewsWaiting(
  tx: TenantTx,
  hook: StoredWebhook,
  now: Date,
): Promise<Occurrence[]> {
  const { rows } = await tx.query<{
    id: string;
    investigation_id: string;
    proposed_action: string;
    risk: string;
    requested_at: Date;
    waiting_minutes: number;
  }>(
    `SELECT id, investigation_id, proposed_action, risk, requested_at,
            floor(extract(epoch FROM ($1::timestamptz - requested_at)) / 60)::int AS waiting_minutes
       FROM pending_reviews
      WHERE decision IS NULL AND requested_at < $1::timestamptz - make_interval(mins => $2)
        AND (expires_at IS NULL OR expires_at > $1::timestamptz)
      ORDER BY requested_at LIMIT 500`,
    [now, hook.review_wait_minutes],
  );
  return rows.map((r) => ({
    type: 'review.waiting',
    key: `review.waiting:${r.id}`,
    data: {
      review_id: r.id,
      investigation_id: r.investigation_id,
      proposed_action: r.proposed_action,
      risk: r.risk,
      requested_at: r.requested_at.toISOString(),
      waiting_minutes: r.waiting_minutes,
    },
  }));
}

/** Provisioning failures and drift findings recorded since the webhook was made. */
export async function lifecycleOccurrences(
  tx: TenantTx,
  hook: StoredWebhook,
  kind: 'error' | 'drift',
): Promise<Occurrence[]> {
  const { rows } = await tx.query<{
    id: string;
    step: string | null;
    details: Record<string, unknown>;
    occurred_at: Date;
  }>(
    `SELECT id::text, step, details, occurred_at FROM tenant_lifecycle_events
      WHERE kind = $1 AND occurred_at >= $2 ORDER BY id LIMIT 500`,
    [kind, hook.created_at],
  );
  const type = kind === 'error' ? 'provisioning.failed' : 'drift.detected';
  return rows.map((r) => ({
    type,
    key: `${type}:${r.id}`,
    data:
      kind === 'error'
        ? {
            step: r.step,
            code: r.details.code ?? null,
            message: r.details.message ?? null,
            occurred_at: r.occurred_at.toISOString(),
          }
        : { details: r.details, occurred_at: r.occurred_at.toISOString() },
  }));
}

/**
 * The adapter of an active tenant, silent longer than the threshold: one occurrence per
 * silence (the last heartbeat names it; the next heartbeat ends it).
 */
export async function adapterSilence(
  tx: TenantTx,
  hook: StoredWebhook,
  now: Date,
): Promise<Occurrence[]> {
  const { rows } = await tx.query<{ last_seen_at: Date; silent_minutes: number }>(
    `SELECT h.last_seen_at,
            floor(extract(epoch FROM ($1::timestamptz - h.last_seen_at)) / 60)::int AS silent_minutes
       FROM adapter_heartbeats h JOIN tenants t ON t.id = h.tenant_id
      WHERE t.state = 'active' AND h.last_seen_at < $1::timestamptz - make_interval(mins => $2)`,
    [now, hook.adapter_silent_minutes],
  );
  return rows.map((r) => ({
    type: 'adapter.silent',
    key: `adapter.silent:${r.last_seen_at.toISOString()}`,
    data: { last_seen_at: r.last_seen_at.toISOString(), silent_minutes: r.silent_minutes },
  }));
}

/** A UTC day whose LLM budget refused a call, from the day the webhook was made on. */
export async function budgetExhausted(tx: TenantTx, hook: StoredWebhook): Promise<Occurrence[]> {
  const { rows } = await tx.query<{ day: string; refused: number }>(
    `SELECT to_char(day, 'YYYY-MM-DD') AS day, refused_over_budget::int AS refused
       FROM llm_usage
      WHERE refused_over_budget > 0 AND day >= ($1::timestamptz AT TIME ZONE 'UTC')::date
      ORDER BY day`,
    [hook.created_at],
  );
  return rows.map((r) => ({
    type: 'llm.budget_exhausted',
    key: `llm.budget_exhausted:${r.day}`,
    data: { day: r.day, refused_calls: r.refused },
  }));
}

/**
 * Incidents at or above the webhook's severity, changed since the webhook was made: one
 * occurrence per incident and severity, so a raise to a higher one notifies again.
 */
export async function severeIncidents(tx: TenantTx, hook: StoredWebhook): Promise<Occurrence[]> {
  const { rows } = await tx.query<{
    id: string;
    title: string;
    severity: string;
    status: string;
    opened_at: Date;
  }>(
    `SELECT id, title, severity, status, opened_at FROM investigations
      WHERE array_position(${SEVERITIES}, severity) >= array_position(${SEVERITIES}, $1)
        AND updated_at >= $2
      ORDER BY opened_at LIMIT 500`,
    [hook.min_severity, hook.created_at],
  );
  return rows.map((r) => ({
    type: 'incident.severity',
    key: `incident.severity:${r.id}:${r.severity}`,
    data: {
      investigation_id: r.id,
      title: r.title,
      severity: r.severity,
      status: r.status,
      opened_at: r.opened_at.toISOString(),
    },
  }));
}
