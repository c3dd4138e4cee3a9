import assert from 'node:assert/strict';
import { after, before, test } from 'node:test';
import { loadChartCatalog } from '../../src/tenants/catalog.ts';
import { DEFAULT_EDGE_PORT_BASE, DEFAULT_TIMING } from '../../src/tenants/context.ts';
import { SYSTEM_VERSION } from '../../src/tenants/runtime.ts';
import { seedUser, startTestApi, type TestApi } from '../support/api.ts';
import { createTestDatabase, type TestDatabase } from '../support/database.ts';
import { createTenant } from '../support/fixtures.ts';

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
  | 'impersonation';

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
];

type Expect = 'ok' | number;

interface Row {
  method: 'GET' | 'POST';
  path: () => string;
  body?: () => unknown;
  expect: Record<Principal, Expect>;
}

const PASSWORD = 'correct horse battery';
let db: TestDatabase;
let api: TestApi;
let tenantA: string;
let pendingTenant: string;
let resetTarget: string;
const credentials = new Map<Principal, Record<string, string>>();

const SESSION_ONLY = {
  worker: 401,
  adapter: 401,
  anonymous: 401,
  expired_session: 401,
  impersonation: 401,
} as const;
const MSSP_DENIED = {
  customer_viewer: 403,
  worker: 401,
  adapter: 401,
  anonymous: 401,
  expired_session: 401,
} as const;

const TENANT_ONLY = {
  platform_admin: 403,
  mssp_admin: 403,
  analyst: 403,
  customer_viewer: 'ok',
  worker: 401,
  adapter: 401,
  anonymous: 401,
  expired_session: 401,
  impersonation: 401,
} as const;
const SERVICE_ONLY = {
  platform_admin: 401,
  mssp_admin: 401,
  analyst: 401,
  customer_viewer: 401,
  anonymous: 401,
  expired_session: 401,
  impersonation: 401,
} as const;

