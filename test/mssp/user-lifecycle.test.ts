import assert from 'node:assert/strict';
import { after, before, test } from 'node:test';
import { setTimeout as sleep } from 'node:timers/promises';
import pg from 'pg';
import { client, seedUser, startTestApi, type TestApi } from '../support/api.ts';
import { createTestDatabase, type TestDatabase } from '../support/database.ts';
import { createTenant } from '../support/fixtures.ts';
import { TEST_HASH_PARAMS, TEST_PASSWORD } from '../support/sign-in.ts';

// Issue 15 "MSSP user lifecycle": disable / enable / change role, within spec §5.8 ("User
// management (MSSP side)": platform_admin RW, mssp_admin R + invite, analyst R).

let db: TestDatabase;
let api: TestApi;
let tenantA: string;
let customerId: string;
const ids = new Map<string, string>();

type Raw = ReturnType<typeof client>;
async function signIn(email: string): Promise<Raw> {
  const c = client(api);
  const res = await c.login(email, TEST_PASSWORD);
  assert.equal(res.status, 200, `sign-in as ${email}`);
  return c;
}

async function seed(email: string, role: 'platform_admin' | 'mssp_admin' | 'analyst') {
  ids.set(email, await seedUser(db, api.hasher, { email, role, password: TEST_PASSWORD }));
  return ids.get(email) ?? '';
}

/** Everything a refused call must leave alone: users, sessions and user.* audit rows. */
async function written() {
  const users = await db.pools.mssp.query(
    'SELECT id, role, disabled_at, updated_at FROM users ORDER BY id',
  );
  const sessions = await db.pools.mssp.query(
    'SELECT count(*)::int AS n FROM sessions WHERE revoked_at IS NOT NULL',
  );
  const audit = await db.pools.mssp.query(
    `SELECT count(*)::int AS n FROM audit_log WHERE action LIKE 'user.%'`,
  );
  return { users: users.rows, revoked: sessions.rows[0]?.n, audit: audit.rows[0]?.n };
}

async function auditRows(action: string, resourceId: string) {
  const { rows } = await db.pools.mssp.query(
    `SELECT tenant_id, actor_id, before, after, details FROM audit_log
      WHERE action = $1 AND resource_id = $2 ORDER BY "timestamp"`,
    [action, resourceId],
  );
  return rows;
}

before(async () => {
  db = await createTestDatabase();
  api = await startTestApi(db, { hash: { params: TEST_HASH_PARAMS } });
  tenantA = await createTenant(db.pools.app, 'alpha');
  await seed('pa@mssp.test', 'platform_admin');
  await seed('ma@mssp.test', 'mssp_admin');
  await seed('an@mssp.test', 'analyst');
  customerId = await seedUser(db, api.hasher, {
    email: 'cv@alpha.test',
    role: 'customer_viewer',
    tenantId: tenantA,
    password: TEST_PASSWORD,
  });
});
after(async () => {
  await api.close();
  await db.drop();
});

