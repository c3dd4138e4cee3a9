import assert from 'node:assert/strict';
import { createHash } from 'node:crypto';
import { after, before, test } from 'node:test';
import { SESSION_ABSOLUTE_MS } from '../../src/domains/sessions/session-repository.ts';
import { client, seedUser, startTestApi, type TestApi } from '../support/api.ts';
import { createTestDatabase, type TestDatabase } from '../support/database.ts';
import { createTenant } from '../support/fixtures.ts';
import { TEST_HASH_PARAMS } from '../support/sign-in.ts';

let db: TestDatabase;
let api: TestApi;
let tenant: string;
let otherTenant: string;
const PASSWORD = 'correct horse battery';

before(async () => {
  db = await createTestDatabase();
  api = await startTestApi(db, { hash: { params: TEST_HASH_PARAMS } });
  tenant = await createTenant(db.pools.app, 'acme');
  otherTenant = await createTenant(db.pools.app, 'globex');
});
after(async () => {
  await api.close();
  await db.drop();
});

let n = 0;
async function user(
  role: 'platform_admin' | 'mssp_admin' | 'analyst' | 'customer_viewer',
  mustChange = false,
) {
  n++;
  const email = `${role}-${n}@example.test`;
  const id = await seedUser(db, api.hasher, {
    email,
    role,
    tenantId: role === 'customer_viewer' ? tenant : null,
    password: PASSWORD,
    mustChange,
  });
  return { id, email };
}

async function sessionRows(userId: string) {
  const { rows } = await db.pools.mssp.query<{
    id: string;
    revoked_at: Date | null;
    tenant_context: string | null;
  }>('SELECT id, revoked_at, tenant_context FROM sessions WHERE user_id = $1 ORDER BY created_at', [
    userId,
  ]);
  return rows;
}

async function auditActions(userId: string) {
  const { rows } = await db.pools.mssp.query<{
    action: string;
    actor_id: string;
    tenant_id: string | null;
    details: Record<string, unknown>;
  }>(
    `SELECT action, actor_id, tenant_id, details FROM audit_log WHERE resource_id = $1 ORDER BY "timestamp", action`,
    [userId],
  );
  return rows;
}

test('§9.5.6 login creates a session with tenant_context and sets the svc_session cookie exactly', async () => {
  const viewer = await user('customer_viewer');
  const res = await client(api).login(viewer.email, PASSWORD);
  assert.equal(res.status, 200);
  // The session cookie; the device cookie beside it is device-cookie.test.ts's.
  const cookie = res.headers.getSetCookie().find((c) => c.startsWith('svc_session=')) ?? '';
  const [pair, ...attributes] = cookie.split('; ');
  assert.match(pair ?? '', /^svc_session=[A-Za-z0-9_-]{22}$/);
  assert.deepEqual(attributes, [
    `Max-Age=${SESSION_ABSOLUTE_MS / 1000}`,
    'Path=/',
    'HttpOnly',
    'Secure',
    'SameSite=Lax',
  ]);
  const [session] = await sessionRows(viewer.id);
  assert.equal(session?.tenant_context, tenant);
  // Issue 10 item 7: the row keeps the SHA-256 of the cookie value, never the value itself.
  const stored = await db.pools.mssp.query<{ secret_hash: string }>(
    'SELECT secret_hash FROM sessions WHERE id = $1',
    [session?.id],
  );
  const cookieValue = pair?.split('=')[1] ?? '';
  assert.equal(stored.rows[0]?.secret_hash, createHash('sha256').update(cookieValue).digest('hex'));
  assert.equal(res.body.must_change, false);
  const identity = res.body.identity as Record<string, unknown>;
  assert.deepEqual(
    {
      role: identity.role,
      tenant_id: identity.tenant_id,
      user_type: identity.user_type,
      auth_mode: identity.auth_mode,
    },
    { role: 'customer_viewer', tenant_id: tenant, user_type: 'tenant', auth_mode: 'internal' },
  );
  assert.deepEqual(
    (await auditActions(viewer.id)).map((a) => [a.action, a.actor_id, a.tenant_id]),
    [['auth.login.success', viewer.id, tenant]],
  );
});

