import pg from 'pg';
import { JOB_QUEUE_SCHEMA } from './job-queue-schema.ts';

/** Advisory-lock class of worker liveness locks (other classes: sql/ and src/db). */
const LIVENESS_LOCK = 727_020;

/**
 * A job taken by a worker that died (SIGKILL, lost node) stays locked for four hours in
 * graphile-worker. svc shortens that to seconds: every worker pool of a process holds a session
 * advisory lock named after the pool's id (the `locked_by` of its jobs) on one connection, which
 * PostgreSQL releases the moment the process's connection drops. `reap` finds jobs whose locker's
 * lock is free (its process is gone) and unlocks them, so another worker runs them again
 * (docs/jobs.md).
 */
export interface WorkerLiveness {
  /** Marks a worker pool of this process alive until close(); `workerId` is its locked_by. */
  claim(workerId: string): Promise<void>;
  /** Unlocks the jobs of dead workers locked at least `graceMs` ago; returns those workers. */
  reap(graceMs: number): Promise<string[]>;
  /**
   * True once its connection ended or failed while open (a database restart, a terminated
   * backend): the locks that say "alive" are gone with it, so other workers may take this
   * process's running jobs. The worker's liveness probe reports it and the kubelet restarts it.
   */
  lost(): boolean;
  close(): Promise<void>;
}

export async function openWorkerLiveness(config: pg.ClientConfig): Promise<WorkerLiveness> {
  const client = new pg.Client({ ...config, application_name: 'svc-worker-liveness' });
  let closing = false;
  let lost = false;
  client.on('error', () => {
    lost = !closing;
  });
  client.on('end', () => {
    lost = !closing;
  });
  await client.connect();
  const mine = new Set<string>();
  // One statement at a time on the liveness connection (pg queues them anyway, but claim and
  // reap interleaving would make the try-lock below see our own locks).
  let queue: Promise<unknown> = Promise.resolve();
  const serial = <T>(fn: () => Promise<T>): Promise<T> => {
    const next = queue.then(fn, fn);
    queue = next.catch(() => undefined);
    return next;
  };
  return {
    claim: (workerId) =>
      serial(async () => {
        await client.query('SELECT pg_advisory_lock($1, hashtext($2))', [LIVENESS_LOCK, workerId]);
        mine.add(workerId);
      }),
    reap: (graceMs) =>
      serial(async () => {
        const { rows } = await client.query<{ locked_by: string }>(
          `SELECT DISTINCT locked_by FROM ${JOB_QUEUE_SCHEMA}._private_jobs
            WHERE locked_by IS NOT NULL AND locked_at < now() - make_interval(secs => $1)`,
          [graceMs / 1000],
        );
        const dead: string[] = [];
        for (const { locked_by: worker } of rows) {
          if (mine.has(worker)) continue;
          const { rows: got } = await client.query<{ free: boolean }>(
            'SELECT pg_try_advisory_lock($1, hashtext($2)) AS free',
            [LIVENESS_LOCK, worker],
          );
          if (!got[0]?.free) continue;
          await client.query('SELECT pg_advisory_unlock($1, hashtext($2))', [
            LIVENESS_LOCK,
            worker,
          ]);
          dead.push(worker);
        }
        if (dead.length > 0)
          await client.query(`SELECT ${JOB_QUEUE_SCHEMA}.force_unlock_workers($1::text[])`, [dead]);
        return dead;
      }),
    lost: () => lost,
    close: () =>
      serial(() => {
        closing = true;
        return client.end();
      }),
  };
}
