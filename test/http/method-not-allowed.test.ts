import assert from 'node:assert/strict';
import { randomUUID } from 'node:crypto';
import { after, before, test } from 'node:test';
import { client, seedUser, startTestApi, type TestApi } from '../support/api.ts';
import { createTestDatabase, type TestDatabase } from '../support/database.ts';
import { TEST_HASH_PARAMS } from '../support/sign-in.ts';

let db: TestDatabase;
let api: TestApi;
let admin: ReturnType<typeof client>;

const PASSWORD = 'correct horse battery staple';

before(async () => {
  db = await createTestDatabase();
  api = await startTestApi(db, { hash: { params: TEST_HASH_PARAMS } });
  const email = `allow-${randomUUID()}@example.test`;
  await seedUser(db, api.hasher, { email, role: 'platform_admin', password: PASSWORD });
  admin = client(api);
  assert.equal((await admin.login(email, PASSWORD)).status, 200);
});
after(async () => {
  await api.close();
  await db.drop();
});

test('issue 10 item 8: an unknown method on a known path is 405 with Allow, not 404', async () => {
  const id = randomUUID();
  const cases: [string, string, string][] = [
    ['DELETE', '/api/mssp/tenants', 'GET, HEAD, POST'],
    ['PUT', `/api/mssp/tenants/${id}`, 'GET, HEAD'],
    // A custom method is its own path: GET on it is not the tenant read, and vice versa.
    ['GET', `/api/mssp/tenants/${id}:decommission`, 'POST'],
    ['PATCH', `/api/mssp/tenants/${id}:upgrade`, 'POST'],
    ['GET', '/api/auth/login', 'POST'],
    ['OPTIONS', '/api/auth/me', 'GET, HEAD'],
  ];
  for (const [method, path, allow] of cases) {
    const res = await admin.call(method, path);
    assert.deepEqual(
      [res.status, res.body.code, res.headers.get('allow')],
      [405, 'method_not_allowed', allow],
      `${method} ${path}`,
    );
    assert.equal(res.headers.get('content-type'), 'application/problem+json');
  }
});

test('issue 10 item 8: unknown paths stay 404; a wrong method is 405 before authentication', async () => {
  const unknown = await admin.call('GET', `/api/mssp/tenants/${randomUUID()}:explode`);
  assert.deepEqual([unknown.status, unknown.body.code], [404, 'not_found']);
  assert.equal(unknown.headers.get('allow'), null);
  // Which routes exist is public (the OpenAPI document): an anonymous caller gets 405 too,
  // also on the anonymous routes that sit under an authenticated family's prefix.
  for (const [method, path] of [
    ['DELETE', '/api/mssp/tenants'],
    ['PUT', '/api/auth/login'],
    ['GET', '/api/internal/adapter/bootstrap'],
  ] as const) {
    const anonymous = await client(api).call(method, path);
    assert.deepEqual(
      [path, anonymous.status, anonymous.body.code],
      [path, 405, 'method_not_allowed'],
    );
  }
  // A method a route does answer still needs its credential.
  const unauthenticated = await client(api).call('GET', '/api/mssp/tenants');
  assert.deepEqual([unauthenticated.status, unauthenticated.body.code], [401, 'unauthenticated']);
});

test('issue 10 item 8: the audit exports are served with the media types the document declares', async () => {
  const doc = (await (await fetch(`${api.url}/api/openapi.json`)).json()) as {
    paths: Record<string, { get: { responses: { 200: { content: Record<string, unknown> } } } }>;
  };
  const declared = Object.keys(doc.paths['/api/mssp/audit']?.get.responses[200].content ?? {});
  for (const format of ['json', 'jsonl', 'csv']) {
    const res = await fetch(`${api.url}/api/mssp/audit?format=${format}`, {
      headers: { cookie: admin.cookie() ?? '' },
    });
    assert.equal(res.status, 200, format);
    const type = (res.headers.get('content-type') ?? '').split(';')[0] ?? '';
    assert.ok(declared.includes(type), `format=${format} serves ${type}, declared ${declared}`);
  }
});
