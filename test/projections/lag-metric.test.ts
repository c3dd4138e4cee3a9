import assert from 'node:assert/strict';
import { generateKeyPairSync } from 'node:crypto';
import { after, before, test } from 'node:test';
import { setTimeout as sleep } from 'node:timers/promises';
import pg from 'pg';
import { type Core, composeCore, composeProjector } from '../../src/app/compose.ts';
import { loadConfig } from '../../src/config/index.ts';
import { createSystemGate, type SystemGate } from '../../src/db/system-gate.ts';
import { createProjectionService } from '../../src/domains/projections/projection-service.ts';
import { createLogger } from '../../src/log/index.ts';
import { createMetricsRegistry } from '../../src/metrics/registry.ts';
import { createProjector } from '../../src/projector/projector.ts';
import { parseExposition } from '../metrics/support.ts';
import { createTestDatabase, type TestDatabase } from '../support/database.ts';
import { createTenant } from '../support/fixtures.ts';
import { randomTraffic, seeded } from './support.ts';

// Issue 33: the projector's lag in Prometheus, without a tenant label (docs/projections.md
// "Lag"): svc_projection_lag_seconds and svc_projection_tenants_behind read at scrape time,
// svc_projection_delay_seconds observed per folded event.

let db: TestDatabase;
let system: SystemGate;
before(async () => {
  db = await createTestDatabase();
  system = createSystemGate(db.target);
});
after(async () => {
  await system.close();
  await db.drop();
});

const logger = createLogger('silent');

/** The tenant's events, appended `seconds` earlier than they were (as the test's superuser). */
async function backdate(tenantId: string, seconds: number): Promise<void> {
  const client = new pg.Client(db.superuser);
  await client.connect();
  try {
    await client.query(
      'UPDATE events SET recorded_at = recorded_at - make_interval(secs => $2) WHERE tenant_id = $1',
      [tenantId, seconds],
    );
  } finally {
    await client.end();
  }
}

async function eventCount(tenantId: string): Promise<number> {
  const { rows } = await db.pools.mssp.query<{ n: number }>(
    'SELECT count(*)::int AS n FROM events WHERE tenant_id = $1',
    [tenantId],
  );
  return rows[0]?.n ?? 0;
}

test('issue 33 svc_projection_lag_seconds and svc_projection_tenants_behind show the worst tenant this projector knows is behind, and 0 once caught up', async () => {
  const tenant = await createTenant(db.pools.app);
  await randomTraffic(db.app, tenant, 30, seeded(51));
  await backdate(tenant, 120);
  const real = createProjectionService({ db: db.app, system, batchSize: 5 });
  let calls = 0;
  let open!: () => void;
  const opened = new Promise<void>((resolve) => {
    open = resolve;
  });
  let waiting = false;
  const registry = createMetricsRegistry();
  const p = createProjector({
    projections: {
      ...real,
      foldNext: async (id) => {
        if (++calls === 2) {
          waiting = true;
          await opened;
        }
        return real.foldNext(id);
      },
    },
    events: { watch: () => () => undefined },
    logger,
    sweepMs: 3_600_000,
    concurrency: 1,
    metrics: registry,
  });
  registry.read({ projectorLag: () => p.lag(0) });
  await p.start();
  try {
    const deadline = Date.now() + 30_000;
    while (!waiting) {
      if (Date.now() > deadline) throw new Error('the second fold never started');
      await sleep(10);
    }
    const mid = parseExposition((await registry.scrape()).body);
    assert.equal(mid.types.get('svc_projection_lag_seconds'), 'gauge');
    assert.equal(mid.value('svc_projection_tenants_behind'), 1);
    const lag = mid.value('svc_projection_lag_seconds');
    assert.ok(lag >= 120 && lag < 180, `lag ${lag} s: the sixth event was appended 120 s ago`);
    assert.equal(mid.value('svc_projection_delay_seconds_count'), 5, 'one batch folded');
    open();
    await p.idle();
    const done = parseExposition((await registry.scrape()).body);
    assert.equal(done.value('svc_projection_lag_seconds'), 0);
    assert.equal(done.value('svc_projection_tenants_behind'), 0);
    const events = await eventCount(tenant);
    assert.equal(done.value('svc_projection_delay_seconds_count'), events);
    // Every event was appended 120 s (plus the fold's own time) before its fold committed.
    assert.equal(done.value('svc_projection_delay_seconds_bucket', { le: '60' }), 0);
    assert.equal(done.value('svc_projection_delay_seconds_bucket', { le: '300' }), events);
    const sum = done.value('svc_projection_delay_seconds_sum');
    assert.ok(sum >= 120 * events && sum < 180 * events, `sum ${sum}`);
    assert.equal(done.samples.filter((s) => 'tenant' in s.labels).length, 0, 'no tenant label');
  } finally {
    open();
    await p.stop();
  }
});

test('issue 33 the composed projector (svc serve) reports its folds and lag to the process registry', async () => {
  const tenant = await createTenant(db.pools.app);
  await randomTraffic(db.app, tenant, 12, seeded(52));
  await backdate(tenant, 400);
  const pem = generateKeyPairSync('ed25519')
    .privateKey.export({ type: 'pkcs8', format: 'pem' })
    .toString();
  const core: Core = await composeCore({
    config: {
      ...loadConfig({}),
      authMode: 'internal',
      tokenKey: { kind: 'pem', pem },
    },
    logger,
    target: db.target,
  });
  const runtime = await composeProjector(core, {
    run: false,
    sweepMs: 3_600_000,
  });
  try {
    const before = parseExposition((await core.metrics.scrape()).body);
    assert.equal(before.value('svc_projection_tenants_behind'), 0, 'nothing known before start');
    assert.equal(before.named('svc_projection_lag_seconds').length, 1, 'the gauge has a sample');
    await runtime.projector.start();
    await runtime.projector.catchUp([tenant]);
    const after = parseExposition((await core.metrics.scrape()).body);
    const events = await eventCount(tenant);
    assert.equal(after.value('svc_projection_delay_seconds_count'), events);
    assert.equal(after.value('svc_projection_delay_seconds_bucket', { le: '300' }), 0);
    assert.equal(after.value('svc_projection_delay_seconds_bucket', { le: '900' }), events);
    assert.equal(after.value('svc_projection_lag_seconds'), 0);
  } finally {
    await runtime.stop();
    await core.close();
  }
});
