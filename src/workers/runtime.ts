import { EventEmitter } from 'node:events';
import type { Runner, Task, WorkerEvents } from 'graphile-worker';
import type pg from 'pg';
import type { JobRefusal } from '../domains/jobs/job-types.ts';
import type { Logger } from '../log/index.ts';
import { type Metrics, NO_METRICS } from '../metrics/metrics.ts';
import type { TokenService } from '../tokens/index.ts';
import { checkJobPayload, type JobPayload } from './index.ts';

/** One run of one job, as its handler sees it: the tenant is the verified token's. */
export interface JobRun {
  tenantId: string;
  jobId: string;
  jobType: string;
  input: Record<string, unknown>;
  /** `worker:<job_id>`, the audit actor of everything this job does (spec §2.6). */
  actorId: string;
  /** 1 on the first run. */
  attempt: number;
  maxAttempts: number;
}

export type JobHandler = (run: JobRun) => Promise<void>;

/**
 * Install-scoped work on a clock (the audit purge): no tenant and no Worker JWT, since it acts
 * for no tenant; it enters the system gate, which records it. graphile-worker's known_crontabs
 * row per task lets exactly one of all worker processes enqueue each occurrence.
 */
export interface Schedule {
  /** The queue's task name, also the cron identifier. */
  task: string;
  /** A five-field cron pattern, evaluated in UTC. */
  match: string;
  /** An occurrence missed less than this long before a worker starts runs at that start. */
  backfillMs: number;
  run: () => Promise<void>;
}

/** The liveness half of src/db/job-queue-liveness.ts, as the runtime uses it. */
export interface Liveness {
  claim(workerId: string): Promise<void>;
  reap(graceMs: number): Promise<string[]>;
  close(): Promise<void>;
}

export interface WorkerRuntimeDeps {
  /** svc_app connections for the queue itself (the handlers use their services' pools). */
  pool: pg.Pool;
  tokens: Pick<TokenService, 'mintWorker' | 'verify'>;
  jobs: Readonly<Record<string, JobHandler>>;
  schedules?: readonly Schedule[];
  refusals: { record(refusal: JobRefusal): Promise<void> };
  liveness: Liveness;
  /** Job durations and outcomes by task (`svc_job_*`); default none recorded. */
  metrics?: Pick<Metrics, 'jobRun' | 'jobFailed'>;
  logger: Logger;
  concurrency: number;
  /** The fallback poll; a new job wakes a worker at once through LISTEN. Default 2 s. */
  pollIntervalMs?: number;
  /** How often dead workers' jobs are looked for. Default 5 s. */
  reapEveryMs?: number;
  /** A job locked less than this long is never taken from its worker. Default 10 s. */
  reapGraceMs?: number;
}

export interface WorkerRuntime {
  /** Resolves once the workers listen for jobs. */
  start(): Promise<void>;
  /** Stops taking jobs and waits for the running ones. */
  stop(): Promise<void>;
}

/** A job's input cannot be run, now or on any retry: refused like a payload without a tenant. */
export class JobInputError extends Error {
  override name = 'JobInputError';
}

/** A verified Worker token's claims did not match the job it came with. */
export class JobTokenMismatchError extends Error {
  override name = 'JobTokenMismatchError';
}

/**
 * The runner half of a dispatch: verifies the job's Worker JWT (signature, expiry, kind) and
 * that its claims name exactly this job, then runs the handler for the token's tenant. Exported
 * for the tests that hand it a forged or mismatched token.
 */
export async function runWithToken(
  tokens: Pick<TokenService, 'verify'>,
  token: string,
  job: JobPayload,
  handler: JobHandler,
  attempt: { attempt: number; maxAttempts: number },
): Promise<void> {
  const claims = await tokens.verify(token, { expect: 'worker' });
  if (
    claims.tenant_id !== job.tenant_id.toLowerCase() ||
    claims.job_id !== job.job_id.toLowerCase() ||
    claims.job_type !== job.job_type
  ) {
    throw new JobTokenMismatchError('the worker token names another tenant, job or job type');
  }
  await handler({
    tenantId: claims.tenant_id,
    jobId: claims.job_id,
    jobType: claims.job_type,
    input: job.input ?? {},
    actorId: `worker:${claims.job_id}`,
    ...attempt,
  });
}

function tenantOf(payload: unknown): string | null {
  const tenant = (payload as { tenant_id?: unknown } | null)?.tenant_id;
  return typeof tenant === 'string' && /^[0-9a-f-]{36}$/i.test(tenant) ? tenant : null;
}

/**
 * Runs jobs from the PostgreSQL queue (graphile-worker): each job is dispatched with a Worker
 * JWT minted for it (spec §5.2, §2.1 principal 2), verified by the runner, and handled for that
 * token's tenant only. A job without a valid tenant, or whose token does not match it, is
 * refused: recorded in the audit log and never run or retried.
 */
