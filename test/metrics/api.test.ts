import assert from 'node:assert/strict';
import { randomUUID } from 'node:crypto';
import { after, before, test } from 'node:test';
import { setTimeout as sleep } from 'node:timers/promises';
import { LOCKOUT_THRESHOLD } from '../../src/domains/sessions/session-service.ts';
import type { MetricsListener } from '../../src/metrics/server.ts';
import { checkpoint, postAlerts, wazuhAlert, written } from '../internal/ingest-support.ts';
import { adapterToken, setState } from '../internal/support.ts';
import { client, problemCode, seedUser, startTestApi, type TestApi } from '../support/api.ts';
import { createTestDatabase, type TestDatabase } from '../support/database.ts';
import { createTenant } from '../support/fixtures.ts';
import { TEST_HASH_PARAMS, TEST_PASSWORD } from '../support/sign-in.ts';
import { delta, metricsListener, type Scrape, scrape } from './support.ts';

// Issue 15 "Metrics" over the real API and PostgreSQL: HTTP requests by route template, sign-ins
// by outcome, lockouts, rate-limit rejections, live sessions, SSE subscribers, tenants by state
// and ingest. Each metric is scraped through the metrics listener before and after a real
// request, and its exact delta asserted.

let db: TestDatabase;
let api: TestApi;
let listener: MetricsListener;
/** A second API (same database) whose per-address sign-in limit is 2, for the limiter. */
let strict: TestApi;
let strictListener: MetricsListener;

before(async () => {
  db = await createTestDatabase();
  api = await startTestApi(db, {
    hash: { params: TEST_HASH_PARAMS },
    env: { SVC_INGEST_RATE: '1', SVC_INGEST_BURST: '500' },
  });
  listener = await metricsListener(api.metrics);
  strict = await startTestApi(db, {
    hash: { params: TEST_HASH_PARAMS },
    env: { SVC_LOGIN_RATE_LIMIT_IP: '2' },
  });
  strictListener = await metricsListener(strict.metrics);
});
after(async () => {
  await listener.close();
  await strictListener.close();
  await api.close();
  await strict.close();
  await db.drop();
});

let n = 0;
async function user(
  role: 'mssp_admin' | 'customer_viewer',
  options: { tenantId?: string; mustChange?: boolean } = {},
): Promise<string> {
  n++;
  const email = `metrics-${role.replace('_', '-')}-${n}@example.test`;
  await seedUser(db, api.hasher, {
    email,
    role,
    tenantId: options.tenantId ?? null,
    password: TEST_PASSWORD,
    mustChange: options.mustChange ?? false,
  });
  return email;
}

async function eventually<T>(what: string, check: () => Promise<T | undefined>): Promise<T> {
  const deadline = Date.now() + 10_000;
  for (;;) {
    const value = await check();
    if (value !== undefined) return value;
    if (Date.now() > deadline) throw new Error(`timed out waiting for ${what}`);
    await sleep(50);
  }
}

const requests = (s: Scrape, labels: Record<string, string>) =>
  s.value('svc_http_requests_total', labels);
const latencyCount = (s: Scrape, labels: Record<string, string>) =>
  s.value('svc_http_request_duration_seconds_count', labels);

