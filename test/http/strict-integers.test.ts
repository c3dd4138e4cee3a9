import assert from 'node:assert/strict';
import { after, before, test } from 'node:test';
import { client, seedUser, startTestApi, type TestApi } from '../support/api.ts';
import { createTestDatabase, type TestDatabase } from '../support/database.ts';
import { createTenant } from '../support/fixtures.ts';
import { TEST_HASH_PARAMS } from '../support/sign-in.ts';

let db: TestDatabase;
let api: TestApi;
let staff: ReturnType<typeof client>;
let customer: ReturnType<typeof client>;
const PASSWORD = 'correct horse battery';

before(async () => {
  db = await createTestDatabase();
  api = await startTestApi(db, { hash: { params: TEST_HASH_PARAMS } });
  const tenant = await createTenant(db.pools.app);
  await seedUser(db, api.hasher, {
    email: 'pa@mssp.test',
    role: 'platform_admin',
    password: PASSWORD,
  });
  await seedUser(db, api.hasher, {
    email: 'cv@customer.test',
    role: 'customer_viewer',
    tenantId: tenant,
    password: PASSWORD,
  });
  staff = client(api);
  assert.equal((await staff.login('pa@mssp.test', PASSWORD)).status, 200);
  customer = client(api);
  assert.equal((await customer.login('cv@customer.test', PASSWORD)).status, 200);
});
after(async () => {
  await api.close();
  await db.drop();
});

const LOOSE = [
  '1.5',
  '0x10',
  'true',
  '1e2',
  '+1',
  '01',
  '-0',
  ' 1',
  '1 ',
  '',
  '9007199254740993',
  '１',
];

test('issue 10 item 6: integer parameters accept only canonical decimals; every loose form is 400 validation_failed with the path', async () => {
  const endpoints: [ReturnType<typeof client>, string, string][] = [
    [staff, '/api/mssp/tenants', 'limit'],
    [staff, '/api/mssp/audit', 'limit'],
    [customer, '/api/tenant/incidents', 'limit'],
    [customer, '/api/tenant/reports', 'days'],
  ];
  for (const [caller, path, name] of endpoints) {
    for (const value of LOOSE) {
      const res = await caller.call('GET', `${path}?${name}=${encodeURIComponent(value)}`);
      const errors = res.body?.errors as { path: string }[] | undefined;
      assert.deepEqual(
        [res.status, res.body?.code, errors?.[0]?.path],
        [400, 'validation_failed', `/query/${name}`],
        `${path}?${name}=${JSON.stringify(value)}`,
      );
    }
    const ok = await caller.call('GET', `${path}?${name}=10`);
    assert.equal(ok.status, 200, `${path}?${name}=10`);
  }
});

test('issue 10 item 6: a canonical integer outside the declared range is still refused by the schema', async () => {
  const res = await staff.call('GET', '/api/mssp/tenants?limit=0');
  assert.deepEqual([res.status, res.body?.code], [400, 'validation_failed']);
});
