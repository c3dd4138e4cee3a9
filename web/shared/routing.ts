import type { ComponentType, ReactNode } from 'react';
import { CUSTOMER_ROLES as CUSTOMER_FAMILY, type Role } from '../../contracts/index.ts';

export type { Role };

/**
 * One page of an app. Each app keeps one list of these (mssp/routes.tsx, portal/routes.tsx);
 * the router, the header navigation and the role check are all derived from it.
 */
export interface PageRoute {
  /** A react-router path: `/tenants`, `/tenants/:tenantId`. */
  path: string;
  /** The page's heading and document title (`<title> · <app name>`), and its nav label. */
  title: string;
  element: ReactNode;
  /**
   * Who may open it: the declared roles of the API route the page reads (`msspContract.x.roles`),
   * so a page is offered exactly to those the API answers. The navigation offers it to no one
   * else, and others get NOT_ALLOWED.
   */
  roles: readonly Role[];
  /** Listed in the header navigation (detail pages are reached from their lists). */
  nav?: boolean;
}

export interface AppDefinition {
  /** Which of the two apps: the MSSP console or the customer portal. */
  kind: 'mssp' | 'portal';
  /** The identity kind (`user_type`) this app serves; the other kind is sent to its own app. */
  userType: 'mssp' | 'tenant';
  /** Where sign-in lands when there is no `next` (spec §5.9 item 7). */
  landing: string;
  routes: readonly PageRoute[];
  /** Shown under the header on every signed-in page (the console's impersonation banner). */
  banner?: ComponentType;
}

/** The portal's pages: every tenant route declares these roles (contracts/tenant.ts). */
export const CUSTOMER_ROLES: readonly Role[] = CUSTOMER_FAMILY;

/**
 * `next` after sign-in is followed only when it is a path of this origin (spec §5.9 item 7):
 * `//evil.example`, `https://evil.example` and `/\\evil.example` all resolve elsewhere.
 */
export function sameOriginPath(next: string | null): string | undefined {
  if (!next?.startsWith('/')) return undefined;
  let url: URL;
  try {
    url = new URL(next, window.location.origin);
  } catch {
    return undefined;
  }
  if (url.origin !== window.location.origin || url.pathname === '/login') return undefined;
  return `${url.pathname}${url.search}${url.hash}`;
}
