import Type from 'typebox';
import { MSSP_OPERATORS, MSSP_ROLES } from '../roles.ts';
import { Problem } from '../route.ts';
import { Branding } from '../tenant-config.ts';
import { Timestamp } from '../timestamp.ts';
import { msspRoute, TenantParams } from './route.ts';

/**
 * A branding edit (spec §2.3 BrandingConfig): the creation schema's fields, with the logo and
 * favicon bounded by the service's rules instead of the pattern's length, so a logo over the
 * 200 KiB limit is answered by its decoded size (422 `invalid_branding`), not by a regex.
 */
const ImageDataUrl = Type.String({
  pattern: '^data:image/(png|svg\\+xml|jpeg);base64,[A-Za-z0-9+/]+={0,2}$',
  maxLength: 1_048_576,
});
const ImageHttpsUrl = Type.String({ pattern: '^https://[^\\s]{1,2040}$' });
export const BrandingUpdate = Type.Object(
  {
    app_name: Branding.properties.app_name,
    primary_color: Branding.properties.primary_color,
    secondary_color: Branding.properties.secondary_color,
    logo_url: Type.Optional(Type.Union([ImageHttpsUrl, ImageDataUrl])),
    /** Empty or absent for none; otherwise what the logo may be. */
    favicon: Type.Optional(Type.Union([Type.Literal(''), ImageHttpsUrl, ImageDataUrl])),
  },
  { additionalProperties: false },
);

/** A tenant's branding as stored, or the install defaults while it has none (`is_default`). */
export const BrandingView = Type.Object(
  {
    app_name: Type.String(),
    logo_url: Type.Union([Type.String(), Type.Null()]),
    primary_color: Type.String(),
    secondary_color: Type.String(),
    favicon: Type.String(),
    is_default: Type.Boolean(),
    updated_at: Type.Union([Timestamp, Type.Null()]),
  },
  { additionalProperties: false },
);

export const msspBrandingContract = {
  getBranding: msspRoute('own_tenant', {
    method: 'GET',
    path: '/api/mssp/tenants/{tenant_id}/branding',
    summary: "A tenant's branding (app name, logo, colours, favicon), or the install defaults",
    roles: MSSP_ROLES,
    params: TenantParams,
    responses: { 200: BrandingView, 404: Problem },
  }),
  putBranding: msspRoute('own_tenant', {
    method: 'PUT',
    path: '/api/mssp/tenants/{tenant_id}/branding',
    summary:
      "Replace a tenant's branding; the portal shows it on its next load (audited as settings.update)",
    roles: MSSP_OPERATORS,
    params: TenantParams,
    body: BrandingUpdate,
    responses: { 200: BrandingView, 403: Problem, 404: Problem, 422: Problem },
  }),
} as const;