test('issue 15 disable revokes every session and token of the user at once; it cannot sign in until enabled', async () => {
  const targetId = await seed('target@mssp.test', 'analyst');
  const pa = await signIn('pa@mssp.test');
  const browser = await signIn('target@mssp.test');
  const laptop = await signIn('target@mssp.test');
  const minted = await browser.call('POST', `/api/mssp/impersonate/${tenantA}`, {
    reason: 'before the disable',
  });
  assert.equal(minted.status, 200);
  const bearer = client(api, { authorization: `Bearer ${String(minted.body.token)}` });

  const res = await pa.call('POST', `/api/mssp/users/${targetId}:disable`);
  assert.equal(res.status, 200);
  const user = res.body.user as { id: string; disabled_at: string | null };
  assert.equal(user.id, targetId);
  assert.ok(user.disabled_at);
  for (const session of [browser, laptop]) {
    const me = await session.call('GET', '/api/auth/me');
    assert.deepEqual([me.status, me.body.code], [401, 'session_expired']);
  }
  const viaToken = await bearer.call('GET', `/api/mssp/tenants/${tenantA}`);
  assert.deepEqual([viaToken.status, viaToken.body.code], [401, 'invalid_token']);
  const { rows } = await db.pools.mssp.query(
    'SELECT count(*)::int AS n FROM sessions WHERE user_id = $1 AND revoked_at IS NULL',
    [targetId],
  );
  assert.equal(rows[0]?.n, 0);
  // The generic credential failure: a disabled account reads like a wrong password.
  const login = await client(api).login('target@mssp.test', TEST_PASSWORD);
  assert.deepEqual([login.status, login.body.code], [401, 'invalid_credentials']);
  assert.deepEqual(await auditRows('user.disable', targetId), [
    {
      tenant_id: null,
      actor_id: ids.get('pa@mssp.test'),
      before: { disabled: false },
      after: { disabled: true },
      details: { revoked_sessions: 2 },
    },
  ]);

  // Idempotent: a second disable answers the user as it is, with no second audit row.
  const again = await pa.call('POST', `/api/mssp/users/${targetId}:disable`);
  assert.deepEqual(
    [again.status, (again.body.user as typeof user).disabled_at],
    [200, user.disabled_at],
  );
  assert.equal((await auditRows('user.disable', targetId)).length, 1);

  const enabled = await pa.call('POST', `/api/mssp/users/${targetId}:enable`);
  assert.deepEqual([enabled.status, (enabled.body.user as typeof user).disabled_at], [200, null]);
  assert.equal((await client(api).login('target@mssp.test', TEST_PASSWORD)).status, 200);
  assert.equal((await pa.call('POST', `/api/mssp/users/${targetId}:enable`)).status, 200);
  assert.deepEqual(await auditRows('user.enable', targetId), [
    {
      tenant_id: null,
      actor_id: ids.get('pa@mssp.test'),
      before: { disabled: true },
      after: { disabled: false },
      details: {},
    },
  ]);
});

test('issue 15 a role change revokes the sessions at once; the next sign-in carries the new role', async () => {
  const targetId = await seed('promoted@mssp.test', 'analyst');
  const pa = await signIn('pa@mssp.test');
  const session = await signIn('promoted@mssp.test');
  const res = await pa.call('PATCH', `/api/mssp/users/${targetId}`, { role: 'mssp_admin' });
  assert.deepEqual([res.status, (res.body.user as { role: string }).role], [200, 'mssp_admin']);
  const me = await session.call('GET', '/api/auth/me');
  assert.deepEqual([me.status, me.body.code], [401, 'session_expired']);
  const again = await signIn('promoted@mssp.test');
  const identity = (await again.call('GET', '/api/auth/me')).body.identity as { role: string };
  assert.equal(identity.role, 'mssp_admin');
  assert.deepEqual(await auditRows('user.role.change', targetId), [
    {
      tenant_id: null,
      actor_id: ids.get('pa@mssp.test'),
      before: { role: 'analyst' },
      after: { role: 'mssp_admin' },
      details: { revoked_sessions: 1 },
    },
  ]);
  // The same role again: 200, sessions kept, no audit row.
  const same = await pa.call('PATCH', `/api/mssp/users/${targetId}`, { role: 'mssp_admin' });
  assert.equal(same.status, 200);
  assert.equal((await again.call('GET', '/api/auth/me')).status, 200);
  assert.equal((await auditRows('user.role.change', targetId)).length, 1);
  // A platform_admin may raise a user to platform_admin, who then manages users too.
  const raised = await pa.call('PATCH', `/api/mssp/users/${targetId}`, { role: 'platform_admin' });
  assert.equal(raised.status, 200);
  const newAdmin = await signIn('promoted@mssp.test');
  const demoted = await newAdmin.call('PATCH', `/api/mssp/users/${targetId}`, { role: 'analyst' });
  assert.deepEqual([demoted.status, demoted.body.code], [409, 'cannot_change_own_role']);
});

