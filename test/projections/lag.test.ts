import assert from 'node:assert/strict';
import { after, before, test } from 'node:test';
import { setTimeout as sleep } from 'node:timers/promises';
import { createSystemGate, type SystemGate } from '../../src/db/system-gate.ts';
import {
  createProjectionService,
  type ProjectionService,
} from '../../src/domains/projections/projection-service.ts';
import { createLogger } from '../../src/log/index.ts';
import { createProjector } from '../../src/projector/projector.ts';
import { createTestDatabase, type TestDatabase } from '../support/database.ts';
import { createTenant } from '../support/fixtures.ts';
import { randomTraffic, seeded } from './support.ts';

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
/** No notices reach these projectors: only discovery, sweeps and catchUp find work. */
const deaf = { watch: () => () => undefined };

/** Every event of the tenant in id order, with when it was appended (read through svc_mssp). */
async function appended(tenantId: string): Promise<{ id: bigint; at: number }[]> {
  const { rows } = await db.pools.mssp.query<{ id: string; recorded_at: Date }>(
    'SELECT id::text, recorded_at FROM events e WHERE tenant_id = $1 ORDER BY e.id',
    [tenantId],
  );
  return rows.map((r) => ({ id: BigInt(r.id), at: r.recorded_at.getTime() }));
}

/** A gate a wrapped foldNext waits at, for one tenant, from its n-th call on. */
function gated(real: ProjectionService, tenantId: string, fromCall: number) {
  let calls = 0;
  let open!: () => void;
  const opened = new Promise<void>((resolve) => {
    open = resolve;
  });
  let waiting = false;
  const projections: ProjectionService = {
    ...real,
    foldNext: async (id) => {
      if (id === tenantId && ++calls >= fromCall) {
        waiting = true;
        await opened;
      }
      return real.foldNext(id);
    },
  };
  return { projections, open: () => open(), waiting: () => waiting };
}

async function until(what: string, check: () => boolean | Promise<boolean>): Promise<void> {
  const deadline = Date.now() + 30_000;
  while (!(await check())) {
    if (Date.now() > deadline) throw new Error(`timed out waiting for ${what}`);
    await sleep(20);
  }
}

test('issue 33 projector lag: a tenant part-way through a backlog lags by the age of its oldest unfolded event; 0 once folded; every folded event reports its delay once', async () => {
  const backlog = await createTenant(db.pools.app);
  const quiet = await createTenant(db.pools.app);
  const random = seeded(41);
  await randomTraffic(db.app, backlog, 40, random);
  await randomTraffic(db.app, quiet, 3, random);
  const events = await appended(backlog);
  const quietEvents = await appended(quiet);
  assert.ok(events.length > 12, 'the backlog is several batches of 5');
  // A fixed clock 100 s after the last append: every lag and delay is exact.
  const clock = Math.max(...[...events, ...quietEvents].map((e) => e.at)) + 100_000;
  const batch = 5;
  const gate = gated(createProjectionService({ db: db.app, system, batchSize: batch }), backlog, 2);
  const delays: number[][] = [];
  const p = createProjector({
    projections: gate.projections,
    events: deaf,
    logger,
    sweepMs: 3_600_000,
    concurrency: 2,
    metrics: { projectionFolded: (d) => delays.push([...d]) },
    now: () => clock,
  });
  await p.start();
  try {
    await until('the second batch of the backlog', () => gate.waiting());
    await until('the quiet tenant folded', () => p.status().running === 1);
    const lag = p.lag();
    const sixth = events[batch] as { at: number };
    assert.equal(lag.behind, 1, 'only the backlog tenant is behind');
    assert.deepEqual(lag.tenants, [{ tenantId: backlog, seconds: (clock - sixth.at) / 1000 }]);
    assert.equal(lag.maxSeconds, (clock - sixth.at) / 1000);
    gate.open();
    await p.idle();
    assert.deepEqual(p.lag(), { behind: 0, maxSeconds: 0, tenants: [] });
  } finally {
    gate.open();
    await p.stop();
  }
  const expected = [...events, ...quietEvents].map((e) => (clock - e.at) / 1000).sort();
  assert.deepEqual(delays.flat().sort(), expected, 'one delay per folded event, append → fold');
});

test('issue 33 projector lag: the sweep learns a tenant is behind (notice lost) and reports the age of its first unfolded event', async () => {
  const tenant = await createTenant(db.pools.app);
  const random = seeded(42);
  await randomTraffic(db.app, tenant, 4, random);
  const real = createProjectionService({ db: db.app, system, batchSize: 1_000 });
  // Discovery folds the first events; the fold after the sweep finds new ones waits at the gate.
  const gate = gated(real, tenant, 2);
  let clock = Date.now();
  const p = createProjector({
    projections: gate.projections,
    events: deaf,
    logger,
    sweepMs: 50,
    concurrency: 1,
    now: () => clock,
  });
  await p.start();
  try {
    await p.idle();
    assert.equal(p.lag().behind, 0);
    const before = (await appended(tenant)).length;
    await randomTraffic(db.app, tenant, 3, random);
    const first = (await appended(tenant))[before] as { at: number };
    clock = first.at + 42_000;
    await until('the sweep found the tenant', () => gate.waiting());
    assert.deepEqual(p.lag().tenants, [{ tenantId: tenant, seconds: 42 }]);
    gate.open();
    await until('the tenant caught up', async () => (await real.behindOf([tenant])).length === 0);
    await until('its lag cleared', () => p.lag().behind === 0);
  } finally {
    gate.open();
    await p.stop();
  }
});

test("issue 33 lagOf answers per tenant: when each one's oldest unfolded event was appended, none for a caught-up tenant", async () => {
  const [a, b] = [await createTenant(db.pools.app), await createTenant(db.pools.app)];
  const random = seeded(43);
  await randomTraffic(db.app, a, 6, random);
  await randomTraffic(db.app, b, 6, random);
  const projections = createProjectionService({ db: db.app, system, batchSize: 4 });
  await projections.foldNext(a);
  for (;;) {
    const outcome = await projections.foldNext(b);
    if (outcome.kind === 'folded' && outcome.caughtUp) break;
  }
  const eventsA = await appended(a);
  const lag = await projections.lagOf([a, b]);
  assert.deepEqual([...lag.keys()], [a]);
  assert.equal(lag.get(a)?.getTime(), (eventsA[4] as { at: number }).at, 'the 5th event is next');
});
