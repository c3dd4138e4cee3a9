import assert from 'node:assert/strict';
import { after, before, test } from 'node:test';
import { setTimeout as sleep } from 'node:timers/promises';
import { createSystemGate, type SystemGate } from '../../src/db/system-gate.ts';
import { createEventHub, type EventHub } from '../../src/domains/events/index.ts';
import {
  createProjectionService,
  type ProjectionService,
} from '../../src/domains/projections/projection-service.ts';
import { createLogger } from '../../src/log/index.ts';
import { createProjector, type Projector } from '../../src/projector/projector.ts';
import { createTestDatabase, type TestDatabase } from '../support/database.ts';
import { createTenant } from '../support/fixtures.ts';
import {
  openInvestigation,
  projectionRows,
  randomTraffic,
  receiveAlert,
  seeded,
  wazuhAlert,
} from './support.ts';

let db: TestDatabase;
let system: SystemGate;
let hub: EventHub;
before(async () => {
  db = await createTestDatabase();
  system = createSystemGate(db.target);
  hub = await createEventHub({ target: db.target, db: db.app });
});
after(async () => {
  await hub.close();
  await system.close();
  await db.drop();
});

const logger = createLogger('silent');

function service(batchSize: number): ProjectionService {
  return createProjectionService({ db: db.app, system, batchSize });
}

function projector(projections: ProjectionService, sweepMs = 60_000): Projector {
  return createProjector({ projections, events: hub, logger, sweepMs, concurrency: 2 });
}

async function tenants(n: number): Promise<string[]> {
  const ids: string[] = [];
  for (let i = 0; i < n; i++) ids.push(await createTenant(db.pools.app));
  return ids;
}

async function snapshot(ids: string[]): Promise<Record<string, unknown>> {
  const result: Record<string, unknown> = {};
  for (const id of ids) result[id] = await projectionRows(db, id);
  return result;
}

async function alertEvents(tenantId: string): Promise<number> {
  const { rows } = await db.pools.mssp.query<{ n: number }>(
    `SELECT count(*)::int AS n FROM events WHERE tenant_id = $1 AND type = 'alert.received'`,
    [tenantId],
  );
  return rows[0]?.n ?? 0;
}

async function rebuildAll(ids: string[]): Promise<void> {
  const projections = service(1_000);
  for (const id of ids) await projections.rebuild(id);
}

test('§2.3 rebuilding from the event store gives exactly the incrementally maintained rows (several tenants, interrupted between batches)', async () => {
  const ids = await tenants(3);
  const random = seeded(12);
  for (const id of ids) await randomTraffic(db.app, id, 120, random);
  // A first process folds a few batches of 37 and stops between batches.
  const first = service(37);
  for (const id of ids) {
    assert.equal((await first.foldNext(id)).kind, 'folded');
    await first.foldNext(id);
  }
  // More events arrive while no projector runs, then a new one takes over from the checkpoints.
  for (const id of ids) await randomTraffic(db.app, id, 80, random);
  const second = projector(service(37));
  await second.start();
  await second.catchUp(ids);
  await second.stop();
  const incremental = await snapshot(ids);
  for (const id of ids) {
    const rows = incremental[id] as Record<string, { alert_count?: number }[]>;
    const counted = (rows.investigations ?? []).reduce((n, r) => n + (r.alert_count ?? 0), 0);
    assert.equal(counted, await alertEvents(id), 'every alert counted once');
    assert.ok((rows.metrics_hourly ?? []).length > 0 && (rows.ioc_stats ?? []).length > 0);
  }
  await rebuildAll(ids);
  assert.deepEqual(await snapshot(ids), incremental);
});

test('§2.3 two projectors on the same tenants at once never count an event twice', async () => {
  const ids = await tenants(3);
  const a = projector(service(25));
  const b = projector(service(25));
  await a.start();
  await b.start();
  const random = seeded(7);
  await Promise.all(ids.map((id) => randomTraffic(db.app, id, 100, random)));
  await Promise.all([a.catchUp(ids), b.catchUp(ids)]);
  await Promise.all([a.stop(), b.stop()]);
  const concurrent = await snapshot(ids);
  await rebuildAll(ids);
  assert.deepEqual(await snapshot(ids), concurrent);
  for (const id of ids) {
    const rows = concurrent[id] as Record<string, { alert_count?: number }[]>;
    const counted = (rows.investigations ?? []).reduce((n, r) => n + (r.alert_count ?? 0), 0);
    assert.equal(counted, await alertEvents(id));
  }
});

