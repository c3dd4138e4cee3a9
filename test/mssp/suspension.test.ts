import assert from 'node:assert/strict';
import { after, before, test } from 'node:test';
import { setTimeout as sleep } from 'node:timers/promises';
import { createSvcClient, type SvcClient } from '../../contracts/index.ts';
import { CREDENTIAL_RECHECK_MS } from '../../src/domains/sessions/credential-watch.ts';
import { loadChartCatalog } from '../../src/orchestrator/catalog.ts';
import { DEFAULT_EDGE_PORT_BASE, DEFAULT_TIMING } from '../../src/orchestrator/context.ts';
import { SYSTEM_VERSION } from '../../src/orchestrator/runtime.ts';
import { appendNote, openStream } from '../events/support.ts';
import { checkpoint, postAlerts, wazuhAlert, written } from '../internal/ingest-support.ts';
import { adapterToken, auditRows, bearer, issue, setState } from '../internal/support.ts';
import {
  impersonating,
  problemCode,
  seedUser,
  startTestApi,
  type TestApi,
} from '../support/api.ts';
import { waitUntil } from '../support/cluster.ts';
import { createTestDatabase, type TestDatabase } from '../support/database.ts';
import { createTenant } from '../support/fixtures.ts';
import { signedInAs, TEST_HASH_PARAMS, TEST_PASSWORD } from '../support/sign-in.ts';

/**
 * Issue 15 "Suspension", the API's half: the state machine, who may, what a refusal leaves
 * behind (nothing), and what a suspension shuts out (adapter, customers) or keeps (MSSP reads).
 * The data plane's half runs against the cluster in test/provisioning/suspension.test.ts.
 */

let db: TestDatabase;
let api: TestApi;
let admin: SvcClient;

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
  admin = await signedInAs({ db, api }, 'mssp_admin');
});

after(async () => {
  await api.close();
  await db.drop();
});

async function activeTenant(slug: string): Promise<string> {
  const id = await createTenant(db.pools.app, slug);
  await setState(db, id, 'active');
  return id;
}

/** Everything a refused call could have written about the tenant. */
async function footprint(tenantId: string) {
  const { rows } = await db.pools.mssp.query<Record<string, unknown>>(
    `SELECT t.state, t.data_plane,
            (SELECT count(*) FROM tenant_lifecycle_events l WHERE l.tenant_id = t.id)::int AS lifecycle,
            (SELECT count(*) FROM audit_log a WHERE a.tenant_id = t.id)::int AS audit,
            (SELECT count(*) FROM sessions s WHERE s.revoked_at IS NOT NULL
               AND s.user_id IN (SELECT id FROM users u WHERE u.tenant_id = t.id))::int AS revoked
       FROM tenants t WHERE t.id = $1`,
    [tenantId],
  );
  return rows[0];
}

function customerClient(): SvcClient {
  return createSvcClient({ baseUrl: api.url, headers: { origin: api.origin } });
}

