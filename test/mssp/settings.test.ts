import assert from 'node:assert/strict';
import { after, before, test } from 'node:test';
import { readAuditRetentionDays } from '../../src/domains/settings/settings-repository.ts';
import {
  client,
  impersonating,
  problemCode,
  seedUser,
  startTestApi,
  type TestApi,
} from '../support/api.ts';
import { createTestDatabase, type TestDatabase } from '../support/database.ts';
import { createTenant } from '../support/fixtures.ts';
import { signedInAs, TEST_HASH_PARAMS, TEST_PASSWORD } from '../support/sign-in.ts';

// Issue 15 "Install settings" (spec §2.2, §2.4): GET for every MSSP role, PUT for
// platform_admin, audited settings.update with before/after; a closed, typed set of keys.

let db: TestDatabase;
let api: TestApi;
let tenantA: string;
let adminId: string;
const KEY = 'audit.retention_days';

type Raw = ReturnType<typeof client>;
async function rawAs(email: string): Promise<Raw> {
  const c = client(api);
  assert.equal((await c.login(email, TEST_PASSWORD)).status, 200);
  return c;
}

/** Everything a refused PUT must leave alone. */
async function written() {
  const settings = await db.pools.mssp.query(
    'SELECT key, value, updated_at, updated_by FROM install_settings ORDER BY key',
  );
  const audit = await db.pools.mssp.query(
    `SELECT count(*)::int AS n FROM audit_log WHERE action = 'settings.update'`,
  );
  return { settings: settings.rows, audit: audit.rows[0]?.n };
}

