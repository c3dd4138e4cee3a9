import assert from 'node:assert/strict';
import { test } from 'node:test';
import type { StoredEvent } from '../../src/domains/events/index.ts';
import { foldEvents } from '../../src/domains/projections/folds.ts';
import {
  type Checkpoints,
  noCheckpoints,
} from '../../src/domains/projections/projection-registry.ts';
import { wazuhAlert } from './support.ts';

const TENANT = '11111111-1111-4111-8111-111111111111';
const INV = '22222222-2222-4222-8222-222222222222';
const NONE = noCheckpoints();

let nextId = 1;
function event(type: string, payload: unknown, at: string, streamId = INV): StoredEvent {
  const id = String(nextId++);
  return {
    id,
    tenantId: TENANT,
    streamType: type.split('.')[0] ?? 'x',
    streamId,
    streamSeq: 1,
    type,
    payload,
    actor: 'adapter',
    occurredAt: new Date(at),
    recordedAt: new Date(at),
  };
}

function opened(at: string, severity = 'medium', id = INV): StoredEvent {
  return event(
    'investigation.opened',
    {
      investigation_id: id,
      title: 'sshd: brute force',
      severity,
      source: 'wazuh',
      source_ref: 'rule:5712/agent:001',
      rule_id: '5712',
      agent_id: '001',
    },
    at,
    id,
  );
}

function received(
  at: string,
  level: number,
  extra: Parameters<typeof wazuhAlert>[0] | object = {},
) {
  const alert = wazuhAlert({ ruleId: '5712', level, at: new Date(at), ...extra });
  const severity =
    level >= 13
      ? 'critical'
      : level >= 10
        ? 'high'
        : level >= 7
          ? 'medium'
          : level >= 4
            ? 'low'
            : 'info';
  return event(
    'alert.received',
    { source: 'wazuh', source_id: alert.id, investigation_id: INV, severity, alert },
    at,
    '33333333-3333-4333-8333-333333333333',
  );
}

test('§2.3 investigation.opened folds into a new open investigation and the opened metric of its hour', () => {
  const e = opened('2026-11-26T13:45:01.123Z', 'high');
  const changes = foldEvents([e], NONE);
  assert.deepEqual(changes.investigations.opened, [
    {
      id: INV,
      title: 'sshd: brute force',
      severity: 'high',
      source: 'wazuh',
      source_ref: 'rule:5712/agent:001',
      opened_at: '2026-11-26T13:45:01.123Z',
      last_event_id: e.id,
    },
  ]);
  assert.deepEqual(changes.metrics_hourly, [
    { bucket: '2026-11-26T13:00:00.000Z', metric: 'investigations.opened', value: 1 },
  ]);
  assert.deepEqual(
    [changes.investigations.alerts, changes.rule_stats, changes.ioc_stats, changes.analyzer_stats],
    [[], [], [], []],
  );
});

test('§2.3 alert.received folds into the investigation (count, max severity, last alert), hourly metrics, rule and IOC stats', () => {
  const a = received('2026-11-26T13:10:00.000Z', 12, {
    srcip: '203.0.113.7',
    url: 'http://bad.example/x',
    sha256: 'ab'.repeat(32),
  });
  const b = received('2026-11-26T14:20:00.000Z', 5, { srcip: '203.0.113.7' });
  const changes = foldEvents([a, b], NONE);
  assert.deepEqual(changes.investigations.alerts, [
    {
      id: INV,
      alerts: 2,
      severity: 'high',
      last_alert_at: '2026-11-26T14:20:00.000Z',
      last_event_id: b.id,
    },
  ]);
  assert.deepEqual(changes.metrics_hourly.map((m) => `${m.bucket} ${m.metric} ${m.value}`).sort(), [
    '2026-11-26T13:00:00.000Z alerts.high 1',
    '2026-11-26T13:00:00.000Z alerts.received 1',
    '2026-11-26T14:00:00.000Z alerts.low 1',
    '2026-11-26T14:00:00.000Z alerts.received 1',
  ]);
  assert.deepEqual(changes.rule_stats, [
    {
      rule_id: '5712',
      rule_name: 'rule 5712',
      fired: 2,
      last_fired_at: '2026-11-26T14:20:00.000Z',
    },
  ]);
  assert.deepEqual(
    changes.ioc_stats.map((i) => [
      i.ioc_type,
      i.ioc_value,
      i.hits,
      i.first_seen_at,
      i.last_seen_at,
    ]),
    [
      ['ip', '203.0.113.7', 2, '2026-11-26T13:10:00.000Z', '2026-11-26T14:20:00.000Z'],
      ['url', 'http://bad.example/x', 1, '2026-11-26T13:10:00.000Z', '2026-11-26T13:10:00.000Z'],
      ['hash', 'ab'.repeat(32), 1, '2026-11-26T13:10:00.000Z', '2026-11-26T13:10:00.000Z'],
    ],
  );
});