test('issue 15 :suspend moves an active tenant to suspended with its lifecycle event, audit row and reason, and revokes its customers’ sessions in the same transaction', async () => {
  const id = await activeTenant('sus-main');
  const email = 'viewer@sus-main.test';
  const customer = await signedInAs({ db, api }, 'customer_viewer', { email, tenantId: id });
  assert.equal((await customer.tenant.overview()).status, 200);

  const res = await admin.mssp.suspend({
    params: { tenant_id: id },
    body: { reason: 'invoice 2026-11 unpaid' },
  });
  assert.equal(res.status, 200, JSON.stringify(res.body));
  assert.equal(res.status === 200 && res.body.tenant.state, 'suspended');

  const { rows: transitions } = await db.pools.mssp.query(
    `SELECT from_state, to_state, actor, details FROM tenant_lifecycle_events
      WHERE tenant_id = $1 AND kind = 'transition'`,
    [id],
  );
  assert.equal(transitions.length, 1);
  assert.deepEqual(
    { ...transitions[0], actor: transitions[0].actor.startsWith('user:') },
    {
      from_state: 'active',
      to_state: 'suspended',
      actor: true,
      details: { trigger: 'suspend', reason: 'invoice 2026-11 unpaid' },
    },
  );
  const audit = (await auditRows(db, id)).filter((r) => r.action === 'tenant.suspend');
  assert.equal(audit.length, 1);
  assert.deepEqual(
    [audit[0]?.actor_principal, audit[0]?.before, audit[0]?.after, audit[0]?.details],
    [
      'User',
      { state: 'active' },
      { state: 'suspended' },
      { reason: 'invoice 2026-11 unpaid', revoked_sessions: 1 },
    ],
  );

  // The customer's pre-suspend cookie is dead, and signing in again is refused with the code.
  const stale = await customer.tenant.overview();
  assert.deepEqual([stale.status, problemCode(stale)], [401, 'session_expired']);
  const again = await customerClient().auth.login({ body: { email, password: TEST_PASSWORD } });
  assert.deepEqual([again.status, problemCode(again)], [403, 'tenant_suspended']);

  // The MSSP still reads the tenant.
  assert.equal((await admin.mssp.getTenant({ params: { tenant_id: id } })).status, 200);
  assert.equal((await admin.mssp.tenantIncidents({ params: { tenant_id: id } })).status, 200);
  const listed = await admin.mssp.listTenants({ query: { state: 'suspended' } });
  assert.equal(listed.status, 200);
  assert.ok(listed.status === 200 && listed.body.items.some((t) => t.id === id));
});

test('issue 15 :resume moves a suspended tenant back to active, audited as tenant.resume; its customers can sign in again', async () => {
  const id = await activeTenant('sus-resume');
  const email = 'viewer@sus-resume.test';
  await seedUser(db, api.hasher, {
    email,
    role: 'customer_viewer',
    tenantId: id,
    password: TEST_PASSWORD,
  });
  assert.equal((await admin.mssp.suspend({ params: { tenant_id: id }, body: {} })).status, 200);
  const res = await admin.mssp.resume({ params: { tenant_id: id }, body: { reason: 'paid' } });
  assert.equal(res.status, 200, JSON.stringify(res.body));
  assert.equal(res.status === 200 && res.body.tenant.state, 'active');

  const audit = (await auditRows(db, id)).filter((r) => r.action.startsWith('tenant.'));
  assert.deepEqual(
    audit.map((r) => [r.action, r.before, r.after, r.details]),
    [
      ['tenant.suspend', { state: 'active' }, { state: 'suspended' }, { revoked_sessions: 0 }],
      [
        'tenant.resume',
        { state: 'suspended' },
        { state: 'active' },
        { reason: 'paid', requeued_jobs: 0 },
      ],
    ],
  );
  const signIn = await customerClient().auth.login({ body: { email, password: TEST_PASSWORD } });
  assert.equal(signIn.status, 200);
});

test('issue 15 customer sign-in of a suspended tenant: 403 tenant_suspended only with the right password (audited), the usual 401 otherwise, no session either way', async () => {
  const id = await activeTenant('sus-login');
  const email = 'viewer@sus-login.test';
  const userId = await seedUser(db, api.hasher, {
    email,
    role: 'customer_viewer',
    tenantId: id,
    password: TEST_PASSWORD,
  });
  await admin.mssp.suspend({ params: { tenant_id: id }, body: {} });
  const wrong = await customerClient().auth.login({
    body: { email, password: 'not the password at all' },
  });
  assert.deepEqual([wrong.status, problemCode(wrong)], [401, 'invalid_credentials']);
  const right = await customerClient().auth.login({ body: { email, password: TEST_PASSWORD } });
  assert.deepEqual([right.status, problemCode(right)], [403, 'tenant_suspended']);

  const { rows: sessions } = await db.pools.mssp.query(
    'SELECT 1 FROM sessions WHERE user_id = $1',
    [userId],
  );
  assert.equal(sessions.length, 0, 'no session was created');
  const failures = (await auditRows(db, id))
    .filter((r) => r.action === 'auth.login.failure')
    .map((r) => r.details.reason);
  assert.deepEqual(failures, ['bad_password', 'tenant_suspended']);
});

