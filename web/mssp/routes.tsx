import type { AppDefinition, PageRoute } from '../shared/routing.ts';
import { MSSP_ROLES } from '../shared/routing.ts';
import { FleetPage } from './FleetPage.tsx';

/**
 * Every page of the MSSP console, in navigation order. Add a page here: its path, title,
 * element and the roles that may open it (docs/web.md "Adding a page"). Pages other than the
 * landing one should be lazy (`const X = lazy(() => import('./X.tsx'))`) to keep the initial
 * script within its budget.
 */
export const msspRoutes: readonly PageRoute[] = [
  { path: '/', title: 'Fleet', element: <FleetPage />, roles: MSSP_ROLES, nav: true },
];

export const msspApp: AppDefinition = {
  kind: 'mssp',
  userType: 'mssp',
  landing: '/',
  routes: msspRoutes,
};