test('§2.3 analyzer.completed folds into analyzer_stats: runs, failures, total duration, last run', () => {
  const at1 = '2026-11-26T10:00:00.000Z';
  const at2 = '2026-11-26T11:00:00.000Z';
  const changes = foldEvents(
    [
      event('analyzer.completed', { analyzer: 'abuseipdb', duration_ms: 120, success: true }, at2),
      event('analyzer.completed', { analyzer: 'abuseipdb', duration_ms: 80, success: false }, at1),
    ],
    NONE,
  );
  assert.deepEqual(changes.analyzer_stats, [
    { analyzer: 'abuseipdb', runs: 2, failures: 1, total_duration_ms: 200, last_run_at: at2 },
  ]);
});

test('§2.3 each projection folds only the events after its own checkpoint', () => {
  const o = opened('2026-11-26T13:00:00.000Z');
  const a = received('2026-11-26T13:30:00.000Z', 3);
  const checkpoints: Checkpoints = {
    ...NONE,
    investigations: BigInt(a.id),
    metrics_hourly: BigInt(o.id),
  };
  const changes = foldEvents([o, a], checkpoints);
  assert.deepEqual(changes.investigations.opened, []);
  assert.deepEqual(changes.investigations.alerts, []);
  assert.deepEqual(changes.metrics_hourly.map((m) => m.metric).sort(), [
    'alerts.info',
    'alerts.received',
  ]);
  assert.equal(changes.rule_stats.length, 1);
});

test('§2.3 a malformed payload is skipped per projection, never turned into a row a constraint refuses', () => {
  const changes = foldEvents(
    [
      event(
        'investigation.opened',
        { title: '', severity: 'apocalyptic' },
        '2026-11-26T13:00:00.000Z',
      ),
      event(
        'alert.received',
        { alert: { rule: { id: '', level: 'x' }, data: { srcip: 7, url: 'x'.repeat(3000) } } },
        '2026-11-26T13:00:00.000Z',
      ),
      event('analyzer.completed', { analyzer: '', duration_ms: -5 }, '2026-11-26T13:00:00.000Z'),
      event(
        'analyzer.completed',
        { analyzer: 'vt', duration_ms: Number.NaN },
        '2026-11-26T13:00:00.000Z',
      ),
      event('something.else', null, '2026-11-26T13:00:00.000Z'),
    ],
    NONE,
  );
  // The opening without a usable id falls back to its stream id, with a default title and severity.
  assert.deepEqual(
    changes.investigations.opened.map((o) => [o.id, o.title, o.severity]),
    [[INV, 'Untitled', 'info']],
  );
  assert.deepEqual(
    changes.investigations.alerts,
    [],
    'no investigation id: no investigation change',
  );
  assert.deepEqual(changes.rule_stats, []);
  assert.deepEqual(changes.ioc_stats, []);
  assert.deepEqual(
    changes.analyzer_stats.map((a) => [a.analyzer, a.total_duration_ms]),
    [['vt', 0]],
  );
});

test('§2.3 a second opening of an investigation in the batch restarts its counts (as incrementally)', () => {
  const o1 = opened('2026-11-26T13:00:00.000Z', 'low');
  const a = received('2026-11-26T13:01:00.000Z', 14);
  const o2 = opened('2026-11-26T13:02:00.000Z', 'low');
  const changes = foldEvents([o1, a, o2], NONE);
  assert.deepEqual(changes.investigations.alerts, []);
  assert.deepEqual(
    changes.investigations.opened.map((o) => [o.severity, o.last_event_id]),
    [['low', o2.id]],
  );
});
