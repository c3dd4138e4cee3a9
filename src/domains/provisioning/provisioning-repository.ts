import type pg from 'pg';
import type * as s from 'zapatos/schema';
import type { InstallTx, SystemTx, TenantTx, Transaction } from '../../db/tenant-context.ts';
import { PROJECTIONS } from '../projections/projection-registry.ts';
import type { WorkKind } from './provisioning-types.ts';

/**
 * The orchestrator's SQL: the step history it replays, the Secret references it reads, the
 * tenant row's provisioning columns (chart version, edge ports, upgrade target, error, drift),
 * the work due, the install record and the purge. Tenant lookup and lifecycle inserts are the
 * tenant domain's (tenant-repository.ts findTenant, insertLifecycleEvent).
 */

const json = (value: unknown): string => JSON.stringify(value);

// --- tenants row -------------------------------------------------------------------------

/** Of `ids`, those a tenant row exists for. */
export async function existingTenantIds(tx: InstallTx, ids: string[]): Promise<Set<string>> {
  const { rows } = await tx.query<Pick<s.tenants.Selectable, 'id'>>(
    'SELECT id FROM tenants WHERE id = ANY($1::uuid[])',
    [ids],
  );
  return new Set(rows.map((r) => r.id));
}

export async function setChartVersion(
  tx: Transaction,
  tenantId: string,
  version: string,
): Promise<void> {
  await tx.query('UPDATE tenants SET chart_version = $2 WHERE id = $1', [tenantId, version]);
}

/** Keeps an operation's failure on the tenant, unless it left `state` meanwhile. */
export async function setErrorDetails(
  tx: Transaction,
  tenantId: string,
  state: 'pending' | 'decommissioning',
  details: Record<string, unknown>,
): Promise<void> {
  await tx.query(
    `UPDATE tenants SET error_details = $3, updated_at = now() WHERE id = $1 AND state = $2`,
    [tenantId, state, json(details)],
  );
}

/**
 * Lowest free pair; a tenant that already holds a pair keeps it. Two racing allocations meet
 * the UNIQUE constraint (23505) and the caller tries again. undefined: none left.
 */
export async function allocateEdgePortPair(
  tx: InstallTx,
  tenantId: string,
  maxPair: number,
): Promise<number | undefined> {
  const { rows } = await tx.query<Pick<s.tenants.Selectable, 'edge_port_pair'>>(
    `UPDATE tenants SET edge_port_pair = coalesce(edge_port_pair, (
        SELECT min(k) FROM generate_series(0, $2::int) AS k
         WHERE NOT EXISTS (SELECT 1 FROM tenants t WHERE t.edge_port_pair = k)))
      WHERE id = $1 RETURNING edge_port_pair`,
    [tenantId, maxPair],
  );
  return rows[0]?.edge_port_pair ?? undefined;
}

/** The tenants holding a pair: what the edge proxy fronts (src/orchestrator/edge-proxy.ts). */
export async function edgeProxyTenants(
  tx: InstallTx,
): Promise<Array<Pick<s.tenants.Selectable, 'slug'> & { edge_port_pair: number }>> {
  const { rows } = await tx.query<Pick<s.tenants.Selectable, 'slug'> & { edge_port_pair: number }>(
    'SELECT slug, edge_port_pair FROM tenants WHERE edge_port_pair IS NOT NULL ORDER BY slug',
  );
  return rows;
}

export async function releaseEdgePortPair(tx: Transaction, tenantId: string): Promise<void> {
  await tx.query('UPDATE tenants SET edge_port_pair = NULL WHERE id = $1', [tenantId]);
}

/** Compare-and-set on the target: only the upgrade still asked for, on a tenant still active. */
export async function completeUpgrade(
  tx: Transaction,
  tenantId: string,
  target: string,
): Promise<void> {
  await tx.query(
    `UPDATE tenants SET chart_version = $2, upgrade_target = NULL, updated_at = now()
      WHERE id = $1 AND state = 'active' AND upgrade_target = $2`,
    [tenantId, target],
  );
}