test('§2.3 a restarted projector resumes from the checkpoints: discovery at start, nothing folded twice', async () => {
  const [id = ''] = await tenants(1);
  const random = seeded(3);
  await randomTraffic(db.app, id, 60, random);
  const first = projector(service(1_000));
  await first.start();
  await first.catchUp([id]);
  await first.stop();
  await randomTraffic(db.app, id, 60, random);
  const before = await db.pools.mssp.query(
    `SELECT count(*)::int AS n FROM audit_log WHERE actor_id = 'system:projector.discover'`,
  );
  // A new instance has no notices for what came while none ran: its start-up discovery finds it.
  const second = projector(service(1_000));
  await second.start();
  await second.idle();
  await second.stop();
  const after = await db.pools.mssp.query(
    `SELECT count(*)::int AS n FROM audit_log WHERE actor_id = 'system:projector.discover'`,
  );
  assert.equal(after.rows[0].n - before.rows[0].n, 1, 'one audited discovery per start');
  const resumed = await projectionRows(db, id);
  await rebuildAll([id]);
  assert.deepEqual(await projectionRows(db, id), resumed);
  const { rows } = await db.pools.mssp.query<{ id: string }>(
    'SELECT max(id)::text AS id FROM events WHERE tenant_id = $1',
    [id],
  );
  assert.ok(
    (resumed.projection_checkpoints as { last_event_id: string }[]).every(
      (c) => c.last_event_id === rows[0]?.id,
    ),
  );
});

test('§2.3 a new event wakes the projector through the event hub, without waiting for a sweep', async () => {
  const [id = ''] = await tenants(1);
  const p = projector(service(1_000), 3_600_000);
  await p.start();
  try {
    const at = new Date('2026-11-26T13:45:01.123Z');
    const alert = wazuhAlert({ ruleId: '5712', level: 10, at });
    const inv = await openInvestigation(db.app, id, alert, at);
    await receiveAlert(db.app, id, inv, alert, at);
    let row: { alert_count: number; severity: string } | undefined;
    for (let i = 0; i < 200 && row?.alert_count !== 1; i++) {
      await sleep(50);
      const { rows } = await db.pools.mssp.query(
        'SELECT alert_count, severity FROM investigations WHERE tenant_id = $1 AND id = $2',
        [id, inv],
      );
      row = rows[0];
    }
    assert.deepEqual(row, { alert_count: 1, severity: 'high' });
  } finally {
    await p.stop();
  }
});

test('§5.7 isolation: B’s projections never hold A’s data, and a fold in A’s context cannot write B', async () => {
  const [a = '', b = ''] = await tenants(2);
  const at = new Date('2026-11-26T09:00:00.000Z');
  const alertA = wazuhAlert({ ruleId: '900001', level: 12, at, srcip: '198.51.100.77' });
  const invA = await openInvestigation(db.app, a, alertA, at);
  await receiveAlert(db.app, a, invA, alertA, at);
  const alertB = wazuhAlert({ ruleId: '5710', level: 5, at, srcip: '192.0.2.1' });
  const invB = await openInvestigation(db.app, b, alertB, at);
  await receiveAlert(db.app, b, invB, alertB, at);
  const p = projector(service(1_000));
  await p.start();
  await p.catchUp([a, b]);
  await p.stop();
  const rowsB = JSON.stringify(await projectionRows(db, b));
  for (const value of [a, invA, '900001', '198.51.100.77'])
    assert.ok(!rowsB.includes(value), value);

  // The projector's own statements, in A's transaction, aimed at B: RLS refuses or sees nothing.
  const { writeChanges, advanceCheckpoints } = await import(
    '../../src/domains/projections/projection-repository.ts'
  );
  const at1 = at.toISOString();
  await assert.rejects(
    db.app.withTenant(a, (tx) =>
      writeChanges(tx, b, {
        investigations: { opened: [], alerts: [], workflow: [] },
        investigation_iocs: [],
        metrics_hourly: [
          { bucket: '2026-11-26T09:00:00.000Z', metric: 'alerts.received', value: 5 },
        ],
        rule_stats: [],
        ioc_stats: [],
        analyzer_stats: [],
        report_investigations: [],
        report_reviews: [],
      }),
    ),
    /row-level security/,
  );
  await assert.rejects(
    db.app.withTenant(a, (tx) => advanceCheckpoints(tx, b, ['rule_stats'], 999_999n)),
    /row-level security/,
  );
  await db.app.withTenant(a, (tx) =>
    writeChanges(tx, a, {
      investigations: {
        opened: [],
        alerts: [
          { id: invB, alerts: 50, severity: 'critical', last_alert_at: at1, last_event_id: '1' },
        ],
        workflow: [],
      },
      investigation_iocs: [],
      metrics_hourly: [],
      rule_stats: [],
      ioc_stats: [],
      analyzer_stats: [],
      report_investigations: [],
      report_reviews: [],
    }),
  );
  assert.equal(JSON.stringify(await projectionRows(db, b)), rowsB, 'B unchanged');
});

