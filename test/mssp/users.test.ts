import assert from 'node:assert/strict';
import { after, before, test } from 'node:test';
import { createSvcClient, type SvcClient } from '../../contracts/index.ts';
import {
  impersonating,
  problemCode,
  seedUser,
  startTestApi,
  type TestApi,
} from '../support/api.ts';
import { createTestDatabase, type TestDatabase } from '../support/database.ts';
import { createTenant } from '../support/fixtures.ts';
import { signedInAs, TEST_HASH_PARAMS } from '../support/sign-in.ts';

let db: TestDatabase;
let api: TestApi;
let tenantA: string;
let tenantB: string;
const PASSWORD = 'correct horse battery';

function client(): SvcClient {
  return createSvcClient({ baseUrl: api.url, headers: { origin: api.origin } });
}

before(async () => {
  db = await createTestDatabase();
  api = await startTestApi(db, { hash: { params: TEST_HASH_PARAMS } });
  tenantA = await createTenant(db.pools.app, 'alpha');
  tenantB = await createTenant(db.pools.app, 'bravo');
  await seedUser(db, api.hasher, {
    email: 'pa@mssp.test',
    role: 'platform_admin',
    password: PASSWORD,
  });
  await seedUser(db, api.hasher, { email: 'ma@mssp.test', role: 'mssp_admin', password: PASSWORD });
  await seedUser(db, api.hasher, { email: 'an@mssp.test', role: 'analyst', password: PASSWORD });
});
after(async () => {
  await api.close();
  await db.drop();
});

test('§5.8 MSSP-side users: platform_admin creates any MSSP role, mssp_admin only invites analysts, analyst reads', async () => {
  const pa = await signedInAs({ db, api }, 'platform_admin', { email: 'pa@mssp.test' });
  const ma = await signedInAs({ db, api }, 'mssp_admin', { email: 'ma@mssp.test' });
  const an = await signedInAs({ db, api }, 'analyst', { email: 'an@mssp.test' });
  const created = await pa.mssp.createUser({
    body: { email: 'new-admin@mssp.test', role: 'mssp_admin' },
  });
  assert.equal(created.status, 201);
  if (created.status !== 201) return;
  assert.equal(created.headers.get('cache-control'), 'no-store');
  const password = created.body.initial_password;
  assert.ok(password && password.length >= 20);
  const first = await client().auth.login({ body: { email: 'new-admin@mssp.test', password } });
  assert.equal(first.status === 200 && first.body.must_change, true);
  assert.deepEqual(
    problemCode(
      await ma.mssp.createUser({ body: { email: 'boss@mssp.test', role: 'platform_admin' } }),
    ),
    'forbidden',
  );
  assert.equal(
    (await ma.mssp.createUser({ body: { email: 'fresh@mssp.test', role: 'analyst' } })).status,
    201,
  );
  assert.equal(
    problemCode(await an.mssp.createUser({ body: { email: 'x@mssp.test', role: 'analyst' } })),
    'forbidden',
  );
  const list = await an.mssp.listUsers();
  assert.ok(list.status === 200 && list.body.items.every((u) => u.tenant_id === null));
  const audit = await db.pools.mssp.query(
    `SELECT count(*)::int AS n FROM audit_log WHERE action = 'user.create'`,
  );
  assert.equal(audit.rows[0]?.n, 2);
});

test('§4.2 bad user input is refused and writes nothing', async () => {
  const pa = await signedInAs({ db, api }, 'platform_admin', { email: 'pa@mssp.test' });
  const before = await db.pools.mssp.query('SELECT count(*)::int AS n FROM users');
  const cases = [
    await pa.mssp.createUser({ body: { email: 'not-an-email', role: 'analyst' } }),
    await pa.mssp.createUser({ body: { email: 'Upper@mssp.test', role: 'analyst' } }),
    await pa.mssp.createUser({ body: { email: 'cv@mssp.test', role: 'customer_viewer' as never } }),
    await pa.mssp.createUser({
      body: { email: 'e@mssp.test', role: 'analyst', tenant_id: tenantA } as never,
    }),
  ];
  for (const res of cases)
    assert.deepEqual([res.status, problemCode(res)], [400, 'validation_failed']);
  const dup = await pa.mssp.createUser({ body: { email: 'an@mssp.test', role: 'analyst' } });
  assert.deepEqual([dup.status, problemCode(dup)], [409, 'email_taken']);
  const afterRows = await db.pools.mssp.query('SELECT count(*)::int AS n FROM users');
  assert.deepEqual(afterRows.rows, before.rows);
});

