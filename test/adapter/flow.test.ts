import assert from 'node:assert/strict';
import { test } from 'node:test';
import { createSvcClient } from '../../contracts/index.ts';
import { openSearchRequest } from '../../testcluster/opensearch/alert-index.ts';
import { bearer, heartbeatRow, setState, tenantState } from '../internal/support.ts';
import { startAdapter } from '../support/adapter-process.ts';
import { startIndexerStandIn } from '../support/indexer-stand-in.ts';
import { wazuhAlerts } from '../support/wazuh-alerts.ts';
import {
  adapterMetric,
  adapterTenant,
  alertIndices,
  eventually,
  INDEXER_PASSWORD,
  INDEXER_USER,
  storedSourceIds,
  useRealAdapterRig,
} from './support.ts';

// The end-to-end flow runs on the real engine (the run's shared OpenSearch node, set up as a
// tenant indexer); the malformed-alert test keeps the stand-in, whose request log shows the
// searches the adapter sends, which the real engine does not.
const rig = useRealAdapterRig('flow');

test('§1.2 §4.4 §6.2 svc adapter: bootstraps, activates its tenant, and carries Wazuh alerts from the indexer into the event store', async () => {
  const { db, api, tenant } = rig;
  await setState(db, tenant.tenantId, 'provisioning');
  const indexer = await alertIndices();
  const index = await indexer.create('flow', { shards: 3 });
  const first = wazuhAlerts(1_200);
  await indexer.write(index, first, { refresh: 'wait_for' });
  const adapter = await startAdapter(
    tenant.env(api.url, indexer, indexer.env({ SVC_INGEST_BATCH: '500' })),
  );
  try {
    await adapter.waitForLog((l) => l.msg === 'the tenant is active (first heartbeat)');
    assert.equal(await tenantState(db, tenant.tenantId), 'active');
    await eventually(
      () => storedSourceIds(db, tenant.tenantId),
      (ids) => ids.size === first.length,
    );
    // Alerts indexed while it runs are picked up on a later poll.
    const later = wazuhAlerts(300, first.length);
    await indexer.write(index, later, { refresh: 'wait_for' });
    const ids = await eventually(
      () => storedSourceIds(db, tenant.tenantId),
      (stored) => stored.size === first.length + later.length,
    );
    assert.deepEqual(
      [...ids.keys()].sort(),
      [...first, ...later].map((a) => a.id).sort(),
      'every alert is stored under its own source id',
    );
    assert.ok(
      [...ids.values()].every((n) => n === 1),
      'and each exactly once',
    );

    const { rows } = await db.pools.mssp.query<{ payload: { alert: unknown; severity: string } }>(
      `SELECT payload FROM events WHERE tenant_id = $1 AND type = 'alert.received'
          AND payload->>'source_id' = $2`,
      [tenant.tenantId, first[3]?.id],
    );
    const held = (await openSearchRequest(indexer.target, 'POST', `/${indexer.pattern}/_search`, {
      query: { term: { id: first[3]?.id } },
    })) as { body: { hits: { hits: { _source: Record<string, unknown> }[] } } };
    const { svc_ingested_at: stamp, ...asWazuhWroteIt } = held.body.hits.hits[0]?._source ?? {};
    assert.equal(typeof stamp, 'string', 'the indexer stamped it');
    assert.deepEqual(
      rows[0]?.payload.alert,
      asWazuhWroteIt,
      'the document is stored as the indexer held it, without the ingest stamp',
    );
    assert.deepEqual(
      { ...(rows[0]?.payload.alert as object), '@timestamp': undefined },
      { ...first[3], '@timestamp': undefined },
      'the alert as written (Filebeat added @timestamp)',
    );
    assert.equal(rows[0]?.payload.severity, 'critical');

    // The last alert in the indexer's order: the newest ingest stamp, then the highest id.
    const newest = (await openSearchRequest(indexer.target, 'POST', `/${indexer.pattern}/_search`, {
      size: 1,
      sort: [{ svc_ingested_at: 'desc' }, { id: 'desc' }],
    })) as { body: { hits: { hits: { sort: (number | string)[] }[] } } };
    const last = newest.body.hits.hits[0]?.sort;
    const token = (await api.tokens.mintAdapter({ tenantId: tenant.tenantId })).token;
    const svc = createSvcClient({ baseUrl: api.url });
    const checkpoint = await svc.internal.checkpoint({ headers: bearer(token) });
    assert.equal(checkpoint.status, 200);
    if (checkpoint.status === 200) {
      assert.equal(checkpoint.body.alerts_total, 1_500);
      const stored = checkpoint.body.checkpoint;
      assert.deepEqual(stored?.search_after, last, 'the position after the last alert read');
      assert.equal(stored?.index, indexer.pattern);
      assert.equal(stored?.order, 'ingest_time');
      assert.ok(
        later.some((a) => a.id === last?.[1]),
        'the last alert read is one of those indexed last',
      );
    }
    const pages = await adapterMetric(
      adapter.port,
      'svc_adapter_indexer_requests_total',
      '{purpose="page"}',
    );
    const read = await adapterMetric(
      adapter.port,
      'svc_adapter_indexer_documents_total',
      '{purpose="page"}',
    );
    // (Some may have been found by the window check instead: the shards refresh on their own.)
    assert.ok(read <= 1_500, 'the cursor reads no alert twice');
    assert.ok(
      pages >= Math.ceil(read / 500),
      `pages no larger than a batch (${pages} pages for ${read} alerts)`,
    );

    const heartbeat = await eventually(
      () => heartbeatRow(db, tenant.tenantId),
      (row) => row?.status.alerts_delivered === 1_500 && row.status.lag_seconds === 0,
    );
    assert.equal(heartbeat?.status.ingest, 'running');
    assert.equal(heartbeat?.status.indexer, 'reachable');

    const health = await fetch(`http://127.0.0.1:${adapter.port}/healthz`);
    assert.equal(health.status, 200);
    const ready = await fetch(`http://127.0.0.1:${adapter.port}/readyz`);
    assert.equal(ready.status, 200);
    assert.equal(((await ready.json()) as { svc: string }).svc, 'reachable');
  } finally {
    assert.equal(await adapter.stop('SIGTERM'), 0, 'SIGTERM ends it with exit 0');
  }
});

