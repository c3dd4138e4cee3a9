import type { KubeConfig } from '@kubernetes/client-node';
import { svcVersion } from '../assets/index.ts';
import { createHelmRunner } from '../cluster/helm.ts';
import { countedKubeConfig } from '../cluster/kube-requests.ts';
import { createNamespaceStore } from '../cluster/namespaces.ts';
import type { SecretStore } from '../cluster/secrets.ts';
import { sharedConnections } from '../cluster/shared-connections.ts';
import type { Config } from '../config/index.ts';
import type { ProvisioningService } from '../domains/provisioning/provisioning-service.ts';
import type { Logger } from '../log/index.ts';
import { type Metrics, NO_METRICS } from '../metrics/metrics.ts';
import type { TokenService } from '../tokens/index.ts';
import type { ChartCatalog } from './catalog.ts';
import {
  DEFAULT_TIMING,
  type OrchestratorDeps,
  type OrchestratorTiming,
  type TenancyDeps,
} from './context.ts';
import type { InstallRecord } from './install.ts';
import type { Orchestrator } from './orchestrator.ts';

/** svc's own version: the `system_version` side of the compatibility matrix (spec §2.10). */
export const SYSTEM_VERSION: string = svcVersion();

/** What the orchestrator is built from: configuration, the install record and live parts. */
export interface OrchestratorParts {
  config: Pick<Config, 'installNamespace' | 'serviceAccount' | 'orchestrator'>;
  install: Pick<InstallRecord, 'msspId' | 'installId'>;
  catalog: ChartCatalog;
  provisioning: ProvisioningService;
  tokens: TokenService;
  kubeConfig: KubeConfig;
  secrets: SecretStore;
  logger: Logger;
  now: () => Date;
  /** Provisioning step durations and outcomes; default none recorded. */
  metrics?: Pick<Metrics, 'provisioningStep' | 'kubeRequest'> | undefined;
  /** The identity helm acts as; default helm's own (in-cluster or $KUBECONFIG). */
  kubeconfigPath?: string | undefined;
  /** Timings the configuration does not expose (tests shorten them all). */
  timing?: Partial<OrchestratorTiming> | undefined;
}

/** The one place OrchestratorDeps is assembled (serve, orchestrator, tests, bench). */
export function orchestratorDeps(parts: OrchestratorParts): OrchestratorDeps {
  const { config } = parts;
  const o = config.orchestrator;
  const metrics = parts.metrics ?? NO_METRICS;
  // Every request of the orchestrator's own clients counted (svc_kube_requests_total),
  // and all of them on one keep-alive connection pool (src/cluster/shared-connections.ts).
  const kubeConfig = countedKubeConfig(sharedConnections(parts.kubeConfig), metrics.kubeRequest);
  return {
    provisioning: parts.provisioning,
    secrets: parts.secrets,
    namespaces: createNamespaceStore(kubeConfig),
    helm: createHelmRunner({
      binary: o.helmBinary,
      ...(parts.kubeconfigPath ? { kubeconfigPath: parts.kubeconfigPath } : {}),
    }),
    kubeConfig,
    catalog: parts.catalog,
    tokens: parts.tokens,
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
      scheduling: o.tenantScheduling,
      defaultLlm: o.defaultLlm,
    },
    systemVersion: SYSTEM_VERSION,
    installVersion: o.installVersion,
    edgePortBase: o.edgePortBase,
    edgeProxy: { enabled: o.edgeProxy, clusterDomain: o.clusterDomain },
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
    metrics,
  };
}

export interface TenancyRuntime {
  orchestrator: Orchestrator;
  /** What the HTTP layer needs. */
  api: TenancyDeps;
  deps: OrchestratorDeps;
  stop(): Promise<void>;
}