test('§3.2 each login makes a fresh session (no fixation) and GET /api/auth/me returns the identity', async () => {
  const analyst = await user('analyst');
  const browser = client(api);
  await browser.login(analyst.email, PASSWORD);
  const first = browser.cookie();
  await browser.login(analyst.email, PASSWORD);
  assert.notEqual(browser.cookie(), first);
  const me = await browser.call('GET', '/api/auth/me');
  assert.equal(me.status, 200);
  assert.equal((me.body.identity as { email: string }).email, analyst.email);
  assert.equal((await sessionRows(analyst.id)).length, 2);
});

test('§7 wrong password and unknown email get the same generic answer; the failure is counted and audited', async () => {
  const viewer = await user('customer_viewer');
  const wrong = await client(api).login(viewer.email, 'not the password at all');
  const unknown = await client(api).login('nobody@example.test', 'not the password at all');
  for (const res of [wrong, unknown]) {
    assert.equal(res.status, 401);
    assert.equal(res.body.code, 'invalid_credentials');
    assert.equal(res.body.title, 'Email or password is incorrect.');
    assert.equal(res.headers.get('set-cookie'), null);
  }
  const { rows } = await db.pools.mssp.query(
    'SELECT consecutive_failures FROM password_credentials WHERE user_id = $1',
    [viewer.id],
  );
  assert.deepEqual(rows, [{ consecutive_failures: 1 }]);
  const audit = await auditActions(viewer.id);
  assert.deepEqual(
    audit.map((a) => [a.action, a.tenant_id, a.details.reason]),
    [['auth.login.failure', tenant, 'bad_password']],
  );
  const anon = await db.pools.mssp.query(
    `SELECT actor_id, tenant_id, details->>'reason' AS reason FROM audit_log WHERE details->>'email' = 'nobody@example.test'`,
  );
  assert.deepEqual(anon.rows, [
    { actor_id: 'anonymous', tenant_id: null, reason: 'unknown_email' },
  ]);
});

test('§9.5.6 logout revokes only the current session', async () => {
  const analyst = await user('analyst');
  const laptop = client(api);
  const phone = client(api);
  await laptop.login(analyst.email, PASSWORD);
  await phone.login(analyst.email, PASSWORD);
  const out = await laptop.call('POST', '/api/auth/logout');
  assert.equal(out.status, 204);
  assert.equal(laptop.cookie(), undefined, 'the cookie is cleared');
  const sessions = await sessionRows(analyst.id);
  assert.equal(sessions.filter((s) => s.revoked_at !== null).length, 1);
  assert.equal((await phone.call('GET', '/api/auth/me')).status, 200);
  const logout = await db.pools.mssp.query(
    `SELECT resource_id FROM audit_log WHERE action = 'auth.logout' AND actor_id = $1`,
    [analyst.id],
  );
  assert.deepEqual(logout.rows, [{ resource_id: sessions.find((s) => s.revoked_at)?.id }]);
});

test('§9.5.6 a revoked session replayed is rejected, and its row is kept', async () => {
  const analyst = await user('analyst');
  const browser = client(api);
  await browser.login(analyst.email, PASSWORD);
  const stolen = browser.cookie();
  await browser.call('POST', '/api/auth/logout');
  browser.setCookie(stolen);
  const replay = await browser.call('GET', '/api/auth/me');
  assert.equal(replay.status, 401);
  assert.equal(replay.body.code, 'session_expired');
  assert.equal((await sessionRows(analyst.id)).length, 1);
});

test('§9.5.6 password change keeps only the current session', async () => {
  const analyst = await user('analyst');
  const here = client(api);
  const elsewhere = client(api);
  await here.login(analyst.email, PASSWORD);
  await elsewhere.login(analyst.email, PASSWORD);
  const changed = await here.call('POST', '/api/auth/password/change', {
    current_password: PASSWORD,
    new_password: 'a brand new passphrase',
  });
  assert.equal(changed.status, 200);
  assert.deepEqual(changed.body, { must_change: false, revoked_sessions: 1 });
  assert.equal((await here.call('GET', '/api/auth/me')).status, 200);
  assert.equal((await elsewhere.call('GET', '/api/auth/me')).status, 401);
  assert.equal((await client(api).login(analyst.email, PASSWORD)).status, 401);
  assert.equal((await client(api).login(analyst.email, 'a brand new passphrase')).status, 200);
  assert.ok((await auditActions(analyst.id)).some((a) => a.action === 'auth.password.changed'));
});