test('§4.4 an alert svc refuses as malformed is isolated and passed over; every other alert of its batch is stored', async () => {
  const { db, api } = rig;
  const own = await startIndexerStandIn({ username: INDEXER_USER, password: INDEXER_PASSWORD });
  const other = await adapterTenant(db, 'poison');
  const alerts = wazuhAlerts(40, 0, { manager: 'poison-manager' });
  const poison = {
    ...alerts[17],
    rule: { ...alerts[17]?.rule, level: 99 },
  } as (typeof alerts)[number];
  alerts[17] = poison;
  own.append(...alerts);
  const adapter = await startAdapter(other.env(api.url, own, { SVC_INGEST_BATCH: '40' }));
  try {
    const ids = await eventually(
      () => storedSourceIds(db, other.tenantId),
      (m) => m.size === alerts.length - 1,
    );
    assert.deepEqual(
      [...ids.keys()].sort(),
      alerts
        .filter((a) => a !== poison)
        .map((a) => a.id)
        .sort(),
    );
    const refused = await adapter.waitForLog(
      (l) => l.msg === 'svc refused this alert as malformed; passing over it',
    );
    assert.equal(refused.source_id, poison.id, 'the log names the alert it passed over');
    assert.equal(adapter.logs().filter((l) => l.msg === refused.msg).length, 1);
    assert.ok(
      own.requests.every((r) => r.path === '/wazuh-alerts-*/_search'),
      'it searches the configured index pattern',
    );
    assert.ok(
      own.requests.every((r) => (r.body.size as number) <= 40),
      'pages no larger than a batch',
    );
  } finally {
    assert.equal(await adapter.stop(), 0);
    await own.close();
    await other.mounts.remove();
  }
});
