import assert from 'node:assert/strict';
import { existsSync } from 'node:fs';
import { after, test } from 'node:test';
import {
  expectOk,
  type OpenSearchNode,
  openSearchRequest,
  sharedOpenSearch,
  startOpenSearch,
  uniqueIndex,
} from '../support/opensearch.ts';

// The real indexer (docs/testing.md "The real indexer"): the engine the Wazuh indexer is built
// on, assembled from Maven artifacts and run as a JVM. These tests prove the launcher and the
// read path the adapter relies on, on the run's shared plain node.

const own: OpenSearchNode[] = [];
after(async () => {
  await Promise.all(own.map((node) => node.stop()));
});

type Hit = { _id: string; _source: { id: string; timestamp: string }; sort: unknown[] };
type SearchBody = { hits: { hits: Hit[] }; pit_id?: string };

test('the shared node answers on loopback as an OpenSearch 2.19 with a green cluster', async () => {
  const node = await sharedOpenSearch();
  assert.match(node.url, /^http:\/\/127\.0\.0\.1:\d+$/);
  const root = await expectOk(node, '/');
  const body = root.body as { version: { distribution?: string; number: string } };
  // compatibility.override_main_response_version (as the chart sets it) reports 7.10.2, the
  // version Wazuh's filebeat checks; the engine's own version is in the nodes info.
  assert.equal(body.version.number, '7.10.2');
  const nodes = await expectOk(node, '/_nodes/_local/settings');
  const info = Object.values((nodes.body as { nodes: Record<string, unknown> }).nodes)[0] as {
    version: string;
    settings: { network: { host: string } };
  };
  assert.equal(info.version, '2.19.4');
  assert.equal(info.settings.network.host, '127.0.0.1');
  const health = await expectOk(node, '/_cluster/health');
  assert.equal((health.body as { status: string }).status, 'green');
});

test('alerts bulk-indexed over 3 shards read back in (timestamp, id) order with search_after in a point in time', async () => {
  const node = await sharedOpenSearch();
  const index = uniqueIndex('wazuh-alerts-4.x-launcher');
  await expectOk(node, `/${index}`, {
    method: 'PUT',
    body: {
      settings: { number_of_shards: 3, number_of_replicas: 0 },
      mappings: { properties: { timestamp: { type: 'date' }, id: { type: 'keyword' } } },
    },
  });
  const base = Date.parse('2026-11-27T10:00:00Z');
  const alerts = Array.from({ length: 25 }, (_, i) => ({
    id: `a-${String(i).padStart(3, '0')}`,
    // Pairs share a timestamp so the id tiebreaker matters.
    timestamp: new Date(base + Math.floor(i / 2) * 1000).toISOString(),
  }));
  // Written newest first: the write order must not leak into the read order.
  const shuffled = [...alerts].reverse();
  const bulk = await expectOk(node, '/_bulk?refresh=wait_for', {
    ndjson: shuffled.flatMap((a) => [{ index: { _index: index, _id: a.id } }, a]),
  });
  assert.equal((bulk.body as { errors: boolean }).errors, false);

  const pit = await expectOk(node, `/${index}/_search/point_in_time?keep_alive=1m`, {
    method: 'POST',
  });
  let pitId = (pit.body as { pit_id: string }).pit_id;
  assert.ok(pitId);
  // A write after the point in time opened is not in it.
  await expectOk(node, `/${index}/_doc/late?refresh=true`, {
    method: 'PUT',
    body: { id: 'late', timestamp: new Date(base).toISOString() },
  });
  const read: string[] = [];
  let after: unknown[] | undefined;
  for (let page = 0; page < 10; page++) {
    const res = await expectOk(node, '/_search', {
      body: {
        size: 7,
        pit: { id: pitId, keep_alive: '1m' },
        sort: [{ timestamp: 'asc' }, { id: 'asc' }],
        ...(after ? { search_after: after } : {}),
      },
    });
    const body = res.body as SearchBody;
    pitId = body.pit_id ?? pitId;
    const hits = body.hits.hits;
    if (hits.length === 0) break;
    read.push(...hits.map((h) => h._source.id));
    after = hits.at(-1)?.sort;
  }
  assert.deepEqual(
    read,
    alerts.map((a) => a.id),
  );
  await expectOk(node, '/_search/point_in_time', { method: 'DELETE', body: { pit_id: [pitId] } });

  // Outside the point in time the late write is visible, at its timestamp's place.
  const all = await expectOk(node, `/${index}/_search`, {
    body: { size: 100, sort: [{ timestamp: 'asc' }, { id: 'asc' }] },
  });
  const ids = (all.body as SearchBody).hits.hits.map((h) => h._source.id);
  assert.equal(ids.length, 26);
  assert.deepEqual(ids.slice(0, 3), ['a-000', 'a-001', 'late']);
  await expectOk(node, `/${index}`, { method: 'DELETE' });
});

test('ingest-common and lang-mustache are loaded: a pipeline stamps the ingest time on every document', async () => {
  const node = await sharedOpenSearch();
  const index = uniqueIndex('launcher-pipeline');
  const pipeline = `${index}-stamp`;
  await expectOk(node, `/_ingest/pipeline/${pipeline}`, {
    method: 'PUT',
    body: { processors: [{ set: { field: 'ingested', value: '{{_ingest.timestamp}}' } }] },
  });
  await expectOk(node, `/${index}/_doc/one?refresh=true&pipeline=${pipeline}`, {
    method: 'PUT',
    body: { id: 'one' },
  });
  const doc = await expectOk(node, `/${index}/_doc/one`);
  const ingested = (doc.body as { _source: { ingested?: string } })._source.ingested;
  assert.ok(ingested && !Number.isNaN(Date.parse(ingested)), `ingested: ${ingested}`);
  await expectOk(node, `/${index}`, { method: 'DELETE' });
  await expectOk(node, `/_ingest/pipeline/${pipeline}`, { method: 'DELETE' });
});

test('restart keeps the data directory and the address; stop removes the node', async () => {
  const node = await startOpenSearch({ heapMb: 256 });
  own.push(node);
  const url = node.url;
  const pid = node.pid;
  await expectOk(node, '/kept/_doc/1?refresh=true', { method: 'PUT', body: { id: '1' } });
  await node.restart();
  assert.equal(node.url, url);
  assert.notEqual(node.pid, pid);
  const doc = await expectOk(node, '/kept/_doc/1');
  assert.equal((doc.body as { found: boolean }).found, true);
  await node.stop();
  assert.equal(existsSync(node.dir), false);
  await assert.rejects(openSearchRequest(node, '/', { timeoutMs: 2_000 }));
  assert.throws(() => process.kill(node.pid, 0));
});

test('a node that cannot start fails with its exit and the log tail', async () => {
  // A heap below the JVM's minimum: the process exits at once.
  await assert.rejects(startOpenSearch({ heapMb: 1 }), (error: Error) => {
    assert.match(error.message, /opensearch exited \(code \d+\) before it was ready/);
    assert.match(error.message, /heap/i);
    return true;
  });
});
