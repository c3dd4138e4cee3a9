import assert from 'node:assert/strict';
import { createHash, randomBytes, randomUUID } from 'node:crypto';
import { after, before, test } from 'node:test';
import { createSvcClient, type SvcClient } from '../../contracts/index.ts';
import { problemCode, startTestApi, type TestApi } from '../support/api.ts';
import { createTestDatabase, type TestDatabase } from '../support/database.ts';
import { createTenant } from '../support/fixtures.ts';
import { TEST_HASH_PARAMS } from '../support/sign-in.ts';
import { auditRows, bearer, issue, raw, setState } from './support.ts';

let db: TestDatabase;
let api: TestApi;
let svc: SvcClient;
let tenantA: string;
let tenantB: string;

before(async () => {
  db = await createTestDatabase();
  api = await startTestApi(db, { hash: { params: TEST_HASH_PARAMS } });
  svc = createSvcClient({ baseUrl: api.url });
  tenantA = await createTenant(db.pools.app, 'alpha');
  tenantB = await createTenant(db.pools.app, 'bravo');
});
after(async () => {
  await api.close();
  await db.drop();
});

async function credentialRow(tenantId: string) {
  const { rows } = await db.pools.mssp.query<{
    credential_hash: string;
    last_used_at: Date | null;
    rotated_at: Date | null;
    row: string;
  }>(
    `SELECT credential_hash, last_used_at, rotated_at, row_to_json(c)::text AS row
       FROM adapter_credentials c WHERE tenant_id = $1`,
    [tenantId],
  );
  return rows[0];
}

/** Any credential of the right shape that nobody issued. */
function strayCredential(): string {
  return randomBytes(32).toString('base64url');
}

test('§4.4 bootstrap: the credential buys an adapter token for its tenant; use and audit recorded', async () => {
  const { secret } = await issue(db, tenantA);
  const res = await svc.internal.bootstrap({ body: { tenant_id: tenantA, credential: secret } });
  assert.equal(res.status, 200);
  if (res.status !== 200) return;
  assert.equal(res.headers.get('cache-control'), 'no-store');
  const claims = await api.tokens.verify(res.body.token, { expect: 'adapter' });
  assert.equal(claims.tenant_id, tenantA);
  assert.equal(claims.scope, 'adapter');
  assert.equal(res.body.expires_at, new Date(claims.exp * 1000).toISOString());
  assert.ok((await credentialRow(tenantA))?.last_used_at instanceof Date);
  const audit = await auditRows(db, tenantA);
  assert.deepEqual(
    audit.map((a) => [a.action, a.actor_principal, a.actor_id, a.tenant_id, a.resource_id]),
    [['adapter.bootstrap', 'Adapter', tenantA, tenantA, tenantA]],
  );
  assert.deepEqual(audit[0]?.details, { jti: claims.jti, expires_at: res.body.expires_at });
  const health = await svc.internal.health({
    body: { version: '1.0.0' },
    headers: bearer(res.body.token),
  });
  assert.equal(health.status, 200, 'the minted token works on the adapter endpoints');
  const upper = await svc.internal.bootstrap({
    body: { tenant_id: tenantA.toUpperCase(), credential: secret },
  });
  assert.equal(upper.status, 200, 'a uuid in upper case names the same tenant');
  if (upper.status === 200) {
    const again = await api.tokens.verify(upper.body.token, { expect: 'adapter' });
    assert.equal(again.tenant_id, tenantA);
  }
});

test('§4.4 only the SHA-256 of the 256-bit secret is stored; re-issuing rotates it', async () => {
  const tenant = await createTenant(db.pools.app);
  const first = await issue(db, tenant);
  assert.equal(Buffer.from(first.secret, 'base64url').length, 32);
  const stored = await credentialRow(tenant);
  assert.equal(stored?.credential_hash, createHash('sha256').update(first.secret).digest('hex'));
  assert.equal(stored?.rotated_at, null);
  assert.ok(!stored?.row.includes(first.secret), 'the secret itself is nowhere in the row');

  await svc.internal.bootstrap({ body: { tenant_id: tenant, credential: first.secret } });
  const second = await issue(db, tenant);
  assert.notEqual(second.secret, first.secret);
  const rotated = await credentialRow(tenant);
  assert.ok(rotated?.rotated_at instanceof Date);
  assert.equal(rotated?.last_used_at, null, 'last_used_at describes the current credential');
  const old = await svc.internal.bootstrap({
    body: { tenant_id: tenant, credential: first.secret },
  });
  assert.deepEqual([old.status, problemCode(old)], [401, 'invalid_bootstrap_credential']);
  const fresh = await svc.internal.bootstrap({
    body: { tenant_id: tenant, credential: second.secret },
  });
  assert.equal(fresh.status, 200);
});

