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

/**
 * The tenant a customer host names, while it is not soft-deleted: a deleted tenant's portal
 * shows nothing of it. `tenants` is an install table, read without tenant context.
 */
export async function findBrandedTenant(tx: InstallTx, slug: string): Promise<string | undefined> {
  const { rows } = await tx.query<{ id: string }>(
    `SELECT id FROM tenants WHERE slug = $1 AND state <> 'soft-deleted'`,
    [slug],
  );
  return rows[0]?.id;
}
