import { randomUUID } from 'node:crypto';
import type { InstallTx, TenantTx } from '../../db/tenant-context.ts';
import type { JobSpec, QueuedPayload } from './job-types.ts';

/** graphile-worker's priority is a smallint: a rank past it is the same last round. */
const MAX_PRIORITY = 32_767;

/**
 * Adds jobs to the queue inside the caller's tenant transaction: they commit with the state
 * change that asks for them, or not at all (no job for an event that rolled back, no event
 * without its job). One statement for the whole list. Keys keep the pending job's run time
 * (`job_key_preserve_run_at`), so a burst that enqueues the same key runs it once.
 *
 * Fair between tenants: a job's priority is its rank among its tenant's jobs not yet taken
 * (0 for a tenant with none waiting; a job failed for good waits for nothing and does not count), and workers take the lowest priority first, then the
 * oldest. So every tenant's n-th waiting job runs in round n: a tenant that queues a thousand
 * investigations at once does not make the next tenant's first one wait for all of them
 * (docs/jobs.md "Fairness"). The count reads the queue's own table through the
 * `svc_jobs_waiting_by_tenant` index (src/db/job-queue-schema.ts).
 */
export async function enqueueJobs(tx: TenantTx, jobs: readonly JobSpec[]): Promise<void> {
  if (jobs.length === 0) return;
  const specs = jobs.map((job) => {
    const payload: QueuedPayload = {
      tenant_id: job.tenantId,
      job_id: randomUUID(),
      job_type: job.jobType,
      input: job.input,
    };
    return {
      identifier: job.jobType,
      payload,
      run_at: job.runAt?.toISOString() ?? null,
      max_attempts: job.maxAttempts ?? null,
      job_key: job.jobKey ?? null,
    };
  });
  // The waiting count is read once per tenant of the list, not once per job (a batch opening
  // k investigations for a tenant with W waiting jobs read k×W index entries: 98 ms for k 200,
  // W 2,000; docs/benchmarks.md "Ingest at fleet size"), and stops at the priority's ceiling.
  // MATERIALIZED: inlined, the planner evaluated the count once per job again.
  await tx.query(
    `WITH s AS (
       SELECT s.*, s.payload->>'tenant_id' AS tenant,
              row_number() OVER (PARTITION BY s.payload->>'tenant_id' ORDER BY s.ord) - 1 AS n
         FROM ROWS FROM (json_to_recordset($1::json)
                AS (identifier text, payload json, run_at timestamptz, max_attempts int, job_key text))
              WITH ORDINALITY AS s(identifier, payload, run_at, max_attempts, job_key, ord)),
     w AS MATERIALIZED (
       SELECT t.tenant,
              (SELECT count(*) FROM (SELECT 1 FROM graphile_worker._private_jobs j
                                      WHERE j.locked_at IS NULL
                                        AND j.attempts < j.max_attempts
                                        AND j.payload->>'tenant_id' = t.tenant
                                      LIMIT ${MAX_PRIORITY}) AS c) AS waiting
         FROM (SELECT DISTINCT tenant FROM s) AS t)
     SELECT 1 FROM graphile_worker.add_jobs(
       ARRAY(SELECT (s.identifier, s.payload, NULL, s.run_at, s.max_attempts, s.job_key,
                     least(${MAX_PRIORITY}, s.n + w.waiting), NULL)::graphile_worker.job_spec
               FROM s JOIN w ON w.tenant IS NOT DISTINCT FROM s.tenant ORDER BY s.ord),
       true)`,
    [JSON.stringify(specs)],
  );
}

/** A job queue bucket: jobs of one task in one state. */
export interface QueueDepth {
  task: string;
  /** locked: running now; failed: out of attempts; scheduled: waiting for run_at; else ready. */
  state: 'ready' | 'scheduled' | 'locked' | 'failed';
  jobs: number;
}

/**
 * The queue's depth by task and state (graphile-worker's public `jobs` view; the queue is
 * install-scoped). Locked is tested first: a job on its last attempt has used it already.
 */
export async function queueDepth(tx: InstallTx): Promise<QueueDepth[]> {
  const { rows } = await tx.query<QueueDepth>(
    `SELECT task_identifier AS task,
            CASE WHEN locked_at IS NOT NULL THEN 'locked'
                 WHEN attempts >= max_attempts THEN 'failed'
                 WHEN run_at > now() THEN 'scheduled'
                 ELSE 'ready' END AS state,
            count(*)::int AS jobs
       FROM graphile_worker.jobs
      GROUP BY 1, 2`,
  );
  return rows;
}
