import assert from 'node:assert/strict';
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { after, test } from 'node:test';
import { setTimeout as sleep } from 'node:timers/promises';
import { ApiException } from '@kubernetes/client-node';
import { RELEASE_NAME } from '../../src/orchestrator/release.ts';
import { SYSTEM_VERSION } from '../../src/orchestrator/runtime.ts';
import { problemCode } from '../support/api.ts';
import { denyDeployments, holdTenantLock, ownOrchestrator, pausableHelm } from './inject.ts';
import {
  activeTenant,
  adapterHeartbeat,
  createTenantVia,
  FAST,
  lifecycle,
  tenantChartCopy,
  tenantConfig,
  tenantRow,
  uniqueSlug,
  useOrchestration,
  waitForState,
  waitForStep,
} from './support.ts';

/**
 * Issue 18 item 5: every pair of lifecycle triggers that can meet on one tenant, made to meet
 * deterministically: the orchestrator paused inside a helm call, or the test holding the
 * tenant's lock as the orchestrator holds it while it works. The heartbeats in these races are
 * sent by the test (`adapterHeartbeat`), not by a running adapter: each must land inside the
 * window the test holds open, and its answer is what is asserted.
 */

let chartsDir: string;
let pausable: ReturnType<typeof pausableHelm>;
let own: ReturnType<typeof ownOrchestrator>;
/** The orchestrator's clock runs this far ahead (to reach the readiness deadline at once). */
const clock = { aheadMs: 0 };

// Registered first, so it runs before the orchestration closes (hooks run in order): the
// second orchestrator works on the orchestration's database.
after(async () => {
  await own?.stop();
  await rm(chartsDir, { recursive: true, force: true });
});
const o = useOrchestration(
  async () => {
    chartsDir = await mkdtemp(path.join(tmpdir(), 'svc-charts-'));
    for (const version of ['0.1.0', '0.2.0']) await tenantChartCopy(chartsDir, version);
    // Soft-deleted rows are kept long enough to be seen.
    return { chartsDir, installVersion: '0.1.0', run: false, timing: { retentionMs: 600_000 } };
  },
  async (o) => {
    await o.db.pools.admin.query(
      `INSERT INTO chart_compatibility (system_version, tenant_chart_version, status)
     VALUES ($1, '0.2.0', 'supported')`,
      [SYSTEM_VERSION],
    );
    pausable = pausableHelm(o.deps.helm);
    own = ownOrchestrator(o, {
      ...o.deps,
      helm: pausable.helm,
      now: () => new Date(Date.now() + clock.aheadMs),
    });
  },
);

async function errorOf(id: string): Promise<{ state: string; code: string }> {
  for (const deadline = Date.now() + 240_000; Date.now() < deadline; await sleep(250)) {
    const row = await tenantRow(o, id);
    if (row?.error_details) {
      return { state: row.state, code: String(row.error_details.code) };
    }
  }
  throw new Error(`tenant ${id} never failed`);
}

async function namespaceExists(name: string): Promise<boolean> {
  return o.core.readNamespace({ name }).then(
    () => true,
    (error: unknown) => {
      if (error instanceof ApiException && error.code === 404) return false;
      throw error;
    },
  );
}

async function audited(id: string, action: string): Promise<number> {
  const { rows } = await o.db.pools.mssp.query(
    'SELECT 1 FROM audit_log WHERE tenant_id = $1 AND action = $2',
    [id, action],
  );
  return rows.length;
}

/** A tenant whose package is Ready and whose adapter has not been heard from yet. */
async function readyTenant(prefix: string): Promise<{ id: string; slug: string }> {
  const slug = uniqueSlug(prefix);
  const id = await createTenantVia(o, tenantConfig(slug));
  await waitForStep(o, id, 'step:package_ready');
  assert.equal((await tenantRow(o, id))?.state, 'provisioning');
  return { id, slug };
}

/** A tenant whose provisioning failed (every Deployment refused), parked in pending. */
async function failedTenant(prefix: string) {
  const slug = uniqueSlug(prefix);
  const injected = await denyDeployments(o, slug);
  const id = await createTenantVia(o, tenantConfig(slug));
  assert.deepEqual(await errorOf(id), { state: 'pending', code: 'helm_failed' });
  return { id, slug, injected };
}