test('issue 15 metrics: HTTP requests and latency by route template, method and status; the raw URL never becomes a label', async () => {
  const tenant = await createTenant(db.pools.app);
  const admin = client(api);
  assert.equal((await admin.login(await user('mssp_admin'), TEST_PASSWORD)).status, 200);
  const template = { route: '/api/mssp/tenants/{tenant_id}', method: 'GET' };
  const stranger = randomUUID();

  const before = await scrape(listener);
  assert.equal((await fetch(`${api.url}/healthz`)).status, 200);
  assert.equal((await admin.call('GET', `/api/mssp/tenants/${tenant}`)).status, 200);
  assert.equal((await admin.call('GET', `/api/mssp/tenants/${stranger}`)).status, 404);
  // Refused by the authentication middleware: still the route the request was for.
  assert.equal((await fetch(`${api.url}/api/mssp/tenants/${tenant}`)).status, 401);
  // No route: one label for every unknown path, whatever the URL.
  assert.equal((await fetch(`${api.url}/api/no/such/${randomUUID()}`)).status, 404);
  assert.equal((await fetch(`${api.url}/api/mssp/no-such-${randomUUID()}`)).status, 401);
  const after = await scrape(listener);

  const moved = (labels: Record<string, string>) =>
    requests(after, labels) - requests(before, labels);
  assert.equal(moved({ route: '/healthz', method: 'GET', status: '200' }), 1);
  assert.equal(moved({ ...template, status: '200' }), 1);
  assert.equal(moved({ ...template, status: '404' }), 1);
  assert.equal(moved({ ...template, status: '401' }), 1);
  assert.equal(moved({ route: 'unmatched', method: 'GET', status: '404' }), 1);
  assert.equal(moved({ route: 'unmatched', method: 'GET', status: '401' }), 1);
  // Every request counted once in the histogram too, under the same labels.
  assert.equal(
    latencyCount(after, { ...template, status: '404' }) -
      latencyCount(before, { ...template, status: '404' }),
    1,
  );
  for (const sample of after.samples) {
    for (const value of Object.values(sample.labels)) {
      assert.ok(!value.includes(tenant) && !value.includes(stranger), `${sample.name} ${value}`);
    }
  }
  const routes = new Set(after.named('svc_http_requests_total').map((s) => s.labels.route ?? ''));
  for (const route of routes) assert.match(route, /^(unmatched|\/[^?]*)$/);
});

test('issue 15 metrics: /metrics is not on the API port (404), only on the metrics listener', async () => {
  const unmatched = { route: 'unmatched', method: 'GET', status: '404' };
  const moved = await delta(listener, 'svc_http_requests_total', unmatched, async () => {
    const res = await fetch(`${api.url}/metrics`);
    assert.equal(res.status, 404);
    assert.doesNotMatch(await res.text(), /svc_http_requests_total/);
  });
  assert.equal(moved, 1);
});

test('issue 15 metrics: sign-ins by outcome (success, must_change, failure, locked) and live sessions', async () => {
  const email = await user('mssp_admin');
  const fresh = await user('mssp_admin', { mustChange: true });
  const before = await scrape(listener);
  const browser = client(api);
  assert.equal((await browser.login(email, TEST_PASSWORD)).status, 200);
  assert.equal((await client(api).login(fresh, TEST_PASSWORD)).status, 200);
  assert.equal((await client(api).login(email, 'wrong password here')).status, 401);
  assert.equal((await client(api).login(`nobody-${n}@example.test`, TEST_PASSWORD)).status, 401);
  const middle = await scrape(listener);
  const moved = (outcome: string) =>
    middle.value('svc_sign_ins_total', { outcome }) -
    before.value('svc_sign_ins_total', { outcome });
  assert.deepEqual(
    ['success', 'must_change', 'failure', 'locked', 'error', 'refused'].map(moved),
    [1, 1, 2, 0, 0, 0],
  );
  assert.equal(middle.value('svc_sessions_live') - before.value('svc_sessions_live'), 2);

  // Signing out revokes the session: one fewer live.
  assert.equal((await browser.call('POST', '/api/auth/logout')).status, 204);
  const out = await scrape(listener);
  assert.equal(out.value('svc_sessions_live') - middle.value('svc_sessions_live'), -1);
  // An expired session stops counting without anyone revoking it (the API's clock moves).
  api.clock.advance(31 * 60 * 1000);
  const expired = await scrape(listener);
  assert.equal(expired.value('svc_sessions_live'), 0);
});