const MATRIX: Record<string, Row> = {
  'POST /api/mssp/tenants (invalid body)': {
    method: 'POST',
    path: () => '/api/mssp/tenants',
    body: () => ({}),
    expect: {
      platform_admin: 400,
      mssp_admin: 400,
      analyst: 403,
      ...MSSP_DENIED,
      impersonation: 403,
    },
  },
  ...Object.fromEntries(
    ['overview', 'incidents', 'reports', 'audit', 'branding'].map((name) => [
      `GET /api/tenant/${name}`,
      { method: 'GET', path: () => `/api/tenant/${name}`, expect: TENANT_ONLY } satisfies Row,
    ]),
  ),
  'POST /api/internal/adapter/health': {
    method: 'POST',
    path: () => '/api/internal/adapter/health',
    body: () => ({ version: '0.1.0' }),
    expect: { ...SERVICE_ONLY, adapter: 'ok', worker: 403 },
  },
  'GET /api/internal/adapter/config': {
    method: 'GET',
    path: () => '/api/internal/adapter/config',
    expect: { ...SERVICE_ONLY, adapter: 'ok', worker: 403 },
  },
  'POST /api/internal/adapter/bootstrap (wrong credential)': {
    method: 'POST',
    path: () => '/api/internal/adapter/bootstrap',
    body: () => ({ tenant_id: tenantA, credential: 'A'.repeat(43) }),
    expect: { ...SERVICE_ONLY, adapter: 401, worker: 401 },
  },
  'GET /api/auth/me': {
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
  'GET /api/mssp/tenants': {
    method: 'GET',
    path: () => '/api/mssp/tenants',
    expect: {
      platform_admin: 'ok',
      mssp_admin: 'ok',
      analyst: 'ok',
      ...MSSP_DENIED,
      impersonation: 403,
    },
  },
  'GET /api/mssp/tenants/{A}': {
    method: 'GET',
    path: () => `/api/mssp/tenants/${tenantA}`,
    expect: {
      platform_admin: 'ok',
      mssp_admin: 'ok',
      analyst: 'ok',
      ...MSSP_DENIED,
      impersonation: 'ok',
    },
  },
  'POST /api/mssp/tenants/{pending}:decommission': {
    method: 'POST',
    path: () => `/api/mssp/tenants/${pendingTenant}:decommission`,
    expect: {
      platform_admin: 409,
      mssp_admin: 409,
      analyst: 403,
      ...MSSP_DENIED,
      impersonation: 403,
    },
  },
  'POST /api/mssp/tenants/{pending}:retry': {
    method: 'POST',
    path: () => `/api/mssp/tenants/${pendingTenant}:retry`,
    expect: {
      platform_admin: 409,
      mssp_admin: 409,
      analyst: 403,
      ...MSSP_DENIED,
      impersonation: 403,
    },
  },
  'POST /api/mssp/tenants/{pending}:upgrade': {
    method: 'POST',
    path: () => `/api/mssp/tenants/${pendingTenant}:upgrade`,
    body: () => ({ tenant_chart_version: '0.1.0' }),
    expect: {
      platform_admin: 409,
      mssp_admin: 409,
      analyst: 403,
      ...MSSP_DENIED,
      impersonation: 403,
    },
  },
  'POST /api/mssp/impersonate/{A}': {
    method: 'POST',
    path: () => `/api/mssp/impersonate/${tenantA}`,
    body: () => ({ reason: 'matrix' }),
    expect: {
      platform_admin: 'ok',
      mssp_admin: 'ok',
      analyst: 'ok',
      ...MSSP_DENIED,
      impersonation: 403,
    },
  },
  'GET /api/mssp/audit': {
    method: 'GET',
    path: () => '/api/mssp/audit',
    expect: {
      platform_admin: 'ok',
      mssp_admin: 'ok',
      analyst: 'ok',
      ...MSSP_DENIED,
      impersonation: 'ok',
    },
  },
  'GET /api/mssp/fleet/summary': {
    method: 'GET',
    path: () => '/api/mssp/fleet/summary',
    expect: {
      platform_admin: 'ok',
      mssp_admin: 'ok',
      analyst: 'ok',
      ...MSSP_DENIED,
      impersonation: 403,
    },
  },
  'GET /api/mssp/users': {
    method: 'GET',
    path: () => '/api/mssp/users',
    expect: {
      platform_admin: 'ok',
      mssp_admin: 'ok',
      analyst: 'ok',
      ...MSSP_DENIED,
      impersonation: 403,
    },
  },
  'POST /api/mssp/users (existing email)': {
    method: 'POST',
    path: () => '/api/mssp/users',
    body: () => ({ email: 'an@mssp.test', role: 'analyst' }),
    expect: {
      platform_admin: 409,
      mssp_admin: 409,
      analyst: 403,
      ...MSSP_DENIED,
      impersonation: 403,
    },
  },
  'GET /api/mssp/tenants/{A}/users': {
    method: 'GET',
    path: () => `/api/mssp/tenants/${tenantA}/users`,
    expect: {
      platform_admin: 'ok',
      mssp_admin: 'ok',
      analyst: 403,
      ...MSSP_DENIED,
      impersonation: 'ok',
    },
  },
  'GET /api/mssp/tenants/{A}/incidents': {
    method: 'GET',
    path: () => `/api/mssp/tenants/${tenantA}/incidents`,
    expect: {
      platform_admin: 'ok',
      mssp_admin: 'ok',
      analyst: 'ok',
      ...MSSP_DENIED,
      impersonation: 'ok',
    },
  },
  'POST /api/mssp/tenants/{A}/reviews/{missing}:approve': {
    method: 'POST',
    path: () => `/api/mssp/tenants/${tenantA}/reviews/00000000-0000-4000-8000-000000000000:approve`,
    body: () => ({ note: 'matrix' }),
    expect: {
      platform_admin: 404,
      mssp_admin: 404,
      analyst: 404,
      ...MSSP_DENIED,
      impersonation: 404,
    },
  },
  'POST /api/mssp/users/{analyst}/password/reset': {
    method: 'POST',
    path: () => `/api/mssp/users/${resetTarget}/password/reset`,
    expect: {
      platform_admin: 'ok',
      mssp_admin: 403,
      analyst: 403,
      ...MSSP_DENIED,
      impersonation: 403,
    },
  },
};

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
  pendingTenant = await createTenant(db.pools.app, 'still-pending');
  await db.pools.mssp.query(`UPDATE tenants SET state = 'active' WHERE id = $1`, [tenantA]);
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
  await db.pools.mssp.query(
    `UPDATE sessions SET idle_expiry = now() - interval '1 minute'
      WHERE user_id = (SELECT id FROM users WHERE email = 'expired@mssp.test')`,
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
  const impersonation = await fetch(`${api.url}/api/mssp/impersonate/${tenantA}`, {
    method: 'POST',
    headers: {
      origin: api.origin,
      'content-type': 'application/json',
      ...credentials.get('mssp_admin'),
    },
    body: JSON.stringify({ reason: 'matrix setup' }),
  });
  const token = ((await impersonation.json()) as { token: string }).token;
  credentials.set('impersonation', { authorization: `Bearer ${token}` });
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
      await res.arrayBuffer();
      const expected = row.expect[principal];
      const ok =
        expected === 'ok' ? res.status >= 200 && res.status < 300 : res.status === expected;
      if (!ok) mismatches.push(`${name} as ${principal}: expected ${expected}, got ${res.status}`);
    }
  }
  assert.deepEqual(mismatches, []);
});
