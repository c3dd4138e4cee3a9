import type * as s from 'zapatos/schema';
import type { Narrowed } from '../../db/rows.ts';
import type { TenantTx } from '../../db/tenant-context.ts';

/**
 * SQL on the rows a tenant's configuration becomes: `tenant_secrets` (references to Secrets:
 * namespace, name, version, never values), `branding_configs` and `integration_configs`.
 */

/**
 * The Secret reference for `purpose`, created or moved to `name` (a new version, as a re-issued
 * Secret is). Returns the reference's id.
 */
export async function upsertSecretRef(
  tx: TenantTx,
  ref: Pick<s.tenant_secrets.Insertable, 'tenant_id' | 'purpose' | 'namespace' | 'name'>,
): Promise<string> {
  const { rows } = await tx.query<Pick<s.tenant_secrets.Selectable, 'id'>>(
    `INSERT INTO tenant_secrets (tenant_id, purpose, namespace, name) VALUES ($1, $2, $3, $4)
     ON CONFLICT (tenant_id, purpose) DO UPDATE
       SET namespace = excluded.namespace, name = excluded.name,
           version = tenant_secrets.version + 1, rotated_at = now()
     RETURNING id`,
    [ref.tenant_id, ref.purpose, ref.namespace, ref.name],
  );
  return rows[0]?.id ?? '';
}

export type BrandingInsert = Pick<
  s.branding_configs.Insertable,
  'tenant_id' | 'app_name' | 'logo_url' | 'primary_color' | 'secondary_color' | 'favicon'
>;

export async function insertBranding(tx: TenantTx, b: BrandingInsert): Promise<void> {
  await tx.query(
    `INSERT INTO branding_configs (tenant_id, app_name, logo_url, primary_color, secondary_color, favicon)
     VALUES ($1, $2, $3, $4, $5, $6)`,
    [b.tenant_id, b.app_name, b.logo_url, b.primary_color, b.secondary_color, b.favicon],
  );
}

export type IntegrationInsert = Narrowed<
  Pick<
    s.integration_configs.Insertable,
    'tenant_id' | 'kind' | 'name' | 'endpoint_url' | 'secret_id' | 'settings' | 'thresholds'
  >,
  { settings: Record<string, unknown>; thresholds: Record<string, unknown> }
>;

export async function insertIntegration(tx: TenantTx, i: IntegrationInsert): Promise<void> {
  await tx.query(
    `INSERT INTO integration_configs (tenant_id, kind, name, endpoint_url, settings, thresholds, secret_id)
     VALUES ($1, $2, $3, $4, $5, $6, $7)`,
    [
      i.tenant_id,
      i.kind,
      i.name,
      i.endpoint_url,
      JSON.stringify(i.settings),
      JSON.stringify(i.thresholds),
      i.secret_id,
    ],
  );
}
