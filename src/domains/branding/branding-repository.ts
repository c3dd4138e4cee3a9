import type * as s from 'zapatos/schema';
import type { InstallTx, TenantTx } from '../../db/tenant-context.ts';
import type { BrandingRow } from './branding-types.ts';

/** The transaction's tenant's branding row (one per tenant at most). */
export async function readBranding(tx: TenantTx): Promise<BrandingRow | undefined> {
  const { rows } = await tx.query<BrandingRow>(
    `SELECT app_name, logo_url, primary_color, secondary_color, favicon, updated_at
       FROM branding_configs`,
  );
  return rows[0];
}

/** The branding row held until the transaction ends: a concurrent edit waits, so `before` is true. */
export async function lockBranding(tx: TenantTx): Promise<BrandingRow | undefined> {
  const { rows } = await tx.query<BrandingRow>(
    `SELECT app_name, logo_url, primary_color, secondary_color, favicon, updated_at
       FROM branding_configs FOR UPDATE`,
  );
  return rows[0];
}

/** Whether the tenant exists, in any state (`tenants` is an install table). */
export async function tenantExists(tx: TenantTx, tenantId: string): Promise<boolean> {
  const { rows } = await tx.query('SELECT 1 FROM tenants WHERE id = $1', [tenantId]);
  return rows.length > 0;
}

/**
 * The tenant a customer host names, while it is not soft-deleted: a deleted tenant's portal
 * shows nothing of it. `tenants` is an install table, read without tenant context.
 */
export async function findBrandedTenant(tx: InstallTx, slug: string): Promise<string | undefined> {
  const { rows } = await tx.query<Pick<s.tenants.Selectable, 'id'>>(
    `SELECT id FROM tenants WHERE slug = $1 AND state <> 'soft-deleted'`,
    [slug],
  );
  return rows[0]?.id;
}

export type BrandingWrite = Pick<
  s.branding_configs.Insertable,
  'tenant_id' | 'app_name' | 'logo_url' | 'primary_color' | 'secondary_color' | 'favicon'
>;

/** The tenant's branding replaced whole (created when it had none); returns the stored row. */
export async function upsertBranding(tx: TenantTx, b: BrandingWrite): Promise<BrandingRow> {
  const { rows } = await tx.query<BrandingRow>(
    `INSERT INTO branding_configs (tenant_id, app_name, logo_url, primary_color, secondary_color, favicon)
     VALUES ($1, $2, $3, $4, $5, $6)
     ON CONFLICT (tenant_id) DO UPDATE
       SET app_name = excluded.app_name, logo_url = excluded.logo_url,
           primary_color = excluded.primary_color, secondary_color = excluded.secondary_color,
           favicon = excluded.favicon, updated_at = now()
     RETURNING app_name, logo_url, primary_color, secondary_color, favicon, updated_at`,
    [b.tenant_id, b.app_name, b.logo_url, b.primary_color, b.secondary_color, b.favicon],
  );
  const row = rows[0];
  if (!row) throw new Error('upsert returned no row');
  return row;
}