test("§9.5.5 A's credential presented with B's tenant id is refused and writes nothing for B", async () => {
  const a = await issue(db, tenantA);
  await issue(db, tenantB);
  const auditBefore = (await auditRows(db, tenantB)).length;
  const res = await svc.internal.bootstrap({ body: { tenant_id: tenantB, credential: a.secret } });
  assert.deepEqual([res.status, problemCode(res)], [401, 'invalid_bootstrap_credential']);
  assert.equal((await auditRows(db, tenantB)).length, auditBefore);
  assert.equal((await credentialRow(tenantB))?.last_used_at, null);
});

test('§4.4 unknown tenant, wrong credential, none issued, deleted tenant: one identical answer, same work', async () => {
  const neverIssued = await createTenant(db.pools.app);
  const deleted = await createTenant(db.pools.app);
  const { secret: deletedSecret } = await issue(db, deleted);
  await setState(db, deleted, 'soft-deleted');
  await issue(db, tenantA);
  const attempts = [
    { tenant_id: randomUUID(), credential: strayCredential() },
    { tenant_id: tenantA, credential: strayCredential() },
    { tenant_id: neverIssued, credential: strayCredential() },
    { tenant_id: deleted, credential: deletedSecret },
  ];
  const answers: unknown[] = [];
  for (const body of attempts) {
    const transactions = api.transactions();
    const res = await svc.internal.bootstrap({ body });
    assert.equal(res.status, 401);
    assert.equal(api.transactions() - transactions, 1, 'one transaction whatever the case');
    const { request_id: _, ...answer } = res.body as Record<string, unknown>;
    answers.push(answer);
  }
  for (const answer of answers.slice(1)) assert.deepEqual(answer, answers[0]);
  assert.equal((answers[0] as { code: string }).code, 'invalid_bootstrap_credential');
  for (const t of [neverIssued, deleted]) assert.deepEqual(await auditRows(db, t), []);
});

test('§4.4 bad bootstrap input gets its documented code before any database work', async () => {
  const tenant = await createTenant(db.pools.app);
  const { secret } = await issue(db, tenant);
  const json = { 'content-type': 'application/json' };
  const path = '/api/internal/adapter/bootstrap';
  const transactions = api.transactions();
  const invalid: [string, unknown][] = [
    ['unknown field', { tenant_id: tenant, credential: secret, scope: 'adapter' }],
    ['tenant id not a uuid', { tenant_id: 'alpha', credential: secret }],
    ['credential not a string', { tenant_id: tenant, credential: 42 }],
    ['credential of the wrong length', { tenant_id: tenant, credential: `${secret}x` }],
    ['credential missing', { tenant_id: tenant }],
    ['body an array', [tenant, secret]],
  ];
  for (const [label, body] of invalid) {
    const res = await raw(api, 'POST', path, JSON.stringify(body), json);
    assert.deepEqual([res.status, res.body.code], [400, 'validation_failed'], label);
  }
  const good = JSON.stringify({ tenant_id: tenant, credential: secret });
  const query = await raw(api, 'POST', `${path}?tenant_id=${tenant}`, good, json);
  assert.deepEqual([query.status, query.body.code], [400, 'validation_failed']);
  const notJson = await raw(api, 'POST', path, '{"tenant_id":', json);
  assert.deepEqual([notJson.status, notJson.body.code], [400, 'malformed_json']);
  const text = await raw(api, 'POST', path, good, { 'content-type': 'text/plain' });
  assert.deepEqual([text.status, text.body.code], [415, 'unsupported_media_type']);
  const huge = JSON.stringify({ tenant_id: tenant, credential: 'x'.repeat(2 ** 21) });
  const oversize = await raw(api, 'POST', path, huge, json);
  assert.deepEqual([oversize.status, oversize.body.code], [413, 'payload_too_large']);
  assert.equal(api.transactions(), transactions, 'no input reached the database');
  assert.deepEqual(await auditRows(db, tenant), []);
  assert.equal((await credentialRow(tenant))?.last_used_at, null);
});
