import assert from 'node:assert/strict';
import { mkdtemp } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { after, before, test } from 'node:test';
import { setTimeout as sleep } from 'node:timers/promises';
import { type Core, composeCore, composeWorkers } from '../../src/app/compose.ts';
import { loadConfig } from '../../src/config/index.ts';
import { enqueueJobs } from '../../src/domains/jobs/job-repository.ts';
import { createLogger } from '../../src/log/index.ts';
import { createTestDatabase, type TestDatabase } from '../support/database.ts';
import { createTenant } from '../support/fixtures.ts';

let db: TestDatabase;
let core: Core;

before(async () => {
  db = await createTestDatabase();
  const config = { ...loadConfig({}), dataDir: await mkdtemp(path.join(tmpdir(), 'svc-key-')) };
  core = await composeCore({
    config,
    logger: createLogger('silent'),
    target: db.target,
    db: db.app,
  });
});
after(async () => {
  await core.close();
  await db.drop();
});

async function until(done: () => boolean, ms = 30_000): Promise<void> {
  const end = Date.now() + ms;
  while (!done()) {
    if (Date.now() > end) throw new Error('timed out');
    await sleep(20);
  }
}

test('issue 33 queue fairness: a tenant that queues many jobs at once does not make another tenant’s first job wait for them', async () => {
  const flood = await createTenant(db.pools.app);
  const late = await createTenant(db.pools.app);
  const other = await createTenant(db.pools.app);
  // The flood's jobs arrive the ways the product queues them: many in one transaction (an
  // ingest batch) and one per transaction (a burst of API calls).
  await db.app.withTenant(flood, (tx) =>
    enqueueJobs(
      tx,
      Array.from({ length: 12 }, (_, i) => ({ tenantId: flood, jobType: 'probe', input: { i } })),
    ),
  );
  for (let i = 12; i < 20; i++) {
    await db.app.withTenant(flood, (tx) =>
      enqueueJobs(tx, [{ tenantId: flood, jobType: 'probe', input: { i } }]),
    );
  }
  // Two tenants' jobs come after the whole flood was queued.
  await db.app.withTenant(late, (tx) =>
    enqueueJobs(tx, [
      { tenantId: late, jobType: 'probe', input: { i: 0 } },
      { tenantId: late, jobType: 'probe', input: { i: 1 } },
    ]),
  );
  // A job of `other` that failed for good stays in the queue: it must not count as waiting.
  await db.app.withTenant(other, (tx) =>
    enqueueJobs(tx, [{ tenantId: other, jobType: 'probe', input: { i: -1 } }]),
  );
  await db.pools.admin.query(
    `UPDATE graphile_worker._private_jobs SET attempts = max_attempts WHERE payload->>'tenant_id' = $1`,
    [other],
  );
  await db.app.withTenant(other, (tx) =>
    enqueueJobs(tx, [{ tenantId: other, jobType: 'probe', input: { i: 0 } }]),
  );
  const order: string[] = [];
  // One job at a time, started only now: the order is the queue's, not a race between workers.
  const workers = await composeWorkers(core, {
    concurrency: 1,
    pollIntervalMs: 200,
    jobs: {
      probe: async (run) => {
        order.push(
          `${run.tenantId === flood ? 'F' : run.tenantId === late ? 'L' : 'O'}${run.input.i}`,
        );
      },
    },
  });
  try {
    await until(() => order.length === 23);
  } finally {
    await workers.stop();
  }
  // Round 0 is each tenant's first job, round 1 each tenant's second, then the flood alone.
  assert.deepEqual(new Set(order.slice(0, 3)), new Set(['F0', 'L0', 'O0']), order.join(' '));
  assert.deepEqual(new Set(order.slice(3, 5)), new Set(['F1', 'L1']), order.join(' '));
  // Within a tenant the order is kept.
  const floods = order.filter((o) => o.startsWith('F'));
  assert.deepEqual(
    floods,
    Array.from({ length: 20 }, (_, i) => `F${i}`),
    'the flood’s own jobs run in the order they were queued',
  );
});
