import assert from 'node:assert/strict';
import { after, before, test } from 'node:test';
import { Hono } from 'hono';
import { contract, type Role, type Route } from '../../contracts/index.ts';
import { implement } from '../../src/http/contract.ts';
import { loadChartCatalog } from '../../src/orchestrator/catalog.ts';
import { DEFAULT_EDGE_PORT_BASE, DEFAULT_TIMING } from '../../src/orchestrator/context.ts';
import { SYSTEM_VERSION } from '../../src/orchestrator/runtime.ts';
import { seedUser, startTestApi, type TestApi } from '../support/api.ts';
import { createTestDatabase, type TestDatabase } from '../support/database.ts';
import { createTenant } from '../support/fixtures.ts';
import { TEST_HASH_PARAMS } from '../support/sign-in.ts';

/**
 * Spec §5.8 as a table: every endpoint × every principal → the status it must get. "ok" is
 * any 2xx; 409/404 where the caller is authorized but the target is deliberately in a state
 * that makes the call fail without side effects (authorization is what this proves).
 */
type Principal =
  | 'platform_admin'
  | 'mssp_admin'
  | 'analyst'
  | 'customer_viewer'
  | 'worker'
  | 'adapter'
  | 'anonymous'
  | 'expired_session'
  | 'impersonation'
  | 'impersonation_other'
  | 'platform_impersonation';

const PRINCIPALS: Principal[] = [
  'platform_admin',
  'mssp_admin',
  'analyst',
  'customer_viewer',
  'worker',
  'adapter',
  'anonymous',
  'expired_session',
  'impersonation',
  'impersonation_other',
  'platform_impersonation',
];

/**
 * The impersonation columns (issue 10 item 1): `impersonation` is an mssp_admin token acting
 * for tenant A, `platform_impersonation` a platform_admin token acting for A, and
 * `impersonation_other` an mssp_admin token acting for tenant B.
 */
type UserPrincipal = Exclude<Principal, 'worker' | 'adapter' | 'anonymous' | 'expired_session'>;

/**
 * The user columns of a row, from what its route declares (contracts: `roles`,
 * `impersonation`), so the table and the server read one source: a role the route names meets
 * `granted` (what an authorized caller gets from the row's target), any other role 403. An
 * impersonation token is its issuer's role limited to tenant A: it passes only a route that
 * declares `own_tenant` called for A, and outside the MSSP family it is no credential (401).
 * A route that declares no roles is expected to refuse every user: if its enforcement went
 * missing, the real answers below would show it.
 */
function declared(
  r: Route,
  granted: Expect,
  target: 'A' | 'other' = 'A',
): Record<UserPrincipal, Expect> {
  const as = (role: Role): Expect => (r.roles?.includes(role) ? granted : 403);
  if (!r.path.startsWith('/api/mssp/')) {
    return {
      platform_admin: as('platform_admin'),
      mssp_admin: as('mssp_admin'),
      analyst: as('analyst'),
      customer_viewer: as('customer_viewer'),
      ...IMPERSONATION_UNAUTHENTICATED,
    };
  }
  const forA = r.impersonation === 'own_tenant' && target === 'A';
  return {
    platform_admin: as('platform_admin'),
    mssp_admin: as('mssp_admin'),
    analyst: as('analyst'),
    customer_viewer: as('customer_viewer'),
    impersonation: forA ? as('mssp_admin') : 403,
    platform_impersonation: forA ? as('platform_admin') : 403,
    impersonation_other: 403,
  };
}

/** Impersonation tokens are MSSP tokens: every other family answers them 401. */
const IMPERSONATION_UNAUTHENTICATED = {
  impersonation: 401,
  impersonation_other: 401,
  platform_impersonation: 401,
} as const;

type Expect = 'ok' | number;

interface Row {
  /** The contract route the row exercises; every route of every family needs a row. */
  route: Route;
  method: 'GET' | 'POST' | 'PUT' | 'PATCH' | 'DELETE';
  path: () => string;
  body?: () => unknown;
  expect: Record<Principal, Expect>;
}

const PASSWORD = 'correct horse battery';
let db: TestDatabase;
let api: TestApi;
let tenantA: string;
let pendingTenant: string;
/** Decommissioning: every tenant state before it may be decommissioned (issue 18 item 4). */
let leavingTenant: string;
let tenantB: string;
let resetTarget: string;
let customerOfB: string;
const credentials = new Map<Principal, Record<string, string>>();

const SESSION_ONLY = {
  worker: 401,
  adapter: 401,
  anonymous: 401,
  expired_session: 401,
  ...IMPERSONATION_UNAUTHENTICATED,
} as const;
/** No user credential: a service token, none, or an expired session. */
const NO_USER = { worker: 401, adapter: 401, anonymous: 401, expired_session: 401 } as const;