test('§5.4.2 password change: wrong current, same password, and the length limits', async () => {
  const analyst = await user('analyst');
  const browser = client(api);
  await browser.login(analyst.email, PASSWORD);
  const change = (current_password: string, new_password: string) =>
    browser.call('POST', '/api/auth/password/change', { current_password, new_password });
  const wrong = await change('nope nope nope', 'another long passphrase');
  assert.deepEqual([wrong.status, wrong.body.code], [403, 'current_password_incorrect']);
  const same = await change(PASSWORD, PASSWORD);
  assert.deepEqual([same.status, same.body.code], [400, 'password_unchanged']);
  const short = await change(PASSWORD, 'elevenchars');
  assert.deepEqual([short.status, short.body.code], [400, 'validation_failed']);
  assert.deepEqual(short.body.errors, [
    { path: '/new_password', message: 'must not have fewer than 12 characters' },
  ]);
  const long = await change(PASSWORD, 'x'.repeat(1025));
  assert.equal(long.status, 400);
  const extra = await browser.call('POST', '/api/auth/password/change', {
    current_password: PASSWORD,
    new_password: 'twelve chars',
    admin: true,
  });
  assert.deepEqual([extra.status, extra.body.code], [400, 'validation_failed']);
  const exactly12 = await change(PASSWORD, 'twelve chars');
  assert.equal(exactly12.status, 200);
  const hash = await db.pools.mssp.query(
    'SELECT password_hash FROM password_credentials WHERE user_id = $1',
    [analyst.id],
  );
  assert.ok((await api.hasher.verify(hash.rows[0]?.password_hash, 'twelve chars')).ok);
});

test("§9.5.6 admin reset revokes all of the target's sessions, forces must_change, shows the password once", async () => {
  const admin = await user('mssp_admin');
  const viewer = await user('customer_viewer');
  const adminBrowser = client(api);
  await adminBrowser.login(admin.email, PASSWORD);
  const v1 = client(api);
  const v2 = client(api);
  await v1.login(viewer.email, PASSWORD);
  await v2.login(viewer.email, PASSWORD);
  const reset = await adminBrowser.call('POST', `/api/mssp/users/${viewer.id}/password/reset`);
  assert.equal(reset.status, 200);
  assert.equal(reset.headers.get('cache-control'), 'no-store');
  assert.equal(reset.body.must_change, true);
  assert.equal(reset.body.revoked_sessions, 2);
  const generated = String(reset.body.password);
  assert.ok(generated.length >= 20);
  for (const b of [v1, v2]) assert.equal((await b.call('GET', '/api/auth/me')).status, 401);
  assert.equal((await client(api).login(viewer.email, PASSWORD)).status, 401);
  const fresh = client(api);
  const login = await fresh.login(viewer.email, generated);
  assert.equal(login.status, 200);
  assert.equal(login.body.must_change, true);
  assert.equal(login.body.next, '/account/password');
  const audit = await db.pools.mssp.query(
    `SELECT actor_id, tenant_id, details->>'target_tenant_id' AS target FROM audit_log
      WHERE action = 'auth.password.reset.admin' AND resource_id = $1`,
    [viewer.id],
  );
  // Filed under the customer's tenant, so the customer sees who reset their user.
  assert.deepEqual(audit.rows, [{ actor_id: admin.id, tenant_id: tenant, target: tenant }]);
  const gate = await db.pools.mssp.query(
    `SELECT 1 FROM audit_log WHERE actor_id = 'system:user.password_reset'`,
  );
  assert.ok(
    (gate.rowCount ?? 0) >= 1,
    'finding a user across tenants went through the System gate',
  );
});

