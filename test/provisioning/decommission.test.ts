import assert from 'node:assert/strict';
import { test } from 'node:test';
import { setTimeout as sleep } from 'node:timers/promises';
import { ApiException } from '@kubernetes/client-node';
import { PURGE_ORDER } from '../../src/domains/provisioning/provisioning-repository.ts';
import { installSecretNames } from '../../src/domains/tenants/tenant-creation.ts';
import { RELEASE_NAME } from '../../src/orchestrator/release.ts';
import { problemCode } from '../support/api.ts';
import { TENANT_ROW_FIXTURES } from '../support/fixtures.ts';
import {
  activeTenant,
  createTenantVia,
  lifecycle,
  tenantConfig,
  tenantRow,
  uniqueSlug,
  useOrchestration,
  waitForState,
} from './support.ts';

// Grace 4 s and retention 4 s: long enough to observe each state, short enough for a test.
const o = useOrchestration({ timing: { decommissionGraceMs: 4_000, retentionMs: 4_000 } });

async function exists(read: () => Promise<unknown>): Promise<boolean> {
  try {
    await read();
    return true;
  } catch (error) {
    if (error instanceof ApiException && error.code === 404) return false;
    throw error;
  }
}

test('§3.1 decommission: grace period, then uninstall, namespace and Secrets removed, soft-deleted; after retention the rows are purged', {
  timeout: 400_000,
}, async () => {
  const { id, slug, adapter } = await activeTenant(o, 'bye');
  const namespace = `tenant-${slug}`;
  // Every kind of tenant row, so the purge is shown to reach all of them.
  await o.db.app.withTenant(id, async (tx) => {
    for (const insert of Object.values(TENANT_ROW_FIXTURES)) await insert(tx, id);
  });

  const res = await o.admin.mssp.decommission({ params: { tenant_id: id } });
  assert.equal(res.status, 200);
  assert.equal(res.status === 200 && res.body.tenant.state, 'decommissioning');
  const twice = await o.admin.mssp.decommission({ params: { tenant_id: id } });
  assert.deepEqual([twice.status, problemCode(twice)], [409, 'invalid_state']);
  // Within the grace period nothing is removed.
  await sleep(1_500);
  assert.equal((await tenantRow(o, id))?.state, 'decommissioning');
  assert.equal(
    (await o.deps.helm.status({ release: RELEASE_NAME, namespace }))?.status,
    'deployed',
  );

  const soft = await waitForState(o, id, 'soft-deleted', 120_000);
  assert.ok(soft.deleted_at instanceof Date);
  assert.equal(await o.deps.helm.status({ release: RELEASE_NAME, namespace }), undefined);
  assert.equal(await exists(() => o.core.readNamespace({ name: namespace })), false);
  for (const name of Object.values(installSecretNames(id))) {
    assert.equal(await o.deps.secrets.read(name), undefined, `${name} removed`);
  }
  assert.deepEqual((await lifecycle(o, id)).slice(-3), [
    'active->decommissioning',
    'step:decommissioned',
    'decommissioning->soft-deleted',
  ]);
  // Its adapter ran until the decommission removed its Pod (the kubelet stand-in then stopped
  // it, as the kubelet would), and nothing is left to start another: the Deployment is gone.
  await adapter.exited;
  assert.ok(adapter.podDeleted(), 'stopped because its Pod was deleted');

  await waitFor(async () => ((await tenantRow(o, id)) === undefined ? true : undefined));
  for (const table of [...PURGE_ORDER, 'users']) {
    const { rows } = await o.db.pools.mssp.query(`SELECT 1 FROM ${table} WHERE tenant_id = $1`, [
      id,
    ]);
    assert.equal(rows.length, 0, `${table} purged`);
  }
  const { rows: audit } = await o.db.pools.mssp.query<{ action: string }>(
    `SELECT action FROM audit_log WHERE tenant_id = $1 OR resource_id = $1::text ORDER BY "timestamp"`,
    [id],
  );
  const actions = audit.map((a) => a.action);
  for (const action of [
    'tenant.create',
    'tenant.decommission',
    'tenant.soft_delete',
    'tenant.purge',
  ]) {
    assert.ok(actions.includes(action), `audit keeps ${action} after the purge`);
  }
  const { rows: gate } = await o.db.pools.mssp.query(
    `SELECT 1 FROM audit_log WHERE actor_id = 'system:tenant.purge' AND action = 'system.enter'`,
  );
  assert.ok(gate.length >= 1, 'the purge went through the System gate');
});

test('§9.5 purge covers every table that holds tenant rows', async () => {
  const { rows } = await o.db.pools.admin.query<{ table_name: string }>(
    `SELECT table_name FROM information_schema.columns
      WHERE table_schema = 'public' AND column_name = 'tenant_id'
        AND table_name NOT IN ('audit_log', 'users')`,
  );
  const purged = new Set<string>(PURGE_ORDER);
  for (const { table_name } of rows) assert.ok(purged.has(table_name), `${table_name} not purged`);
});

test('§3.1 illegal transitions answer 409 invalid_state: upgrading a tenant that is not active (decommissioning twice: above)', async () => {
  const slug = uniqueSlug('early');
  const id = await createTenantVia(o, tenantConfig(slug));
  const upgrade = await o.admin.mssp.upgrade({
    params: { tenant_id: id },
    body: { tenant_chart_version: '0.1.0' },
  });
  assert.deepEqual([upgrade.status, problemCode(upgrade)], [409, 'invalid_state']);
  const row = await tenantRow(o, id);
  assert.notEqual(row?.state, 'decommissioning');
  const { rows } = await o.db.pools.mssp.query(
    `SELECT 1 FROM tenant_lifecycle_events WHERE tenant_id = $1 AND step = 'upgrade_requested'`,
    [id],
  );
  assert.equal(rows.length, 0, 'nothing recorded');
});

async function waitFor<T>(check: () => Promise<T | undefined>, timeoutMs = 120_000): Promise<T> {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    const value = await check();
    if (value !== undefined) return value;
    if (Date.now() > deadline) throw new Error('timed out');
    await sleep(250);
  }
}
