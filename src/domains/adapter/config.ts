import type { Static } from 'typebox';
import type { AdapterConfig, AdapterIntegration } from '../../../contracts/internal.ts';
import type { Transaction } from '../../db/tenant-context.ts';

export type AdapterConfigView = Static<typeof AdapterConfig>;
type Integration = Static<typeof AdapterIntegration>;

interface IntegrationRow extends Omit<Integration, 'secret'> {
  secret_namespace: string | null;
  secret_name: string | null;
  secret_version: number | null;
}

/**
 * What the adapter needs to run its tenant's integrations. Secrets appear only as references
 * (namespace, name, version of the cluster Secret the adapter mounts); the database never holds
 * their values, so none can leak from here. Returns undefined for a tenant that is gone or
 * soft-deleted: its adapter should no longer exist, and a leftover token gets nothing.
 * `tx` must carry the tenant's context.
 */
export async function readAdapterConfig(
  tx: Transaction,
  tenantId: string,
): Promise<AdapterConfigView | undefined> {
  const { rows } = await tx.query<{ config_revision: number }>(
    'SELECT config_revision FROM tenants WHERE id = $1 AND deleted_at IS NULL',
    [tenantId],
  );
  const tenant = rows[0];
  if (!tenant) return undefined;
  return {
    tenant_id: tenantId,
    config_revision: tenant.config_revision,
    app_name: await appName(tx, tenantId),
    integrations: await integrations(tx, tenantId),
  };
}

async function appName(tx: Transaction, tenantId: string): Promise<string | null> {
  const { rows } = await tx.query<{ app_name: string }>(
    'SELECT app_name FROM branding_configs WHERE tenant_id = $1',
    [tenantId],
  );
  return rows[0]?.app_name ?? null;
}

async function integrations(tx: Transaction, tenantId: string): Promise<Integration[]> {
  const { rows } = await tx.query<IntegrationRow>(
    `SELECT i.id, i.kind, i.name, i.endpoint_url, i.settings, i.thresholds, i.enabled,
            s.namespace AS secret_namespace, s.name AS secret_name, s.version AS secret_version
       FROM integration_configs i
       LEFT JOIN tenant_secrets s ON s.tenant_id = i.tenant_id AND s.id = i.secret_id
      WHERE i.tenant_id = $1
      ORDER BY i.kind, i.name`,
    [tenantId],
  );
  return rows.map(({ secret_namespace, secret_name, secret_version, ...integration }) => ({
    ...integration,
    secret:
      secret_namespace !== null && secret_name !== null && secret_version !== null
        ? { namespace: secret_namespace, name: secret_name, version: secret_version }
        : null,
  }));
}
