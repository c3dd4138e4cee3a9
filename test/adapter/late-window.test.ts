import assert from 'node:assert/strict';
import { test } from 'node:test';
import { bucketCounts, compareSort, INGESTED_AT } from '../../src/adapter/alert-order.ts';
import {
  createLateWindow,
  HISTORY_BUCKETS,
  WINDOW_BUCKETS,
} from '../../src/adapter/late-window.ts';
import {
  ALERT_TEMPLATE,
  alertIndexSetupCalls,
  chartFile,
  INGEST_PIPELINE,
} from '../../testcluster/opensearch/alert-index.ts';

// The window's pure rules (docs/adapter.md "Late alerts"); test/adapter/late.test.ts proves
// them end to end on the real engine.

const L = 900_000;
const B = L / WINDOW_BUCKETS;
const T0 = 1_800_000_000_000;

test('late window: buckets are the window cut in 90, aligned to the epoch; the default window gives 10 s buckets', () => {
  const w = createLateWindow(L);
  assert.equal(w.bucketMs, 10_000);
  assert.equal(createLateWindow(3_000).bucketMs, 34);
  w.record(T0 + 5);
  w.advance(T0 + 5);
  assert.equal(w.horizon, Math.floor((T0 + 5 - L) / B) * B);
});

test('late window: equal counts mean nothing is late; a grown bucket is narrowed to the milliseconds that grew', () => {
  const w = createLateWindow(L);
  for (const t of [T0 + 1, T0 + 1, T0 + 2, T0 + 20_000]) w.record(t);
  w.advance(T0 + 20_000);
  const start = Math.floor((T0 + 1) / B) * B;
  const later = Math.floor((T0 + 20_000) / B) * B;
  assert.deepEqual(
    w.differences(
      new Map([
        [start, 3],
        [later, 1],
      ]),
      T0 + 20_000,
    ),
    [],
  );
  const diffs = w.differences(
    new Map([
      [start, 4],
      [later, 1],
    ]),
    T0 + 20_000,
  );
  assert.deepEqual(diffs, [{ start, end: start + B - 1, narrow: true }]);
  assert.deepEqual(
    w.grownStamps(
      start,
      new Map([
        [T0 + 1, 2],
        [T0 + 2, 2],
      ]),
    ),
    [T0 + 2],
  );
  w.reread(start, [T0 + 2, T0 + 2], [T0 + 2]);
  assert.deepEqual(
    w.differences(
      new Map([
        [start, 4],
        [later, 1],
      ]),
      T0 + 20_000,
    ),
    [],
  );
});

test('late window: what the checkpoint stores never counts a batch before svc stored it, and a restart resumes with counts only', () => {
  const w = createLateWindow(L);
  w.record(T0);
  w.advance(T0);
  const before = w.snapshotWith([], T0);
  const withBatch = w.snapshotWith([T0 + 1, T0 + 11_000], T0 + 11_000);
  const counts = before.window?.counts ?? [];
  assert.deepEqual(counts, [...Array(counts.length - 1).fill(0), 1]);
  assert.equal(w.snapshotWith([], T0).window?.counts.at(-1), 1, 'snapshotWith changed nothing');
  assert.ok((withBatch.window?.counts.length ?? 0) <= WINDOW_BUCKETS + 2, 'bounded');
  assert.deepEqual(withBatch.window?.counts.slice(-2), [2, 1]);

  const resumed = createLateWindow(L, { resumed: true, window: withBatch.window, settled: 7 });
  resumed.advance(T0 + 11_000);
  const start = Math.floor(T0 / B) * B;
  // Counts known, stamps not: a grown bucket is re-read whole.
  assert.deepEqual(
    resumed.differences(
      new Map([
        [start, 3],
        [start + B, 1],
      ]),
      T0 + 11_000,
    ),
    [{ start, end: start + B - 1, narrow: false }],
  );
  assert.equal(resumed.settled, 7);
});