test('issue 18 item 5 heartbeat vs rollback: a heartbeat during the readiness-timeout rollback does not activate; the tenant ends pending with its error', {
  timeout: 400_000,
}, async () => {
  const { id, slug } = await readyTenant('race-rb');
  const namespace = `tenant-${slug}`;
  const paused = pausable.hold('uninstall', namespace);
  clock.aheadMs = FAST.readinessTimeoutMs + 60_000;
  try {
    await paused.reached; // adapter_silent: the rollback is uninstalling, under the lock
  } finally {
    clock.aheadMs = 0;
  }
  try {
    const beat = await adapterHeartbeat(o, slug);
    assert.deepEqual(
      [beat.status, beat.body],
      [200, { tenant_state: 'provisioning', activated: false }],
    );
  } finally {
    paused.release(); // also when the assertion fails: the orchestrator must not hang
  }

  assert.deepEqual(await errorOf(id), { state: 'pending', code: 'adapter_silent' });
  assert.equal(await namespaceExists(namespace), false);
  const steps = await lifecycle(o, id);
  assert.ok(!steps.includes('provisioning->active'), steps.join(', '));
  assert.equal(steps.at(-1), 'provisioning->pending');
  assert.equal(await audited(id, 'tenant.activate'), 0);
});

test('issue 18 item 5 heartbeat while the orchestrator holds the tenant: noted, not lost; the orchestrator completes the activation', {
  timeout: 400_000,
}, async () => {
  const { id, slug } = await readyTenant('race-hold');
  const release = await holdTenantLock(own.locks, id);
  try {
    const beat = await adapterHeartbeat(o, slug);
    assert.deepEqual(
      [beat.status, beat.body],
      [200, { tenant_state: 'provisioning', activated: false }],
    );
    assert.equal((await tenantRow(o, id))?.state, 'provisioning');
  } finally {
    await release();
  }
  await waitForState(o, id, 'active', 60_000);
  const { rows } = await o.db.pools.mssp.query<{ details: Record<string, unknown> }>(
    `SELECT details FROM tenant_lifecycle_events WHERE tenant_id = $1 AND to_state = 'active'`,
    [id],
  );
  assert.equal(rows[0]?.details.completed_by, 'package_ready');
});

test('issue 18 item 5 a heartbeat that meets a short orchestrator pass over a Ready tenant waits for it and activates', {
  timeout: 400_000,
}, async () => {
  const { id, slug } = await readyTenant('race-pass');
  // The orchestrator's pass right after recording readiness: the lock is held briefly.
  const release = await holdTenantLock(own.locks, id);
  const beat = adapterHeartbeat(o, slug);
  await sleep(300);
  await release();
  const answer = await beat;
  assert.deepEqual(
    [answer.status, answer.body],
    [200, { tenant_state: 'active', activated: true }],
  );
});

test('issue 18 item 5 heartbeat vs decommission: a never-active tenant being removed is not resurrected by its adapter', {
  timeout: 400_000,
}, async () => {
  const { id, slug } = await readyTenant('race-dc');
  const namespace = `tenant-${slug}`;

  // While the orchestrator holds the tenant, the decommission waits its turn: refused, unwritten.
  const release = await holdTenantLock(own.locks, id);
  try {
    const busy = await o.admin.mssp.decommission({ params: { tenant_id: id } });
    assert.deepEqual([busy.status, problemCode(busy)], [409, 'tenant_busy']);
    assert.equal((await tenantRow(o, id))?.state, 'provisioning');
    assert.equal(await audited(id, 'tenant.decommission'), 0);
  } finally {
    await release();
  }

  const paused = pausable.hold('uninstall', namespace);
  const res = await o.admin.mssp.decommission({ params: { tenant_id: id } });
  assert.equal(res.status, 200, JSON.stringify(res.body));
  try {
    await paused.reached; // no grace for a never-active tenant: the removal is under way
    const beat = await adapterHeartbeat(o, slug);
    assert.deepEqual(
      [beat.status, beat.body],
      [200, { tenant_state: 'decommissioning', activated: false }],
    );
  } finally {
    paused.release();
  }

  await waitForState(o, id, 'soft-deleted', 120_000);
  assert.equal(await namespaceExists(namespace), false);
  const steps = await lifecycle(o, id);
  assert.ok(!steps.includes('provisioning->active'), steps.join(', '));
  assert.ok(steps.includes('provisioning->decommissioning'));
});

