import type { Static } from 'typebox';
import type * as s from 'zapatos/schema';
import type { PublicBranding } from '../../../contracts/public.ts';
import type { Branding } from '../../../contracts/tenant.ts';

export type BrandingBody = Static<typeof Branding>;

export type PublicBrandingBody = Static<typeof PublicBranding>;

export type BrandingRow = Pick<
  s.branding_configs.Selectable,
  'app_name' | 'logo_url' | 'primary_color' | 'secondary_color' | 'favicon' | 'updated_at'
>;
