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
import { issueBootstrapCredential } from '../domains/adapter/adapter-service.ts';
import type { Logger } from '../log/index.ts';
import type { TokenService } from '../tokens/index.ts';
import { BUNDLED_CHARTS_DIR, type ChartCatalog, loadChartCatalog } from './catalog.ts';
import {
  DEFAULT_TIMING,
  type OrchestratorDeps,
  type OrchestratorTiming,
  type TenancyDeps,
} from './context.ts';
import { ensureInstall, type InstallRecord } from './install.ts';
import { createOrchestrator, type Orchestrator } from './orchestrator.ts';
import { createTenantLocks } from './tenant-locks.ts';
import { valuesPreview } from './values-preview.ts';

/** svc's own version: the `system_version` side of the compatibility matrix (spec §2.10). */
export const SYSTEM_VERSION: string = JSON.parse(
  readFileSync(new URL('../../package.json', import.meta.url), 'utf8'),
).version;

/** What the orchestrator is built from: configuration, the install record and live parts. */
export interface OrchestratorParts {
  config: Pick<Config, 'installNamespace' | 'serviceAccount' | 'orchestrator'>;
  install: Pick<InstallRecord, 'msspId' | 'installId'>;
  catalog: ChartCatalog;
  db: AppDatabase;
  system: SystemGate;
  tokens: TokenService;
  kubeConfig: KubeConfig;
  secrets: SecretStore;
  logger: Logger;
  now: () => Date;
  /** The identity helm acts as; default helm's own (in-cluster or $KUBECONFIG). */
  kubeconfigPath?: string | undefined;
  /** Timings the configuration does not expose (tests shorten them all). */
  timing?: Partial<OrchestratorTiming> | undefined;
}

/** The one place OrchestratorDeps is assembled (serve, orchestrator, tests, bench). */
export function orchestratorDeps(parts: OrchestratorParts): OrchestratorDeps {
  const { config } = parts;
  const o = config.orchestrator;
  return {
    db: parts.db,
    system: parts.system,
    secrets: parts.secrets,
    namespaces: createNamespaceStore(parts.kubeConfig),
    helm: createHelmRunner({
      binary: o.helmBinary,
      ...(parts.kubeconfigPath ? { kubeconfigPath: parts.kubeconfigPath } : {}),
    }),
    kubeConfig: parts.kubeConfig,
    catalog: parts.catalog,
    tokens: parts.tokens,
    issueBootstrapCredential,
    install: {
      msspId: parts.install.msspId,
      installId: parts.install.installId,
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
      ...parts.timing,
    },
    logger: parts.logger,
    now: parts.now,
  };
}

export interface TenancyRuntime {
  orchestrator: Orchestrator;
  /** What the HTTP layer needs. */
  api: TenancyDeps;
  deps: OrchestratorDeps;
  stop(): Promise<void>;
}

/** Wires the orchestrator from configuration; `svc serve` and `svc orchestrator` share it. */
export async function startTenancy(
  input: Omit<OrchestratorParts, 'install' | 'catalog' | 'timing'> & {
    config: Config;
    target: DatabaseTarget;
    /** Start the loop (false: the caller drives runOnce, as tests do). */
    run?: boolean;
  },
): Promise<TenancyRuntime> {
  const o = input.config.orchestrator;
  const install = await ensureInstall(input.target, input.config.install);
  const catalog = await loadChartCatalog(o.chartsDir ?? BUNDLED_CHARTS_DIR);
  const deps = orchestratorDeps({ ...input, install, catalog });
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