test('§5.8 only platform_admin disables, enables or re-roles MSSP users: mssp_admin, analyst and impersonation tokens are refused, nothing written', async () => {
  const analystId = ids.get('an@mssp.test') ?? '';
  const paId = ids.get('pa@mssp.test') ?? '';
  const pa = await signIn('pa@mssp.test');
  const minted = await pa.call('POST', `/api/mssp/impersonate/${tenantA}`, { reason: 'probe' });
  const token = client(api, { authorization: `Bearer ${String(minted.body.token)}` });
  const before = await written();
  const calls: [string, string, unknown][] = [
    ['POST', `/api/mssp/users/${analystId}:disable`, undefined],
    ['POST', `/api/mssp/users/${analystId}:enable`, undefined],
    ['PATCH', `/api/mssp/users/${analystId}`, { role: 'mssp_admin' }],
    ['POST', `/api/mssp/users/${paId}:disable`, undefined],
    ['PATCH', `/api/mssp/users/${paId}`, { role: 'analyst' }],
  ];
  for (const email of ['ma@mssp.test', 'an@mssp.test']) {
    const staff = await signIn(email);
    for (const [method, path, body] of calls) {
      const res = await staff.call(method, path, body);
      assert.deepEqual(
        [res.status, res.body.code],
        [403, 'forbidden'],
        `${email} ${method} ${path}`,
      );
    }
  }
  for (const [method, path, body] of calls) {
    const res = await token.call(method, path, body);
    assert.deepEqual([res.status, res.body.code], [403, 'outside_impersonated_tenant'], path);
  }
  const customer = await signIn('cv@alpha.test');
  const res = await customer.call('POST', `/api/mssp/users/${analystId}:disable`);
  assert.deepEqual([res.status, res.body.code], [403, 'wrong_family']);
  assert.deepEqual(await written(), before);
});

test('issue 15 bad lifecycle input: self, customer users, unknown ids and bad bodies get exact codes, nothing written', async () => {
  const paId = ids.get('pa@mssp.test') ?? '';
  const analystId = ids.get('an@mssp.test') ?? '';
  const pa = await signIn('pa@mssp.test');
  const before = await written();
  const cases: [string, string, unknown, number, string][] = [
    ['POST', `/api/mssp/users/${paId}:disable`, undefined, 409, 'cannot_disable_self'],
    ['PATCH', `/api/mssp/users/${paId}`, { role: 'analyst' }, 409, 'cannot_change_own_role'],
    // Customer users are managed per tenant (…/users/{user_id}:deactivate), not here.
    ['POST', `/api/mssp/users/${customerId}:disable`, undefined, 404, 'user_not_found'],
    ['POST', `/api/mssp/users/${customerId}:enable`, undefined, 404, 'user_not_found'],
    ['PATCH', `/api/mssp/users/${customerId}`, { role: 'analyst' }, 404, 'user_not_found'],
    ['POST', `/api/mssp/users/${crypto.randomUUID()}:disable`, undefined, 404, 'user_not_found'],
    [
      'PATCH',
      `/api/mssp/users/${analystId}`,
      { role: 'customer_viewer' },
      400,
      'validation_failed',
    ],
    ['PATCH', `/api/mssp/users/${analystId}`, {}, 400, 'validation_failed'],
    [
      'PATCH',
      `/api/mssp/users/${analystId}`,
      { role: 'analyst', tenant_id: tenantA },
      400,
      'validation_failed',
    ],
    ['POST', '/api/mssp/users/not-a-uuid:disable', undefined, 400, 'validation_failed'],
    ['PATCH', '/api/mssp/users/not-a-uuid', { role: 'analyst' }, 400, 'validation_failed'],
  ];
  for (const [method, path, body, status, code] of cases) {
    const res = await pa.call(method, path, body);
    assert.deepEqual([res.status, res.body.code], [status, code], `${method} ${path}`);
  }
  assert.deepEqual(await written(), before);
});