const SERVICE_ONLY = {
  platform_admin: 401,
  mssp_admin: 401,
  analyst: 401,
  customer_viewer: 401,
  anonymous: 401,
  expired_session: 401,
  ...IMPERSONATION_UNAUTHENTICATED,
} as const;

const { auth: A, mssp: M, tenant: T, internal: I, public: P } = contract;
const MISSING = '00000000-0000-4000-8000-000000000000';

const MATRIX: Record<string, Row> = {
  'POST /api/auth/login (wrong password)': {
    route: A.login,
    method: 'POST',
    path: () => '/api/auth/login',
    body: () => ({ email: 'nobody@mssp.test', password: 'not the password' }),
    expect: Object.fromEntries(PRINCIPALS.map((p) => [p, 401])) as Record<Principal, Expect>,
  },
  // Before sign-in: every caller, credentials or none, gets the host's branding.
  'GET /api/public/branding': {
    route: P.branding,
    method: 'GET',
    path: () => '/api/public/branding',
    expect: Object.fromEntries(PRINCIPALS.map((p) => [p, 'ok'])) as Record<Principal, Expect>,
  },
  // Issue 15: the same answer for a host named in the query (internal mode, anonymous).
  'GET /api/auth/branding?host=': {
    route: A.branding,
    method: 'GET',
    path: () => '/api/auth/branding?host=acme.customers.example.test',
    expect: Object.fromEntries(PRINCIPALS.map((p) => [p, 'ok'])) as Record<Principal, Expect>,
  },
  'GET /api/auth/me': {
    route: A.me,
    method: 'GET',
    path: () => '/api/auth/me',
    expect: {
      platform_admin: 'ok',
      mssp_admin: 'ok',
      analyst: 'ok',
      customer_viewer: 'ok',
      ...SESSION_ONLY,
    },
  },
  'POST /api/auth/password/change (invalid body)': {
    route: A.changePassword,
    method: 'POST',
    path: () => '/api/auth/password/change',
    body: () => ({}),
    expect: {
      platform_admin: 400,
      mssp_admin: 400,
      analyst: 400,
      customer_viewer: 400,
      ...SESSION_ONLY,
    },
  },
  'POST /api/mssp/tenants (invalid body)': {
    route: M.createTenant,
    method: 'POST',
    path: () => '/api/mssp/tenants',
    body: () => ({}),
    expect: { ...declared(M.createTenant, 400), ...NO_USER },
  },
  'GET /api/mssp/tenants': {
    route: M.listTenants,
    method: 'GET',
    path: () => '/api/mssp/tenants',
    expect: { ...declared(M.listTenants, 'ok'), ...NO_USER },
  },
  'GET /api/mssp/tenants/{A}': {
    route: M.getTenant,
    method: 'GET',
    path: () => `/api/mssp/tenants/${tenantA}`,
    expect: { ...declared(M.getTenant, 'ok'), ...NO_USER },
  },
  'GET /api/mssp/tenants/{missing}': {
    route: M.getTenant,
    method: 'GET',
    path: () => `/api/mssp/tenants/${MISSING}`,
    // A token acting for A cannot reach another tenant, even a missing one.
    expect: { ...declared(M.getTenant, 404, 'other'), ...NO_USER },
  },
  'POST /api/mssp/tenants/{decommissioning}:decommission': {
    route: M.decommission,
    method: 'POST',
    path: () => `/api/mssp/tenants/${leavingTenant}:decommission`,
    expect: { ...declared(M.decommission, 409), ...NO_USER },
  },
  'POST /api/mssp/tenants/{pending}:retry': {
    route: M.retry,
    method: 'POST',
    path: () => `/api/mssp/tenants/${pendingTenant}:retry`,
    expect: { ...declared(M.retry, 409), ...NO_USER },
  },
  'POST /api/mssp/tenants/{pending}:upgrade': {
    route: M.upgrade,
    method: 'POST',
    path: () => `/api/mssp/tenants/${pendingTenant}:upgrade`,
    body: () => ({ tenant_chart_version: '0.1.0' }),
    expect: { ...declared(M.upgrade, 409), ...NO_USER },
  },
  // Issue 15: suspend and resume, each aimed at a state it cannot leave that way.
  'POST /api/mssp/tenants/{pending}:suspend': {
    route: M.suspend,
    method: 'POST',
    path: () => `/api/mssp/tenants/${pendingTenant}:suspend`,
    body: () => ({ reason: 'matrix' }),
    expect: { ...declared(M.suspend, 409), ...NO_USER },
  },
  'POST /api/mssp/tenants/{A}:resume': {
    route: M.resume,
    method: 'POST',
    path: () => `/api/mssp/tenants/${tenantA}:resume`,
    body: () => ({}),
    expect: { ...declared(M.resume, 409), ...NO_USER },
  },
  'POST /api/mssp/impersonate/{A}': {
    route: M.impersonate,
    method: 'POST',
    path: () => `/api/mssp/impersonate/${tenantA}`,
    body: () => ({ reason: 'matrix' }),
    expect: { ...declared(M.impersonate, 'ok'), ...NO_USER },
  },
  'GET /api/mssp/audit': {
    route: M.audit,
    method: 'GET',
    path: () => '/api/mssp/audit',
    // Without tenant_id an impersonation token reads its own tenant (B's token reads B).
    expect: { ...declared(M.audit, 'ok'), ...NO_USER, impersonation_other: 'ok' },
  },
  'GET /api/mssp/audit?tenant_id={A}': {
    route: M.audit,
    method: 'GET',
    path: () => `/api/mssp/audit?tenant_id=${tenantA}`,
    expect: { ...declared(M.audit, 'ok'), ...NO_USER },
  },
  'GET /api/mssp/fleet/summary': {
    route: M.fleetSummary,
    method: 'GET',
    path: () => '/api/mssp/fleet/summary',
    expect: { ...declared(M.fleetSummary, 'ok'), ...NO_USER },
  },
  'GET /api/mssp/incidents': {
    route: M.allIncidents,
    method: 'GET',
    path: () => '/api/mssp/incidents',
    expect: { ...declared(M.allIncidents, 'ok'), ...NO_USER },
  },
  'GET /api/mssp/incidents?tenant_id={A}': {
    route: M.allIncidents,
    method: 'GET',
    path: () => `/api/mssp/incidents?tenant_id=${tenantA}`,
    // Naming its own tenant does not open a system-gate read to an impersonation token.
    expect: { ...declared(M.allIncidents, 'ok'), ...NO_USER },
  },
  'GET /api/mssp/reviews': {
    route: M.allReviews,
    method: 'GET',
    path: () => '/api/mssp/reviews',
    expect: { ...declared(M.allReviews, 'ok'), ...NO_USER },
  },
  // Cross-tenant reports (docs/reports.md): mssp_admin and platform_admin, never a token.
  'GET /api/mssp/reports': {
    route: M.reports,
    method: 'GET',
    path: () => '/api/mssp/reports',
    expect: { ...declared(M.reports, 'ok'), ...NO_USER },
  },
  'GET /api/mssp/reports?tenant_id={A}&format=csv': {
    route: M.reports,
    method: 'GET',
    path: () => `/api/mssp/reports?tenant_id=${tenantA}&format=csv`,
    expect: { ...declared(M.reports, 'ok'), ...NO_USER },
  },
  'GET /api/mssp/tenants/{A}/events': {
    route: M.tenantEvents,
    method: 'GET',
    path: () => `/api/mssp/tenants/${tenantA}/events`,
    expect: { ...declared(M.tenantEvents, 'ok'), ...NO_USER },
  },
  'GET /api/mssp/users': {
    route: M.listUsers,
    method: 'GET',
    path: () => '/api/mssp/users',
    expect: { ...declared(M.listUsers, 'ok'), ...NO_USER },
  },
  'POST /api/mssp/users (existing email)': {
    route: M.createUser,
    method: 'POST',
    path: () => '/api/mssp/users',
    body: () => ({ email: 'an@mssp.test', role: 'analyst' }),
    expect: { ...declared(M.createUser, 409), ...NO_USER },
  },
  'GET /api/mssp/tenants/{A}/users': {
    route: M.listTenantUsers,
    method: 'GET',
    path: () => `/api/mssp/tenants/${tenantA}/users`,
    expect: { ...declared(M.listTenantUsers, 'ok'), ...NO_USER },
  },
  'POST /api/mssp/tenants/{A}/users (existing email)': {
    route: M.createTenantUser,
    method: 'POST',
    path: () => `/api/mssp/tenants/${tenantA}/users`,
    body: () => ({ email: 'cv@alpha.test' }),
    expect: { ...declared(M.createTenantUser, 409), ...NO_USER },
  },
  'POST /api/mssp/tenants/{A}/users/{missing}:deactivate': {
    route: M.deactivateTenantUser,
    method: 'POST',
    path: () => `/api/mssp/tenants/${tenantA}/users/${MISSING}:deactivate`,
    expect: { ...declared(M.deactivateTenantUser, 404), ...NO_USER },
  },
  'GET /api/mssp/tenants/{A}/incidents': {
    route: M.tenantIncidents,
    method: 'GET',
    path: () => `/api/mssp/tenants/${tenantA}/incidents`,
    expect: { ...declared(M.tenantIncidents, 'ok'), ...NO_USER },
  },
  // The analyst's desk (docs/investigations.md): MSSP roles, an impersonation token for its own
  // tenant only; a missing incident is 404 to every caller who may ask.
  ...Object.fromEntries(
    (
      [
        ['incident', 'GET', '', undefined],
        ['incidentAlerts', 'GET', '/alerts', undefined],
        ['incidentAlert', 'GET', `/alerts/${MISSING}`, undefined],
        ['assignIncident', 'POST', ':assign', { assignee_id: null, version: 1 }],
        [
          'addIncidentNote',
          'POST',
          ':note',
          { body: 'matrix', visibility: 'internal', version: 1 },
        ],
        ['closeIncident', 'POST', ':close', { verdict: 'benign', reason: 'matrix', version: 1 }],
        ['reopenIncident', 'POST', ':reopen', { reason: 'matrix', version: 1 }],
        [
          'changeIncidentSeverity',
          'POST',
          ':severity',
          { severity: 'low', reason: 'matrix', version: 1 },
        ],
      ] as const
    ).map(([name, method, suffix, body]) => [
      `${method} /api/mssp/tenants/{A}/incidents/{missing}${suffix}`,
      {
        route: M[name],
        method,
        path: () => `/api/mssp/tenants/${tenantA}/incidents/${MISSING}${suffix}`,
        ...(body ? { body: () => body } : {}),
        expect: { ...declared(M[name], 404), ...NO_USER },
      } satisfies Row,
    ]),
  ),
  'GET /api/mssp/tenants/{A}/reviews': {
    route: M.tenantReviews,
    method: 'GET',
    path: () => `/api/mssp/tenants/${tenantA}/reviews`,
    expect: { ...declared(M.tenantReviews, 'ok'), ...NO_USER },
  },
  'GET /api/mssp/tenants/{A}/triage-policy': {
    route: M.getTriagePolicy,
    method: 'GET',
    path: () => `/api/mssp/tenants/${tenantA}/triage-policy`,
    expect: { ...declared(M.getTriagePolicy, 'ok'), ...NO_USER },
  },
  'PUT /api/mssp/tenants/{A}/triage-policy': {
    route: M.putTriagePolicy,
    method: 'PUT',
    path: () => `/api/mssp/tenants/${tenantA}/triage-policy`,
    body: () => ({ min_confidence: 0.8 }),
    expect: { ...declared(M.putTriagePolicy, 'ok'), ...NO_USER },
  },
  'GET /api/mssp/tenants/{A}/branding': {
    route: M.getBranding,
    method: 'GET',
    path: () => `/api/mssp/tenants/${tenantA}/branding`,
    expect: { ...declared(M.getBranding, 'ok'), ...NO_USER },
  },
  'PUT /api/mssp/tenants/{A}/branding': {
    route: M.putBranding,
    method: 'PUT',
    path: () => `/api/mssp/tenants/${tenantA}/branding`,
    body: () => ({ app_name: 'Matrix', primary_color: '#123456', secondary_color: '#abc' }),
    expect: { ...declared(M.putBranding, 'ok'), ...NO_USER },
  },
  'GET /api/mssp/tenants/{A}/config': {
    route: M.getConfig,
    method: 'GET',
    path: () => `/api/mssp/tenants/${tenantA}/config`,
    expect: { ...declared(M.getConfig, 'ok'), ...NO_USER },
  },
  // Only an active tenant's configuration changes: authorized callers meet invalid_state.
  'PUT /api/mssp/tenants/{pending}/config': {
    route: M.putConfig,
    method: 'PUT',
    path: () => `/api/mssp/tenants/${pendingTenant}/config`,
    body: () => ({ display_name: 'Matrix' }),
    expect: { ...declared(M.putConfig, 409), ...NO_USER },
  },
  // Only an active tenant's manager enrolls agents: authorized callers meet invalid_state, before
  // anything is read from the cluster or audited.
  'GET /api/mssp/tenants/{pending}/enrollment': {
    route: M.getEnrollment,
    method: 'GET',
    path: () => `/api/mssp/tenants/${pendingTenant}/enrollment`,
    expect: { ...declared(M.getEnrollment, 409), ...NO_USER },
  },
  'POST /api/mssp/tenants/{pending}:rotate-enrollment': {
    route: M.rotateEnrollment,
    method: 'POST',
    path: () => `/api/mssp/tenants/${pendingTenant}:rotate-enrollment`,
    expect: { ...declared(M.rotateEnrollment, 409), ...NO_USER },
  },
  'GET /api/mssp/tenants/{A}/config/revisions': {
    route: M.listConfigRevisions,
    method: 'GET',
    path: () => `/api/mssp/tenants/${tenantA}/config/revisions`,
    expect: { ...declared(M.listConfigRevisions, 'ok'), ...NO_USER },
  },
  'GET /api/mssp/tenants/{A}/llm-usage': {
    route: M.llmUsage,
    method: 'GET',
    path: () => `/api/mssp/tenants/${tenantA}/llm-usage`,
    expect: { ...declared(M.llmUsage, 'ok'), ...NO_USER },
  },
  // Webhooks (docs/notifications.md): lists answer, a missing webhook 404, a create with an
  // invalid body 400 (this API has no cluster, so a valid one would meet 503).
  'GET /api/mssp/webhooks': {
    route: M.listInstallWebhooks,
    method: 'GET',
    path: () => '/api/mssp/webhooks',
    expect: { ...declared(M.listInstallWebhooks, 'ok'), ...NO_USER },
  },
  'POST /api/mssp/webhooks (invalid body)': {
    route: M.createInstallWebhook,
    method: 'POST',
    path: () => '/api/mssp/webhooks',
    body: () => ({}),
    expect: { ...declared(M.createInstallWebhook, 400), ...NO_USER },
  },
  'GET /api/mssp/tenants/{A}/webhooks': {
    route: M.listTenantWebhooks,
    method: 'GET',
    path: () => `/api/mssp/tenants/${tenantA}/webhooks`,
    expect: { ...declared(M.listTenantWebhooks, 'ok'), ...NO_USER },
  },
  'POST /api/mssp/tenants/{A}/webhooks (invalid body)': {
    route: M.createTenantWebhook,
    method: 'POST',
    path: () => `/api/mssp/tenants/${tenantA}/webhooks`,
    body: () => ({}),
    expect: { ...declared(M.createTenantWebhook, 400), ...NO_USER },
  },
  ...Object.fromEntries(
    (
      [
        ['getInstallWebhook', 'GET', ''],
        ['updateInstallWebhook', 'PATCH', ''],
        ['deleteInstallWebhook', 'DELETE', ''],
        ['installWebhookDeliveries', 'GET', '/deliveries'],
        ['testInstallWebhook', 'POST', ':test'],
        ['getTenantWebhook', 'GET', ''],
        ['updateTenantWebhook', 'PATCH', ''],
        ['deleteTenantWebhook', 'DELETE', ''],
        ['tenantWebhookDeliveries', 'GET', '/deliveries'],
        ['testTenantWebhook', 'POST', ':test'],
      ] as const
    ).map(([name, method, suffix]) => [
      `${method} ${M[name].path} (missing webhook)`,
      {
        route: M[name],
        method,
        path: () =>
          `${name.toLowerCase().includes('tenant') ? `/api/mssp/tenants/${tenantA}` : '/api/mssp'}/webhooks/${MISSING}${suffix}`,
        ...(method === 'PATCH' ? { body: () => ({ enabled: false }) } : {}),
        expect: { ...declared(M[name], 404), ...NO_USER },
      } satisfies Row,
    ]),
  ),
  ...Object.fromEntries(
    (['approveReview', 'rejectReview'] as const).map((name) => [
      `POST ${M[name].path} (missing review)`,
      {
        route: M[name],
        method: 'POST',
        path: () => M[name].path.replace('{tenant_id}', tenantA).replace('{review_id}', MISSING),
        body: () => ({ note: 'matrix' }),
        expect: { ...declared(M[name], 404), ...NO_USER },
      } satisfies Row,
    ]),
  ),
  'POST /api/mssp/users/{analyst}/password/reset': {
    route: M.resetPassword,
    method: 'POST',
    path: () => `/api/mssp/users/${resetTarget}/password/reset`,
    // The service's narrower rule: mssp_admin resets customer users only.
    expect: { ...declared(M.resetPassword, 'ok'), ...NO_USER, mssp_admin: 403 },
  },
  // The outside probe's takeover: a token acting for A reset a customer of another tenant.
  'POST /api/mssp/users/{customer of B}/password/reset': {
    route: M.resetPassword,
    method: 'POST',
    path: () => `/api/mssp/users/${customerOfB}/password/reset`,
    expect: { ...declared(M.resetPassword, 'ok'), ...NO_USER },
  },
  // Same answer as for a foreign id: an impersonation token learns nothing about existence.
  'POST /api/mssp/users/{missing}/password/reset': {
    route: M.resetPassword,
    method: 'POST',
    path: () => `/api/mssp/users/${MISSING}/password/reset`,
    expect: { ...declared(M.resetPassword, 404), ...NO_USER },
  },
  // Issue 15 MSSP user lifecycle: platform_admin only (spec §5.8 "User management (MSSP
  // side)": mssp_admin R + invite); a missing user is 404 to the one role that may ask.
  ...Object.fromEntries(
    (
      [
        ['disableUser', 'POST', `:disable`, undefined],
        ['enableUser', 'POST', `:enable`, undefined],
        ['changeUserRole', 'PATCH', '', { role: 'analyst' }],
      ] as const
    ).map(([name, method, suffix, body]) => [
      `${method} /api/mssp/users/{missing}${suffix}`,
      {
        route: M[name],
        method,
        path: () => `/api/mssp/users/${MISSING}${suffix}`,
        ...(body ? { body: () => body } : {}),
        expect: { ...declared(M[name], 404), ...NO_USER },
      } satisfies Row,
    ]),
  ),
  // Install settings (spec §2.2): every MSSP role reads, platform_admin writes.
  'GET /api/mssp/settings': {
    route: M.getSettings,
    method: 'GET',
    path: () => '/api/mssp/settings',
    expect: { ...declared(M.getSettings, 'ok'), ...NO_USER },
  },
  'PUT /api/mssp/settings': {
    route: M.putSettings,
    method: 'PUT',
    path: () => '/api/mssp/settings',
    body: () => ({ settings: { 'audit.retention_days': 90 } }),
    expect: { ...declared(M.putSettings, 'ok'), ...NO_USER },
  },
  ...Object.fromEntries(
    (['overview', 'incidents', 'reports', 'audit', 'branding', 'events'] as const).map((name) => [
      `GET /api/tenant/${name}`,
      {
        route: T[name],
        method: 'GET',
        path: () => `/api/tenant/${name}`,
        expect: { ...declared(T[name], 'ok'), ...NO_USER },
      } satisfies Row,
    ]),
  ),
  // The customer's incident detail and its alerts: customer_viewer only; a missing one is 404.
  ...Object.fromEntries(
    (['incident', 'incidentAlerts'] as const).map((name) => [
      `GET /api/tenant/incidents/{missing}${name === 'incident' ? '' : '/alerts'}`,
      {
        route: T[name],
        method: 'GET',
        path: () => `/api/tenant/incidents/${MISSING}${name === 'incident' ? '' : '/alerts'}`,
        expect: { ...declared(T[name], 404), ...NO_USER },
      } satisfies Row,
    ]),
  ),
  'POST /api/internal/adapter/health': {
    route: I.health,
    method: 'POST',
    path: () => '/api/internal/adapter/health',
    body: () => ({ version: '0.1.0' }),
    expect: { ...SERVICE_ONLY, adapter: 'ok', worker: 403 },
  },
  'GET /api/internal/adapter/config': {
    route: I.config,
    method: 'GET',
    path: () => '/api/internal/adapter/config',
    expect: { ...SERVICE_ONLY, adapter: 'ok', worker: 403 },
  },
  'POST /api/internal/adapter/alerts': {
    route: I.alerts,
    method: 'POST',
    path: () => '/api/internal/adapter/alerts',
    body: () => ({
      alerts: [
        {
          id: '1764164701.1234567',
          timestamp: '2026-11-26T13:45:01.123+0000',
          rule: { id: '5712', level: 10, description: 'sshd: brute force' },
          agent: { id: '001', name: 'web-01' },
        },
      ],
      checkpoint: { search_after: [1764164701123, 'a'] },
    }),
    expect: { ...SERVICE_ONLY, adapter: 'ok', worker: 403 },
  },
  'GET /api/internal/adapter/checkpoint': {
    route: I.checkpoint,
    method: 'GET',
    path: () => '/api/internal/adapter/checkpoint',
    expect: { ...SERVICE_ONLY, adapter: 'ok', worker: 403 },
  },
  'POST /api/internal/adapter/bootstrap (wrong credential)': {
    route: I.bootstrap,
    method: 'POST',
    path: () => '/api/internal/adapter/bootstrap',
    body: () => ({ tenant_id: tenantA, credential: 'A'.repeat(43) }),
    expect: { ...SERVICE_ONLY, adapter: 401, worker: 401 },
  },
  // Last: it ends every session it is sent with.
  'POST /api/auth/logout': {
    route: A.logout,
    method: 'POST',
    path: () => '/api/auth/logout',
    expect: {
      platform_admin: 'ok',
      mssp_admin: 'ok',
      analyst: 'ok',
      customer_viewer: 'ok',
      ...SESSION_ONLY,
    },
  },
};