before(async () => {
  db = await createTestDatabase();
  api = await startTestApi(db, { hash: { params: TEST_HASH_PARAMS } });
  tenantA = await createTenant(db.pools.app, 'alpha');
  adminId = await seedUser(db, api.hasher, {
    email: 'pa@mssp.test',
    role: 'platform_admin',
    password: TEST_PASSWORD,
  });
  for (const role of ['mssp_admin', 'analyst'] as const)
    await seedUser(db, api.hasher, { email: `${role}@mssp.test`, role, password: TEST_PASSWORD });
  await seedUser(db, api.hasher, {
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

test('§2.2 every MSSP role reads the install settings, each key with its documented default', async () => {
  for (const [role, email] of [
    ['platform_admin', 'pa@mssp.test'],
    ['mssp_admin', 'mssp_admin@mssp.test'],
    ['analyst', 'analyst@mssp.test'],
  ] as const) {
    const staff = await signedInAs({ db, api }, role, { email });
    const res = await staff.mssp.getSettings();
    assert.equal(res.status, 200, role);
    assert.deepEqual(res.body, {
      settings: {
        [KEY]: { value: 90, default: 90, is_default: true, updated_at: null, updated_by: null },
      },
      updated_at: null,
    });
  }
  const customer = await rawAs('cv@alpha.test');
  const res = await customer.call('GET', '/api/mssp/settings');
  assert.deepEqual([res.status, res.body.code], [403, 'wrong_family']);
});

test('§2.2 platform_admin sets audit.retention_days: read back, used by the purge, audited settings.update with before/after', async () => {
  const pa = await signedInAs({ db, api }, 'platform_admin', { email: 'pa@mssp.test' });
  const res = await pa.mssp.putSettings({ body: { settings: { [KEY]: 30 } } });
  assert.equal(res.status, 200);
  if (res.status !== 200) return;
  const entry = res.body.settings[KEY];
  assert.deepEqual(
    [entry.value, entry.default, entry.is_default, entry.updated_by],
    [30, 90, false, adminId],
  );
  assert.equal(res.body.updated_at, entry.updated_at);
  assert.deepEqual((await pa.mssp.getSettings()).body, res.body);
  assert.equal(await db.app.withoutTenant(readAuditRetentionDays), 30);

  const { rows } = await db.pools.mssp.query(
    `SELECT tenant_id, actor_principal, actor_id, resource_type, resource_id, before, after
       FROM audit_log WHERE action = 'settings.update'`,
  );
  assert.deepEqual(rows, [
    {
      tenant_id: null,
      actor_principal: 'User',
      actor_id: adminId,
      resource_type: 'install_settings',
      resource_id: null,
      before: { [KEY]: 90 },
      after: { [KEY]: 30 },
    },
  ]);

  // The same value again changes nothing: 200, no second audit row.
  const before = await written();
  const again = await pa.mssp.putSettings({ body: { settings: { [KEY]: 30 } } });
  assert.equal(again.status, 200);
  assert.deepEqual(await written(), before);
});

test('§2.2 a key set to null returns to its default (row removed, audited)', async () => {
  const pa = await signedInAs({ db, api }, 'platform_admin', { email: 'pa@mssp.test' });
  await pa.mssp.putSettings({ body: { settings: { [KEY]: 45 } } });
  const res = await pa.mssp.putSettings({ body: { settings: { [KEY]: null } } });
  assert.equal(res.status, 200);
  if (res.status !== 200) return;
  assert.deepEqual(res.body, {
    settings: {
      [KEY]: { value: 90, default: 90, is_default: true, updated_at: null, updated_by: null },
    },
    updated_at: null,
  });
  assert.equal(await db.app.withoutTenant(readAuditRetentionDays), 90);
  const { rows } = await db.pools.mssp.query(
    `SELECT before, after, details FROM audit_log WHERE action = 'settings.update'
      ORDER BY "timestamp" DESC, id LIMIT 1`,
  );
  assert.deepEqual(rows[0], {
    before: { [KEY]: 45 },
    after: { [KEY]: 90 },
    details: { reset_to_default: [KEY] },
  });
});

test('§2.2 bad settings are refused with the exact status and code, and nothing is written', async () => {
  const pa = await rawAs('pa@mssp.test');
  const cases: [unknown, number, string, string?][] = [
    [{ settings: { [KEY]: 0 } }, 422, 'invalid_settings', `/settings/${KEY}`],
    [{ settings: { [KEY]: 3651 } }, 422, 'invalid_settings', `/settings/${KEY}`],
    [{ settings: { [KEY]: 1.5 } }, 422, 'invalid_settings', `/settings/${KEY}`],
    [{ settings: { [KEY]: '30' } }, 422, 'invalid_settings', `/settings/${KEY}`],
    [{ settings: { 'audit.retention': 5 } }, 422, 'invalid_settings', '/settings/audit.retention'],
    [{ settings: { [KEY]: 30, 'a/b~c': true } }, 422, 'invalid_settings', '/settings/a~1b~0c'],
    [{ settings: {} }, 400, 'validation_failed'],
    [{}, 400, 'validation_failed'],
    [{ settings: 5 }, 400, 'validation_failed'],
    [{ settings: { [KEY]: 30 }, extra: 1 }, 400, 'validation_failed'],
    [{ settings: { [KEY]: 30 }, expected_updated_at: 'yesterday' }, 400, 'validation_failed'],
    [
      { settings: { [KEY]: 30 }, expected_updated_at: '2020-01-01T00:00:00Z' },
      409,
      'settings_changed',
    ],
  ];
  const before = await written();
  for (const [body, status, code, path] of cases) {
    const res = await pa.call('PUT', '/api/mssp/settings', body);
    assert.deepEqual([res.status, res.body.code], [status, code], JSON.stringify(body));
    if (path) {
      const errors = res.body.errors as { path: string }[];
      assert.ok(
        errors.some((e) => e.path === path),
        `${JSON.stringify(body)}: ${JSON.stringify(errors)}`,
      );
      // A valid key beside an unknown one is not named: only what is wrong.
      assert.ok(errors.every((e) => e.path !== `/settings/${KEY}` || path === `/settings/${KEY}`));
    }
  }
  assert.deepEqual(await written(), before);
});

test('§5.8 only platform_admin writes install settings: mssp_admin, analyst, customer and impersonation tokens are refused, nothing written', async () => {
  const before = await written();
  for (const email of ['mssp_admin@mssp.test', 'analyst@mssp.test']) {
    const staff = await rawAs(email);
    const res = await staff.call('PUT', '/api/mssp/settings', { settings: { [KEY]: 7 } });
    assert.deepEqual([res.status, res.body.code], [403, 'forbidden'], email);
  }
  const customer = await rawAs('cv@alpha.test');
  const res = await customer.call('PUT', '/api/mssp/settings', { settings: { [KEY]: 7 } });
  assert.deepEqual([res.status, res.body.code], [403, 'wrong_family']);
  const pa = await signedInAs({ db, api }, 'platform_admin', { email: 'pa@mssp.test' });
  const token = await impersonating(api, pa, tenantA, 'settings matrix');
  for (const call of [
    () => token.mssp.putSettings({ body: { settings: { [KEY]: 7 } } }),
    () => token.mssp.getSettings(),
  ]) {
    const refused = await call();
    assert.deepEqual([refused.status, problemCode(refused)], [403, 'outside_impersonated_tenant']);
  }
  assert.deepEqual(await written(), before);
});

test('§2.2 expected_updated_at: of two writers who read the same settings, the second gets 409 settings_changed', async () => {
  const pa = await signedInAs({ db, api }, 'platform_admin', { email: 'pa@mssp.test' });
  const read = await pa.mssp.getSettings();
  assert.equal(read.status, 200);
  if (read.status !== 200) return;
  const token = read.body.updated_at;
  const answers = await Promise.all(
    [11, 12].map((days) =>
      pa.mssp.putSettings({ body: { settings: { [KEY]: days }, expected_updated_at: token } }),
    ),
  );
  const statuses = answers.map((a) => [a.status, problemCode(a)]).sort();
  assert.deepEqual(statuses, [
    [200, undefined],
    [409, 'settings_changed'],
  ]);
  const winner = answers.find((a) => a.status === 200);
  const stored = await db.app.withoutTenant(readAuditRetentionDays);
  assert.equal(winner?.status === 200 && winner.body.settings[KEY].value, stored);
  const loser = answers.find((a) => a.status === 409)?.body as { updated_at?: string };
  assert.equal(loser.updated_at, winner?.status === 200 ? winner.body.updated_at : '');
  // With the token it was given, the loser's retry goes through.
  const retry = await pa.mssp.putSettings({
    body: { settings: { [KEY]: 13 }, expected_updated_at: loser.updated_at ?? null },
  });
  assert.equal(retry.status, 200);
});

test('§8 the purge refuses a retention written by hand outside 1..3650 instead of guessing', async () => {
  await db.pools.mssp.query(
    `INSERT INTO install_settings (key, value) VALUES ($1, '"30"')
     ON CONFLICT (key) DO UPDATE SET value = excluded.value`,
    [KEY],
  );
  await assert.rejects(db.app.withoutTenant(readAuditRetentionDays), /audit\.retention_days/);
  await db.pools.mssp.query('DELETE FROM install_settings WHERE key = $1', [KEY]);
  assert.equal(await db.app.withoutTenant(readAuditRetentionDays), 90);
});
