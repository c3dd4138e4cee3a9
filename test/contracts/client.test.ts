import assert from 'node:assert/strict';
import { after, before, test } from 'node:test';
import { createSvcClient } from '../../contracts/index.ts';
import { seedUser, startTestApi, type TestApi } from '../support/api.ts';
import { createTestDatabase, type TestDatabase } from '../support/database.ts';
import { TEST_HASH_PARAMS } from '../support/sign-in.ts';

let db: TestDatabase;
let api: TestApi;
before(async () => {
  db = await createTestDatabase();
  api = await startTestApi(db, { hash: { params: TEST_HASH_PARAMS } });
  await seedUser(db, api.hasher, {
    email: 'sdk@mssp.test',
    role: 'platform_admin',
    password: 'correct horse battery',
  });
});
after(async () => {
  await api.close();
  await db.drop();
});

test('§4 the typed SDK signs in, reads the identity and signs out against the real server', async () => {
  const svc = createSvcClient({ baseUrl: api.url, headers: { origin: api.origin } });
  const login = await svc.auth.login({
    body: { email: 'sdk@mssp.test', password: 'correct horse battery' },
  });
  assert.equal(login.status, 200);
  if (login.status === 200) assert.equal(login.body.identity.role, 'platform_admin');
  const me = await svc.auth.me();
  assert.equal(me.status, 200);
  if (me.status === 200) assert.equal(me.body.identity.email, 'sdk@mssp.test');
  const out = await svc.auth.logout();
  assert.equal(out.status, 204);
  const after = await svc.auth.me();
  assert.equal(after.status, 401);
  if (after.status === 401) assert.equal(after.body.code, 'unauthenticated');
});
