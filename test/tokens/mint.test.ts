import assert from 'node:assert/strict';
import { randomUUID } from 'node:crypto';
import { test } from 'node:test';
import { LIFETIMES, TokenMintError, type TokenMintErrorReason } from '../../src/tokens/index.ts';
import { decodePart, harness, rejectsWith, T0 } from './forge.ts';

const UUID = /^[0-9a-f]{8}-[0-9a-f]{4}-4[0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12}$/;

/** The payload exactly as it travels, not as verify returns it. */
function payloadOf(token: string): Record<string, unknown> {
  return decodePart(token.split('.')[1]);
}

async function refusesMint(attempt: Promise<unknown>, reason: TokenMintErrorReason, label = '') {
  await assert.rejects(attempt, (error: unknown) => {
    assert.ok(error instanceof TokenMintError, `${label}: expected TokenMintError, got ${error}`);
    assert.equal(error.reason, reason, label);
    return true;
  });
}

test('§5.2 MSSP-side user token carries exactly the spec claims and round-trips', async () => {
  const { tokens, key } = await harness();
  const userId = randomUUID();
  const { token, claims } = await tokens.mintMsspUser({ userId, role: 'mssp_admin' });
  const sent = payloadOf(token);
  assert.match(String(sent.jti), UUID);
  assert.deepEqual(sent, {
    iss: 'svc',
    sub: `user_${userId}`,
    iat: T0,
    exp: T0 + LIFETIMES.msspUser,
    jti: sent.jti,
    user_type: 'mssp',
    role: 'mssp_admin',
    current_tenant: null,
  });
  assert.deepEqual(claims, sent);
  assert.deepEqual(await tokens.verify(token, { expect: 'mssp' }), sent);
  assert.deepEqual(decodePart(token.split('.')[0]), { alg: 'EdDSA', kid: key.kid, typ: 'JWT' });
});

test('§5.2 impersonation token is an mssp token with current_tenant set, default 15 min', async () => {
  const { tokens, key } = await harness();
  const userId = randomUUID();
  const tenantId = randomUUID();
  const { token } = await tokens.mintImpersonation({ userId, role: 'analyst', tenantId });
  const sent = payloadOf(token);
  assert.deepEqual(sent, {
    iss: 'svc',
    sub: `user_${userId}`,
    iat: T0,
    exp: T0 + 15 * 60,
    jti: sent.jti,
    user_type: 'mssp',
    role: 'analyst',
    current_tenant: tenantId,
  });
  assert.deepEqual(await tokens.verify(token, { expect: 'mssp' }), sent);
  assert.deepEqual(decodePart(token.split('.')[0]), { alg: 'EdDSA', kid: key.kid, typ: 'JWT' });
});

test('§5.2 tenant-side user token carries exactly the spec claims and round-trips', async () => {
  const { tokens } = await harness();
  const userId = randomUUID();
  const tenantId = randomUUID();
  const { token } = await tokens.mintTenantUser({ userId, tenantId });
  const sent = payloadOf(token);
  assert.deepEqual(sent, {
    iss: 'svc',
    sub: `user_${userId}`,
    iat: T0,
    exp: T0 + LIFETIMES.tenantUser,
    jti: sent.jti,
    user_type: 'tenant',
    role: 'customer_viewer',
    tenant_id: tenantId,
  });
  assert.deepEqual(await tokens.verify(token, { expect: 'tenant' }), sent);
});

test('§5.2 worker token carries exactly the spec claims and round-trips', async () => {
  const { tokens } = await harness();
  const tenantId = randomUUID();
  const jobId = randomUUID();
  const { token } = await tokens.mintWorker({ tenantId, jobId, jobType: 'enrich' });
  const sent = payloadOf(token);
  assert.deepEqual(sent, {
    iss: 'svc',
    sub: 'worker',
    iat: T0,
    exp: T0 + LIFETIMES.workerDefault,
    jti: sent.jti,
    user_type: 'worker',
    tenant_id: tenantId,
    job_id: jobId,
    job_type: 'enrich',
  });
  assert.deepEqual(await tokens.verify(token, { expect: 'worker' }), sent);
});

