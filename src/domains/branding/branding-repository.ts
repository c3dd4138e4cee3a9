import type { TenantTx } from '../../db/tenant-context.ts';
import type { BrandingRow } from './branding-types.ts';

/** The transaction's tenant's branding row (one per tenant at most). */
export async function readBranding(tx: TenantTx): Promise<BrandingRow | undefined> {
  const { rows } = await tx.query<BrandingRow>(
    `SELECT app_name, logo_url, primary_color, secondary_color, favicon, updated_at
       FROM branding_configs`,
  );
  return rows[0];
}
