import assert from 'node:assert/strict';
import { after, before, test } from 'node:test';
import { setTimeout as sleep } from 'node:timers/promises';
import { auditRows, heartbeatRow, setState, tenantState } from '../internal/support.ts';
import { startAdapter } from '../support/adapter-process.ts';
import { startTestApi, type TestApi } from '../support/api.ts';
import { createTestDatabase, type TestDatabase } from '../support/database.ts';
import { type AlertIndices, adapterTenant, alertIndices, eventually } from './support.ts';

// The indexer is the real engine (the run's shared OpenSearch node, this file's own indices).
let db: TestDatabase;
let api: TestApi;
let indexer: AlertIndices;

before(async () => {
  db = await createTestDatabase();
  api = await startTestApi(db);
  indexer = await alertIndices();
});
after(async () => {
  await api.close();
  await db.drop();
});

test('§5.2 §8 weekly refresh: a rewritten token file is used without a restart (svc records the new token’s jti)', async () => {
  const tenant = await adapterTenant(db, 'refresh');
  const first = await api.tokens.mintAdapter({ tenantId: tenant.tenantId });
  await tenant.mounts.writeToken(first.token);
  const adapter = await startAdapter(tenant.env(api.url, indexer, indexer.env()));
  try {
    await eventually(
      () => heartbeatRow(db, tenant.tenantId),
      (row) => row !== undefined,
    );
    const second = await api.tokens.mintAdapter({ tenantId: tenant.tenantId });
    assert.notEqual(second.claims.jti, first.claims.jti);
    await tenant.mounts.writeToken(second.token);
    await eventually(
      async () => adapter.logs().filter((l) => l.msg === 'token file changed').length,
      (n) => n === 2,
    );
    // The next heartbeat after the move to provisioning activates the tenant and svc audits
    // the jti of the token that carried it.
    await setState(db, tenant.tenantId, 'provisioning');
    await eventually(
      () => tenantState(db, tenant.tenantId),
      (state) => state === 'active',
    );
    const audit = await auditRows(db, tenant.tenantId);
    const activation = audit.find((a) => a.action === 'tenant.activate');
    assert.equal(activation?.details.jti, second.claims.jti, 'the rewritten token was used');
    assert.deepEqual(
      audit.filter((a) => a.action === 'adapter.bootstrap'),
      [],
      'a usable token file means no bootstrap',
    );
  } finally {
    assert.equal(await adapter.stop(), 0);
    await tenant.mounts.remove();
  }
});

test('§4.4 a token svc refuses (tampered signature) is dropped: the adapter bootstraps from its credential and carries on', async () => {
  const tenant = await adapterTenant(db, 'tampered');
  const genuine = (await api.tokens.mintAdapter({ tenantId: tenant.tenantId })).token;
  const signature = genuine.slice(genuine.lastIndexOf('.') + 1);
  const flipped = `${signature[0] === 'A' ? 'B' : 'A'}${signature.slice(1)}`;
  await tenant.mounts.writeToken(`${genuine.slice(0, genuine.lastIndexOf('.') + 1)}${flipped}`);
  const adapter = await startAdapter(tenant.env(api.url, indexer, indexer.env()));
  try {
    await adapter.waitForLog((l) => l.msg === 'svc refused the token file; bootstrapping instead');
    await eventually(
      () => heartbeatRow(db, tenant.tenantId),
      (row) => row !== undefined,
    );
    const audit = await auditRows(db, tenant.tenantId);
    assert.equal(audit.filter((a) => a.action === 'adapter.bootstrap').length, 1);
    // Several heartbeats later (0.5 s apart) it still reaches svc on the one exchanged token.
    await sleep(2_000);
    const ready = await fetch(`http://127.0.0.1:${adapter.port}/readyz`);
    assert.equal(ready.status, 200, 'the last heartbeat was answered');
    assert.equal(
      (await auditRows(db, tenant.tenantId)).filter((a) => a.action === 'adapter.bootstrap').length,
      1,
      'one exchange serves the heartbeats that follow; the refused file token is not retried',
    );
  } finally {
    assert.equal(await adapter.stop(), 0);
    await tenant.mounts.remove();
  }
});

test('§4.4 a token of another tenant in the token file is never sent: the adapter acts only for its own tenant', async () => {
  const mine = await adapterTenant(db, 'mine');
  const other = await adapterTenant(db, 'other');
  const foreign = (await api.tokens.mintAdapter({ tenantId: other.tenantId })).token;
  await mine.mounts.writeToken(foreign);
  const adapter = await startAdapter(mine.env(api.url, indexer, indexer.env()));
  try {
    await adapter.waitForLog(
      (l) => l.msg === 'the token file holds no token of this tenant; bootstrapping instead',
    );
    await eventually(
      () => heartbeatRow(db, mine.tenantId),
      (row) => row !== undefined,
    );
    assert.equal(
      await heartbeatRow(db, other.tenantId),
      undefined,
      'nothing reached the other tenant',
    );
  } finally {
    assert.equal(await adapter.stop(), 0);
    await mine.mounts.remove();
    await other.mounts.remove();
  }
});