test('issue 33 fairness: a tenant with a backlog folds in turns, so a tenant marked behind it waits one turn, not the whole backlog', async () => {
  const [flood = '', quiet = ''] = await tenants(2);
  const random = seeded(33);
  // About 30 events per batch of 5: the backlog is many turns long.
  await randomTraffic(db.app, flood, 150, random);
  await randomTraffic(db.app, quiet, 3, random);
  const real = service(5);
  const calls: string[] = [];
  let markedAt = -1;
  let p: Projector | undefined;
  const recording: ProjectionService = {
    ...real,
    foldNext: async (tenantId) => {
      calls.push(tenantId);
      // The quiet tenant is marked while the flood's first batch folds (once the projector has
      // given the flood the only slot, after this call returns its promise): it queues behind it.
      if (tenantId === flood && markedAt < 0) {
        markedAt = calls.length;
        await new Promise((resolve) => setImmediate(resolve));
        void p?.catchUp([quiet]);
      }
      return real.foldNext(tenantId);
    },
  };
  const turnBatches = 3;
  p = createProjector({
    projections: recording,
    events: hub,
    logger,
    sweepMs: 3_600_000,
    concurrency: 1,
    turnBatches,
  });
  await p.start();
  try {
    await p.catchUp([flood, quiet]);
  } finally {
    await p.stop();
  }
  assert.ok(markedAt > 0, 'the flood tenant was folded');
  const next = calls.indexOf(quiet, markedAt);
  assert.ok(next > 0, 'the quiet tenant was folded after it was marked');
  const floodBatchesBetween = calls.slice(markedAt, next).filter((id) => id === flood).length;
  assert.ok(
    floodBatchesBetween <= turnBatches - 1,
    `the flood folded ${floodBatchesBetween} more batches before the quiet tenant's turn (its turn is ${turnBatches})`,
  );
  assert.ok(
    calls.filter((id) => id === flood).length > 3 * turnBatches,
    'the flood needed several turns (the test would not show a difference otherwise)',
  );
  const folded = await snapshot([flood, quiet]);
  await rebuildAll([flood, quiet]);
  assert.deepEqual(await snapshot([flood, quiet]), folded, 'turns fold every event once');
});

test('issue 33 the sweep asks all known tenants together and folds the ones whose notices were lost', async () => {
  const ids = await tenants(3);
  const random = seeded(34);
  for (const id of ids) await randomTraffic(db.app, id, 10, random);
  const projections = service(1_000);
  // No notices reach this projector: only its discovery at start and its sweeps find work.
  const deaf = { watch: () => () => undefined };
  const p = createProjector({ projections, events: deaf, logger, sweepMs: 1_000, concurrency: 2 });
  await p.start();
  try {
    await p.idle();
    assert.deepEqual(await projections.behindOf(ids), [], 'discovery folded all three');
    const [late = '', ...rest] = ids;
    await randomTraffic(db.app, late, 5, random);
    assert.deepEqual(await projections.behindOf(ids), [late], 'only the tenant with new events');
    // The next sweep finds it and folds it.
    const deadline = Date.now() + 30_000;
    while ((await projections.behindOf([late])).length > 0) {
      if (Date.now() > deadline) throw new Error('the sweep never folded the tenant');
      await sleep(100);
    }
    assert.deepEqual(await projections.behindOf(rest), []);
  } finally {
    await p.stop();
  }
  const folded = await snapshot(ids);
  await rebuildAll(ids);
  assert.deepEqual(await snapshot(ids), folded, 'the sweep folded every event once');
});

test('issue 33 fairness: a caught-up tenant noticed again during its fold is folded after the tenants already waiting, not again at once in its slot', async () => {
  const [busy = '', waiting = ''] = await tenants(2);
  const random = seeded(35);
  await randomTraffic(db.app, busy, 5, random);
  await randomTraffic(db.app, waiting, 5, random);
  const real = service(1_000);
  const calls: string[] = [];
  let p: Projector | undefined;
  let noticed = false;
  const recording: ProjectionService = {
    ...real,
    foldNext: async (tenantId) => {
      calls.push(tenantId);
      // While the busy tenant folds, the other is marked, then the busy one gets a notice
      // again (new events while its fold runs, as with an adapter posting every half second).
      if (tenantId === busy && !noticed) {
        noticed = true;
        await new Promise((resolve) => setImmediate(resolve));
        void p?.catchUp([waiting, busy]);
      }
      return real.foldNext(tenantId);
    },
  };
  p = createProjector({
    projections: recording,
    events: { watch: () => () => undefined },
    logger,
    sweepMs: 3_600_000,
    concurrency: 1,
  });
  await p.start();
  try {
    await p.catchUp([busy]);
  } finally {
    await p.stop();
  }
  const first = calls.indexOf(busy);
  assert.ok(first >= 0 && noticed);
  assert.deepEqual(
    calls.slice(first, first + 3),
    [busy, waiting, busy],
    `the waiting tenant's turn came before the busy tenant's second fold: ${calls.join(', ')}`,
  );
});
