import assert from 'node:assert/strict';
import { test } from 'node:test';
import { indexAlerts, openSearchRequest } from '../../testcluster/opensearch/alert-index.ts';
import { heartbeatRow } from '../internal/support.ts';
import { startAdapter } from '../support/adapter-process.ts';
import { signedInAs } from '../support/sign-in.ts';
import { type WazuhAlert, wazuhAlerts } from '../support/wazuh-alerts.ts';
import {
  adapterMetric,
  adapterTenant,
  alertEventCount,
  alertIndices,
  eventually,
  storedCheckpoint,
  storedSourceIds,
  useRealAdapterRig,
} from './support.ts';

// docs/adapter.md "Late alerts", on the real engine (the run's shared OpenSearch node) with the
// tenant chart's ingest pipeline and template: every index has 3 shards, and refreshes are
// raced on purpose.

const rig = useRealAdapterRig('late');

const HOUR = 3_600_000;

/** Every alert stored once, and nothing else: the count in svc is the count written. */
async function assertExactlyOnce(tenantId: string, written: WazuhAlert[]): Promise<void> {
  const ids = await storedSourceIds(rig.db, tenantId);
  assert.equal(
    new Set(written.map((a) => a.id)).size,
    written.length,
    'the test writes distinct ids',
  );
  assert.deepEqual([...ids.keys()].sort(), written.map((a) => a.id).sort(), 'no alert lost');
  assert.deepEqual(
    [...ids].filter(([, n]) => n !== 1),
    [],
    'none stored twice',
  );
}

test('late alerts: skewed interleaved writers, a held shard refresh, a 10,000-alert backlog an hour old and a SIGKILL in the middle — every alert stored exactly once', async () => {
  const { db, api, tenant } = rig;
  const indices = await alertIndices();
  const live = await indices.create('live', { shards: 3, refreshInterval: '1s' });
  const held = await indices.create('held', { shards: 3, refreshInterval: '-1' });
  const backlogIndex = await indices.create('backlog', { shards: 3, refreshInterval: '1s' });
  const env = tenant.env(
    api.url,
    indices,
    indices.env({ SVC_INGEST_BATCH: '200', SVC_POLL_SECONDS: '0.2', SVC_HEARTBEAT_SECONDS: '0.5' }),
  );
  let adapter = await startAdapter(env);
  try {
    // Written first, searchable only when the test refreshes it: stamped before everything the
    // adapter is about to read.
    const invisible = wazuhAlerts(300, 0, { manager: 'held-mgr', start: new Date(Date.now()) });
    await indices.write(held, invisible);
    const heldBy = Date.now();

    // Three managers writing at once, one with its clock two hours behind, one 30 min ahead.
    const now = Date.now();
    const writers = [
      { manager: 'w-a', start: new Date(now) },
      { manager: 'w-bb', start: new Date(now - 2 * HOUR) },
      { manager: 'w-ccc', start: new Date(now + 30 * 60_000) },
    ];
    const streams = writers.map((w) => wazuhAlerts(500, 0, { ...w, stepMs: 3 }));
    await Promise.all(
      streams.map(async (stream) => {
        for (let i = 0; i < stream.length; i += 50)
          await indices.write(live, stream.slice(i, i + 50));
      }),
    );
    const liveAlerts = streams.flat();
    await eventually(
      () => storedCheckpoint(db, tenant.tenantId),
      (c) => typeof c?.search_after[0] === 'number' && c.search_after[0] > heldBy,
      60_000,
    );
    await eventually(
      () => alertEventCount(db, tenant.tenantId),
      (n) => n === liveAlerts.length,
      60_000,
    );

    // A manager that was down ships its backlog: 10,000 alerts an hour old, after live traffic.
    const backlog = wazuhAlerts(10_000, 0, {
      manager: 'backlog-manager',
      start: new Date(now - HOUR),
      stepMs: 1,
    });
    await indices.write(backlogIndex, backlog);
    await eventually(
      () => alertEventCount(db, tenant.tenantId),
      (n) => n >= liveAlerts.length + 2_000,
      60_000,
    );
    assert.equal(await adapter.stop('SIGKILL'), null, 'killed, not exited');
    const stored = await alertEventCount(db, tenant.tenantId);
    assert.ok(stored < liveAlerts.length + backlog.length, `killed mid-backlog (${stored} stored)`);

    adapter = await startAdapter(env);
    await adapter.waitForLog((l) => l.msg === 'resuming after the stored checkpoint');
    // The held shard's documents become searchable only now, long after newer ones were read.
    await indices.refresh(held);

    const written = [...invisible, ...liveAlerts, ...backlog];
    await eventually(
      () => alertEventCount(db, tenant.tenantId),
      (n) => n >= written.length,
      120_000,
    );
    await assertExactlyOnce(tenant.tenantId, written);
    assert.equal(await indices.count(), written.length, 'the indexer holds what was written');

    // The held index's 300 are late within the window; live alerts may be counted too (their
    // three shards race each other's refresh, more so on a loaded machine: CI saw 508).
    const beat = await eventually(
      () => heartbeatRow(db, tenant.tenantId),
      (row) => Number(row?.status.alerts_late_in_window ?? 0) >= invisible.length,
    );
    assert.equal(beat?.status.alerts_late, 0, 'nothing was later than the window');
    assert.equal(beat?.status.ingest_order, 'ingest_time');
    const checkpoint = await storedCheckpoint(db, tenant.tenantId);
    assert.equal(checkpoint?.order, 'ingest_time');
  } finally {
    await adapter.stop();
  }
});

