import type { Static } from 'typebox';
import type * as s from 'zapatos/schema';
import type { BrandingUpdate } from '../../../contracts/mssp.ts';
import type { PublicBranding } from '../../../contracts/public.ts';
import type { Branding } from '../../../contracts/tenant.ts';

export type BrandingBody = Static<typeof Branding>;

export type PublicBrandingBody = Static<typeof PublicBranding>;

/** What an MSSP admin sends to replace a tenant's branding. */
export type BrandingChange = Static<typeof BrandingUpdate>;

export type BrandingRow = Pick<
  s.branding_configs.Selectable,
  'app_name' | 'logo_url' | 'primary_color' | 'secondary_color' | 'favicon' | 'updated_at'
>;

/** Who changes a tenant's branding: the audit row's actor and, under impersonation, acting_as. */
export interface BrandingActor {
  userId: string;
  actingAs: string | null;
}

/** One refused part of a change: a JSON pointer into the body and why. */
export interface BrandingProblem {
  path: string;
  message: string;
}

/** A change the schema accepts but the rules refuse (branding-images.ts); nothing is written. */
export class InvalidBrandingError extends Error {
  override name = 'InvalidBrandingError';
  constructor(readonly problems: BrandingProblem[]) {
    super('The branding cannot be used');
  }
}

/**
 * The tenant a branding call names does not exist. Its own class rather than the tenants
 * domain's: that domain depends on this one (creation writes branding and checks its logo).
 */
export class UnknownTenantError extends Error {
  override name = 'UnknownTenantError';
  constructor(readonly tenantId: string) {
    super('No such tenant');
  }
}