export async function dropUpgradeTarget(
  tx: Transaction,
  tenantId: string,
  target: string,
): Promise<void> {
  await tx.query(
    `UPDATE tenants SET upgrade_target = NULL, updated_at = now()
      WHERE id = $1 AND upgrade_target = $2`,
    [tenantId, target],
  );
}

/** The stored drift, row-locked until the transaction ends (passes must not interleave). */
export async function lockDrift(tx: Transaction, tenantId: string): Promise<unknown> {
  const { rows } = await tx.query<Pick<s.tenants.Selectable, 'drift'>>(
    'SELECT drift FROM tenants WHERE id = $1 FOR UPDATE',
    [tenantId],
  );
  return rows[0]?.drift ?? null;
}

export async function setDrift(tx: Transaction, tenantId: string, drift: unknown): Promise<void> {
  await tx.query('UPDATE tenants SET drift = $2, updated_at = now() WHERE id = $1', [
    tenantId,
    drift === null ? null : json(drift),
  ]);
}

// --- work selection ----------------------------------------------------------------------

/** Every tenant with orchestrator work due at `now`, oldest state change first. */
export async function dueWork(
  tx: InstallTx,
  input: { now: Date; graceMs: number; retentionMs: number },
): Promise<{ id: string; kind: WorkKind }[]> {
  const { rows } = await tx.query<{ id: string; kind: WorkKind }>(
    `SELECT id, CASE
              WHEN state IN ('pending', 'provisioning') THEN 'provision'
              WHEN state = 'suspended' THEN 'suspend'
              -- A resume finishes before an upgrade starts: helm must see the replicas restored.
              WHEN state = 'active' AND data_plane <> 'running' THEN 'resume'
              WHEN state = 'active' AND upgrade_target IS NOT NULL THEN 'upgrade'
              -- A configuration change waits for a running upgrade (one kind per pass).
              WHEN state = 'active' THEN 'config'
              WHEN state = 'decommissioning' THEN 'decommission'
              ELSE 'purge' END AS kind
       FROM tenants
      WHERE (state = 'pending' AND error_details IS NULL)
         OR state = 'provisioning'
         OR (state = 'suspended' AND data_plane <> 'stopped')
         OR (state = 'active' AND (upgrade_target IS NOT NULL OR config_target IS NOT NULL
               OR data_plane <> 'running'))
         OR (state = 'decommissioning' AND coalesce(decommission_at,
               state_changed_at + make_interval(secs => $2)) <= $1::timestamptz)
         OR (state = 'soft-deleted' AND deleted_at <= $1::timestamptz - make_interval(secs => $3))
      ORDER BY state_changed_at`,
    [input.now, input.graceMs / 1000, input.retentionMs / 1000],
  );
  return rows;
}

/** Tenants the reconciler compares with the cluster: active ones and failed pending ones. */
export async function reconcilableTenantIds(tx: InstallTx): Promise<string[]> {
  const { rows } = await tx.query<Pick<s.tenants.Selectable, 'id'>>(
    `SELECT id FROM tenants WHERE state = 'active' OR (state = 'pending' AND error_details IS NOT NULL)
      ORDER BY id`,
  );
  return rows.map((r) => r.id);
}

/**
 * Tenants whose adapter holds a JWT svc keeps fresh; a suspended one too, so its adapter can
 * sign in again the moment it is resumed.
 */
export async function tokenHoldingTenantIds(tx: InstallTx): Promise<string[]> {
  const { rows } = await tx.query<Pick<s.tenants.Selectable, 'id'>>(
    `SELECT id FROM tenants WHERE state IN ('provisioning', 'active', 'suspended')`,
  );
  return rows.map((r) => r.id);
}

// --- session-level advisory locks (on a dedicated connection, not a transaction) ----------

export interface SessionLock {
  /** SQL of the lock key computed from `$1` (e.g. tenant-lifecycle's TENANT_LOCK_KEY). */
  key: string;
  name: string;
}

export async function trySessionLock(client: pg.ClientBase, lock: SessionLock): Promise<boolean> {
  const { rows } = await client.query<{ ok: boolean }>(
    `SELECT pg_try_advisory_lock(${lock.key}) AS ok`,
    [lock.name],
  );
  return rows[0]?.ok === true;
}

