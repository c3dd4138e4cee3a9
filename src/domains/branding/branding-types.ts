import type { Static, StaticDecode } from 'typebox';
import type * as s from 'zapatos/schema';
import type { BrandingUpdate } from '../../../contracts/mssp.ts';
import type { PublicBranding } from '../../../contracts/public.ts';
import type { Branding } from '../../../contracts/tenant.ts';
import { DomainError } from '../domain-error.ts';

/** Decoded: `updated_at` is a Date, written as the contract's text by the HTTP layer. */
export type BrandingBody = StaticDecode<typeof Branding>;

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
export class InvalidBrandingError extends DomainError {
  override name = 'InvalidBrandingError';
  readonly code = 'invalid_branding';
  constructor(readonly problems: BrandingProblem[]) {
    super('The branding cannot be used');
  }
}

/**
 * The tenant a branding call names does not exist. Its own class rather than the tenants
 * domain's: that domain depends on this one (creation writes branding and checks its logo).
 */
export class UnknownTenantError extends DomainError {
  override name = 'UnknownTenantError';
  readonly code = 'tenant_not_found';
  constructor(readonly tenantId: string) {
    super('No such tenant');
  }
}