test('§5.4.3 / issue 15 metrics: the tenth failure counts one lockout; attempts on the locked account count as locked, the 21st is rate-limited by email', async () => {
  const email = await user('mssp_admin');
  const before = await scrape(listener);
  for (let i = 1; i < LOCKOUT_THRESHOLD; i++) {
    assert.equal((await client(api).login(email, 'not the password')).status, 401);
  }
  const nine = await scrape(listener);
  assert.equal(nine.value('svc_lockouts_total') - before.value('svc_lockouts_total'), 0);
  const tenth = await client(api).login(email, 'not the password');
  assert.deepEqual([tenth.status, problemCode(tenth)], [423, 'account_locked']);
  const locked = await scrape(listener);
  assert.equal(locked.value('svc_lockouts_total') - before.value('svc_lockouts_total'), 1);
  assert.equal(
    locked.value('svc_sign_ins_total', { outcome: 'failure' }) -
      before.value('svc_sign_ins_total', { outcome: 'failure' }),
    LOCKOUT_THRESHOLD - 1,
  );
  // Attempts 11-20 meet the lock (even with the right password); no second lockout.
  for (let i = 11; i <= 20; i++) {
    assert.equal((await client(api).login(email, TEST_PASSWORD)).status, 423);
  }
  const limited = await client(api).login(email, TEST_PASSWORD);
  assert.deepEqual([limited.status, problemCode(limited)], [429, 'rate_limited']);
  const after = await scrape(listener);
  assert.equal(after.value('svc_lockouts_total') - before.value('svc_lockouts_total'), 1);
  assert.equal(
    after.value('svc_sign_ins_total', { outcome: 'locked' }) -
      before.value('svc_sign_ins_total', { outcome: 'locked' }),
    1 + 10,
  );
  assert.equal(
    after.value('svc_rate_limited_total', { limiter: 'login_email' }) -
      before.value('svc_rate_limited_total', { limiter: 'login_email' }),
    1,
  );
  assert.equal(
    after.value('svc_http_requests_total', { route: '/api/auth/login', status: '429' }) -
      before.value('svc_http_requests_total', { route: '/api/auth/login', status: '429' }),
    1,
  );
  api.clock.advance(16 * 60 * 1000);
});

test('issue 15 metrics: a customer of a suspended tenant with the right password counts as refused, not success or failure', async () => {
  const tenant = await createTenant(db.pools.app);
  const email = await user('customer_viewer', { tenantId: tenant });
  await db.pools.mssp.query(`UPDATE tenants SET state = 'suspended' WHERE id = $1`, [tenant]);
  const before = await scrape(listener);
  const res = await client(api).login(email, TEST_PASSWORD);
  assert.deepEqual([res.status, problemCode(res)], [403, 'tenant_suspended']);
  const after = await scrape(listener);
  const moved = (outcome: string) =>
    after.value('svc_sign_ins_total', { outcome }) -
    before.value('svc_sign_ins_total', { outcome });
  assert.deepEqual(['refused', 'success', 'failure'].map(moved), [1, 0, 0]);
  assert.equal(after.value('svc_sessions_live'), before.value('svc_sessions_live'));
});

test('issue 15 metrics: a request refused by the per-address sign-in limit counts once under login_ip and reaches no sign-in', async () => {
  const email = await user('mssp_admin');
  const before = await scrape(strictListener);
  assert.equal((await client(strict).login(email, TEST_PASSWORD)).status, 200);
  assert.equal((await client(strict).login(email, TEST_PASSWORD)).status, 200);
  const third = await client(strict).login(email, TEST_PASSWORD);
  assert.deepEqual([third.status, problemCode(third)], [429, 'rate_limited']);
  const after = await scrape(strictListener);
  const moved = (name: string, labels: Record<string, string>) =>
    after.value(name, labels) - before.value(name, labels);
  assert.equal(moved('svc_rate_limited_total', { limiter: 'login_ip' }), 1);
  assert.equal(moved('svc_rate_limited_total', { limiter: 'login_email' }), 0);
  assert.equal(moved('svc_sign_ins_total', {}), 2);
  // Each API process keeps its own registry: the other one saw none of this.
  assert.equal(
    (await scrape(listener)).value('svc_rate_limited_total', { limiter: 'login_ip' }),
    0,
  );
});

test('issue 15 metrics: SSE subscribers rise while a stream is open and fall when it closes', async () => {
  const tenant = await createTenant(db.pools.app);
  const admin = client(api);
  assert.equal((await admin.login(await user('mssp_admin'), TEST_PASSWORD)).status, 200);
  const gauge = async () => (await scrape(listener)).value('svc_sse_subscribers');
  const idle = await gauge();
  const abort = new AbortController();
  const res = await fetch(`${api.url}/api/mssp/tenants/${tenant}/events`, {
    headers: { cookie: admin.cookie() ?? '', accept: 'text/event-stream' },
    signal: abort.signal,
  });
  assert.equal(res.status, 200);
  await eventually('one subscriber', async () => ((await gauge()) === idle + 1 ? true : undefined));
  abort.abort();
  await res.body?.cancel().catch(() => undefined);
  await eventually('no subscriber', async () => ((await gauge()) === idle ? true : undefined));
});