/** Writes small refreshed batches to `index` until the stored cursor's stamp passes `stamp`. */
async function driveCursorPast(
  tenantId: string,
  write: (n: number) => Promise<void>,
  stamp: number,
): Promise<void> {
  for (let n = 0; ; n++) {
    const checkpoint = await storedCheckpoint(rig.db, tenantId);
    const at = checkpoint?.search_after[0];
    if (typeof at === 'number' && at > stamp) return;
    await write(n);
  }
}

test('late alerts: an alert searchable only after the cursor passed its window is counted (metric, heartbeat, the MSSP tenant detail), logged, and still ingested once', async () => {
  const { db, api } = rig;
  const tenant = await adapterTenant(db, 'late-past');
  const indices = await alertIndices();
  const live = await indices.create('live', { shards: 3, refreshInterval: '1s' });
  const held = await indices.create('held', { shards: 3, refreshInterval: '-1' });
  const windowSeconds = 2;
  const adapter = await startAdapter(
    tenant.env(
      api.url,
      indices,
      indices.env({
        SVC_LATE_WINDOW_SECONDS: String(windowSeconds),
        SVC_POLL_SECONDS: '0.1',
        SVC_HEARTBEAT_SECONDS: '0.5',
      }),
    ),
  );
  try {
    const late = wazuhAlerts(40, 0, { manager: 'late-mgr' });
    await indices.write(held, late);
    const heldBy = Date.now();
    const liveAlerts: WazuhAlert[] = [];
    // The window is measured on the cursor: past it once the cursor's stamp is more than the
    // window (and a bucket) beyond the held alerts'.
    await driveCursorPast(
      tenant.tenantId,
      async (n) => {
        const batch = wazuhAlerts(5, n * 5, { manager: 'live-manager' });
        liveAlerts.push(...batch);
        await indices.write(live, batch, { refresh: 'wait_for' });
        await eventually(
          () => alertEventCount(db, tenant.tenantId),
          (count) => count === liveAlerts.length,
        );
      },
      heldBy + windowSeconds * 1000 + 100,
    );
    await indices.refresh(held);

    const beat = await eventually(
      () => heartbeatRow(db, tenant.tenantId),
      (row) => row?.status.alerts_late === late.length,
      60_000,
    );
    // (alerts_late_in_window may count live alerts: their shards raced each other's refresh.)
    assert.ok(beat);
    assert.equal(
      await adapterMetric(adapter.port, 'svc_adapter_late_alerts_total'),
      late.length,
      'svc_adapter_late_alerts_total',
    );
    const warned = await adapter.waitForLog(
      (l) => l.msg === 'alerts became searchable later than the lateness window',
    );
    assert.equal(warned.level, 'warn', 'a warning');
    assert.equal(warned.late, late.length);

    // Still ingested: the adapter located them in the counts it keeps of settled buckets.
    await eventually(
      () => alertEventCount(db, tenant.tenantId),
      (n) => n === liveAlerts.length + late.length,
    );
    await assertExactlyOnce(tenant.tenantId, [...late, ...liveAlerts]);
    const ingested = await eventually(
      () => heartbeatRow(db, tenant.tenantId),
      (row) => row?.status.alerts_late_ingested === late.length,
    );
    assert.ok(ingested);

    const analyst = await signedInAs({ db, api }, 'analyst');
    const detail = await analyst.mssp.getTenant({ params: { tenant_id: tenant.tenantId } });
    assert.equal(detail.status, 200);
    if (detail.status === 200) {
      assert.equal(detail.body.adapter?.status.alerts_late, late.length, 'the MSSP sees it');
    }
    assert.equal(
      (await storedCheckpoint(db, tenant.tenantId))?.alerts_late,
      late.length,
      'the count outlives the adapter: it is stored with the checkpoint',
    );
  } finally {
    await adapter.stop();
    await tenant.mounts.remove();
  }
});