test('issue 15 the adapter of a suspended tenant: heartbeat, alerts, checkpoint, config and token exchange answer 403 tenant_suspended and write nothing', async () => {
  const id = await activeTenant('sus-adapter');
  const { secret } = await issue(db, id);
  const token = await adapterToken(api, id);
  await admin.mssp.suspend({ params: { tenant_id: id }, body: {} });
  const before = await written(db, id);
  const beats = async () =>
    (await db.pools.mssp.query('SELECT 1 FROM adapter_heartbeats WHERE tenant_id = $1', [id])).rows
      .length;

  const call = async (method: string, path: string, body?: unknown, auth = true) => {
    const res = await fetch(`${api.url}/api/internal/adapter/${path}`, {
      method,
      headers: {
        ...(auth ? bearer(token) : {}),
        ...(body === undefined ? {} : { 'content-type': 'application/json' }),
      },
      body: body === undefined ? null : JSON.stringify(body),
    });
    const problem = (await res.json()) as { code?: string };
    return [res.status, problem.code];
  };
  assert.deepEqual(await call('POST', 'health', { version: '0.1.0' }), [403, 'tenant_suspended']);
  const batch = { alerts: [wazuhAlert()], checkpoint: checkpoint(1) };
  const alerts = await postAlerts(api, token, batch);
  assert.deepEqual([alerts.status, alerts.body.code], [403, 'tenant_suspended']);
  assert.deepEqual(await call('GET', 'checkpoint'), [403, 'tenant_suspended']);
  assert.deepEqual(await call('GET', 'config'), [403, 'tenant_suspended']);
  assert.deepEqual(await call('POST', 'bootstrap', { tenant_id: id, credential: secret }, false), [
    403,
    'tenant_suspended',
  ]);
  // A wrong credential learns nothing about the suspension.
  assert.deepEqual(
    await call('POST', 'bootstrap', { tenant_id: id, credential: 'x'.repeat(43) }, false),
    [401, 'invalid_bootstrap_credential'],
  );

  assert.deepEqual(await written(db, id), before, 'no event, group or checkpoint');
  assert.equal(await beats(), 0, 'no heartbeat recorded');
  const bootstraps = (await auditRows(db, id)).filter((r) => r.action === 'adapter.bootstrap');
  assert.equal(bootstraps.length, 0, 'no token minted');

  // Resumed: the same token is accepted again.
  await admin.mssp.resume({ params: { tenant_id: id }, body: {} });
  assert.equal((await postAlerts(api, token, batch)).status, 200);
  assert.deepEqual((await call('POST', 'health', { version: '0.1.0' }))[0], 200);
});

test('issue 15 roles: analyst 403, impersonation tokens 403, unknown tenant 404; nothing written', async () => {
  const id = await activeTenant('sus-roles');
  const before = await footprint(id);
  const analyst = await signedInAs({ db, api }, 'analyst');
  for (const res of [
    await analyst.mssp.suspend({ params: { tenant_id: id }, body: {} }),
    await analyst.mssp.resume({ params: { tenant_id: id }, body: {} }),
  ]) {
    assert.deepEqual([res.status, problemCode(res)], [403, 'forbidden']);
  }
  const acting = await impersonating(api, admin, id, 'suspension test');
  const viaToken = await acting.mssp.suspend({ params: { tenant_id: id }, body: {} });
  assert.deepEqual([viaToken.status, problemCode(viaToken)], [403, 'outside_impersonated_tenant']);
  // The impersonation mint itself wrote an audit row; the refusals wrote nothing more.
  const after = await footprint(id);
  assert.deepEqual(
    { ...after, audit: Number(after?.audit) - 1 },
    before,
    'state, lifecycle, audit unchanged',
  );

  const missing = '00000000-0000-4000-8000-000000000000';
  for (const res of [
    await admin.mssp.suspend({ params: { tenant_id: missing }, body: {} }),
    await admin.mssp.resume({ params: { tenant_id: missing }, body: {} }),
  ]) {
    assert.deepEqual([res.status, problemCode(res)], [404, 'tenant_not_found']);
  }
});

