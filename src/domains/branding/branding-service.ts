// A tenant's branding (spec §4.3): its own row in branding_configs, or the install defaults
// when it has none.
import type { AppDatabase } from '../../db/pools.ts';
import { readBranding } from './branding-repository.ts';
import type { BrandingBody } from './branding-types.ts';

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

export function createBrandingService(deps: { db: AppDatabase }) {
  return {
    async read(tenantId: string): Promise<BrandingBody> {
      const row = await deps.db.withTenant(tenantId, readBranding);
      if (!row) return DEFAULT_BRANDING;
      return { ...row, is_default: false, updated_at: row.updated_at.toISOString() };
    },
  };
}

export type BrandingService = ReturnType<typeof createBrandingService>;