test('late alerts: the read cost is bounded — caught up, each poll is one page and one count aggregation, and late documents cost only themselves', async () => {
  const { db, api } = rig;
  const tenant = await adapterTenant(db, 'late-cost');
  const indices = await alertIndices();
  const live = await indices.create('live', { shards: 3, refreshInterval: '1s' });
  const held = await indices.create('held', { shards: 3, refreshInterval: '-1' });
  const adapter = await startAdapter(
    tenant.env(api.url, indices, indices.env({ SVC_POLL_SECONDS: '0.1', SVC_INGEST_BATCH: '500' })),
  );
  const metric = (name: string, purpose: string) =>
    adapterMetric(adapter.port, name, `{purpose="${purpose}"}`);
  try {
    const late = wazuhAlerts(25, 0, { manager: 'cost-mgr' });
    await indices.write(held, late);
    const traffic = wazuhAlerts(5_000, 0, { manager: 'cost-live', stepMs: 1 });
    await indices.write(live, traffic, { refresh: 'wait_for' });
    await eventually(
      () => alertEventCount(db, tenant.tenantId),
      (n) => n === traffic.length,
    );
    // Caught up: count what a stretch of idle polls costs.
    const pagesBefore = await metric('svc_adapter_indexer_requests_total', 'page');
    const windowBefore = await metric('svc_adapter_indexer_requests_total', 'window');
    const docsBefore = await metric('svc_adapter_indexer_documents_total', 'page');
    const rereadBefore = await metric('svc_adapter_indexer_documents_total', 'reread');
    await eventually(
      () => metric('svc_adapter_indexer_requests_total', 'page'),
      (n) => n >= pagesBefore + 20,
    );
    const polls = (await metric('svc_adapter_indexer_requests_total', 'page')) - pagesBefore;
    const checks = (await metric('svc_adapter_indexer_requests_total', 'window')) - windowBefore;
    assert.equal(
      (await metric('svc_adapter_indexer_documents_total', 'page')) - docsBefore,
      0,
      'an idle poll reads no document',
    );
    assert.ok(checks <= polls, `at most one window aggregation per poll (${checks}/${polls})`);
    assert.equal(
      (await metric('svc_adapter_indexer_documents_total', 'reread')) - rereadBefore,
      0,
      'nothing re-read while nothing is late',
    );

    await indices.refresh(held);
    await eventually(
      () => alertEventCount(db, tenant.tenantId),
      (n) => n === traffic.length + late.length,
    );
    await assertExactlyOnce(tenant.tenantId, [...late, ...traffic]);
    const reread = (await metric('svc_adapter_indexer_documents_total', 'reread')) - rereadBefore;
    assert.equal(reread, late.length, 'finding late documents reads those documents only');
    console.log(
      JSON.stringify({
        measured: 'late alerts read cost',
        window_docs: traffic.length,
        idle_polls: polls,
        window_aggregations: checks,
        idle_documents_read: 0,
        late_documents: late.length,
        reread_documents: reread,
        narrow_requests: await metric('svc_adapter_indexer_requests_total', 'narrow'),
        reread_requests: await metric('svc_adapter_indexer_requests_total', 'reread'),
      }),
    );
  } finally {
    await adapter.stop();
    await tenant.mounts.remove();
  }
});

test('late alerts: on indices without the ingest pipeline nothing is skipped — the adapter reads them in alert-time order, reports ingest_order alert_time and warns once', async () => {
  const { db, api } = rig;
  const tenant = await adapterTenant(db, 'late-nostamp');
  const indices = await alertIndices();
  // Outside wazuh-alerts-*: neither template applies, so no final pipeline stamps it.
  const name = `nostamp-${indices.pattern.slice('wazuh-alerts-'.length, -1)}alerts`;
  await openSearchRequest(indices.target, 'PUT', `/${name}`, {
    settings: { 'index.number_of_shards': 3, 'index.number_of_replicas': 0 },
    mappings: {
      properties: { timestamp: { type: 'date' }, id: { type: 'keyword' } },
    },
  });
  const alerts = wazuhAlerts(60, 0, { manager: 'nostamp' });
  await indexAlerts(indices.target, name, alerts, { refresh: 'wait_for', pipeline: null });
  const adapter = await startAdapter(
    tenant.env(
      api.url,
      indices,
      indices.env({
        SVC_INDEXER_INDEX: `${name}*`,
        SVC_INGEST_BATCH: '25',
        SVC_HEARTBEAT_SECONDS: '0.5',
      }),
    ),
  );
  try {
    await eventually(
      () => alertEventCount(db, tenant.tenantId),
      (n) => n === alerts.length,
    );
    await assertExactlyOnce(tenant.tenantId, alerts);
    const beat = await eventually(
      () => heartbeatRow(db, tenant.tenantId),
      (row) =>
        row?.status.ingest_order === 'alert_time' && row.status.alerts_delivered === alerts.length,
    );
    assert.ok(beat, 'reported in the heartbeat');
    const warned = adapter
      .logs()
      .filter((l) => String(l.msg).startsWith('documents without svc_ingested_at'));
    assert.equal(warned.length, 1, 'warned once');
    assert.equal(warned[0]?.level, 'warn');
    const checkpoint = await storedCheckpoint(db, tenant.tenantId);
    assert.equal(checkpoint?.order, 'ingest_time');
    assert.deepEqual(
      (checkpoint?.unstamped_after as unknown[] | undefined)?.[1],
      [...alerts].sort((x, y) => x.timestamp.localeCompare(y.timestamp)).at(-1)?.id,
      'the alert-time cursor is stored with the checkpoint',
    );
  } finally {
    await adapter.stop();
    await tenant.mounts.remove();
  }
});