/**
 * Waits until `n` svc_app backends wait for a lock: the requests queued behind the holder.
 * Asked as the superuser: other roles see no wait events of svc_app's backends.
 */
async function waitingOnLocks(n: number): Promise<void> {
  const probe = new pg.Client(db.superuser);
  await probe.connect();
  try {
    for (let i = 0; i < 200; i++) {
      const { rows } = await probe.query<{ n: number }>(
        `SELECT count(*)::int AS n FROM pg_stat_activity
          WHERE datname = current_database() AND usename = 'svc_app' AND wait_event_type = 'Lock'`,
      );
      if ((rows[0]?.n ?? 0) >= n) return;
      await sleep(25);
    }
    throw new Error(`fewer than ${n} requests ever waited on the platform_admin locks`);
  } finally {
    await probe.end();
  }
}

test('issue 15 the last enabled platform_admin cannot be removed, even by two admins disabling each other at once', async () => {
  const a = await seed('pa-a@mssp.test', 'platform_admin');
  const b = await seed('pa-b@mssp.test', 'platform_admin');
  // Only A and B are enabled platform admins from here on.
  await db.pools.mssp.query(
    `UPDATE users SET disabled_at = now()
      WHERE role = 'platform_admin' AND tenant_id IS NULL AND id <> ALL($1::uuid[])`,
    [[a, b]],
  );
  const asA = await signIn('pa-a@mssp.test');
  const asB = await signIn('pa-b@mssp.test');

  for (const [label, callA, callB] of [
    [
      'disable each other',
      () => asA.call('POST', `/api/mssp/users/${b}:disable`),
      () => asB.call('POST', `/api/mssp/users/${a}:disable`),
    ],
    [
      'demote each other',
      () => asA.call('PATCH', `/api/mssp/users/${b}`, { role: 'analyst' }),
      () => asB.call('PATCH', `/api/mssp/users/${a}`, { role: 'analyst' }),
    ],
  ] as const) {
    // Hold the platform_admin rows so both requests are inside their transactions, queued on
    // the same locks, before either may decide: the race, made certain.
    const holder = await db.pools.mssp.connect();
    await holder.query('BEGIN');
    await holder.query(
      `SELECT id FROM users WHERE role = 'platform_admin' AND tenant_id IS NULL
        ORDER BY id FOR UPDATE`,
    );
    const racing = Promise.all([callA(), callB()]);
    try {
      await waitingOnLocks(2);
    } finally {
      await holder.query('COMMIT');
      holder.release();
    }
    const answers = await racing;
    assert.deepEqual(
      answers.map((r) => [r.status, r.body.code]).sort(),
      [
        [200, undefined],
        [409, 'last_platform_admin'],
      ],
      label,
    );
    const { rows } = await db.pools.mssp.query(
      `SELECT id FROM users WHERE role = 'platform_admin' AND disabled_at IS NULL
        AND tenant_id IS NULL`,
    );
    assert.equal(rows.length, 1, label);
    // Back to two admins for the next round; the survivor re-signs the other in.
    const winner = answers[0]?.status === 200 ? asA : asB;
    const loserId = answers[0]?.status === 200 ? b : a;
    const restore =
      label === 'disable each other'
        ? await winner.call('POST', `/api/mssp/users/${loserId}:enable`)
        : await winner.call('PATCH', `/api/mssp/users/${loserId}`, { role: 'platform_admin' });
    assert.equal(restore.status, 200);
    const loser = loserId === a ? asA : asB;
    assert.equal(
      (await loser.login(loserId === a ? 'pa-a@mssp.test' : 'pa-b@mssp.test', TEST_PASSWORD))
        .status,
      200,
    );
  }
  const disables = await db.pools.mssp.query(
    `SELECT count(*)::int AS n FROM audit_log WHERE action IN ('user.disable', 'user.role.change')
       AND resource_id = ANY($1::text[])`,
    [[a, b]],
  );
  // One disable and one demotion won (plus the demotion's reversal); no loser was audited.
  assert.equal(disables.rows[0]?.n, 3);
});
