import { performance } from 'node:perf_hooks';
import type { AppDatabase } from '../../src/db/pools.ts';
import type { TenantTx } from '../../src/db/tenant-context.ts';
import { enqueueJobs } from '../../src/domains/jobs/job-repository.ts';
import type { JobSpec } from '../../src/domains/jobs/job-types.ts';
import { percentile } from '../harness.ts';

/** Timed calls per cell; the median is reported. */
const REPEAT = 7;

export interface EnqueueCell {
  waiting: number;
  jobs: number;
  /** enqueueJobs as svc runs it (rank among the tenant's waiting jobs), ms, median. */
  ranked: number;
  /** The same jobs through graphile-worker's add_jobs with no rank (priority 0), ms, median. */
  plain: number;
}

function specs(tenantId: string, count: number, tag: string): JobSpec[] {
  const runAt = new Date(Date.now() + 3_600_000);
  return Array.from({ length: count }, (_, i) => ({
    tenantId,
    jobType: 'triage',
    input: { investigation_id: `${tag}-${i}` },
    runAt,
  }));
}

/** graphile-worker's own add_jobs for the same list, nothing computed per job: the baseline. */
async function addPlain(tx: TenantTx, jobs: JobSpec[]): Promise<void> {
  await tx.query(
    `SELECT 1 FROM graphile_worker.add_jobs(
       ARRAY(SELECT ('triage', json_build_object('tenant_id', $1::text, 'input', j), NULL,
                     $2::timestamptz, NULL, NULL, 0, NULL)::graphile_worker.job_spec
               FROM json_array_elements($3::json) AS j), true)`,
    [jobs[0]?.tenantId, jobs[0]?.runAt?.toISOString(), JSON.stringify(jobs.map((j) => j.input))],
  );
}

/** One call inside a transaction that is rolled back, so the queue stays as it was. */
async function timed(
  db: AppDatabase,
  tenantId: string,
  call: (tx: TenantTx) => Promise<void>,
): Promise<number> {
  const client = await db.pool.connect();
  try {
    await client.query('BEGIN');
    await client.query("SELECT set_config('app.current_tenant_id', $1, true)", [tenantId]);
    const t0 = performance.now();
    await call(client as TenantTx);
    const ms = performance.now() - t0;
    await client.query('ROLLBACK');
    return ms;
  } finally {
    client.release();
  }
}

/**
 * What the job queue's fairness rank costs on the ingest path: one tenant's batch enqueues
 * `jobs` triage jobs (a batch opening that many investigations) while the tenant already has
 * `waiting` jobs queued (scheduled an hour out, so nothing takes them), timed against the same
 * jobs added by graphile-worker's add_jobs without a rank. Run on a quiet machine before the
 * adapters start; every timed call is rolled back.
 */
export async function enqueuePhase(
  db: AppDatabase,
  tenantId: string,
  waitingSteps: number[],
  jobCounts: number[],
): Promise<EnqueueCell[]> {
  const cells: EnqueueCell[] = [];
  let waiting = 0;
  for (const target of waitingSteps) {
    // Filled in committed chunks without a rank: the queue a flood would have left.
    while (waiting < target) {
      const chunk = Math.min(5_000, target - waiting);
      await db.withTenant(tenantId, (tx) => addPlain(tx, specs(tenantId, chunk, `w${waiting}`)));
      waiting += chunk;
    }
    for (const jobs of jobCounts) {
      const ranked: number[] = [];
      const plain: number[] = [];
      for (let r = 0; r < REPEAT; r++) {
        const list = specs(tenantId, jobs, `t${r}`);
        ranked.push(await timed(db, tenantId, (tx) => enqueueJobs(tx, list)));
        plain.push(await timed(db, tenantId, (tx) => addPlain(tx, list)));
      }
      cells.push({ waiting, jobs, ranked: percentile(ranked, 50), plain: percentile(plain, 50) });
    }
  }
  return cells;
}
