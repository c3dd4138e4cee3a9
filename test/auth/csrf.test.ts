import assert from 'node:assert/strict';
import { after, before, test } from 'node:test';
import { checkCsrf, createOriginPolicy } from '../../src/auth/csrf.ts';
import { startTestApi, type TestApi } from '../support/api.ts';
import { createTestDatabase, type TestDatabase } from '../support/database.ts';
import { TEST_HASH_PARAMS } from '../support/sign-in.ts';

const policy = createOriginPolicy({
  msspHostname: 'mssp.example.com',
  customerHostname: '*.customers.example.com',
  allowLoopback: false,
});

test('§5.6 origin matrix: MSSP host, one customer subdomain level, and nothing else', () => {
  const cases: [string | undefined, string | undefined, boolean][] = [
    ['https://mssp.example.com', undefined, true],
    ['https://acme.customers.example.com', undefined, true],
    ['https://a.b.customers.example.com', undefined, false],
    ['https://customers.example.com', undefined, false],
    ['http://mssp.example.com', undefined, false],
    ['https://mssp.example.com:8443', undefined, false],
    ['https://mssp.example.com.evil.test', undefined, false],
    ['https://evilcustomers.example.com', undefined, false],
    ['https://acme.customers.example.com.evil.test', undefined, false],
    ['https://evil.example', undefined, false],
    ['null', undefined, false],
    ['http://localhost:8080', undefined, false],
    [undefined, 'https://acme.customers.example.com/incidents?x=1', true],
    [undefined, 'https://evil.example/page', false],
    [undefined, 'not a url', false],
    [undefined, undefined, false],
    // A present Origin decides even when Referer would pass.
    ['https://evil.example', 'https://mssp.example.com/', false],
  ];
  for (const [origin, referer, ok] of cases) {
    assert.equal(checkCsrf(policy, origin, referer).ok, ok, `origin=${origin} referer=${referer}`);
  }
});

test('§5.6 loopback origins only in the local default', () => {
  const local = createOriginPolicy({
    msspHostname: undefined,
    customerHostname: undefined,
    allowLoopback: true,
  });
  assert.ok(local.allows('http://localhost:8080'));
  assert.ok(local.allows('http://127.0.0.1:5173'));
  assert.ok(!local.allows('http://localhost.evil.test'));
  assert.ok(local.allows('http://acme.localhost:8080'), 'a local tenant portal');
  assert.ok(!local.allows('http://a.b.localhost:8080'));
  assert.ok(!policy.allows('http://127.0.0.1:8080'));
});

let db: TestDatabase;
let api: TestApi;
before(async () => {
  db = await createTestDatabase();
  api = await startTestApi(db, { origins: policy, hash: { params: TEST_HASH_PARAMS } });
});
after(async () => {
  await api.close();
  await db.drop();
});

async function post(headers: Record<string, string>) {
  const res = await fetch(`${api.url}/api/auth/login`, {
    method: 'POST',
    headers: { 'content-type': 'application/json', ...headers },
    body: JSON.stringify({ email: 'nobody@example.test', password: 'whatever whatever' }),
  });
  return { status: res.status, body: (await res.json()) as { code: string } };
}

test('§9.5.6 a foreign Origin gets 403 before any credential check', async () => {
  const before = api.transactions();
  for (const headers of [
    { origin: 'https://evil.example' },
    { origin: 'null' },
    {},
    { referer: 'https://evil.example/x' },
  ]) {
    const res = await post(headers);
    assert.deepEqual([res.status, res.body.code], [403, 'csrf_rejected'], JSON.stringify(headers));
  }
  assert.equal(api.transactions(), before, 'no database work for a refused request');
  const allowed = await post({ origin: 'https://acme.customers.example.com' });
  assert.equal(allowed.body.code, 'invalid_credentials');
  const byReferer = await post({ referer: 'https://mssp.example.com/login' });
  assert.equal(byReferer.body.code, 'invalid_credentials');
});

test('§5.6 safe methods are not subject to the origin check', async () => {
  const res = await fetch(`${api.url}/healthz`, { headers: { origin: 'https://evil.example' } });
  assert.equal(res.status, 200);
});