test('issue 18 item 5 decommission vs retry: both wait for the orchestrator; a decommissioned tenant cannot be retried back into provisioning', {
  timeout: 400_000,
}, async () => {
  const { id, slug, injected } = await failedTenant('race-dr');
  try {
    const release = await holdTenantLock(own.locks, id);
    try {
      const decommission = await o.admin.mssp.decommission({ params: { tenant_id: id } });
      const retry = await o.admin.mssp.retry({ params: { tenant_id: id } });
      assert.deepEqual(
        [decommission.status, problemCode(decommission), retry.status, problemCode(retry)],
        [409, 'tenant_busy', 409, 'tenant_busy'],
      );
      assert.equal(await audited(id, 'tenant.decommission'), 0);
      assert.equal(await audited(id, 'tenant.provision.retry'), 0);
      assert.equal((await tenantRow(o, id))?.state, 'pending');
    } finally {
      await release();
    }

    const decommission = await o.admin.mssp.decommission({ params: { tenant_id: id } });
    assert.equal(decommission.status, 200);
    const retry = await o.admin.mssp.retry({ params: { tenant_id: id } });
    assert.deepEqual([retry.status, problemCode(retry)], [409, 'invalid_state']);
    await waitForState(o, id, 'soft-deleted', 120_000);
    const steps = await lifecycle(o, id);
    const after = steps.slice(steps.indexOf('pending->decommissioning'));
    assert.deepEqual(after, [
      'pending->decommissioning',
      'step:decommissioned',
      'decommissioning->soft-deleted',
    ]);
    assert.equal(await namespaceExists(`tenant-${slug}`), false);
  } finally {
    await injected.lift();
  }
});

test('issue 18 item 5 retry vs retry: two concurrent retries start one attempt', {
  timeout: 400_000,
}, async () => {
  const { id, injected } = await failedTenant('race-rr');
  try {
    const answers = await Promise.all([
      o.admin.mssp.retry({ params: { tenant_id: id } }),
      o.admin.mssp.retry({ params: { tenant_id: id } }),
    ]);
    const statuses = answers.map((a) => a.status).sort();
    assert.deepEqual(statuses, [202, 409]);
    const refused = answers.find((a) => a.status === 409);
    assert.ok(['invalid_state', 'tenant_busy'].includes(String(refused && problemCode(refused))));
    // The one attempt fails again (the policy still refuses Deployments); wait for it to end.
    assert.deepEqual(await errorOf(id), { state: 'pending', code: 'helm_failed' });
    const steps = await lifecycle(o, id);
    assert.equal(steps.filter((s) => s === 'step:retry_requested').length, 1);
    assert.equal(steps.filter((s) => s === 'step:rolled_back').length, 2, 'two attempts in all');
    assert.equal(await audited(id, 'tenant.provision.retry'), 1);
  } finally {
    await injected.lift();
  }
});

test('issue 18 item 5 upgrade vs decommission: a decommission during a running upgrade is refused (tenant_busy), accepted after it', {
  timeout: 400_000,
}, async () => {
  const { id, slug } = await activeTenant(o, 'race-up');
  const namespace = `tenant-${slug}`;
  const paused = pausable.hold('upgrade', namespace);
  try {
    const upgrade = await o.admin.mssp.upgrade({
      params: { tenant_id: id },
      body: { tenant_chart_version: '0.2.0' },
    });
    assert.equal(upgrade.status, 202);
    await paused.reached;
    const busy = await o.admin.mssp.decommission({ params: { tenant_id: id } });
    assert.deepEqual([busy.status, problemCode(busy)], [409, 'tenant_busy']);
    const row = await o.db.pools.mssp.query<{ state: string; upgrade_target: string | null }>(
      'SELECT state, upgrade_target FROM tenants WHERE id = $1',
      [id],
    );
    assert.deepEqual(row.rows[0], { state: 'active', upgrade_target: '0.2.0' });
    assert.equal(await audited(id, 'tenant.decommission'), 0);
  } finally {
    paused.release();
  }
  for (const deadline = Date.now() + 240_000; ; await sleep(250)) {
    if ((await lifecycle(o, id)).includes('step:upgraded')) break;
    if (Date.now() > deadline) throw new Error('upgrade never completed');
  }
  assert.equal((await tenantRow(o, id))?.chart_version, '0.2.0');
  assert.equal(
    (await o.deps.helm.status({ release: RELEASE_NAME, namespace }))?.chartVersion,
    '0.2.0',
  );
  const res = await o.admin.mssp.decommission({ params: { tenant_id: id } });
  assert.equal(res.status, 200);
  assert.equal(res.status === 200 && res.body.tenant.state, 'decommissioning');
});
