import type { AppDefinition, PageRoute } from '../shared/routing.ts';
import { CUSTOMER_ROLES } from '../shared/routing.ts';
import { OverviewPage } from './OverviewPage.tsx';

/**
 * Every page of the customer portal, in navigation order (docs/web.md "Adding a page").
 * Pages other than the landing one should be lazy to keep the initial script small.
 */
export const portalRoutes: readonly PageRoute[] = [
  { path: '/', title: 'Overview', element: <OverviewPage />, roles: CUSTOMER_ROLES, nav: true },
];

export const portalApp: AppDefinition = {
  kind: 'portal',
  userType: 'tenant',
  landing: '/',
  routes: portalRoutes,
};
