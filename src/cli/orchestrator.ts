import { createSecretStore, loadKubeConfig } from '../cluster/secrets.ts';
import { type Config, ConfigError } from '../config/index.ts';
import { migrate } from '../db/migrate.ts';
import { createAppDatabase } from '../db/pools.ts';
import { openDatabase } from '../db/runtime.ts';
import { createSystemGate } from '../db/system-gate.ts';
import { clientConfig } from '../db/target.ts';
import type { Logger } from '../log/index.ts';
import { startTenancy } from '../orchestrator/runtime.ts';
import { createTokenService } from '../tokens/index.ts';
import { signingKey } from './serve.ts';

/**
 * `svc orchestrator`: the tenant lifecycle loop without HTTP, for installs that run it as its
 * own Deployment (the system chart's orchestrator) next to `svc serve` with SVC_ORCHESTRATOR=off.
 * Replicas coordinate through per-tenant advisory locks.
 */
export async function runOrchestrator(config: Config, logger: Logger): Promise<void> {
  const kubeConfig = loadKubeConfig();
  if (!kubeConfig)
    throw new ConfigError(
      'KUBECONFIG: the orchestrator needs cluster access (in-cluster or KUBECONFIG)',
    );
  const runtime = await openDatabase(config, logger);
  await migrate(clientConfig(runtime.target, 'admin'));
  const db = createAppDatabase(runtime.target);
  const system = createSystemGate(runtime.target);
  const now = () => new Date();
  const tokens = createTokenService({ key: await signingKey(config), now });
  const tenancy = await startTenancy({
    config,
    target: runtime.target,
    db,
    system,
    tokens,
    kubeConfig,
    secrets: createSecretStore(kubeConfig, config.installNamespace),
    logger,
    now,
    run: true,
  });
  logger.info({ install_namespace: config.installNamespace }, 'orchestrator running');
  await new Promise<void>((resolve) => {
    const shutdown = (signal: string) => {
      logger.info({ signal }, 'shutting down');
      resolve();
    };
    process.once('SIGINT', shutdown);
    process.once('SIGTERM', shutdown);
  });
  await tenancy.stop();
  await Promise.all([db.close(), system.close()]);
  await runtime.stop();
}
