import assert from 'node:assert/strict';
import { randomUUID } from 'node:crypto';
import { after, before, test } from 'node:test';
import { createSvcClient, type SvcClient } from '../../contracts/index.ts';
import { problemCode, startTestApi, type TestApi } from '../support/api.ts';
import { createTestDatabase, type TestDatabase } from '../support/database.ts';
import { createTenant } from '../support/fixtures.ts';
import { TEST_HASH_PARAMS } from '../support/sign-in.ts';
import {
  adapterToken,
  auditRows,
  bearer,
  heartbeatRow,
  lifecycleRows,
  raw,
  setState,
  type TenantState,
  tenantState,
} from './support.ts';

let db: TestDatabase;
let api: TestApi;
let svc: SvcClient;

before(async () => {
  db = await createTestDatabase();
  api = await startTestApi(db, { hash: { params: TEST_HASH_PARAMS } });
  svc = createSvcClient({ baseUrl: api.url });
});
after(async () => {
  await api.close();
  await db.drop();
});

async function tenantIn(state: TenantState): Promise<string> {
  const id = await createTenant(db.pools.app);
  await setState(db, id, state);
  return id;
}

function beat(token: string, version = '1.4.2', status?: Record<string, string | number>) {
  return svc.internal.health({
    body: { version, ...(status ? { status } : {}) },
    headers: bearer(token),
  });
}

/** Nothing the heartbeat path writes exists for this tenant, and its state is as given. */
async function assertUntouched(tenantId: string, state: TenantState, label: string) {
  assert.equal(await heartbeatRow(db, tenantId), undefined, `${label}: heartbeat row`);
  assert.equal(await tenantState(db, tenantId), state, `${label}: state`);
  assert.deepEqual(await lifecycleRows(db, tenantId), [], `${label}: lifecycle`);
  assert.deepEqual(await auditRows(db, tenantId), [], `${label}: audit`);
}

test('§6.2 the first heartbeat of a provisioning tenant activates it: state, lifecycle event, audit', async () => {
  const tenant = await tenantIn('provisioning');
  const minted = await api.tokens.mintAdapter({ tenantId: tenant });
  const res = await beat(minted.token, '1.4.2', { monitor: 'ready', queue_depth: 0 });
  assert.equal(res.status, 200);
  assert.deepEqual(res.body, { tenant_state: 'active', activated: true });
  assert.equal(await tenantState(db, tenant), 'active');
  assert.deepEqual(await lifecycleRows(db, tenant), [
    { kind: 'transition', from_state: 'provisioning', to_state: 'active', actor: 'adapter' },
  ]);
  const audit = await auditRows(db, tenant);
  assert.deepEqual(
    audit.map((a) => ({ ...a, details: undefined })),
    [
      {
        action: 'tenant.activate',
        actor_principal: 'Adapter',
        actor_id: tenant,
        tenant_id: tenant,
        resource_type: 'tenant',
        resource_id: tenant,
        before: { state: 'provisioning' },
        after: { state: 'active' },
        details: undefined,
      },
    ],
  );
  assert.deepEqual(audit[0]?.details, { adapter_version: '1.4.2', jti: minted.claims.jti });
  const row = await heartbeatRow(db, tenant);
  assert.equal(row?.adapter_version, '1.4.2');
  assert.deepEqual(row?.status, { monitor: 'ready', queue_depth: 0 });
  assert.equal(row?.first_seen_at.getTime(), row?.last_seen_at.getTime());
});

test('§6.2 later heartbeats only move last_seen_at and the reported version; they are not audited', async () => {
  const tenant = await tenantIn('provisioning');
  const token = await adapterToken(api, tenant);
  await beat(token, '1.4.2');
  const first = await heartbeatRow(db, tenant);
  api.clock.advance(60_000);
  const res = await beat(token, '1.5.0', { monitor: 'degraded' });
  assert.deepEqual(res.body, { tenant_state: 'active', activated: false });
  const later = await heartbeatRow(db, tenant);
  assert.equal(later?.first_seen_at.getTime(), first?.first_seen_at.getTime());
  assert.equal(later?.last_seen_at.getTime(), (first?.last_seen_at.getTime() ?? 0) + 60_000);
  assert.equal(later?.adapter_version, '1.5.0');
  assert.deepEqual(later?.status, { monitor: 'degraded' });
  assert.equal((await lifecycleRows(db, tenant)).length, 1);
  assert.equal((await auditRows(db, tenant)).length, 1);
});

test('§3.1 concurrent first heartbeats activate exactly once: one transition row, one audit row', async () => {
  const tenant = await tenantIn('provisioning');
  const token = await adapterToken(api, tenant);
  const answers = await Promise.all(Array.from({ length: 12 }, () => beat(token)));
  assert.deepEqual(
    answers.map((a) => a.status),
    answers.map(() => 200),
  );
  const bodies = answers.map((a) => a.body as { tenant_state: string; activated: boolean });
  assert.equal(bodies.filter((b) => b.activated).length, 1);
  assert.ok(bodies.every((b) => b.tenant_state === 'active'));
  assert.equal((await lifecycleRows(db, tenant)).length, 1);
  assert.deepEqual(
    (await auditRows(db, tenant)).map((a) => a.action),
    ['tenant.activate'],
  );
});