test('issue 15 metrics: tenants by state, every state present, counted at scrape time', async () => {
  const before = await scrape(listener);
  for (const state of [
    'pending',
    'provisioning',
    'active',
    'suspended',
    'decommissioning',
    'soft-deleted',
  ]) {
    assert.equal(
      before.named('svc_tenants').filter((s) => s.labels.state === state).length,
      1,
      state,
    );
  }
  const tenant = await createTenant(db.pools.app);
  const pending = await scrape(listener);
  assert.equal(
    pending.value('svc_tenants', { state: 'pending' }) -
      before.value('svc_tenants', { state: 'pending' }),
    1,
  );
  await setState(db, tenant, 'active');
  const active = await scrape(listener);
  assert.equal(
    active.value('svc_tenants', { state: 'pending' }),
    before.value('svc_tenants', { state: 'pending' }),
  );
  assert.equal(
    active.value('svc_tenants', { state: 'active' }) -
      before.value('svc_tenants', { state: 'active' }),
    1,
  );
  const { rows } = await db.pools.mssp.query<{ n: number }>(
    'SELECT count(*)::int AS n FROM tenants',
  );
  assert.equal(active.value('svc_tenants'), rows[0]?.n);
});

test('issue 15 metrics: ingest counts accepted, duplicate and refused alerts; a rate-limited batch counts under the ingest limiter', async () => {
  const tenant = await createTenant(db.pools.app);
  await setState(db, tenant, 'active');
  const token = await adapterToken(api, tenant);
  const alerts = (count: number) => Array.from({ length: count }, () => wazuhAlert({}));
  const before = await scrape(listener);
  const batch = alerts(3);
  const first = await postAlerts(api, token, { alerts: batch, checkpoint: checkpoint(1) });
  assert.deepEqual([first.status, first.body.accepted, first.body.duplicates], [200, 3, 0]);
  // Two already stored: the bucket (500, 1/s; the API's clock stands still) is charged for both.
  const again = await postAlerts(api, token, {
    alerts: batch.slice(0, 2),
    checkpoint: checkpoint(2),
  });
  assert.deepEqual([again.status, again.body.accepted, again.body.duplicates], [200, 0, 2]);
  const stored = await written(db, tenant);
  // 5 tokens of 500 spent: a batch of 496 does not fit and is refused whole.
  const limited = await postAlerts(api, token, { alerts: alerts(496), checkpoint: checkpoint(3) });
  assert.deepEqual([limited.status, problemCode(limited)], [429, 'ingest_rate_limited']);
  const invalid = await postAlerts(api, token, {
    alerts: [wazuhAlert({ timestamp: '2026-02-30T10:00:00Z' })],
    checkpoint: checkpoint(4),
  });
  // Refused by the service's rules (past the contract's schema), so counted.
  assert.deepEqual([invalid.status, problemCode(invalid)], [400, 'validation_failed']);
  assert.deepEqual(invalid.body.errors, [
    {
      path: '/alerts/0/timestamp',
      message: 'must be a real date and time between 1970 and 9999',
    },
  ]);
  assert.deepEqual(await written(db, tenant), stored);
  const after = await scrape(listener);
  const moved = (name: string, labels: Record<string, string>) =>
    after.value(name, labels) - before.value(name, labels);
  assert.equal(moved('svc_ingest_alerts_total', { outcome: 'accepted' }), 3);
  assert.equal(moved('svc_ingest_alerts_total', { outcome: 'duplicate' }), 2);
  assert.equal(moved('svc_ingest_alerts_total', { outcome: 'refused' }), 496 + 1);
  assert.equal(moved('svc_rate_limited_total', { limiter: 'ingest' }), 1);
  api.clock.advance(60_000);
});
