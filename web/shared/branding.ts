import { useQuery } from '@tanstack/react-query';
import { createContext, useContext, useEffect } from 'react';
import type { Static } from 'typebox';
import type { PublicBranding } from '../../contracts/index.ts';
import { ok, type SignedInIdentity, svc } from './api.ts';
import type { AppDefinition } from './routing.ts';

export type Look = Static<typeof PublicBranding>;

/** Until the host's branding answers (and if it cannot): the install look of the server. */
export const INSTALL_LOOK: Look = {
  app_name: 'svc',
  logo_url: null,
  primary_color: '#374151',
  secondary_color: '#9ca3af',
  favicon: '',
};

export const BrandingContext = createContext<Look>(INSTALL_LOOK);

export function useLook(): Look {
  return useContext(BrandingContext);
}

/**
 * The look of the app (spec §5.9 item 1, docs/web.md "Branding"). Before sign-in: the host's
 * (GET /api/public/branding: a customer host's tenant, otherwise the install's). In the portal
 * after sign-in: the signed-in customer's own tenant, whose data the pages show.
 */
export function useBrandingLook(
  kind: AppDefinition['kind'],
  identity: SignedInIdentity | null,
): { look: Look; settled: boolean } {
  const host = useQuery({
    queryKey: ['branding', 'public'],
    queryFn: () => ok(svc.public.branding()),
    staleTime: Number.POSITIVE_INFINITY,
    retry: false,
  });
  const ownTenant = kind === 'portal' && identity?.user_type === 'tenant' && !identity.must_change;
  const tenant = useQuery({
    queryKey: ['branding', 'tenant', identity?.tenant_id],
    queryFn: () => ok(svc.tenant.branding()),
    enabled: ownTenant,
    retry: false,
  });
  // A signed-in customer sees their own tenant's look, never the host's: on another tenant's
  // host the host's branding would dress their data in someone else's name. Until it loads,
  // nothing is drawn (settled false); if it cannot load, the install's neutral look.
  const look = ownTenant ? (tenant.data ?? INSTALL_LOOK) : (host.data ?? INSTALL_LOOK);
  useEffect(() => applyBranding(look), [look]);
  return { look, settled: ownTenant ? !tenant.isPending : !host.isPending };
}

/** Colours as CSS variables (styles.css reads them), the favicon, and a readable text colour. */
export function applyBranding(look: Look): void {
  const root = document.documentElement.style;
  root.setProperty('--brand-primary', look.primary_color);
  root.setProperty('--brand-secondary', look.secondary_color);
  root.setProperty('--brand-on-primary', readableOn(look.primary_color));
  let icon = document.querySelector<HTMLLinkElement>('link[rel="icon"]');
  if (!icon) {
    icon = document.createElement('link');
    icon.rel = 'icon';
    document.head.append(icon);
  }
  icon.href = look.favicon || 'data:,';
}

/** Black or white, whichever contrasts more with the colour (WCAG relative luminance). */
export function readableOn(hex: string): string {
  const digits = hex.length === 4 ? [...hex.slice(1)].map((d) => d + d).join('') : hex.slice(1);
  const channel = (i: number) => {
    const c = Number.parseInt(digits.slice(i, i + 2), 16) / 255;
    return c <= 0.03928 ? c / 12.92 : ((c + 0.055) / 1.055) ** 2.4;
  };
  const luminance = 0.2126 * channel(0) + 0.7152 * channel(2) + 0.0722 * channel(4);
  return (luminance + 0.05) / 0.05 > 1.05 / (luminance + 0.05) ? '#111111' : '#ffffff';
}

/** `<page> · <app name>` as the document title. */
export function useDocumentTitle(page: string): void {
  const { app_name } = useLook();
  useEffect(() => {
    document.title = page ? `${page} · ${app_name}` : app_name;
  }, [page, app_name]);
}
