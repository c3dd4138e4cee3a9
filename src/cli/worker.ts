import { composeWorkers, openCore, type Workers } from '../app/compose.ts';
import { type Config, ConfigError } from '../config/index.ts';
import { startHealthServer } from '../http/health-server.ts';
import type { Logger } from '../log/index.ts';
import { listenMetrics, type MetricsListener } from '../metrics/server.ts';
import { stopSignal } from './stop-signal.ts';

/**
 * `svc worker`: only the job workers (the system chart's worker Deployment), with `/healthz`
 * and `/readyz` for its probes on SVC_HOST:SVC_PORT. Any number of
 * processes may run: the queue hands each job to one of them, and a process that dies mid-job
 * has its jobs run again by the others within seconds (docs/jobs.md).
 */
export async function runWorker(config: Config, logger: Logger): Promise<void> {
  const core = await openCore(config, logger, {
    poolSize: config.database.poolMax ?? config.worker.concurrency + 2,
    processMetrics: true,
  });
  const stopRequested = stopSignal();
  let metrics: MetricsListener | undefined;
  try {
    metrics = await listenMetrics({ ...config.metrics, metrics: core.metrics, logger });
    let workers: Workers | undefined;
    let stopping = false;
    // The kubelet's probes (system chart, worker.yaml). Ready: taking jobs, database answering.
    // Alive: the liveness lock's connection holds (without it other workers may take this
    // process's running jobs, and only a restart gets a new one). Nothing else is served on this
    // port. Listening first, so a taken port stops the process before it takes a job.
    const health = await startHealthServer({
      host: config.host,
      port: config.port,
      readiness: async () => {
        const database = await core.db.ping();
        const running = workers !== undefined;
        return {
          ready: running && database && !stopping,
          details: { database: database ? 'reachable' : 'unreachable', running, stopping },
        };
      },
      liveness: () => {
        const held = workers?.healthy() ?? true;
        return { ready: held, details: held ? {} : { liveness_lock: 'lost' } };
      },
    }).catch((error: NodeJS.ErrnoException) => {
      if (error.code !== 'EADDRINUSE') throw error;
      throw new ConfigError(
        `SVC_PORT ${config.port} is taken on ${config.host}: svc worker serves its probes there; give it a port of its own`,
      );
    });
    try {
      workers = await composeWorkers(core);
      logger.info({ concurrency: config.worker.concurrency, port: health.port }, 'worker running');
      const signal = await stopRequested;
      stopping = true;
      logger.info({ signal }, 'shutting down: finishing running jobs');
      await workers.stop();
    } finally {
      await health.close();
    }
  } finally {
    await metrics?.close();
    await core.close();
  }
}
