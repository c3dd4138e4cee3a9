import assert from 'node:assert/strict';
import { after, before, test } from 'node:test';
import { normaliseEmail } from '../../src/domains/users/user-repository.ts';
import { client, seedUser, startTestApi, type TestApi } from '../support/api.ts';
import { createTestDatabase, type TestDatabase } from '../support/database.ts';
import { createTenant } from '../support/fixtures.ts';
import { TEST_HASH_PARAMS } from '../support/sign-in.ts';

let db: TestDatabase;
let api: TestApi;
let tenant: string;
let staff: ReturnType<typeof client>;
const PASSWORD = 'correct horse battery';

before(async () => {
  db = await createTestDatabase();
  api = await startTestApi(db, { hash: { params: TEST_HASH_PARAMS } });
  tenant = await createTenant(db.pools.app);
  await seedUser(db, api.hasher, {
    email: 'pa@mssp.test',
    role: 'platform_admin',
    password: PASSWORD,
  });
  await seedUser(db, api.hasher, { email: 'bob@example.com', role: 'analyst' });
  await seedUser(db, api.hasher, { email: 'tom@example.com', role: 'analyst' });
  await seedUser(db, api.hasher, {
    email: 'carl@customer.test',
    role: 'customer_viewer',
    tenantId: tenant,
  });
  staff = client(api);
  assert.equal((await staff.login('pa@mssp.test', PASSWORD)).status, 200);
});
after(async () => {
  await api.close();
  await db.drop();
});

async function users(): Promise<number> {
  const { rows } = await db.pools.mssp.query<{ n: number }>('SELECT count(*)::int AS n FROM users');
  return rows[0]?.n ?? -1;
}

const BAD = [
  'a\u0001b@example.com', // control character
  'a\u007fb@example.com',
  'ad\u202emin@example.com', // bidi override
  'admin\u2066@example.com',
  '<b>x</b>@example.com', // HTML
  'x@<script>.example.com',
  '"quoted"@example.com',
  'x@localhost', // no dot in the domain
  'b\u043eb@example.com', // Cyrillic о: a look-alike of bob@example.com
  'x@b\u00fccher.example', // IDN in U-label form
  'Upper@example.com', // not canonical
  ' x@example.com',
  'a b@example.com',
  'a..b@example.com',
  '.a@example.com',
  'a.@example.com',
  'a@-example.com',
  'a@example-.com',
  'a@example..com',
  'a@example.com.',
  'a@1.2.3.4',
  'a@[127.0.0.1]',
  '@example.com',
  'a@',
  `${'a'.repeat(250)}@x.io`,
];

test('issue 10 item 6: user creation refuses every address outside the email rule with 400 validation_failed and writes nothing', async () => {
  const before = await users();
  for (const email of BAD) {
    for (const [path, body] of [
      ['/api/mssp/users', { email, role: 'analyst' }],
      [`/api/mssp/tenants/${tenant}/users`, { email }],
    ] as const) {
      const res = await staff.call('POST', path, body);
      const errors = res.body?.errors as { path: string }[] | undefined;
      assert.deepEqual(
        [res.status, res.body?.code, errors?.[0]?.path],
        [400, 'validation_failed', '/email'],
        `${path} ${JSON.stringify(email)}`,
      );
    }
  }
  assert.equal(await users(), before);
});

test('issue 10 item 6: an address whose confusable skeleton matches an existing one is 409 email_confusable, across tenants too', async () => {
  const before = await users();
  for (const [path, body] of [
    ['/api/mssp/users', { email: 'b0b@example.com', role: 'analyst' }],
    ['/api/mssp/users', { email: 'torn@example.com', role: 'analyst' }],
    // carl@ is a customer of another tenant, invisible to this insert's RLS context.
    ['/api/mssp/users', { email: 'car1@customer.test', role: 'analyst' }],
    [`/api/mssp/tenants/${tenant}/users`, { email: 'b0b@example.com' }],
  ] as const) {
    const res = await staff.call('POST', path, body);
    assert.deepEqual([res.status, res.body?.code], [409, 'email_confusable'], body.email);
  }
  assert.equal(await users(), before);
  const distinct = await staff.call('POST', '/api/mssp/users', {
    email: 'bobby@example.com',
    role: 'analyst',
  });
  assert.equal(distinct.status, 201);
});

test('issue 10 item 6: sign-in normalises exactly as creation expects, so a created user is found', async () => {
  const created = await staff.call('POST', '/api/mssp/users', {
    email: "o'brien+ops@xn--bcher-kva.example",
    role: 'analyst',
  });
  assert.equal(created.status, 201);
  const password = created.body?.initial_password as string;
  const res = await client(api).login("  O'Brien+OPS@XN--BCHER-KVA.EXAMPLE\t", password);
  assert.equal(res.status, 200);
  // Only ASCII folds: the Kelvin sign is not a "k".
  assert.equal(normaliseEmail('\u212Aate@example.com'), '\u212Aate@example.com');
});
