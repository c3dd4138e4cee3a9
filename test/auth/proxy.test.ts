import assert from 'node:assert/strict';
import { after, before, test } from 'node:test';
import { client, seedUser, startTestApi, type TestApi } from '../support/api.ts';
import { createTestDatabase, type TestDatabase } from '../support/database.ts';
import { createTenant } from '../support/fixtures.ts';
import { TEST_HASH_PARAMS } from '../support/sign-in.ts';

let db: TestDatabase;
let trusted: TestApi;
let untrusted: TestApi;
let tenant: string;

before(async () => {
  db = await createTestDatabase();
  // The test client connects from 127.0.0.1: inside the CIDRs for one server, outside for the other.
  trusted = await startTestApi(db, {
    mode: 'proxy',
    trustedProxyCidrs: ['127.0.0.0/8'],
    hash: { params: TEST_HASH_PARAMS },
  });
  untrusted = await startTestApi(db, {
    mode: 'proxy',
    trustedProxyCidrs: ['10.0.0.0/8'],
    hash: { params: TEST_HASH_PARAMS },
  });
  tenant = await createTenant(db.pools.app);
  await seedUser(db, trusted.hasher, { email: 'ana@mssp.test', role: 'analyst' });
  await seedUser(db, trusted.hasher, {
    email: 'cv@acme.test',
    role: 'customer_viewer',
    tenantId: tenant,
    password: 'correct horse battery',
  });
});
after(async () => {
  await trusted.close();
  await untrusted.close();
  await db.drop();
});

test('§9.5.6 proxy mode answers 404 on every internal-auth endpoint', async () => {
  const b = client(trusted, { 'X-Forwarded-Email': 'ana@mssp.test' });
  const calls: [string, string, unknown?][] = [
    ['POST', '/api/auth/login', { email: 'cv@acme.test', password: 'correct horse battery' }],
    ['POST', '/api/auth/logout'],
    ['GET', '/api/auth/me'],
    ['POST', '/api/auth/password/change', { current_password: 'a', new_password: 'b' }],
    ['POST', '/api/mssp/users/00000000-0000-4000-8000-000000000000/password/reset'],
  ];
  for (const [method, path, body] of calls) {
    const res = await b.call(method, path, body);
    assert.deepEqual([res.status, res.body.code], [404, 'not_found'], `${method} ${path}`);
  }
  const health = await (await fetch(`${trusted.url}/healthz`)).json();
  assert.equal((health as { auth_mode: string }).auth_mode, 'proxy');
});

test('§9.5.6 ingress handoff works from a trusted peer and yields the same identity shape', async () => {
  // No route but the auth ones exists yet, so an authenticated request reaches the 404 of an
  // unknown path only after authentication succeeded; a failed one answers 401/403 first.
  const ok = await client(trusted, {
    'X-Forwarded-Email': 'ANA@mssp.test',
    'X-Forwarded-Groups': 'soc, tier2',
  }).call('GET', '/api/mssp/nothing');
  assert.deepEqual([ok.status, ok.body.code], [404, 'not_found']);
  const unknown = await client(trusted, { 'X-Forwarded-Email': 'mallory@evil.test' }).call(
    'GET',
    '/api/mssp/nothing',
  );
  assert.deepEqual([unknown.status, unknown.body.code], [403, 'unknown_user']);
  const none = await client(trusted).call('GET', '/api/mssp/nothing');
  assert.deepEqual([none.status, none.body.code], [401, 'unauthenticated']);
});

test('§7 identity headers from a source outside the trusted CIDRs are rejected', async () => {
  for (const headers of [
    { 'X-Forwarded-Email': 'ana@mssp.test' },
    { 'X-Forwarded-User': 'ana' },
    { 'X-Forwarded-Groups': 'admins' },
  ]) {
    const res = await client(untrusted, headers).call('GET', '/api/mssp/nothing');
    assert.deepEqual([res.status, res.body.code], [403, 'untrusted_proxy']);
  }
  const plain = await client(untrusted).call('GET', '/api/mssp/nothing');
  assert.equal(plain.status, 401);
});

test('§5.6 CSRF applies in proxy mode too', async () => {
  const res = await client(trusted, {
    'X-Forwarded-Email': 'ana@mssp.test',
    origin: 'https://evil.example',
  }).call('POST', '/api/mssp/anything', {});
  assert.deepEqual([res.status, res.body.code], [403, 'csrf_rejected']);
});
