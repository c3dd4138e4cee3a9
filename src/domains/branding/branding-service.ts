// A tenant's branding (spec §4.3): its own row in branding_configs, or the install defaults
// when it has none.
import type { AppDatabase } from '../../db/pools.ts';
import { findBrandedTenant, readBranding } from './branding-repository.ts';
import type { BrandingBody, PublicBrandingBody } from './branding-types.ts';

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

/** The install's look: the MSSP console, and every host that names no live tenant. */
export const INSTALL_BRANDING: PublicBrandingBody = publicPart(DEFAULT_BRANDING);

function publicPart(b: BrandingBody): PublicBrandingBody {
  return {
    app_name: b.app_name,
    logo_url: b.logo_url,
    primary_color: b.primary_color,
    secondary_color: b.secondary_color,
    favicon: b.favicon,
  };
}

export function createBrandingService(deps: { db: AppDatabase }) {
  const read = async (tenantId: string): Promise<BrandingBody> => {
    const row = await deps.db.withTenant(tenantId, readBranding);
    if (!row) return DEFAULT_BRANDING;
    return { ...row, is_default: false, updated_at: row.updated_at.toISOString() };
  };
  return {
    read,
    /**
     * The sign-in page's branding for a customer host's slug (undefined: not a customer
     * host). An unknown or soft-deleted slug gets the install branding, exactly as a tenant
     * without branding does, so the answer tells an outsider nothing about which slugs exist.
     */
    async readPublic(slug: string | undefined): Promise<PublicBrandingBody> {
      if (slug === undefined) return INSTALL_BRANDING;
      const tenantId = await deps.db.withoutTenant((tx) => findBrandedTenant(tx, slug));
      return tenantId === undefined ? INSTALL_BRANDING : publicPart(await read(tenantId));
    },
  };
}

export type BrandingService = ReturnType<typeof createBrandingService>;
