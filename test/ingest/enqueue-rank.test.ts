import assert from 'node:assert/strict';
import { after, before, test } from 'node:test';
import pg from 'pg';
import { enqueueJobs } from '../../src/domains/jobs/job-repository.ts';
import type { JobSpec } from '../../src/domains/jobs/job-types.ts';
import { createTestDatabase, type TestDatabase } from '../support/database.ts';
import { createTenant } from '../support/fixtures.ts';

// Issue 33: the job queue's fairness rank on the ingest path. A batch's enqueue counts each
// tenant's waiting jobs once (it counted them once per job: a batch opening k investigations
// for a tenant with W waiting jobs read k×W index entries, docs/benchmarks.md "Ingest at fleet
// size"), and the count stops at the priority's ceiling. The priorities are the same as before.

let db: TestDatabase;
let superuser: pg.Client;
before(async () => {
  db = await createTestDatabase();
  superuser = new pg.Client(db.superuser);
  await superuser.connect();
});
after(async () => {
  await superuser.end();
  await db.drop();
});

const later = () => new Date(Date.now() + 3_600_000);

function jobs(tenantId: string, tags: string[]): JobSpec[] {
  return tags.map((tag) => ({ tenantId, jobType: 'probe', input: { tag }, runAt: later() }));
}

/** Each queued job's priority by its input tag. */
async function priorities(): Promise<Map<string, number>> {
  const { rows } = await superuser.query<{ tag: string; priority: number }>(
    `SELECT payload->'input'->>'tag' AS tag, priority FROM graphile_worker._private_jobs`,
  );
  return new Map(rows.map((r) => [r.tag, r.priority]));
}

test('issue 33 enqueue rank: each job ranks after its own tenant’s waiting jobs (taken and failed-for-good ones not counted), in list order, several tenants in one list', async () => {
  const a = await createTenant(db.pools.app);
  const b = await createTenant(db.pools.app);
  await db.app.withTenant(a, (tx) =>
    enqueueJobs(tx, jobs(a, ['a-w1', 'a-w2', 'a-taken', 'a-dead'])),
  );
  // One of A's jobs is running (locked), one has used its attempts: neither is waiting.
  await superuser.query(
    `UPDATE graphile_worker._private_jobs SET locked_at = now(), locked_by = 'test'
      WHERE payload->'input'->>'tag' = 'a-taken'`,
  );
  await superuser.query(
    `UPDATE graphile_worker._private_jobs SET attempts = max_attempts
      WHERE payload->'input'->>'tag' = 'a-dead'`,
  );
  await db.app.withTenant(a, (tx) =>
    enqueueJobs(tx, [
      ...jobs(a, ['a1']),
      ...jobs(b, ['b1']),
      ...jobs(a, ['a2', 'a3']),
      ...jobs(b, ['b2']),
    ]),
  );
  const p = await priorities();
  assert.deepEqual(
    ['a-w1', 'a-w2', 'a1', 'a2', 'a3', 'b1', 'b2'].map((tag) => [tag, p.get(tag)]),
    [
      ['a-w1', 0],
      ['a-w2', 1],
      ['a1', 2],
      ['a2', 3],
      ['a3', 4],
      ['b1', 0],
      ['b2', 1],
    ],
  );
});

test('issue 33 enqueue rank: past 32,767 waiting jobs a tenant’s next ones take the last priority (a smallint), not an error', async () => {
  const flood = await createTenant(db.pools.app);
  // The queue a long flood leaves, added without a rank (priority 0).
  await superuser.query(
    `SELECT graphile_worker.add_jobs(ARRAY(
       SELECT ('probe', json_build_object('tenant_id', $1::text, 'input', json_build_object('tag', 'w' || i)),
               NULL, now() + interval '1 hour', NULL, NULL, 0, NULL)::graphile_worker.job_spec
         FROM generate_series(1, 32_770) AS i), true)`,
    [flood],
  );
  await db.app.withTenant(flood, (tx) => enqueueJobs(tx, jobs(flood, ['next', 'after'])));
  const p = await priorities();
  assert.equal(p.get('next'), 32_767);
  assert.equal(p.get('after'), 32_767);
});

/** Scans of the queue's job table this transaction has made so far (any access method). */
async function scansOfJobs(tx: pg.PoolClient): Promise<number> {
  const { rows } = await tx.query<{ n: string }>(
    `SELECT (coalesce(seq_scan, 0) + coalesce(idx_scan, 0))::text AS n
       FROM pg_stat_xact_all_tables
      WHERE schemaname = 'graphile_worker' AND relname = '_private_jobs'`,
  );
  return Number(rows[0]?.n ?? 0);
}

test('issue 33 enqueue rank: a batch reads its tenant’s waiting jobs once, however many jobs it enqueues', async () => {
  const tenant = await createTenant(db.pools.app);
  await db.app.withTenant(tenant, (tx) =>
    enqueueJobs(
      tx,
      jobs(
        tenant,
        Array.from({ length: 200 }, (_, i) => `w${i}`),
      ),
    ),
  );
  const scans = (count: number) =>
    db.app.withTenant(tenant, async (tx) => {
      const before = await scansOfJobs(tx);
      await enqueueJobs(
        tx,
        jobs(
          tenant,
          Array.from({ length: count }, (_, i) => `n${count}-${i}`),
        ),
      );
      return (await scansOfJobs(tx)) - before;
    });
  const one = await scans(1);
  const fifty = await scans(50);
  assert.ok(one >= 1, 'the waiting jobs were read');
  assert.equal(fifty, one, `50 jobs scanned the queue ${fifty} times, 1 job ${one}`);
});
