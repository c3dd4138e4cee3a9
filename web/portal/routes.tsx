import { lazy } from 'react';
import type { AppDefinition, PageRoute } from '../shared/routing.ts';
import { CUSTOMER_ROLES } from '../shared/routing.ts';
import './portal.css';
import { OverviewPage } from './OverviewPage.tsx';

// The landing page is in the initial script; every other page arrives when first opened.
const IncidentsPage = lazy(() =>
  import('./IncidentsPage.tsx').then((m) => ({ default: m.IncidentsPage })),
);
const IncidentPage = lazy(() =>
  import('./IncidentPage.tsx').then((m) => ({ default: m.IncidentPage })),
);
const ReportsPage = lazy(() =>
  import('./ReportsPage.tsx').then((m) => ({ default: m.ReportsPage })),
);
const AuditPage = lazy(() => import('./AuditPage.tsx').then((m) => ({ default: m.AuditPage })));

/**
 * Every page of the customer portal, in navigation order (docs/web.md "Adding a page" and
 * "Portal pages"). The account pages (`/account/password`) are the shared ones, reached from
 * the account menu.
 */
export const portalRoutes: readonly PageRoute[] = [
  { path: '/', title: 'Overview', element: <OverviewPage />, roles: CUSTOMER_ROLES, nav: true },
  {
    path: '/incidents',
    title: 'Incidents',
    element: <IncidentsPage />,
    roles: CUSTOMER_ROLES,
    nav: true,
  },
  {
    path: '/incidents/:incidentId',
    title: 'Incident',
    element: <IncidentPage />,
    roles: CUSTOMER_ROLES,
  },
  {
    path: '/reports',
    title: 'Reports',
    element: <ReportsPage />,
    roles: CUSTOMER_ROLES,
    nav: true,
  },
  {
    path: '/audit',
    title: 'Audit trail',
    element: <AuditPage />,
    roles: CUSTOMER_ROLES,
    nav: true,
  },
];

export const portalApp: AppDefinition = {
  kind: 'portal',
  userType: 'tenant',
  landing: '/',
  routes: portalRoutes,
};
