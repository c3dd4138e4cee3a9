import { readFileSync } from 'node:fs';
import type { KubeConfig } from '@kubernetes/client-node';
import { createHelmRunner } from '../cluster/helm.ts';
import { createNamespaceStore } from '../cluster/namespaces.ts';
import type { SecretStore } from '../cluster/secrets.ts';
import type { Config } from '../config/index.ts';
import type { AppDatabase } from '../db/pools.ts';
import type { SystemGate } from '../db/system-gate.ts';
import type { DatabaseTarget } from '../db/target.ts';
import { afterCommit } from '../db/unit-of-work.ts';
import type { TenancyDeps } from '../http/app.ts';
import type { Logger } from '../log/index.ts';
import type { TokenService } from '../tokens/index.ts';
import { BUNDLED_CHARTS_DIR, loadChartCatalog } from './catalog.ts';
import { DEFAULT_TIMING, type OrchestratorDeps } from './context.ts';
import { ensureInstall } from './install.ts';
import { createOrchestrator, createTenantLocks, type Orchestrator } from './orchestrator.ts';
import { valuesPreview } from './values-preview.ts';

/** svc's own version: the `system_version` side of the compatibility matrix (spec §2.10). */
export const SYSTEM_VERSION: string = JSON.parse(
  readFileSync(new URL('../../package.json', import.meta.url), 'utf8'),
).version;

export interface TenancyRuntime {
  orchestrator: Orchestrator;
  /** What the HTTP layer needs. */
  api: TenancyDeps;
  deps: OrchestratorDeps;
  stop(): Promise<void>;
}

/** Wires the orchestrator from configuration; `svc serve` and `svc orchestrator` share it. */
export async function startTenancy(input: {
  config: Config;
  target: DatabaseTarget;
  db: AppDatabase;
  system: SystemGate;
  tokens: TokenService;
  kubeConfig: KubeConfig;
  secrets: SecretStore;
  logger: Logger;
  now: () => Date;
  kubeconfigPath?: string | undefined;
  /** Start the loop (false: the caller drives runOnce, as tests do). */
  run?: boolean;
}): Promise<TenancyRuntime> {
  const { config } = input;
  const o = config.orchestrator;
  const install = await ensureInstall(input.target, config.install);
  const catalog = await loadChartCatalog(o.chartsDir ?? BUNDLED_CHARTS_DIR);
  const deps: OrchestratorDeps = {
    db: input.db,
    system: input.system,
    secrets: input.secrets,
    namespaces: createNamespaceStore(input.kubeConfig),
    helm: createHelmRunner({
      binary: o.helmBinary,
      ...(input.kubeconfigPath ? { kubeconfigPath: input.kubeconfigPath } : {}),
    }),
    kubeConfig: input.kubeConfig,
    catalog,
    tokens: input.tokens,
    install: {
      msspId: install.msspId,
      installId: install.installId,
      namespace: config.installNamespace,
      serviceAccount: config.serviceAccount,
    },
    settings: {
      adapterImage: o.adapterImage,
      apiUrl: o.apiUrl ?? `http://svc-api.${config.installNamespace}.svc:8080`,
      storageClassName: o.storageClassName,
      defaultLlm: o.defaultLlm,
    },
    systemVersion: SYSTEM_VERSION,
    installVersion: o.installVersion,
    edgePortBase: o.edgePortBase,
    timing: {
      ...DEFAULT_TIMING,
      pollMs: o.pollMs,
      readinessTimeoutMs: o.readinessTimeoutMs,
      decommissionGraceMs: o.decommissionGraceMs,
      retentionMs: o.retentionMs,
      helmTimeoutMs: o.helmTimeoutMs,
      reconcileMs: o.reconcileMs,
    },
    logger: input.logger,
    now: input.now,
  };
  const locks = createTenantLocks(input.target, o.concurrency + 2);
  const orchestrator = createOrchestrator({ ...deps, locks, concurrency: o.concurrency });
  if (input.run ?? o.enabled) orchestrator.start();
  return {
    orchestrator,
    deps,
    api: {
      // A request's writes commit when it ends (one unit of work): wake the orchestrator after.
      kick: () => afterCommit(() => orchestrator.kick()),
      systemVersion: SYSTEM_VERSION,
      edgePortBase: o.edgePortBase,
      decommissionGraceMs: o.decommissionGraceMs,
      catalog,
      previewValues: valuesPreview(deps),
    },
    async stop() {
      await orchestrator.stop();
      await locks.close();
    },
  };
}
