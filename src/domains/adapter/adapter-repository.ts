import type * as s from 'zapatos/schema';
import type { Narrowed } from '../../db/rows.ts';
import type { TenantTx } from '../../db/tenant-context.ts';

/** Creates or replaces the tenant's credential hash; a replacement is a rotation. */
export async function saveBootstrapCredential(
  tx: TenantTx,
  tenantId: string,
  credentialHash: string,
): Promise<void> {
  await tx.query(
    `INSERT INTO adapter_credentials (tenant_id, credential_hash) VALUES ($1, $2)
     ON CONFLICT (tenant_id) DO UPDATE
       SET credential_hash = excluded.credential_hash, rotated_at = now(), last_used_at = NULL`,
    [tenantId, credentialHash],
  );
}

/** The stored hash, or undefined when the tenant has none or is deleted. */
export async function findBootstrapCredentialHash(
  tx: TenantTx,
  tenantId: string,
): Promise<string | undefined> {
  const { rows } = await tx.query<Pick<s.adapter_credentials.Selectable, 'credential_hash'>>(
    `SELECT c.credential_hash FROM adapter_credentials c JOIN tenants t ON t.id = c.tenant_id
      WHERE c.tenant_id = $1 AND t.deleted_at IS NULL`,
    [tenantId],
  );
  return rows[0]?.credential_hash;
}

export async function markBootstrapUsed(tx: TenantTx, tenantId: string): Promise<void> {
  await tx.query('UPDATE adapter_credentials SET last_used_at = now() WHERE tenant_id = $1', [
    tenantId,
  ]);
}

export async function findAppName(tx: TenantTx, tenantId: string): Promise<string | undefined> {
  const { rows } = await tx.query<Pick<s.branding_configs.Selectable, 'app_name'>>(
    'SELECT app_name FROM branding_configs WHERE tenant_id = $1',
    [tenantId],
  );
  return rows[0]?.app_name;
}

/**
 * An integration with the reference of its Secret (all null when it has none). Tenant
 * configuration writes `settings` and `thresholds` only as JSON objects.
 */
export type IntegrationRow = Narrowed<
  Pick<
    s.integration_configs.Selectable,
    'id' | 'kind' | 'name' | 'endpoint_url' | 'enabled' | 'settings' | 'thresholds'
  >,
  { settings: Record<string, unknown>; thresholds: Record<string, unknown> }
> &
  SecretReference;

/** A `tenant_secrets` reference as its joined columns, each null for no Secret (LEFT JOIN). */
type SecretReference = {
  [K in 'namespace' | 'name' | 'version' as `secret_${K}`]: s.tenant_secrets.Selectable[K] | null;
};

export async function listIntegrations(tx: TenantTx, tenantId: string): Promise<IntegrationRow[]> {
  const { rows } = await tx.query<IntegrationRow>(
    `SELECT i.id, i.kind, i.name, i.endpoint_url, i.settings, i.thresholds, i.enabled,
            s.namespace AS secret_namespace, s.name AS secret_name, s.version AS secret_version
       FROM integration_configs i
       LEFT JOIN tenant_secrets s ON s.tenant_id = i.tenant_id AND s.id = i.secret_id
      WHERE i.tenant_id = $1
      ORDER BY i.kind, i.name`,
    [tenantId],
  );
  return rows;
}

/** Whether this provisioning attempt has recorded `package_ready` (the tenant still provisioning). */
export async function isPackageReady(tx: TenantTx, tenantId: string): Promise<boolean> {
  const { rows } = await tx.query<{ ready: boolean }>(
    `SELECT EXISTS (
       SELECT 1 FROM tenant_lifecycle_events e JOIN tenants t ON t.id = e.tenant_id
        WHERE e.tenant_id = $1 AND e.kind = 'step' AND e.step = 'package_ready'
          AND t.state = 'provisioning' AND e.occurred_at >= t.state_changed_at) AS ready`,
    [tenantId],
  );
  return rows[0]?.ready === true;
}

/**
 * The `heartbeat_before_ready` step, once per provisioning attempt, in the database's clock
 * like the state change it is compared with.
 */
export async function noteHeartbeatBeforeReady(
  tx: TenantTx,
  tenantId: string,
  adapterVersion: string,
): Promise<void> {
  await tx.query(
    // The state is checked again in this statement: an activation committed since the caller
    // read `provisioning` must not be followed by a note that belongs before it.
    `INSERT INTO tenant_lifecycle_events (tenant_id, kind, step, details, actor)
     SELECT t.id, 'step', 'heartbeat_before_ready', $2, 'adapter'
       FROM tenants t
      WHERE t.id = $1 AND t.state = 'provisioning'
        AND NOT EXISTS (
          SELECT 1 FROM tenant_lifecycle_events e
           WHERE e.tenant_id = $1 AND e.step = 'heartbeat_before_ready'
             AND e.occurred_at >= t.state_changed_at)`,
    [tenantId, JSON.stringify({ adapter_version: adapterVersion })],
  );
}

export async function upsertHeartbeat(
  tx: TenantTx,
  row: Narrowed<
    Pick<s.adapter_heartbeats.Insertable, 'tenant_id' | 'adapter_version' | 'status'>,
    { status: Record<string, unknown> }
  > & { seen_at: Date },
): Promise<void> {
  // GREATEST: a delayed request never moves last_seen_at backwards.
  await tx.query(
    `INSERT INTO adapter_heartbeats (tenant_id, first_seen_at, last_seen_at, adapter_version, status)
     VALUES ($1, $2, $2, $3, $4)
     ON CONFLICT (tenant_id) DO UPDATE
       SET last_seen_at = GREATEST(adapter_heartbeats.last_seen_at, excluded.last_seen_at),
           adapter_version = excluded.adapter_version,
           status = excluded.status`,
    [row.tenant_id, row.seen_at, row.adapter_version, JSON.stringify(row.status)],
  );
}

/** A heartbeat row; `status` is the flat map contracts/adapter-status.ts accepts. */
export type StoredHeartbeat = Narrowed<
  Pick<
    s.adapter_heartbeats.Selectable,
    'adapter_version' | 'first_seen_at' | 'last_seen_at' | 'status'
  >,
  { status: Record<string, string | number | boolean | null> }
>;

/** The transaction's tenant's last heartbeat; undefined before its adapter was first heard. */
export async function findHeartbeat(tx: TenantTx): Promise<StoredHeartbeat | undefined> {
  const { rows } = await tx.query<StoredHeartbeat>(
    'SELECT adapter_version, first_seen_at, last_seen_at, status FROM adapter_heartbeats',
  );
  return rows[0];
}