test('§3.1 a heartbeat for a pending, decommissioning or soft-deleted tenant is recorded, changes no state', async () => {
  for (const state of ['pending', 'decommissioning', 'soft-deleted', 'active'] as const) {
    const tenant = await tenantIn(state);
    const res = await beat(await adapterToken(api, tenant), '2.0.0');
    assert.equal(res.status, 200, state);
    assert.deepEqual(res.body, { tenant_state: state, activated: false }, state);
    assert.equal((await heartbeatRow(db, tenant))?.adapter_version, '2.0.0', state);
    assert.equal(await tenantState(db, tenant), state);
    assert.deepEqual(await lifecycleRows(db, tenant), [], state);
    assert.deepEqual(await auditRows(db, tenant), [], state);
  }
});

test('§9.4 a tenant heard from while pending activates on its first heartbeat once provisioning', async () => {
  const tenant = await tenantIn('pending');
  const token = await adapterToken(api, tenant);
  assert.deepEqual((await beat(token)).body, { tenant_state: 'pending', activated: false });
  await setState(db, tenant, 'provisioning');
  assert.deepEqual((await beat(token)).body, { tenant_state: 'active', activated: true });
  assert.equal((await lifecycleRows(db, tenant)).length, 1);
});

test("§9.5.5 an adapter token for A never writes B's heartbeat: the tenant comes only from the token", async () => {
  const a = await tenantIn('provisioning');
  const b = await tenantIn('provisioning');
  const token = await adapterToken(api, a);
  const inBody = await svc.internal.health({
    body: { version: '1.0.0', tenant_id: b } as never,
    headers: bearer(token),
  });
  assert.deepEqual([inBody.status, problemCode(inBody)], [400, 'validation_failed']);
  const inQuery = await svc.internal.health({
    body: { version: '1.0.0' },
    query: { tenant_id: b } as never,
    headers: bearer(token),
  });
  assert.deepEqual([inQuery.status, problemCode(inQuery)], [400, 'validation_failed']);
  assert.deepEqual(
    (inQuery.body as unknown as { errors: { path: string }[] }).errors[0]?.path,
    '/query/tenant_id',
  );
  await assertUntouched(a, 'provisioning', 'A after the rejected requests');
  await assertUntouched(b, 'provisioning', 'B after the rejected requests');

  const own = await beat(token);
  assert.deepEqual(own.body, { tenant_state: 'active', activated: true });
  await assertUntouched(b, 'provisioning', 'B after A heartbeats');
});

test('§4.4 bad heartbeat input gets its documented code and writes nothing', async () => {
  const tenant = await tenantIn('provisioning');
  const token = await adapterToken(api, tenant);
  const headers = { ...bearer(token), 'content-type': 'application/json' };
  const tooMany = Object.fromEntries(Array.from({ length: 65 }, (_, i) => [`c${i}`, 'ok']));
  const invalid: [string, unknown][] = [
    ['version missing', { status: {} }],
    ['version a number', { version: 1 }],
    ['version empty', { version: '' }],
    ['version over 64 characters', { version: `1${'0'.repeat(64)}` }],
    ['version with a space', { version: '1.0 beta' }],
    ['status an array', { version: '1.0.0', status: ['ready'] }],
    ['status nested', { version: '1.0.0', status: { monitor: { ok: true } } }],
    ['status key not lower-case', { version: '1.0.0', status: { Monitor: 'ready' } }],
    ['status over 64 entries', { version: '1.0.0', status: tooMany }],
    ['status value over 256', { version: '1.0.0', status: { m: 'x'.repeat(257) } }],
    ['unknown field', { version: '1.0.0', activated: true }],
    ['null body', null],
  ];
  const path = '/api/internal/adapter/health';
  for (const [label, body] of invalid) {
    const res = await raw(api, 'POST', path, JSON.stringify(body), headers);
    assert.deepEqual([res.status, res.body.code], [400, 'validation_failed'], label);
  }
  const notJson = await raw(api, 'POST', path, '{"version":', headers);
  assert.deepEqual([notJson.status, notJson.body.code], [400, 'malformed_json']);
  const text = await raw(api, 'POST', path, '{"version":"1.0.0"}', {
    ...bearer(token),
    'content-type': 'text/plain',
  });
  assert.deepEqual([text.status, text.body.code], [415, 'unsupported_media_type']);
  const huge = JSON.stringify({ version: '1.0.0', status: { m: 'x'.repeat(2 ** 21) } });
  const oversize = await raw(api, 'POST', path, huge, headers);
  assert.deepEqual([oversize.status, oversize.body.code], [413, 'payload_too_large']);
  await assertUntouched(tenant, 'provisioning', 'after bad input');
});

test('§4.4 a genuine token whose tenant does not exist is refused with 401 and writes nothing', async () => {
  const ghost = randomUUID();
  const token = await adapterToken(api, ghost);
  const res = await beat(token);
  assert.deepEqual([res.status, problemCode(res)], [401, 'invalid_token']);
  const { rows } = await db.pools.mssp.query(
    'SELECT 1 FROM adapter_heartbeats WHERE tenant_id = $1',
    [ghost],
  );
  assert.equal(rows.length, 0);
});
