import assert from 'node:assert/strict';
import { test } from 'node:test';
import { startAdapter } from '../support/adapter-process.ts';
import { wazuhAlerts } from '../support/wazuh-alerts.ts';
import { alertEventCount, eventually, storedSourceIds, useAdapterRig } from './support.ts';

const rig = useAdapterRig('crash');

test('§6.2 SIGKILL mid-stream, then a restart: the adapter resumes at svc’s checkpoint and every alert is stored exactly once', async () => {
  const { db, api, indexer, tenant } = rig;
  const alerts = wazuhAlerts(4_000, 0, { stepMs: 7 });
  indexer.append(...alerts);
  // Small batches, so the kill lands between two of them (or during one).
  const env = tenant.env(api.url, indexer, { SVC_INGEST_BATCH: '20' });
  const first = await startAdapter(env);
  const before = await eventually(
    () => alertEventCount(db, tenant.tenantId),
    (n) => n >= 200,
  );
  assert.equal(await first.stop('SIGKILL'), null, 'killed, not exited');
  const stored = await alertEventCount(db, tenant.tenantId);
  assert.ok(stored >= before && stored < alerts.length, `killed mid-stream (${stored} stored)`);

  const searchesBefore = indexer.requests.length;
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
    const firstSearch = indexer.requests[searchesBefore];
    assert.deepEqual(
      firstSearch?.body.search_after,
      (resumed.checkpoint as { search_after: unknown }).search_after,
      'the restarted adapter continues after the checkpoint svc stored, not from the start',
    );
  } finally {
    assert.equal(await second.stop(), 0);
  }
});