test('issue 15 409 invalid_state from every state the transition does not start from; nothing written', async () => {
  const wrongForSuspend = [
    'pending',
    'provisioning',
    'suspended',
    'decommissioning',
    'soft-deleted',
  ];
  for (const state of wrongForSuspend) {
    const id = await createTenant(db.pools.app, `sus-from-${state}`);
    await db.pools.mssp.query(
      `UPDATE tenants SET state = $2,
              deleted_at = CASE WHEN $2 = 'soft-deleted' THEN now() ELSE NULL END WHERE id = $1`,
      [id, state],
    );
    const before = await footprint(id);
    const res = await admin.mssp.suspend({ params: { tenant_id: id }, body: {} });
    assert.deepEqual([res.status, problemCode(res)], [409, 'invalid_state'], `suspend ${state}`);
    assert.equal((res.body as { state?: string }).state, state);
    if (state !== 'suspended') {
      const resumed = await admin.mssp.resume({ params: { tenant_id: id }, body: {} });
      assert.deepEqual([resumed.status, problemCode(resumed)], [409, 'invalid_state']);
    }
    assert.deepEqual(await footprint(id), before, `nothing written for ${state}`);
  }
  const active = await activeTenant('sus-from-active');
  const before = await footprint(active);
  const res = await admin.mssp.resume({ params: { tenant_id: active }, body: {} });
  assert.deepEqual([res.status, problemCode(res)], [409, 'invalid_state']);
  assert.deepEqual(await footprint(active), before);
});

test('issue 15 bad bodies: 400 validation_failed (empty, too long, unknown field), 415 without JSON; nothing written', async () => {
  const id = await activeTenant('sus-body');
  const before = await footprint(id);
  for (const body of [
    { reason: '' },
    { reason: 'x'.repeat(501) },
    { reason: 'ok', force: true },
    { reason: 42 },
  ]) {
    const res = await admin.mssp.suspend({
      params: { tenant_id: id },
      body: body as { reason?: string },
    });
    assert.deepEqual(
      [res.status, problemCode(res)],
      [400, 'validation_failed'],
      JSON.stringify(body),
    );
  }
  const raw = await fetch(`${api.url}/api/mssp/tenants/${id}:suspend`, {
    method: 'POST',
    headers: { origin: api.origin, cookie: await adminCookie() },
  });
  assert.deepEqual(
    [raw.status, ((await raw.json()) as { code: string }).code],
    [415, 'unsupported_media_type'],
  );
  assert.deepEqual(await footprint(id), before);
  // The longest reason is taken whole.
  const longest = await admin.mssp.suspend({
    params: { tenant_id: id },
    body: { reason: 'r'.repeat(500) },
  });
  assert.equal(longest.status, 200);
});

/** An mssp_admin's session cookie, for a raw request the SDK would not send (no body). */
async function adminCookie(): Promise<string> {
  const email = 'raw-admin@mssp.test';
  await seedUser(db, api.hasher, { email, role: 'mssp_admin', password: TEST_PASSWORD });
  const res = await fetch(`${api.url}/api/auth/login`, {
    method: 'POST',
    headers: { origin: api.origin, 'content-type': 'application/json' },
    body: JSON.stringify({ email, password: TEST_PASSWORD }),
  });
  return (res.headers.get('set-cookie') ?? '').split(';')[0] ?? '';
}

