import assert from 'node:assert/strict';
import { randomUUID } from 'node:crypto';
import { after, before, test } from 'node:test';
import { createSvcClient, type SvcClient } from '../../contracts/index.ts';
import { LIFETIMES } from '../../src/tokens/index.ts';
import { client, problemCode, seedUser, startTestApi, type TestApi } from '../support/api.ts';
import { createTestDatabase, type TestDatabase } from '../support/database.ts';
import { createTenant } from '../support/fixtures.ts';
import { TEST_HASH_PARAMS } from '../support/sign-in.ts';
import { decodePart, encode, freshKey, signEd, signHs256 } from '../tokens/forge.ts';
import {
  adapterToken,
  auditRows,
  bearer,
  heartbeatRow,
  lifecycleRows,
  setState,
  tenantState,
} from './support.ts';

let db: TestDatabase;
let api: TestApi;
let svc: SvcClient;
let tenant: string;
const PASSWORD = 'correct horse battery';

before(async () => {
  db = await createTestDatabase();
  api = await startTestApi(db, { hash: { params: TEST_HASH_PARAMS } });
  svc = createSvcClient({ baseUrl: api.url });
  tenant = await createTenant(db.pools.app, 'alpha');
  await setState(db, tenant, 'provisioning');
});
after(async () => {
  await api.close();
  await db.drop();
});

/** Calls both adapter endpoints with the given headers; returns [status, code] of each. */
async function probe(headers: Record<string, string>): Promise<[number, string | undefined][]> {
  const health = await svc.internal.health({ body: { version: '1.0.0' }, headers });
  const config = await svc.internal.config({ headers });
  return [
    [health.status, problemCode(health)],
    [config.status, problemCode(config)],
  ];
}

/** None of the refused calls may have recorded a heartbeat or activated the tenant. */
async function assertNothingWritten(label: string) {
  assert.equal(await heartbeatRow(db, tenant), undefined, label);
  assert.equal(await tenantState(db, tenant), 'provisioning', label);
  assert.deepEqual(await lifecycleRows(db, tenant), [], label);
  assert.deepEqual(await auditRows(db, tenant), [], label);
}

/** Adapter claims for our tenant exactly as svc would mint them now. */
function adapterClaims(): Record<string, unknown> {
  const iat = Math.floor(api.clock.now().getTime() / 1000);
  return {
    iss: 'svc',
    sub: 'adapter',
    iat,
    exp: iat + 900,
    jti: randomUUID(),
    user_type: 'adapter',
    tenant_id: tenant,
    scope: 'adapter',
  };
}

test('§4.4 the adapter endpoints need a service token: none → 401 unauthenticated', async () => {
  assert.deepEqual(await probe({}), [
    [401, 'unauthenticated'],
    [401, 'unauthenticated'],
  ]);
  assert.deepEqual(await probe({ authorization: 'Basic YWRhcHRlcjpzZWNyZXQ=' }), [
    [401, 'invalid_token'],
    [401, 'invalid_token'],
  ]);
  await assertNothingWritten('no token');
});

test('§5.2 forged, tampered, HS256, alg none and expired adapter tokens → 401 invalid_token', async () => {
  const genuine = await adapterToken(api, tenant);
  const [header, payload, signature] = genuine.split('.');
  const ours = decodePart(header);
  const attacker = await freshKey();
  const other = await createTenant(db.pools.app);
  const forged: Record<string, string> = {
    'another key under our kid': await signEd(attacker.privateKey, ours, adapterClaims()),
    'another key under its own kid': await signEd(
      attacker.privateKey,
      { ...ours, kid: attacker.kid },
      adapterClaims(),
    ),
    'payload moved to another tenant, original signature': `${header}.${encode({
      ...decodePart(payload),
      tenant_id: other,
    })}.${signature}`,
    'HS256 over the claims': signHs256('adapter', { ...ours, alg: 'HS256' }, adapterClaims()),
    'alg none': `${encode({ alg: 'none', typ: 'JWT' })}.${encode(adapterClaims())}.`,
    'a worker-shaped claim set under no signature': `${encode(ours)}.${encode({
      ...adapterClaims(),
      user_type: 'worker',
    })}.`,
  };
  for (const [label, token] of Object.entries(forged)) {
    assert.deepEqual(
      await probe(bearer(token)),
      [
        [401, 'invalid_token'],
        [401, 'invalid_token'],
      ],
      label,
    );
  }
  // Past exp plus the 5 s tolerance, on the service's own clock.
  api.clock.advance((LIFETIMES.adapter + 6) * 1000);
  try {
    assert.deepEqual(await probe(bearer(genuine)), [
      [401, 'invalid_token'],
      [401, 'invalid_token'],
    ]);
  } finally {
    api.clock.advance(-(LIFETIMES.adapter + 6) * 1000);
  }
  await assertNothingWritten('forged tokens');
  assert.equal(await heartbeatRow(db, other), undefined);
});

test('§4.4 people never reach the service family: session cookie, MSSP and tenant user tokens → 401', async () => {
  const email = 'pa@mssp.test';
  const userId = await seedUser(db, api.hasher, {
    email,
    role: 'platform_admin',
    password: PASSWORD,
  });
  const browser = client(api);
  assert.equal((await browser.login(email, PASSWORD)).status, 200);
  const cookie = browser.cookie() ?? '';
  assert.deepEqual(await probe({ cookie, origin: api.origin }), [
    [401, 'unauthenticated'],
    [401, 'unauthenticated'],
  ]);
  const mssp = await api.tokens.mintMsspUser({ userId, role: 'platform_admin' });
  const viewer = await api.tokens.mintTenantUser({ userId: randomUUID(), tenantId: tenant });
  for (const token of [mssp.token, viewer.token]) {
    assert.deepEqual(await probe(bearer(token)), [
      [401, 'invalid_token'],
      [401, 'invalid_token'],
    ]);
  }
  await assertNothingWritten('user credentials');
});

test('§2.1 a worker token, even for the same tenant, may not call adapter endpoints: 403 forbidden', async () => {
  const worker = await api.tokens.mintWorker({
    tenantId: tenant,
    jobId: randomUUID(),
    jobType: 'triage',
  });
  assert.deepEqual(await probe(bearer(worker.token)), [
    [403, 'forbidden'],
    [403, 'forbidden'],
  ]);
  await assertNothingWritten('worker token');
});
