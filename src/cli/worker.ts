import { composeWorkers, openCore } from '../app/compose.ts';
import type { Config } from '../config/index.ts';
import type { Logger } from '../log/index.ts';
import { listenMetrics, type MetricsListener } from '../metrics/server.ts';
import { stopSignal } from './stop-signal.ts';

/**
 * `svc worker`: only the job workers (the system chart's worker Deployment). Any number of
 * processes may run: the queue hands each job to one of them, and a process that dies mid-job
 * has its jobs run again by the others within seconds (docs/jobs.md).
 */
export async function runWorker(config: Config, logger: Logger): Promise<void> {
  const core = await openCore(config, logger, {
    poolSize: config.worker.concurrency + 2,
    processMetrics: true,
  });
  const stopRequested = stopSignal();
  let metrics: MetricsListener | undefined;
  try {
    metrics = await listenMetrics({ ...config.metrics, metrics: core.metrics, logger });
    const workers = await composeWorkers(core);
    logger.info({ concurrency: config.worker.concurrency }, 'worker running');
    const signal = await stopRequested;
    logger.info({ signal }, 'shutting down: finishing running jobs');
    await workers.stop();
  } finally {
    await metrics?.close();
    await core.close();
  }
}