test('issue 15 a suspended tenant cannot be upgraded (409 invalid_state) and a tenant with an upgrade pending cannot be suspended (409 upgrade_in_progress); nothing written', async () => {
  const suspended = await activeTenant('sus-upgrade');
  await admin.mssp.suspend({ params: { tenant_id: suspended }, body: {} });
  const before = await footprint(suspended);
  const upgrade = await admin.mssp.upgrade({
    params: { tenant_id: suspended },
    body: { tenant_chart_version: '0.1.0' },
  });
  assert.deepEqual([upgrade.status, problemCode(upgrade)], [409, 'invalid_state']);
  assert.deepEqual(await footprint(suspended), before);

  const upgrading = await activeTenant('sus-upgrading');
  await db.pools.mssp.query(`UPDATE tenants SET upgrade_target = '0.1.0' WHERE id = $1`, [
    upgrading,
  ]);
  const beforeSuspend = await footprint(upgrading);
  const res = await admin.mssp.suspend({ params: { tenant_id: upgrading }, body: {} });
  assert.deepEqual([res.status, problemCode(res)], [409, 'upgrade_in_progress']);
  assert.deepEqual(await footprint(upgrading), beforeSuspend);
});

test('issue 15 a suspended tenant can still be decommissioned, with the grace period', async () => {
  const id = await activeTenant('sus-leave');
  await admin.mssp.suspend({ params: { tenant_id: id }, body: {} });
  const res = await admin.mssp.decommission({ params: { tenant_id: id } });
  assert.equal(res.status, 200);
  assert.equal(res.status === 200 && res.body.tenant.state, 'decommissioning');
  const { rows } = await db.pools.mssp.query<{ grace: boolean }>(
    'SELECT decommission_at > now() AS grace FROM tenants WHERE id = $1',
    [id],
  );
  assert.equal(rows[0]?.grace, true);
});

test('issue 15 a customer’s open event stream ends once the suspension revokes the session (within the credential re-check)', {
  timeout: 60_000,
}, async () => {
  const id = await activeTenant('sus-stream');
  const email = 'viewer@sus-stream.test';
  await seedUser(db, api.hasher, {
    email,
    role: 'customer_viewer',
    tenantId: id,
    password: TEST_PASSWORD,
  });
  const signIn = await fetch(`${api.url}/api/auth/login`, {
    method: 'POST',
    headers: { origin: api.origin, 'content-type': 'application/json' },
    body: JSON.stringify({ email, password: TEST_PASSWORD }),
  });
  const cookie = (signIn.headers.get('set-cookie') ?? '').split(';')[0] ?? '';
  const subscribers = api.events.status().subscribers;
  const abort = new AbortController();
  const stream = await fetch(`${api.url}/api/tenant/events`, {
    headers: { cookie },
    signal: abort.signal,
  });
  assert.equal(stream.status, 200);
  const reader = stream.body?.getReader();
  assert.ok(reader);
  await waitUntil('the stream subscribed', async () =>
    api.events.status().subscribers > subscribers ? true : undefined,
  );

  const started = Date.now();
  assert.equal((await admin.mssp.suspend({ params: { tenant_id: id }, body: {} })).status, 200);
  const bound = 3 * CREDENTIAL_RECHECK_MS;
  const ended = new Promise<boolean>((resolve) => {
    const pump = (): void => {
      reader
        .read()
        .then((chunk) => (chunk.done ? resolve(true) : pump()))
        .catch(() => resolve(true));
    };
    pump();
  });
  const outcome = await Promise.race([ended, sleep(bound).then(() => false)]);
  abort.abort();
  assert.equal(outcome, true, `the stream ended within ${bound} ms`);
  assert.ok(Date.now() - started < bound);
  await waitUntil('the subscriber gone', async () =>
    api.events.status().subscribers === subscribers ? true : undefined,
  );
});

