import assert from 'node:assert/strict';
import { test } from 'node:test';
import { startAdapter } from '../support/adapter-process.ts';
import { wazuhAlerts } from '../support/wazuh-alerts.ts';
import {
  adapterMetric,
  alertEventCount,
  alertIndices,
  eventually,
  storedSourceIds,
  useRealAdapterRig,
} from './support.ts';

// On the real engine: the run's shared OpenSearch node, set up as a tenant indexer.
const rig = useRealAdapterRig('crash');

test('§6.2 SIGKILL mid-stream, then a restart: the adapter resumes at svc’s checkpoint and every alert is stored exactly once', async () => {
  const { db, api, tenant } = rig;
  const indexer = await alertIndices();
  const index = await indexer.create('crash', { shards: 3 });
  const alerts = wazuhAlerts(4_000, 0, { stepMs: 7 });
  await indexer.write(index, alerts, { refresh: 'wait_for' });
  // Small batches, so the kill lands between two of them (or during one).
  const env = tenant.env(api.url, indexer, indexer.env({ SVC_INGEST_BATCH: '20' }));
  const first = await startAdapter(env);
  const before = await eventually(
    () => alertEventCount(db, tenant.tenantId),
    (n) => n >= 200,
  );
  assert.equal(await first.stop('SIGKILL'), null, 'killed, not exited');
  const stored = await alertEventCount(db, tenant.tenantId);
  assert.ok(stored >= before && stored < alerts.length, `killed mid-stream (${stored} stored)`);

  const second = await startAdapter(env);
  try {
    const resumed = await second.waitForLog(
      (l) => l.msg === 'resuming after the stored checkpoint',
    );
    const ids = await eventually(
      () => storedSourceIds(db, tenant.tenantId),
      (m) => m.size === alerts.length,
      60_000,
    );
    assert.deepEqual([...ids.keys()].sort(), alerts.map((a) => a.id).sort(), 'no alert lost');
    assert.ok(
      [...ids.values()].every((n) => n === 1),
      'none stored twice',
    );
    // The checkpoint svc stored counts the alerts before it: the restarted adapter's cursor
    // reads exactly the rest, not from the start.
    const atKill = (resumed.alerts_total as number) ?? 0;
    assert.equal(atKill, stored, 'the checkpoint is the position after the alerts svc stored');
    assert.equal(
      await adapterMetric(second.port, 'svc_adapter_indexer_documents_total', '{purpose="page"}'),
      alerts.length - atKill,
      'the restarted adapter continues after the checkpoint svc stored, not from the start',
    );
  } finally {
    assert.equal(await second.stop(), 0);
  }
});