test('§5.8 tenant-side users: created in one tenant, invisible from another, deactivation revokes sessions', async () => {
  const ma = await signedInAs({ db, api }, 'mssp_admin', { email: 'ma@mssp.test' });
  const created = await ma.mssp.createTenantUser({
    params: { tenant_id: tenantA },
    body: { email: 'cv@alpha.test' },
  });
  assert.equal(created.status, 201);
  if (created.status !== 201) return;
  const user = created.body.user;
  assert.deepEqual([user.role, user.tenant_id], ['customer_viewer', tenantA]);
  const customer = await signedInAs({ db, api }, 'customer_viewer', {
    email: 'cv@alpha.test',
    password: created.body.initial_password ?? '',
  });
  assert.equal((await customer.auth.me()).status, 200);

  const inA = await ma.mssp.listTenantUsers({ params: { tenant_id: tenantA } });
  const inB = await ma.mssp.listTenantUsers({ params: { tenant_id: tenantB } });
  assert.ok(inA.status === 200 && inA.body.items.some((u) => u.id === user.id));
  assert.ok(inB.status === 200 && inB.body.items.length === 0);

  const wrongTenant = await ma.mssp.deactivateTenantUser({
    params: { tenant_id: tenantB, user_id: user.id },
  });
  assert.deepEqual([wrongTenant.status, problemCode(wrongTenant)], [404, 'user_not_found']);
  const off = await ma.mssp.deactivateTenantUser({
    params: { tenant_id: tenantA, user_id: user.id },
  });
  assert.equal(off.status, 200);
  assert.equal((await customer.auth.me()).status, 401, 'the session died with the account');
  assert.equal(
    (
      await client().auth.login({
        body: { email: 'cv@alpha.test', password: created.body.initial_password ?? '' },
      })
    ).status,
    401,
  );
  const again = await ma.mssp.deactivateTenantUser({
    params: { tenant_id: tenantA, user_id: user.id },
  });
  assert.equal(problemCode(again), 'already_deactivated');

  const visible = await db.app.withTenant(tenantA, (tx) =>
    tx.query(`SELECT action FROM audit_log WHERE resource_id = $1 ORDER BY "timestamp"`, [user.id]),
  );
  assert.deepEqual(
    visible.rows.map((r) => r.action).filter((a) => a.startsWith('user.')),
    ['user.create', 'user.deactivate'],
  );
});

test('§5.8 analysts cannot manage tenant users; an impersonation token for A cannot reach B', async () => {
  const an = await signedInAs({ db, api }, 'analyst', { email: 'an@mssp.test' });
  assert.equal(
    problemCode(await an.mssp.listTenantUsers({ params: { tenant_id: tenantA } })),
    'forbidden',
  );
  const ma = await signedInAs({ db, api }, 'mssp_admin', { email: 'ma@mssp.test' });
  const asA = await impersonating(api, ma, tenantA, 'user admin');
  assert.equal((await asA.mssp.listTenantUsers({ params: { tenant_id: tenantA } })).status, 200);
  const b = await asA.mssp.createTenantUser({
    params: { tenant_id: tenantB },
    body: { email: 'sneak@bravo.test' },
  });
  assert.deepEqual([b.status, problemCode(b)], [403, 'outside_impersonated_tenant']);
  const made = await asA.mssp.createTenantUser({
    params: { tenant_id: tenantA },
    body: { email: 'via-token@alpha.test' },
  });
  assert.equal(made.status, 201);
  const row = await db.app.withTenant(tenantA, (tx) =>
    tx.query(
      `SELECT acting_as FROM audit_log WHERE action = 'user.create' AND after->>'email' = 'via-token@alpha.test'`,
    ),
  );
  assert.deepEqual(row.rows, [{ acting_as: tenantA }]);
});

test('§4.2 bad tenant-user input is refused and writes nothing', async () => {
  const ma = await signedInAs({ db, api }, 'mssp_admin', { email: 'ma@mssp.test' });
  const before = await db.pools.mssp.query('SELECT count(*)::int AS n FROM users');
  const cases = [
    await ma.mssp.createTenantUser({
      params: { tenant_id: tenantA },
      body: { email: 'no-at-sign' },
    }),
    await ma.mssp.createTenantUser({
      params: { tenant_id: tenantA },
      body: { email: 'cv2@alpha.test', role: 'platform_admin' } as never,
    }),
    await ma.mssp.createTenantUser({
      params: { tenant_id: 'alpha' },
      body: { email: 'cv3@alpha.test' },
    }),
    await ma.mssp.deactivateTenantUser({ params: { tenant_id: tenantA, user_id: 'someone' } }),
  ];
  for (const res of cases)
    assert.deepEqual([res.status, problemCode(res)], [400, 'validation_failed']);
  const gone = await ma.mssp.createTenantUser({
    params: { tenant_id: '00000000-0000-4000-8000-000000000000' },
    body: { email: 'ghost@nowhere.test' },
  });
  assert.deepEqual([gone.status, problemCode(gone)], [404, 'tenant_not_found']);
  const after = await db.pools.mssp.query('SELECT count(*)::int AS n FROM users');
  assert.deepEqual(after.rows, before.rows);
});