test('issue 15 proxy mode: a suspended tenant’s customer loses an open event stream within the re-check (revoked, tenant_suspended); another tenant’s stream carries on', {
  timeout: 60_000,
}, async () => {
  // Proxy mode has no session for the suspension to revoke: the credential watch must notice
  // the tenant's state itself, or the stream would keep delivering for as long as it is open.
  const proxy = await startTestApi(db, {
    mode: 'proxy',
    trustedProxyCidrs: ['127.0.0.0/8'],
    hash: { params: TEST_HASH_PARAMS },
  });
  const opened = new Set<() => void>();
  try {
    const [a, b] = [await activeTenant('sus-proxy-sse-a'), await activeTenant('sus-proxy-sse-b')];
    for (const [tenantId, email] of [
      [a, 'viewer@sus-proxy-sse-a.test'],
      [b, 'viewer@sus-proxy-sse-b.test'],
    ] as const) {
      await seedUser(db, api.hasher, { email, role: 'customer_viewer', tenantId });
    }
    const before = proxy.events.status().subscribers;
    const open = (email: string) =>
      openStream(`${proxy.url}/api/tenant/events`, { 'X-Forwarded-Email': email }, opened);
    const streamA = await open('viewer@sus-proxy-sse-a.test');
    const streamB = await open('viewer@sus-proxy-sse-b.test');
    await waitUntil('both streams subscribed', async () =>
      proxy.events.status().subscribers === before + 2 ? true : undefined,
    );
    const bound = 3 * CREDENTIAL_RECHECK_MS;
    const shown = await appendNote(db.app, a, 'before the suspension');
    assert.equal((await streamA.next(bound))?.id, shown.id);

    assert.equal((await admin.mssp.suspend({ params: { tenant_id: a }, body: {} })).status, 200);
    let block = await streamA.next(bound);
    // An event committed before the pass noticed may still arrive; it carries an id.
    while (block?.id !== undefined) block = await streamA.next(bound);
    assert.deepEqual(block, {
      event: 'revoked',
      data: JSON.stringify({ reason: 'tenant_suspended' }),
    });
    await appendNote(db.app, a, 'after the suspension');
    assert.equal(await streamA.next(bound), undefined, 'the stream is closed');

    const carried = await appendNote(db.app, b, 'the other tenant');
    assert.equal((await streamB.next(bound))?.id, carried.id, 'B still receives its events');
  } finally {
    for (const close of opened) close();
    await proxy.close();
  }
});

test('issue 15 proxy mode: a customer of a suspended tenant is refused on every request (403 tenant_suspended), MSSP staff are not', async () => {
  const proxy = await startTestApi(db, {
    mode: 'proxy',
    trustedProxyCidrs: ['127.0.0.0/8'],
    hash: { params: TEST_HASH_PARAMS },
  });
  try {
    const id = await activeTenant('sus-proxy');
    await seedUser(db, api.hasher, {
      email: 'viewer@sus-proxy.test',
      role: 'customer_viewer',
      tenantId: id,
    });
    await seedUser(db, api.hasher, { email: 'analyst@sus-proxy.test', role: 'analyst' });
    const as = (email: string, path: string) =>
      fetch(`${proxy.url}${path}`, { headers: { 'X-Forwarded-Email': email } });
    assert.equal((await as('viewer@sus-proxy.test', '/api/tenant/overview')).status, 200);

    await admin.mssp.suspend({ params: { tenant_id: id }, body: {} });
    const refused = await as('viewer@sus-proxy.test', '/api/tenant/overview');
    assert.deepEqual(
      [refused.status, ((await refused.json()) as { code: string }).code],
      [403, 'tenant_suspended'],
    );
    const staff = await as('analyst@sus-proxy.test', `/api/mssp/tenants/${id}/incidents`);
    assert.equal(staff.status, 200);

    await admin.mssp.resume({ params: { tenant_id: id }, body: {} });
    assert.equal((await as('viewer@sus-proxy.test', '/api/tenant/overview')).status, 200);
  } finally {
    await proxy.close();
  }
});
