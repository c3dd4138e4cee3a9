import type { Static } from 'typebox';
import type { Branding } from '../../../contracts/tenant.ts';
import type { Transaction } from '../../db/tenant-context.ts';

type BrandingBody = Static<typeof Branding>;

/** What a tenant without a branding row sees: the product name and neutral greys. */
export const DEFAULT_BRANDING: BrandingBody = {
  app_name: 'svc',
  logo_url: null,
  primary_color: '#374151',
  secondary_color: '#9ca3af',
  favicon: '',
  is_default: true,
  updated_at: null,
};

interface BrandingRow {
  app_name: string;
  logo_url: string | null;
  primary_color: string;
  secondary_color: string;
  favicon: string;
  updated_at: Date;
}

/** The transaction's tenant's branding (one row per tenant at most), or the defaults. */
export async function readBranding(tx: Transaction): Promise<BrandingBody> {
  const { rows } = await tx.query<BrandingRow>(
    `SELECT app_name, logo_url, primary_color, secondary_color, favicon, updated_at
       FROM branding_configs`,
  );
  const row = rows[0];
  if (!row) return DEFAULT_BRANDING;
  return { ...row, is_default: false, updated_at: row.updated_at.toISOString() };
}