/** An impersonation token minted through the API by the principal's own session. */
async function impersonating(by: Principal, tenantId: string): Promise<Record<string, string>> {
  const res = await fetch(`${api.url}/api/mssp/impersonate/${tenantId}`, {
    method: 'POST',
    headers: { origin: api.origin, 'content-type': 'application/json', ...credentials.get(by) },
    body: JSON.stringify({ reason: 'matrix setup' }),
  });
  assert.equal(res.status, 200);
  const { token } = (await res.json()) as { token: string };
  return { authorization: `Bearer ${token}` };
}

async function sessionCookie(email: string): Promise<string> {
  const res = await fetch(`${api.url}/api/auth/login`, {
    method: 'POST',
    headers: { origin: api.origin, 'content-type': 'application/json' },
    body: JSON.stringify({ email, password: PASSWORD }),
  });
  assert.equal(res.status, 200, email);
  return (res.headers.get('set-cookie') ?? '').split(';')[0] ?? '';
}

before(async () => {
  db = await createTestDatabase();
  api = await startTestApi(db, {
    hash: { params: TEST_HASH_PARAMS },
    auth: { loginRateLimitPerEmail: 1000, loginRateLimitPerIp: 1000 },
    tenancy: {
      kick: () => undefined,
      systemVersion: SYSTEM_VERSION,
      edgePortBase: DEFAULT_EDGE_PORT_BASE,
      decommissionGraceMs: DEFAULT_TIMING.decommissionGraceMs,
      catalog: await loadChartCatalog(),
    },
  });
  tenantA = await createTenant(db.pools.app, 'alpha');
  tenantB = await createTenant(db.pools.app, 'bravo');
  pendingTenant = await createTenant(db.pools.app, 'still-pending');
  leavingTenant = await createTenant(db.pools.app, 'leaving');
  await db.pools.mssp.query(`UPDATE tenants SET state = 'decommissioning' WHERE id = $1`, [
    leavingTenant,
  ]);
  await db.pools.mssp.query(`UPDATE tenants SET state = 'active' WHERE id = ANY($1)`, [
    [tenantA, tenantB],
  ]);
  // Tenant creation stores revision 1 of the configuration; these tenants were inserted directly.
  await db.pools.mssp.query(
    `INSERT INTO tenant_lifecycle_events (tenant_id, kind, config_revision, details, actor)
     VALUES ($1, 'config_revision', 1, jsonb_build_object('config',
       jsonb_build_object('slug', 'alpha', 'display_name', 'Tenant alpha')), 'user:matrix')`,
    [tenantA],
  );
  const users: [
    Principal,
    string,
    'platform_admin' | 'mssp_admin' | 'analyst' | 'customer_viewer',
  ][] = [
    ['platform_admin', 'pa@mssp.test', 'platform_admin'],
    ['mssp_admin', 'ma@mssp.test', 'mssp_admin'],
    ['analyst', 'an@mssp.test', 'analyst'],
    ['customer_viewer', 'cv@alpha.test', 'customer_viewer'],
  ];
  for (const [principal, email, role] of users) {
    await seedUser(db, api.hasher, {
      email,
      role,
      tenantId: role === 'customer_viewer' ? tenantA : null,
      password: PASSWORD,
    });
    credentials.set(principal, { cookie: await sessionCookie(email) });
  }
  resetTarget = await seedUser(db, api.hasher, {
    email: 'target@mssp.test',
    role: 'analyst',
    password: PASSWORD,
  });
  await seedUser(db, api.hasher, {
    email: 'expired@mssp.test',
    role: 'analyst',
    password: PASSWORD,
  });
  credentials.set('expired_session', { cookie: await sessionCookie('expired@mssp.test') });
  // Expired on svc's clock (the test API's, frozen at its start), not the database's now():
  // under load the setup alone can outlast any margin between the two.
  await db.pools.mssp.query(
    `UPDATE sessions SET idle_expiry = $1
      WHERE user_id = (SELECT id FROM users WHERE email = 'expired@mssp.test')`,
    [new Date(api.clock.now().getTime() - 60_000)],
  );
  const worker = await api.tokens.mintWorker({
    tenantId: tenantA,
    jobId: crypto.randomUUID(),
    jobType: 'triage',
  });
  credentials.set('worker', { authorization: `Bearer ${worker.token}` });
  const adapter = await api.tokens.mintAdapter({ tenantId: tenantA });
  credentials.set('adapter', { authorization: `Bearer ${adapter.token}` });
  credentials.set('anonymous', {});
  customerOfB = await seedUser(db, api.hasher, {
    email: 'cv@bravo.test',
    role: 'customer_viewer',
    tenantId: tenantB,
    password: PASSWORD,
  });
  credentials.set('impersonation', await impersonating('mssp_admin', tenantA));
  credentials.set('platform_impersonation', await impersonating('platform_admin', tenantA));
  credentials.set('impersonation_other', await impersonating('mssp_admin', tenantB));
});
after(async () => {
  await api.close();
  await db.drop();
});

