import assert from 'node:assert/strict';
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { after, test } from 'node:test';
import { setTimeout as sleep } from 'node:timers/promises';
import { ApiException } from '@kubernetes/client-node';
import {
  createTenantVia,
  lifecycle,
  startOrchestration,
  tenantChartCopy,
  tenantConfig,
  tenantRow,
  uniqueSlug,
  useOrchestration,
} from './support.ts';

let chartsDir: string;

const o = useOrchestration(async () => {
  // The only tenant package this install has cannot become Ready: its adapter is unschedulable.
  chartsDir = await mkdtemp(path.join(tmpdir(), 'svc-charts-'));
  await tenantChartCopy(chartsDir, '0.1.0', { unschedulableAdapter: true });
  return { chartsDir, timing: { readinessTimeoutMs: 8_000 } };
});
after(() => rm(chartsDir, { recursive: true, force: true }));

test('§8 readiness timeout (spec: not shown; decided in docs/orchestrator.md): rollback, error kept, provisioning → pending', {
  timeout: 300_000,
}, async () => {
  const slug = uniqueSlug('slow');
  const id = await createTenantVia(o, tenantConfig(slug));
  const deadline = Date.now() + 240_000;
  let row = await tenantRow(o, id);
  while (!row?.error_details) {
    if (Date.now() > deadline) throw new Error(`never failed: ${JSON.stringify(row)}`);
    await sleep(250);
    row = await tenantRow(o, id);
  }
  assert.equal(row.state, 'pending');
  const error = row.error_details as {
    step: string;
    code: string;
    not_ready: string[];
    rollback: unknown;
  };
  assert.deepEqual([error.step, error.code], ['package_ready', 'readiness_timeout']);
  assert.deepEqual(error.not_ready, ['Deployment/svc-adapter 0/1']);
  assert.deepEqual(error.rollback, { package: 'uninstalled', namespace: 'deleted' });
  const steps = await lifecycle(o, id);
  assert.deepEqual(steps.slice(-4), [
    'pending->provisioning',
    'step:rolled_back',
    'error:package_ready',
    'provisioning->pending',
  ]);
  const gone = await o.core.readNamespace({ name: `tenant-${slug}` }).then(
    () => false,
    (e: unknown) => e instanceof ApiException && e.code === 404,
  );
  assert.ok(gone, 'namespace deleted');
  const { rows } = await o.db.pools.mssp.query<{ action: string }>(
    `SELECT action FROM audit_log WHERE tenant_id = $1 ORDER BY "timestamp"`,
    [id],
  );
  assert.deepEqual(
    rows.map((r) => r.action),
    ['tenant.create', 'tenant.provision', 'tenant.provision.fail'],
  );
});

test('§3.1 row 3 a Ready package whose adapter never reports within the timeout is rolled back too (adapter_silent)', {
  timeout: 300_000,
}, async () => {
  const quiet = await startOrchestration({ timing: { readinessTimeoutMs: 30_000 } });
  try {
    const slug = uniqueSlug('quiet');
    const id = await createTenantVia(quiet, tenantConfig(slug));
    const deadline = Date.now() + 240_000;
    let row = await tenantRow(quiet, id);
    while (!row?.error_details) {
      if (Date.now() > deadline) throw new Error(`never failed: ${JSON.stringify(row)}`);
      await sleep(250);
      row = await tenantRow(quiet, id);
    }
    const error = row.error_details as { step: string; code: string };
    assert.deepEqual(
      [row.state, error.step, error.code],
      ['pending', 'package_ready', 'adapter_silent'],
    );
    const steps = await lifecycle(quiet, id);
    assert.ok(steps.includes('step:package_ready'), 'the package had been Ready');
    assert.equal(steps.at(-1), 'provisioning->pending');
  } finally {
    await quiet.close();
  }
});
