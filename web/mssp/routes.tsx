import { lazy } from 'react';
import { msspContract as M } from '../../contracts/index.ts';
import type { AppDefinition, PageRoute } from '../shared/routing.ts';
import { FleetPage } from './FleetPage.tsx';
import { ImpersonationBanner } from './impersonation.tsx';
import './console.css';

// Every page but the landing one is its own chunk: the initial script stays within budget.
const TenantsPage = lazy(() =>
  import('./TenantsPage.tsx').then((m) => ({ default: m.TenantsPage })),
);
const TenantCreatePage = lazy(() =>
  import('./TenantCreatePage.tsx').then((m) => ({ default: m.TenantCreatePage })),
);
const TenantPage = lazy(() => import('./TenantPage.tsx').then((m) => ({ default: m.TenantPage })));
const PolicyPage = lazy(() => import('./PolicyPage.tsx').then((m) => ({ default: m.PolicyPage })));
const IncidentsPage = lazy(() =>
  import('./IncidentsPage.tsx').then((m) => ({ default: m.IncidentsPage })),
);
const IncidentPage = lazy(() =>
  import('./IncidentPage.tsx').then((m) => ({ default: m.IncidentPage })),
);
const ReviewsPage = lazy(() =>
  import('./ReviewsPage.tsx').then((m) => ({ default: m.ReviewsPage })),
);
const ReportsPage = lazy(() =>
  import('./ReportsPage.tsx').then((m) => ({ default: m.ReportsPage })),
);
const AuditPage = lazy(() => import('./AuditPage.tsx').then((m) => ({ default: m.AuditPage })));
const NotificationsPage = lazy(() =>
  import('./NotificationsPage.tsx').then((m) => ({ default: m.NotificationsPage })),
);
const UsersPage = lazy(() => import('./UsersPage.tsx').then((m) => ({ default: m.UsersPage })));
const UserPage = lazy(() => import('./UserPage.tsx').then((m) => ({ default: m.UserPage })));
const ViewAsPage = lazy(() => import('./ViewAsPage.tsx').then((m) => ({ default: m.ViewAsPage })));

/**
 * Every page of the MSSP console, in navigation order. Add a page here: its path, title,
 * element and the roles that may open it, taken from the API route the page reads
 * (docs/web.md "Adding a page"). Pages other than the landing one should be lazy
 * (`const X = lazy(() => import('./X.tsx'))`) to keep the initial script within its budget.
 */
export const msspRoutes: readonly PageRoute[] = [
  { path: '/', title: 'Fleet', element: <FleetPage />, roles: M.fleetSummary.roles, nav: true },
  {
    path: '/tenants',
    title: 'Tenants',
    element: <TenantsPage />,
    roles: M.listTenants.roles,
    nav: true,
  },
  {
    path: '/tenants/new',
    title: 'Create tenant',
    element: <TenantCreatePage />,
    roles: M.createTenant.roles,
  },
  {
    path: '/tenants/:tenantId',
    title: 'Tenant',
    element: <TenantPage />,
    roles: M.getTenant.roles,
  },
  {
    path: '/tenants/:tenantId/policy',
    title: 'Triage policy',
    element: <PolicyPage />,
    roles: M.getTriagePolicy.roles,
  },
  {
    path: '/incidents',
    title: 'Incidents',
    element: <IncidentsPage />,
    roles: M.allIncidents.roles,
    nav: true,
  },
  {
    path: '/tenants/:tenantId/incidents/:incidentId',
    title: 'Incident',
    element: <IncidentPage />,
    roles: M.incident.roles,
  },
  {
    path: '/reviews',
    title: 'Review queue',
    element: <ReviewsPage />,
    roles: M.allReviews.roles,
    nav: true,
  },
  {
    path: '/reports',
    title: 'Reports',
    element: <ReportsPage />,
    roles: M.reports.roles,
    nav: true,
  },
  {
    path: '/notifications',
    title: 'Notifications',
    element: <NotificationsPage />,
    roles: M.listInstallWebhooks.roles,
    nav: true,
  },
  { path: '/audit', title: 'Audit log', element: <AuditPage />, roles: M.audit.roles, nav: true },
  { path: '/users', title: 'Users', element: <UsersPage />, roles: M.listUsers.roles, nav: true },
  { path: '/users/:userId', title: 'User', element: <UserPage />, roles: M.listUsers.roles },
  {
    path: '/view-as/:tenantId',
    title: 'View as customer',
    element: <ViewAsPage />,
    roles: M.impersonate.roles,
  },
];

export const msspApp: AppDefinition = {
  kind: 'mssp',
  userType: 'mssp',
  landing: '/',
  routes: msspRoutes,
  banner: ImpersonationBanner,
};