export async function sessionUnlock(client: pg.ClientBase, lock: SessionLock): Promise<void> {
  await client.query(`SELECT pg_advisory_unlock(${lock.key})`, [lock.name]);
}

// --- lifecycle events --------------------------------------------------------------------

export type StepRow = Pick<s.tenant_lifecycle_events.Selectable, 'step' | 'occurred_at'> & {
  step: string;
  details: Record<string, unknown>;
};

/** Every step event of the tenant, oldest first. */
export async function stepHistory(tx: TenantTx, tenantId: string): Promise<StepRow[]> {
  const { rows } = await tx.query<StepRow>(
    `SELECT step, details, occurred_at FROM tenant_lifecycle_events
      WHERE tenant_id = $1 AND kind = 'step' ORDER BY id`,
    [tenantId],
  );
  return rows;
}

/**
 * The details of configuration revision `revision` (stored secret-free), by default the applied
 * one (`tenants.config_revision`): a newer revision still rolling out, or one that failed, is
 * never what the tenant runs with.
 */
export async function configRevisionDetails(
  tx: TenantTx,
  tenantId: string,
  revision?: number,
): Promise<{ config?: unknown } | undefined> {
  const { rows } = await tx.query<{ details: { config?: unknown } }>(
    `SELECT e.details FROM tenant_lifecycle_events e JOIN tenants t ON t.id = e.tenant_id
      WHERE e.tenant_id = $1 AND e.kind = 'config_revision'
        AND e.config_revision = coalesce($2::int, t.config_revision)`,
    [tenantId, revision ?? null],
  );
  return rows[0]?.details;
}

export type NotedHeartbeat = Pick<s.tenant_lifecycle_events.Selectable, 'occurred_at'> & {
  details: { adapter_version?: string };
};

/** The newest heartbeat noted while the tenant was provisioning, since `since`. */
export async function heartbeatBeforeReady(
  tx: TenantTx,
  tenantId: string,
  since: Date,
): Promise<NotedHeartbeat | undefined> {
  const { rows } = await tx.query<NotedHeartbeat>(
    `SELECT details, occurred_at FROM tenant_lifecycle_events
      WHERE tenant_id = $1 AND step = 'heartbeat_before_ready' AND occurred_at >= $2
      ORDER BY id DESC LIMIT 1`,
    [tenantId, since],
  );
  return rows[0];
}

// --- tenant_secrets (references only: namespace, name, version) --------------------------

/** Names of the tenant's Secrets svc's record places in `namespace`. */
export async function secretRefNames(
  tx: TenantTx,
  tenantId: string,
  namespace: string,
): Promise<string[]> {
  const { rows } = await tx.query<Pick<s.tenant_secrets.Selectable, 'name'>>(
    'SELECT name FROM tenant_secrets WHERE tenant_id = $1 AND namespace = $2 ORDER BY name',
    [tenantId, namespace],
  );
  return rows.map((r) => r.name);
}

export type AdapterTokenRef = Pick<s.tenant_secrets.Selectable, 'namespace' | 'version'> & {
  written_at: Date;
};

export async function adapterTokenRef(
  tx: TenantTx,
  tenantId: string,
): Promise<AdapterTokenRef | undefined> {
  const { rows } = await tx.query<AdapterTokenRef>(
    `SELECT coalesce(rotated_at, created_at) AS written_at, namespace, version FROM tenant_secrets
      WHERE tenant_id = $1 AND purpose = 'adapter-token'`,
    [tenantId],
  );
  return rows[0];
}

// --- releases ----------------------------------------------------------------------------

/** Tenant chart versions the compatibility matrix supports with this svc version. */
export async function supportedChartVersions(
  tx: InstallTx,
  systemVersion: string,
): Promise<Set<string>> {
  const { rows } = await tx.query<Pick<s.chart_compatibility.Selectable, 'tenant_chart_version'>>(
    `SELECT tenant_chart_version FROM chart_compatibility
      WHERE system_version = $1 AND status = 'supported'`,
    [systemVersion],
  );
  return new Set(rows.map((r) => r.tenant_chart_version));
}