test('§5.2 adapter token carries exactly the spec claims and round-trips', async () => {
  const { tokens } = await harness();
  const tenantId = randomUUID();
  const { token } = await tokens.mintAdapter({ tenantId });
  const sent = payloadOf(token);
  assert.deepEqual(sent, {
    iss: 'svc',
    sub: 'adapter',
    iat: T0,
    exp: T0 + LIFETIMES.adapter,
    jti: sent.jti,
    user_type: 'adapter',
    tenant_id: tenantId,
    scope: 'adapter',
  });
  assert.deepEqual(await tokens.verify(token, { expect: 'adapter' }), sent);
});

test('§5.2 every token gets its own jti; iat and exp are whole seconds from the clock', async () => {
  const { tokens, at } = await harness();
  at(0.999);
  const tenantId = randomUUID();
  const first = await tokens.mintAdapter({ tenantId });
  const second = await tokens.mintAdapter({ tenantId });
  assert.notEqual(first.claims.jti, second.claims.jti);
  assert.equal(first.claims.iat, T0);
  assert.ok(Number.isInteger(first.claims.exp));
});

test('§5.2 ids are minted in lowercase canonical form', async () => {
  const { tokens } = await harness();
  const userId = randomUUID();
  const tenantId = randomUUID();
  const { claims } = await tokens.mintImpersonation({
    userId: userId.toUpperCase(),
    role: 'platform_admin',
    tenantId: tenantId.toUpperCase(),
  });
  assert.equal(claims.sub, `user_${userId}`);
  assert.equal(claims.current_tenant, tenantId);
});

test('§8 impersonation TTL: 1800 s is allowed, 1801 s is refused', async () => {
  const { tokens } = await harness();
  const input = { userId: randomUUID(), role: 'analyst', tenantId: randomUUID() };
  const { token, claims } = await tokens.mintImpersonation({ ...input, ttlSeconds: 1800 });
  assert.equal(claims.exp - claims.iat, 1800);
  await tokens.verify(token, { expect: 'mssp' });
  await refusesMint(tokens.mintImpersonation({ ...input, ttlSeconds: 1801 }), 'invalid_ttl');
  for (const ttl of [0, -60, 60.5, Number.NaN, Number.POSITIVE_INFINITY]) {
    await refusesMint(
      tokens.mintImpersonation({ ...input, ttlSeconds: ttl }),
      'invalid_ttl',
      `${ttl}`,
    );
  }
});

test('§5.2 customer_viewer (or any non-MSSP role) cannot mint an impersonation token', async () => {
  const { tokens } = await harness();
  for (const role of ['customer_viewer', 'root', '', 'ANALYST']) {
    await refusesMint(
      tokens.mintImpersonation({ userId: randomUUID(), role, tenantId: randomUUID() }),
      'role_not_allowed',
      role,
    );
  }
});

test('§5.2 mint refuses ids and job types that do not fit the claim schema', async () => {
  const { tokens } = await harness();
  const cases: [string, Promise<unknown>][] = [
    ['user id', tokens.mintMsspUser({ userId: 'admin', role: 'analyst' })],
    ['tenant id', tokens.mintAdapter({ tenantId: 'tenant-acme' })],
    ['job id', tokens.mintWorker({ tenantId: randomUUID(), jobId: '1', jobType: 'triage' })],
    [
      'job type',
      tokens.mintWorker({ tenantId: randomUUID(), jobId: randomUUID(), jobType: 'Triage;drop' }),
    ],
    [
      'impersonated tenant',
      tokens.mintImpersonation({ userId: randomUUID(), role: 'analyst', tenantId: '' }),
    ],
  ];
  for (const [label, attempt] of cases) await refusesMint(attempt, 'invalid_claims', label);
});

test('§5.2 worker token lifetime is bounded by the job, at most one hour', async () => {
  const { tokens } = await harness();
  const input = { tenantId: randomUUID(), jobId: randomUUID(), jobType: 'decide' };
  const { claims } = await tokens.mintWorker({ ...input, ttlSeconds: 3600 });
  assert.equal(claims.exp - claims.iat, 3600);
  await refusesMint(tokens.mintWorker({ ...input, ttlSeconds: 3601 }), 'invalid_ttl');
});

test('§8 adapter token outlives its weekly refresh by one day', async () => {
  const { tokens, at } = await harness();
  const { token } = await tokens.mintAdapter({ tenantId: randomUUID() });
  at(7 * 24 * 3600);
  await tokens.verify(token, { expect: 'adapter' });
  at(8 * 24 * 3600 - 1);
  await tokens.verify(token, { expect: 'adapter' });
  at(8 * 24 * 3600 + 5);
  await rejectsWith(tokens.verify(token, { expect: 'adapter' }), 'expired');
});
