import Type from 'typebox';
import { route } from './route.ts';

/**
 * What a sign-in page may show before anyone signs in (spec §5.9 item 1): the look of the
 * portal the request's host names, and nothing else. No id, state or default flag, so an
 * unknown slug and a tenant without branding read the same (the install branding).
 */
export const PublicBranding = Type.Object(
  {
    app_name: Type.String(),
    logo_url: Type.Union([Type.String(), Type.Null()]),
    primary_color: Type.String(),
    secondary_color: Type.String(),
    favicon: Type.String(),
  },
  { additionalProperties: false },
);

export const publicContract = {
  branding: route({
    method: 'GET',
    path: '/api/public/branding',
    summary:
      "The branding of the portal this host serves (a customer host: that tenant's; any other host: the install's)",
    access: 'anonymous; keyed by the Host header',
    anonymous: true,
    responses: { 200: PublicBranding },
  }),
} as const;
