import assert from 'node:assert/strict';
import { after, before, test } from 'node:test';
import {
  LAST_SEEN_THROTTLE_MS,
  SESSION_IDLE_MS,
} from '../../src/domains/sessions/session-repository.ts';
import { client, seedUser, startTestApi, type TestApi } from '../support/api.ts';
import { createTestDatabase, type TestDatabase } from '../support/database.ts';
import { createTenant } from '../support/fixtures.ts';
import { TEST_HASH_PARAMS } from '../support/sign-in.ts';

let db: TestDatabase;
let api: TestApi;
let tenant: string;
const PASSWORD = 'correct horse battery';
const MINUTE = 60_000;

before(async () => {
  db = await createTestDatabase();
  api = await startTestApi(db, {
    hash: { params: TEST_HASH_PARAMS },
    auth: { loginRateLimitPerEmail: 1000, loginRateLimitPerIp: 1000 },
  });
  tenant = await createTenant(db.pools.app);
});
after(async () => {
  await api.close();
  await db.drop();
});

let n = 0;
async function viewer() {
  n++;
  const email = `viewer-${n}@acme.test`;
  const id = await seedUser(db, api.hasher, {
    email,
    role: 'customer_viewer',
    tenantId: tenant,
    password: PASSWORD,
  });
  return { id, email };
}

test('§5.4.3 ten consecutive failures lock the account for 15 minutes, even against the right password', async () => {
  const user = await viewer();
  const browser = client(api);
  for (let i = 1; i <= 9; i++) {
    const res = await browser.login(user.email, `wrong password ${i}`);
    assert.equal(res.status, 401, `attempt ${i}`);
  }
  const tenth = await browser.login(user.email, 'wrong password 10');
  assert.equal(tenth.status, 423);
  assert.equal(tenth.body.code, 'account_locked');
  const unlockAt = new Date(String(tenth.body.unlock_at));
  assert.equal(unlockAt.getTime(), api.clock.now().getTime() + 15 * MINUTE);

  const right = await browser.login(user.email, PASSWORD);
  assert.deepEqual(
    [right.status, right.body.code, right.body.unlock_at],
    [423, 'account_locked', tenth.body.unlock_at],
  );
  assert.equal(right.headers.get('set-cookie'), null);

  const audit = await db.pools.mssp.query<{
    action: string;
    actor_id: string;
    tenant_id: string;
    reason: string | null;
  }>(
    `SELECT action, actor_id, tenant_id, details->>'reason' AS reason FROM audit_log
      WHERE resource_id = $1 ORDER BY "timestamp", action`,
    [user.id],
  );
  const lockouts = audit.rows.filter((r) => r.action === 'auth.lockout.triggered');
  assert.deepEqual(lockouts, [
    { action: 'auth.lockout.triggered', actor_id: 'system:auth', tenant_id: tenant, reason: null },
  ]);
  const reasons = audit.rows.filter((r) => r.action === 'auth.login.failure').map((r) => r.reason);
  assert.deepEqual(reasons, [...Array(10).fill('bad_password'), 'locked']);

  api.clock.advance(15 * MINUTE + 1000);
  const later = await browser.login(user.email, PASSWORD);
  assert.equal(later.status, 200);
  const { rows } = await db.pools.mssp.query(
    'SELECT consecutive_failures, locked_until FROM password_credentials WHERE user_id = $1',
    [user.id],
  );
  assert.deepEqual(rows, [{ consecutive_failures: 0, locked_until: null }]);
});

test('§3.3 failures spread over more than 15 minutes do not lock', async () => {
  const user = await viewer();
  for (let i = 0; i < 9; i++) await client(api).login(user.email, 'wrong wrong wrong');
  api.clock.advance(16 * MINUTE);
  for (let i = 0; i < 5; i++) {
    assert.equal((await client(api).login(user.email, 'wrong wrong wrong')).status, 401);
  }
  assert.equal((await client(api).login(user.email, PASSWORD)).status, 200);
});

test('§3.3 a success resets the failure counter', async () => {
  const user = await viewer();
  for (let i = 0; i < 9; i++) await client(api).login(user.email, 'wrong wrong wrong');
  assert.equal((await client(api).login(user.email, PASSWORD)).status, 200);
  for (let i = 0; i < 9; i++) {
    assert.equal((await client(api).login(user.email, 'wrong wrong wrong')).status, 401);
  }
});

test('§9.5.6 idle expiry: a session unused for 30 minutes is rejected and its row kept', async () => {
  const user = await viewer();
  const browser = client(api);
  await browser.login(user.email, PASSWORD);
  api.clock.advance(SESSION_IDLE_MS - 1000);
  assert.equal(
    (await browser.call('GET', '/api/auth/me')).status,
    200,
    'activity just before idle expiry',
  );
  api.clock.advance(SESSION_IDLE_MS - 1000);
  assert.equal((await browser.call('GET', '/api/auth/me')).status, 200, 'the idle window slid');
  api.clock.advance(SESSION_IDLE_MS + 1000);
  const expired = await browser.call('GET', '/api/auth/me');
  assert.deepEqual([expired.status, expired.body.code], [401, 'session_expired']);
  const { rows } = await db.pools.mssp.query('SELECT revoked_at FROM sessions WHERE user_id = $1', [
    user.id,
  ]);
  assert.deepEqual(rows, [{ revoked_at: null }], 'expired, not deleted, not revoked');
});

test('§9.5.6 absolute expiry: 12 hours after login the session ends however active it was', async () => {
  const user = await viewer();
  const browser = client(api);
  await browser.login(user.email, PASSWORD);
  for (let elapsed = 0; elapsed < 12 * 60; elapsed += 20) {
    assert.equal((await browser.call('GET', '/api/auth/me')).status, 200, `at ${elapsed} min`);
    api.clock.advance(20 * MINUTE);
  }
  const expired = await browser.call('GET', '/api/auth/me');
  assert.deepEqual([expired.status, expired.body.code], [401, 'session_expired']);
  assert.equal(
    (await db.pools.mssp.query('SELECT 1 FROM sessions WHERE user_id = $1', [user.id])).rowCount,
    1,
  );
});

test('§5.5.3 last_seen_at is written at most once per 60 seconds', async () => {
  const user = await viewer();
  const browser = client(api);
  await browser.login(user.email, PASSWORD);
  const seen = async () =>
    (
      await db.pools.mssp.query<{ t: Date }>(
        'SELECT last_seen_at AS t FROM sessions WHERE user_id = $1',
        [user.id],
      )
    ).rows[0]?.t.getTime();
  const start = await seen();
  api.clock.advance(LAST_SEEN_THROTTLE_MS - 5000);
  await browser.call('GET', '/api/auth/me');
  assert.equal(await seen(), start, 'not written within 60 s');
  api.clock.advance(10_000);
  await browser.call('GET', '/api/auth/me');
  assert.equal(await seen(), api.clock.now().getTime(), 'written after 60 s');
});