test('§9.5.6 must_change blocks every endpoint but change-password, logout and me', async () => {
  const admin = await user('platform_admin', true);
  const target = await user('analyst');
  const browser = client(api);
  const login = await browser.login(admin.email, PASSWORD);
  assert.equal(login.body.must_change, true);
  const blocked = await browser.call('POST', `/api/mssp/users/${target.id}/password/reset`);
  assert.deepEqual(
    [blocked.status, blocked.body.code, blocked.body.next],
    [403, 'password_change_required', '/account/password'],
  );
  const other = await browser.call('GET', '/api/mssp/tenants');
  assert.equal(other.body.code, 'password_change_required');
  assert.equal((await browser.call('GET', '/api/auth/me')).status, 200);
  const changed = await browser.call('POST', '/api/auth/password/change', {
    current_password: PASSWORD,
    new_password: 'my own new passphrase',
  });
  assert.equal(changed.status, 200);
  assert.equal(
    (await browser.call('POST', `/api/mssp/users/${target.id}/password/reset`)).status,
    200,
  );
});

test('§5.8 who may reset whom: analyst and customer never, mssp_admin only tenant users, nobody themselves', async () => {
  const platform = await user('platform_admin');
  const msspAdmin = await user('mssp_admin');
  const analyst = await user('analyst');
  const viewer = await user('customer_viewer');
  const as = async (who: { email: string }) => {
    const b = client(api);
    await b.login(who.email, PASSWORD);
    return b;
  };
  const reset = async (b: Awaited<ReturnType<typeof as>>, id: string) =>
    b.call('POST', `/api/mssp/users/${id}/password/reset`);
  const a = await as(analyst);
  assert.deepEqual((await reset(a, viewer.id)).body.code, 'forbidden');
  const v = await as(viewer);
  assert.deepEqual((await reset(v, analyst.id)).body.code, 'wrong_family');
  const m = await as(msspAdmin);
  assert.deepEqual((await reset(m, platform.id)).body.code, 'forbidden');
  assert.deepEqual((await reset(m, msspAdmin.id)).body.code, 'cannot_reset_self');
  assert.deepEqual((await reset(m, '00000000-0000-4000-8000-000000000000')).status, 404);
  assert.deepEqual((await reset(m, 'not-a-uuid')).body.code, 'validation_failed');
  const p = await as(platform);
  assert.equal((await reset(p, analyst.id)).status, 200);
});

test('§5.1 identity headers are ignored in internal mode', async () => {
  const admin = await user('platform_admin');
  const spoof = client(api, {
    'X-Forwarded-Email': admin.email,
    'X-Forwarded-User': 'admin',
    'X-Forwarded-Groups': 'admins',
  });
  const res = await spoof.call('GET', '/api/auth/me');
  assert.deepEqual([res.status, res.body.code], [401, 'unauthenticated']);
});

test('§5.3 forged, truncated and foreign session cookies are rejected', async () => {
  for (const cookie of [
    'svc_session=AAAAAAAAAAAAAAAAAAAAAA',
    'svc_session=not-base64!',
    'svc_session=',
    `svc_session=${Buffer.from('00000000000000000000000000000000', 'hex').toString('base64url')}x`,
  ]) {
    const res = await fetch(`${api.url}/api/auth/me`, { headers: { cookie } });
    assert.equal(res.status, 401, cookie);
  }
});

test('§2.2 a customer of tenant A never sees tenant B users through sign-in lookups', async () => {
  const bViewer = await seedUser(db, api.hasher, {
    email: 'b-viewer@globex.test',
    role: 'customer_viewer',
    tenantId: otherTenant,
    password: PASSWORD,
  });
  const res = await client(api).login('b-viewer@globex.test', PASSWORD);
  assert.equal((res.body.identity as { tenant_id: string }).tenant_id, otherTenant);
  const leak = await db.app.withTenant(tenant, (tx) =>
    tx.query('SELECT 1 FROM users WHERE id = $1', [bViewer]),
  );
  assert.equal(leak.rowCount, 0);
});