export function createWorkerRuntime(deps: WorkerRuntimeDeps): WorkerRuntime {
  const { logger, tokens } = deps;
  let runner: Runner | undefined;
  let reaper: NodeJS.Timeout | undefined;

  const refuse = async (refusal: JobRefusal) => {
    logger.warn({ job: refusal }, 'job refused');
    await deps.refusals.record(refusal);
  };

  const task =
    (jobType: string, handler: JobHandler): Task =>
    async (payload, helpers) => {
      const job = checkJobPayload(payload, jobType);
      if (!job.ok) {
        await refuse({
          jobId: helpers.job.id,
          jobType,
          tenantId: tenantOf(payload),
          reason: job.reason,
        });
        return;
      }
      const { token } = await tokens.mintWorker({
        tenantId: job.payload.tenant_id,
        jobId: job.payload.job_id,
        jobType,
      });
      const attempt = { attempt: helpers.job.attempts, maxAttempts: helpers.job.max_attempts };
      try {
        await runWithToken(tokens, token, job.payload, handler, attempt);
      } catch (error) {
        if (!(error instanceof JobTokenMismatchError || error instanceof JobInputError))
          throw error;
        await refuse({
          jobId: job.payload.job_id,
          jobType,
          tenantId: job.payload.tenant_id,
          reason: error.message,
        });
      }
    };

  return {
    async start() {
      const { Logger: GraphileLogger, parseCronItems, run } = await import('graphile-worker');
      const taskList: Record<string, Task> = {};
      for (const [jobType, handler] of Object.entries(deps.jobs)) {
        taskList[jobType] = task(jobType, handler);
      }
      const schedules = deps.schedules ?? [];
      for (const schedule of schedules) taskList[schedule.task] = () => schedule.run();
      const queueLogger = new GraphileLogger(() => (level, message) => {
        if (level === 'error') logger.error({ queue: true }, message);
        else if (level === 'warning') logger.warn({ queue: true }, message);
        else logger.debug({ queue: true }, message);
      });
      // graphile-worker locks jobs with its worker pool's id, not a worker's: that id is what a
      // dead process leaves in locked_by, so it is what the liveness lock holds. The pool is
      // created inside run(), hence a listener given to run() rather than one on its result.
      const events: WorkerEvents = new EventEmitter();
      timeJobs(events, deps.metrics ?? NO_METRICS);
      events.on('pool:create', ({ workerPool }) => {
        deps.liveness.claim(workerPool.id).catch((error: unknown) => {
          logger.error({ err: error }, 'worker liveness lock failed');
        });
      });
      runner = await run({
        pgPool: deps.pool,
        concurrency: deps.concurrency,
        taskList,
        noHandleSignals: true,
        pollInterval: deps.pollIntervalMs ?? 2000,
        logger: queueLogger,
        events,
        parsedCronItems: parseCronItems(
          schedules.map((schedule) => ({
            task: schedule.task,
            identifier: schedule.task,
            match: schedule.match,
            options: { backfillPeriod: schedule.backfillMs, maxAttempts: 3 },
          })),
        ),
      });
      const reap = () => {
        deps.liveness
          .reap(deps.reapGraceMs ?? 10_000)
          .then((dead) => {
            if (dead.length > 0) logger.warn({ workers: dead }, 'unlocked jobs of dead workers');
          })
          .catch((error: unknown) => logger.error({ err: error }, 'worker reaper failed'));
      };
      reap();
      reaper = setInterval(reap, deps.reapEveryMs ?? 5000);
      reaper.unref();
    },
    async stop() {
      if (reaper) clearInterval(reaper);
      await runner?.stop();
      await deps.liveness.close();
    },
  };
}

/**
 * Each attempt's duration by task from the queue's own events, so no handler knows about
 * metrics. graphile-worker emits `job:failed` after `job:error` for a last attempt.
 */
function timeJobs(events: WorkerEvents, metrics: Pick<Metrics, 'jobRun' | 'jobFailed'>): void {
  const started = new Map<string, number>();
  const finish = (job: { id: string; task_identifier: string }, outcome: 'success' | 'error') => {
    const at = started.get(job.id);
    started.delete(job.id);
    if (at !== undefined)
      metrics.jobRun(job.task_identifier, outcome, (performance.now() - at) / 1000);
  };
  events.on('job:start', ({ job }) => started.set(job.id, performance.now()));
  events.on('job:success', ({ job }) => finish(job, 'success'));
  events.on('job:error', ({ job }) => finish(job, 'error'));
  events.on('job:failed', ({ job }) => metrics.jobFailed(job.task_identifier));
}