test('late window: resumed without a snapshot, every bucket of the window that holds documents is re-read once', () => {
  const w = createLateWindow(L, { resumed: true });
  w.advance(T0);
  const start = Math.floor(T0 / B) * B;
  const diffs = w.differences(new Map([[start, 5]]), T0);
  assert.deepEqual(diffs, [{ start, end: T0, narrow: false }]);
  w.reread(start, [T0, T0, T0, T0, T0]);
  assert.deepEqual(w.differences(new Map([[start, 5]]), T0), []);
});

test('late window: documents below the window that were not there when it passed are counted as later than the window, and located in the history', () => {
  const w = createLateWindow(L);
  w.record(T0);
  w.advance(T0);
  assert.equal(w.lateBelow(0), 0, 'a first start knows every document below the window');
  w.record(T0 + L + 2 * B);
  w.advance(T0 + L + 2 * B);
  assert.equal(w.settled, 1, 'the bucket of T0 settled with its count');
  assert.equal(w.lateBelow(1), 0);
  assert.equal(w.lateBelow(3), 2, 'two documents appeared below the window');
  assert.equal(w.lateBelow(3), 0, 'and are counted once');
  const start = Math.floor(T0 / B) * B;
  assert.deepEqual(w.historyDifferences(new Map([[start, 3]])), [{ start, end: start + B - 1 }]);
  w.settle(start, 3);
  assert.deepEqual(w.historyDifferences(new Map([[start, 3]])), []);
  assert.deepEqual(
    w.historyDifferences(new Map([[start + B, 1]])),
    [{ start: start + B, end: start + 2 * B - 1 }],
    'a settled bucket that held nothing is known too',
  );
  assert.equal(w.lateBelow(2), 0, 'a deleted index lowers the baseline without a count');
  assert.ok(HISTORY_BUCKETS >= WINDOW_BUCKETS);
});

test('late window: the count query stops at the cursor, leaving its millisecond’s later ids to the next page', () => {
  const body = bucketCounts(T0 - L, [T0, 'b.2'], B) as { query: unknown };
  assert.deepEqual(body.query, {
    bool: {
      filter: [{ range: { [INGESTED_AT]: { gte: T0 - L, lte: T0, format: 'epoch_millis' } } }],
      must_not: [
        {
          bool: {
            filter: [{ term: { [INGESTED_AT]: T0 } }, { range: { id: { gt: 'b.2' } } }],
          },
        },
      ],
    },
  });
  assert.equal(compareSort([T0, 'a'], [T0, 'b']), -1);
  assert.equal(compareSort([T0, 'é'], [T0, 'z']), 1, 'keywords compare as UTF-8 bytes');
  assert.equal(compareSort([T0 + 1, 'a'], [T0, 'z']), 1);
});

test('late window: the tenant chart’s pipeline stamps the field the adapter sorts on, and its legacy template applies that pipeline as the final one to every wazuh-alerts-* index', () => {
  const calls = alertIndexSetupCalls();
  assert.deepEqual(
    calls.map((c) => `${c.method} ${c.path}`),
    [`PUT /_ingest/pipeline/${INGEST_PIPELINE.id}`, `PUT /_template/${ALERT_TEMPLATE.name}`],
  );
  const pipeline = chartFile(INGEST_PIPELINE.file) as {
    processors: { copy?: { source_field: string; target_field: string } }[];
  };
  assert.deepEqual(
    pipeline.processors.map((p) => p.copy?.target_field),
    [INGESTED_AT],
  );
  assert.equal(pipeline.processors[0]?.copy?.source_field, '_ingest.timestamp');
  const template = chartFile(ALERT_TEMPLATE.file) as {
    order: number;
    index_patterns: string[];
    settings: Record<string, string>;
    mappings: { properties: Record<string, { type: string }> };
  };
  assert.deepEqual(template.index_patterns, ['wazuh-alerts-*']);
  assert.ok(template.order > 0, "above Wazuh's own legacy template (order 0)");
  assert.equal(template.settings['index.final_pipeline'], INGEST_PIPELINE.id);
  assert.equal(template.mappings.properties[INGESTED_AT]?.type, 'date');
});
