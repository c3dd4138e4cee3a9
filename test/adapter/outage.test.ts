import assert from 'node:assert/strict';
import { after, before, test } from 'node:test';
import { setTimeout as sleep } from 'node:timers/promises';
import { type AdapterProcess, startAdapter } from '../support/adapter-process.ts';
import { startTestApi, type TestApi } from '../support/api.ts';
import { createTestDatabase, type TestDatabase } from '../support/database.ts';
import { type IndexerStandIn, startIndexerStandIn } from '../support/indexer-stand-in.ts';
import { wazuhAlerts } from '../support/wazuh-alerts.ts';
import {
  type AdapterTenant,
  adapterTenant,
  alertEventCount,
  eventually,
  INDEXER_PASSWORD,
  INDEXER_USER,
  lockWaits,
  storedSourceIds,
  within,
} from './support.ts';

// The stand-in indexer stays here: the last test needs 503s on demand (failNext), a fault the
// real engine cannot produce; the svc outages need no indexer behaviour beyond a plain search.
let db: TestDatabase;
let api: TestApi | undefined;
let indexer: IndexerStandIn | undefined;

before(async () => {
  db = await createTestDatabase();
});
after(async () => {
  await indexer?.close();
  await api?.close();
  await db.drop();
});

/** A fresh indexer per test, so each tenant's adapter reads only its own alerts. */
async function freshIndexer(): Promise<IndexerStandIn> {
  await indexer?.close();
  indexer = await startIndexerStandIn({ username: INDEXER_USER, password: INDEXER_PASSWORD });
  return indexer;
}

/** What svc's database and the adapter were doing, for a step that did not finish. */
function explain(adapter: AdapterProcess): () => Promise<string> {
  return async () =>
    `${await lockWaits(db)}\nadapter's last lines:\n${adapter
      .logs()
      .slice(-15)
      .map((l) => JSON.stringify(l))
      .join('\n')}`;
}

function exactlyOnce(ids: Map<string, number>, expected: { id: string }[]): void {
  assert.deepEqual([...ids.keys()].sort(), expected.map((a) => a.id).sort(), 'no alert lost');
  assert.ok(
    [...ids.values()].every((n) => n === 1),
    'none stored twice',
  );
}

test('§6.2 svc down for a while: the adapter backs off, retries and catches up without losing or repeating an alert', async () => {
  api = await startTestApi(db);
  const port = Number(new URL(api.url).port);
  const indexer = await freshIndexer();
  const tenant: AdapterTenant = await adapterTenant(db, 'outage');
  const before = wazuhAlerts(600);
  indexer.append(...before);
  const adapter = await startAdapter(tenant.env(api.url, indexer, { SVC_INGEST_BATCH: '100' }));
  try {
    await eventually(
      () => alertEventCount(db, tenant.tenantId),
      (n) => n === before.length,
    );
    // Bounded, with what was going on: a stop or start that hangs fails here, not at the suite's
    // 15-minute timeout with nothing to read.
    const stopping = api;
    api = undefined;
    await within('stopping svc', 30_000, stopping.close(), explain(adapter));
    const during = wazuhAlerts(900, before.length);
    indexer.append(...during);
    await adapter.waitForLog((l) => l.msg === 'cannot post alerts to svc');
    await sleep(1_500);
    api = await within('starting svc again', 30_000, startTestApi(db, { port }), explain(adapter));
    const ids = await eventually(
      () => storedSourceIds(db, tenant.tenantId),
      (m) => m.size === before.length + during.length,
      60_000,
    );
    exactlyOnce(ids, [...before, ...during]);
    const retries = adapter.logs().filter((l) => l.msg === 'cannot post alerts to svc');
    const waits = retries.map((l) => Number(l.wait_ms));
    assert.ok(
      waits.every((ms) => ms > 0 && ms <= 30_000),
      'every wait is capped at 30 s',
    );
  } finally {
    assert.equal(await adapter.stop(), 0);
    await tenant.mounts.remove();
  }
});

test('§8 ingest over the tenant’s rate: svc answers 429 with Retry-After, the adapter waits and loses nothing', async () => {
  await api?.close();
  api = undefined;
  // 100 alerts/s with the smallest burst svc allows (500): the third batch of 200 must wait.
  api = await startTestApi(db, { env: { SVC_INGEST_RATE: '100', SVC_INGEST_BURST: '500' } });
  const indexer = await freshIndexer();
  const tenant = await adapterTenant(db, 'limited');
  const alerts = wazuhAlerts(1_000);
  indexer.append(...alerts);
  // The test API's clock stands still unless moved; the bucket refills as it moves.
  const clock = api.clock;
  const ticking = setInterval(() => clock.advance(100), 100);
  const adapter = await startAdapter(tenant.env(api.url, indexer, { SVC_INGEST_BATCH: '200' }));
  try {
    const ids = await eventually(
      () => storedSourceIds(db, tenant.tenantId),
      (m) => m.size === alerts.length,
      60_000,
    );
    exactlyOnce(ids, alerts);
    const limited = adapter.logs().filter((l) => l.msg === 'svc is rate limiting ingest; waiting');
    assert.ok(limited.length > 0, 'svc did rate limit');
    assert.ok(
      limited.every(
        (l) => Number(l.wait_ms) >= 1_000 && Number.isInteger(Number(l.wait_ms) / 1_000),
      ),
      'the wait is the whole seconds of Retry-After',
    );
  } finally {
    clearInterval(ticking);
    assert.equal(await adapter.stop(), 0);
    await tenant.mounts.remove();
  }
});

test('the indexer failing for a while: the adapter backs off and reads on from where it was', async () => {
  const current = api ?? (await startTestApi(db));
  api = current;
  const indexer = await freshIndexer();
  const tenant = await adapterTenant(db, 'flaky');
  const mine = wazuhAlerts(300);
  const adapter = await startAdapter(tenant.env(current.url, indexer, { SVC_INGEST_BATCH: '50' }));
  try {
    indexer.failNext(4, 503);
    indexer.append(...mine);
    await eventually(
      () => alertEventCount(db, tenant.tenantId),
      (n) => n >= indexer.count(),
      60_000,
    );
    const ids = await storedSourceIds(db, tenant.tenantId);
    assert.ok(
      mine.every((a) => ids.get(a.id) === 1),
      'each alert of the outage window once',
    );
    assert.ok(
      adapter.logs().some((l) => l.msg === 'indexer search failed'),
      'the indexer errors were seen and retried',
    );
  } finally {
    assert.equal(await adapter.stop(), 0);
    await tenant.mounts.remove();
  }
});