test('§5.8 actor × resource matrix: every endpoint answers every principal as the spec allows', async () => {
  const mismatches: string[] = [];
  for (const [name, row] of Object.entries(MATRIX)) {
    for (const principal of PRINCIPALS) {
      const body = row.body?.();
      const res = await fetch(`${api.url}${row.path()}`, {
        method: row.method,
        headers: {
          origin: api.origin,
          ...(body === undefined ? {} : { 'content-type': 'application/json' }),
          ...credentials.get(principal),
        },
        body: body === undefined ? null : JSON.stringify(body),
      });
      // An event stream that was granted stays open: its headers are the answer.
      if (res.headers.get('content-type')?.startsWith('text/event-stream'))
        await res.body?.cancel();
      else await res.arrayBuffer();
      const expected = row.expect[principal];
      const ok =
        expected === 'ok' ? res.status >= 200 && res.status < 300 : res.status === expected;
      if (!ok) mismatches.push(`${name} as ${principal}: expected ${expected}, got ${res.status}`);
    }
  }
  assert.deepEqual(mismatches, []);
});

test('every route of every family has a matrix row, and every MSSP route declares its impersonation rule and roles', () => {
  const covered = new Set(Object.values(MATRIX).map((row) => row.route));
  const missing: string[] = [];
  for (const family of Object.values(contract)) {
    for (const r of Object.values(family) as Route[]) {
      if (!covered.has(r)) missing.push(`${r.method} ${r.path}`);
      if (r.path.startsWith('/api/mssp/') && r.impersonation === undefined)
        missing.push(`${r.method} ${r.path}: no impersonation rule`);
      if (/^\/api\/(mssp|tenant)\//.test(r.path) && r.roles === undefined)
        missing.push(`${r.method} ${r.path}: no roles`);
    }
  }
  assert.deepEqual(missing, []);
});

test('§5.8 the declared roles keep each family to its users: staff on MSSP routes, customers on tenant routes', () => {
  const wrong: string[] = [];
  for (const r of Object.values(M) as Route[]) {
    if (r.roles?.includes('customer_viewer')) wrong.push(`${r.method} ${r.path}`);
    // platform_admin may do everything an MSSP role may (spec §5.8).
    if (!r.roles?.includes('platform_admin'))
      wrong.push(`${r.method} ${r.path}: not platform_admin`);
  }
  for (const r of Object.values(T) as Route[]) {
    if (r.roles?.join() !== 'customer_viewer') wrong.push(`${r.method} ${r.path}`);
  }
  assert.deepEqual(wrong, []);
});

test('§5.8 an analyst reads and decides reviews and works incidents, but changes no tenant, user or setting', () => {
  const analystChanges = (Object.entries(M) as [string, Route][])
    .filter(([, r]) => r.method !== 'GET' && r.roles?.includes('analyst'))
    .map(([name]) => name)
    .sort();
  // Investigation work (spec §2.2 "investigation work"; docs/investigations.md) is the analyst's.
  assert.deepEqual(analystChanges, [
    'addIncidentNote',
    'approveReview',
    'assignIncident',
    'changeIncidentSeverity',
    'closeIncident',
    'impersonate',
    'rejectReview',
    'reopenIncident',
  ]);
});

test('a user-family route without declared roles cannot be registered', () => {
  for (const r of [contract.mssp.getTenant, contract.tenant.overview] as Route[]) {
    const { roles: _, ...undeclared } = r;
    assert.throws(
      () => implement(new Hono(), undeclared)(async () => ({ raw: new Response(null) })),
      /must declare its roles/,
    );
  }
});

test('an MSSP route without an impersonation rule cannot be registered', () => {
  const { impersonation: _, ...undeclared } = contract.mssp.getTenant;
  assert.throws(
    () => implement(new Hono(), undeclared, [])(async () => ({ raw: new Response(null) })),
    /must declare its impersonation rule/,
  );
});

test('§5.2 an impersonation token cannot decommission, retry or upgrade even its own tenant', async () => {
  for (const principal of ['impersonation', 'platform_impersonation'] as const) {
    for (const [verb, body] of [
      ['decommission', undefined],
      ['retry', undefined],
      ['upgrade', { tenant_chart_version: '0.1.0' }],
    ] as const) {
      const res = await fetch(`${api.url}/api/mssp/tenants/${tenantA}:${verb}`, {
        method: 'POST',
        headers: {
          origin: api.origin,
          ...(body ? { 'content-type': 'application/json' } : {}),
          ...credentials.get(principal),
        },
        body: body ? JSON.stringify(body) : null,
      });
      const problem = (await res.json()) as { code: string };
      assert.deepEqual(
        [verb, res.status, problem.code],
        [verb, 403, 'outside_impersonated_tenant'],
      );
    }
  }
  const { rows } = await db.pools.mssp.query<{ state: string }>(
    'SELECT state FROM tenants WHERE id = $1',
    [tenantA],
  );
  assert.equal(rows[0]?.state, 'active');
});

test("§5.8 an admin's reset of a customer's password is audited under the customer's tenant", async () => {
  const { rows } = await db.pools.mssp.query<{
    tenant_id: string | null;
    acting_as: string | null;
  }>(
    `SELECT tenant_id, acting_as FROM audit_log
      WHERE action = 'auth.password.reset.admin' AND resource_id = $1`,
    [customerOfB],
  );
  // The matrix reset the customer of B twice (platform_admin, mssp_admin); no impersonation.
  assert.deepEqual(rows, [
    { tenant_id: tenantB, acting_as: null },
    { tenant_id: tenantB, acting_as: null },
  ]);
});
