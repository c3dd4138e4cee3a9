import assert from 'node:assert/strict';
import { test } from 'node:test';
import { setTimeout as sleep } from 'node:timers/promises';
import { refreshAdapterToken } from '../../src/orchestrator/token-refresh.ts';
import {
  adapterHeartbeat,
  createTenantVia,
  lifecycle,
  tenantConfig,
  tenantRow,
  uniqueSlug,
  useOrchestration,
  waitForState,
  waitForStep,
} from './support.ts';

// Readiness is re-read only every 8 s: the heartbeat below lands while the package is
// installed but not yet recorded Ready.
const o = useOrchestration({ timing: { readinessPollMs: 8_000 } });

test('§3.1 row 3 a heartbeat before the package is Ready does not activate; recording readiness then does', {
  timeout: 300_000,
}, async () => {
  const slug = uniqueSlug('early');
  const id = await createTenantVia(o, tenantConfig(slug));
  await waitForState(o, id, 'provisioning');
  // The test sends these heartbeats itself (not the real adapter, see activeTenant): each must
  // land at a moment the test picks, and its exact answer is the point.
  const beat = await adapterHeartbeat(o, slug);
  assert.deepEqual(
    [beat.status, beat.body],
    [200, { tenant_state: 'provisioning', activated: false }],
  );
  assert.ok(!(await lifecycle(o, id)).includes('step:package_ready'), 'readiness not yet recorded');

  const row = await waitForState(o, id, 'active');
  assert.equal(row.error_details, null);
  assert.deepEqual((await lifecycle(o, id)).slice(-2), [
    'step:package_ready',
    'provisioning->active',
  ]);
  const { rows } = await o.db.pools.mssp.query<{ details: Record<string, unknown> }>(
    `SELECT details FROM tenant_lifecycle_events WHERE tenant_id = $1 AND to_state = 'active'`,
    [id],
  );
  assert.equal(rows[0]?.details.completed_by, 'package_ready');
  const { rows: audit } = await o.db.pools.mssp.query<{ action: string; actor_id: string }>(
    `SELECT action, actor_id FROM audit_log WHERE tenant_id = $1 AND action = 'tenant.activate'`,
    [id],
  );
  assert.deepEqual(audit, [{ action: 'tenant.activate', actor_id: 'system:orchestrator' }]);
  // Later heartbeats only refresh liveness.
  await sleep(10);
  const again = await adapterHeartbeat(o, slug);
  assert.deepEqual(again.body, { tenant_state: 'active', activated: false });
  assert.equal((await tenantRow(o, id))?.state, 'active');
});

test('§8 the adapter JWT is refreshed weekly by rewriting its Secret; the database records only the new version', {
  timeout: 300_000,
}, async () => {
  const slug = uniqueSlug('token');
  const id = await createTenantVia(o, tenantConfig(slug));
  await waitForState(o, id, 'provisioning');
  const namespace = `tenant-${slug}`;
  const read = async () => {
    const s = await o.core.readNamespacedSecret({ name: 'svc-adapter-token', namespace });
    return Buffer.from(s.data?.token ?? '', 'base64').toString();
  };
  const first = await read();
  const dayMs = 86_400_000;
  const at = (days: number) => ({ ...o.deps, now: () => new Date(Date.now() + days * dayMs) });

  assert.equal(await refreshAdapterToken(at(6), id), false, 'not due after six days');
  assert.equal(await read(), first);
  assert.equal(await refreshAdapterToken(at(7.01), id), true, 'due after a week');
  const second = await read();
  assert.notEqual(second, first);
  const claims = await o.api.tokens.verify(second, { expect: 'adapter' });
  assert.equal(claims.tenant_id, id);
  const { rows } = await o.db.pools.mssp.query<{ version: number; rotated_at: Date | null }>(
    `SELECT version, rotated_at FROM tenant_secrets WHERE tenant_id = $1 AND purpose = 'adapter-token'`,
    [id],
  );
  assert.equal(rows[0]?.version, 2);
  assert.ok(rows[0]?.rotated_at);
  assert.ok((await lifecycle(o, id)).includes('step:adapter_token_written'));
  const stored = await o.db.pools.mssp.query(
    `SELECT 1 FROM tenant_lifecycle_events WHERE tenant_id = $1 AND details::text LIKE '%' || $2 || '%'`,
    [id, second.slice(-20)],
  );
  assert.equal(stored.rows.length, 0, 'the token itself is not in the database');
});

test('§3.1 a Ready tenant waiting for its adapter costs a few queries per poll, not a busy loop', {
  timeout: 300_000,
}, async () => {
  const slug = uniqueSlug('idle');
  const id = await createTenantVia(o, tenantConfig(slug));
  await waitForState(o, id, 'provisioning');
  await waitForStep(o, id, 'step:package_ready');
  const commits = async () => {
    const { rows } = await o.db.pools.admin.query<{ n: string }>(
      `SELECT pg_stat_clear_snapshot(), xact_commit::text AS n FROM pg_stat_database
        WHERE datname = current_database()`,
    );
    return Number(rows[0]?.n);
  };
  await sleep(1_500); // let the statistics catch up with the readiness work
  const before = await commits();
  await sleep(4_000);
  const spent = (await commits()) - before;
  // The loop polls every 500 ms here: ~8 passes of a handful of transactions each. A pass
  // that re-kicked itself would commit thousands in 4 s.
  assert.ok(spent < 150, `${spent} transactions in 4 s while only waiting`);
  assert.equal((await tenantRow(o, id))?.state, 'provisioning');
});