// --- install record (runs as svc_admin, like migrate) ------------------------------------

export type OrganizationRow = Pick<
  s.organization.Selectable,
  'mssp_id' | 'mssp_name' | 'install_id' | 'install_label'
>;

/** Writes the row on the first start only; returns what is stored. */
export async function ensureOrganization(
  client: pg.ClientBase,
  row: OrganizationRow,
): Promise<OrganizationRow | undefined> {
  await client.query(
    `INSERT INTO organization (mssp_id, mssp_name, install_id, install_label)
     VALUES ($1, $2, $3, $4) ON CONFLICT (singleton) DO NOTHING`,
    [row.mssp_id, row.mssp_name, row.install_id, row.install_label],
  );
  const { rows } = await client.query<OrganizationRow>(
    'SELECT mssp_id, mssp_name, install_id, install_label FROM organization',
  );
  return rows[0];
}

export async function renameOrganization(
  client: pg.ClientBase,
  names: Pick<OrganizationRow, 'mssp_name' | 'install_label'>,
): Promise<void> {
  await client.query(
    'UPDATE organization SET mssp_name = $1, install_label = $2, updated_at = now()',
    [names.mssp_name, names.install_label],
  );
}

// --- purge -------------------------------------------------------------------------------

/**
 * Every table holding a tenant's rows, children before parents. audit_log is not here on
 * purpose: the trail outlives the tenant and ages out by the audit retention (spec §8).
 * test/provisioning/decommission.test.ts fails when a table with tenant rows is missing.
 * The projections' tables come from their registry (a new projection is purged without a line
 * here); pending_reviews refers to investigations, so it goes first.
 */
export const PURGE_ORDER: readonly string[] = [
  'pending_reviews',
  ...PROJECTIONS.map((projection) => projection.table),
  'events',
  'projection_checkpoints',
  'integration_configs',
  'branding_configs',
  'tenant_secrets',
  'tenant_lifecycle_events',
  'ingest_checkpoints',
  'alert_groups',
  'adapter_credentials',
  'adapter_heartbeats',
  'llm_cache',
  'llm_usage',
  'triage_policies',
  'parked_jobs',
  // A tenant's webhooks (docs/notifications.md): the attempt log refers to its webhook.
  'tenant_webhook_attempts',
  'webhook_deliveries',
  'tenant_webhooks',
];

/** The soft-deleted tenant, row-locked for its purge; undefined when it is not (or no more). */
export async function lockSoftDeleted(
  tx: SystemTx,
  tenantId: string,
): Promise<(Pick<s.tenants.Selectable, 'slug'> & { deleted_at: Date }) | undefined> {
  const { rows } = await tx.query<Pick<s.tenants.Selectable, 'slug'> & { deleted_at: Date }>(
    `SELECT slug, deleted_at FROM tenants WHERE id = $1 AND state = 'soft-deleted' FOR UPDATE`,
    [tenantId],
  );
  return rows[0];
}

/** Deletes every row of the tenant across all tables (RLS bypassed); returns counts per table. */
export async function deleteTenantRows(
  tx: SystemTx,
  tenantId: string,
): Promise<Record<string, number>> {
  const removed: Record<string, number> = {};
  for (const table of PURGE_ORDER) {
    const result = await tx.query(`DELETE FROM ${table} WHERE tenant_id = $1`, [tenantId]);
    removed[table] = result.rowCount ?? 0;
  }
  const sessions = await tx.query(
    `DELETE FROM sessions WHERE tenant_context = $1
        OR user_id IN (SELECT id FROM users WHERE tenant_id = $1)`,
    [tenantId],
  );
  removed.sessions = sessions.rowCount ?? 0;
  const credentials = await tx.query(
    'DELETE FROM password_credentials WHERE user_id IN (SELECT id FROM users WHERE tenant_id = $1)',
    [tenantId],
  );
  removed.password_credentials = credentials.rowCount ?? 0;
  const users = await tx.query('DELETE FROM users WHERE tenant_id = $1', [tenantId]);
  removed.users = users.rowCount ?? 0;
  await tx.query('DELETE FROM tenants WHERE id = $1', [tenantId]);
  return removed;
}
