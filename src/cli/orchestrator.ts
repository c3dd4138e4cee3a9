import { composeTenancy, openCore } from '../app/compose.ts';
import { loadKubeConfig } from '../cluster/secrets.ts';
import { type Config, ConfigError } from '../config/index.ts';
import type { Logger } from '../log/index.ts';
import { listenMetrics, type MetricsListener } from '../metrics/server.ts';
import { stopSignal } from './stop-signal.ts';

/**
 * `svc orchestrator`: the tenant lifecycle loop without HTTP, for installs that run it as its
 * own Deployment (the system chart's orchestrator) next to `svc serve` with SVC_ORCHESTRATOR=off.
 * Replicas coordinate through per-tenant advisory locks.
 */
export async function runOrchestrator(config: Config, logger: Logger): Promise<void> {
  const missing = new ConfigError(
    'KUBECONFIG: the orchestrator needs cluster access (in-cluster or KUBECONFIG)',
  );
  // Refused before the database is opened: a misconfigured orchestrator starts nothing.
  if (!loadKubeConfig()) throw missing;
  const core = await openCore(config, logger, { processMetrics: true });
  const stopRequested = stopSignal();
  let metrics: MetricsListener | undefined;
  try {
    metrics = await listenMetrics({ ...config.metrics, metrics: core.metrics, logger });
    const cluster = await composeTenancy(core, { run: true });
    if (!cluster) throw missing;
    logger.info({ install_namespace: config.installNamespace }, 'orchestrator running');
    logger.info({ signal: await stopRequested }, 'shutting down');
    await cluster.tenancy.stop();
  } finally {
    await metrics?.close();
    await core.close();
  }
}
