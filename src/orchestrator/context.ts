import type { KubeConfig } from '@kubernetes/client-node';
import type { HelmRunner } from '../cluster/helm.ts';
import type { NamespaceStore } from '../cluster/namespaces.ts';
import type { SecretStore } from '../cluster/secrets.ts';
import type { EnrollmentCluster } from '../domains/enrollment/enrollment-types.ts';
import type { ProvisioningService } from '../domains/provisioning/provisioning-service.ts';
import type { ValuesPreview } from '../domains/tenants/tenant-config.ts';
import type { Logger } from '../log/index.ts';
import type { Metrics } from '../metrics/metrics.ts';
import type { TokenService } from '../tokens/index.ts';
import type { ChartCatalog } from './catalog.ts';
import type { InstallFacts, RenderSettings } from './render.ts';

/** Timings of the lifecycle; every one is configurable (README, docs/orchestrator.md). */
export interface OrchestratorTiming {
  /** Spec §8 readiness wait: 15 min for the pilot-prod size. */
  readinessTimeoutMs: number;
  /** Time between `decommissioning` and the uninstall (spec §3.1 "grace period"). */
  decommissionGraceMs: number;
  /** Time a soft-deleted tenant's rows are kept before the hard delete. */
  retentionMs: number;
  /** How often the orchestrator looks for work it was not told about (other replicas, timers). */
  pollMs: number;
  /** How often readiness is re-read while waiting. */
  readinessPollMs: number;
  /** Spec §8: the adapter JWT is refreshed weekly. */
  adapterTokenRefreshMs: number;
  /** How long a helm install/upgrade/uninstall may take before it is treated as failed. */
  helmTimeoutMs: number;
  /** How long namespace deletion may take. */
  namespaceDeleteMs: number;
  /** How often the reconciler compares every tenant with the cluster (SVC_RECONCILE_INTERVAL). */
  reconcileMs: number;
}

/** The narrow parts the orchestrator works with; tests pass the real ones in directly. */
export interface OrchestratorDeps {
  /** Every state transition and record of the tenant (domains/provisioning): no SQL here. */
  provisioning: ProvisioningService;
  /** Secrets in the install namespace. */
  secrets: SecretStore;
  namespaces: NamespaceStore;
  helm: HelmRunner;
  kubeConfig: KubeConfig;
  catalog: ChartCatalog;
  tokens: TokenService;
  install: InstallFacts;
  settings: RenderSettings;
  /**
   * The tenant package version new tenants get (SVC_TENANT_CHART_VERSION); by default the
   * newest catalog version the matrix marks supported for this svc.
   */
  installVersion?: string | undefined;
  /** This svc's own version, the `system_version` of the compatibility matrix. */
  systemVersion: string;
  /** First port of the edge-proxy range; pair k is base+2k, base+2k+1. */
  edgePortBase: number;
  /** The edge proxy in the install namespace (SVC_EDGE_PROXY, SVC_CLUSTER_DOMAIN). */
  edgeProxy: EdgeProxySettings;
  timing: OrchestratorTiming;
  logger: Logger;
  now: () => Date;
  /** Step durations and outcomes (`svc_provisioning_step_duration_seconds`). */
  metrics: Pick<Metrics, 'provisioningStep'>;
}

export interface EdgeProxySettings {
  /** Off: svc writes nothing for the proxy (the chart's `edgeProxy.enabled=false`). */
  enabled: boolean;
  /** The cluster's DNS domain, for the monitor Services' names. */
  clusterDomain: string;
}

/** What the HTTP layer needs from the orchestrator (spec §3.1: creation, upgrade, decommission). */
export interface TenancyDeps {
  /** Wake the orchestrator: new work was just recorded. */
  kick(): void;
  systemVersion: string;
  edgePortBase: number;
  decommissionGraceMs: number;
  catalog: ChartCatalog;
  /** Renders a new tenant's package values as the orchestrator will (creation validates them). */
  previewValues?: ValuesPreview | undefined;
  /** Agent enrollment's cluster side (enrollment-cluster.ts): manager address, CA, password, restart. */
  enrollment?: EnrollmentCluster | undefined;
}

export { ORCHESTRATOR_ACTOR } from '../domains/provisioning/provisioning-types.ts';

/**
 * The system chart's ClusterRole holding svc's rights inside one tenant namespace
 * (charts/svc-system/templates/rbac.yaml `svc-tenant.<install namespace>`). It is bound cluster-wide
 * to nobody; the namespace_created step binds it to svc in each tenant namespace.
 */
export function tenantClusterRole(install: Pick<InstallFacts, 'namespace'>): string {
  return `svc-tenant.${install.namespace}`;
}

export const DEFAULT_TIMING: OrchestratorTiming = {
  readinessTimeoutMs: 15 * 60_000,
  decommissionGraceMs: 24 * 3_600_000,
  retentionMs: 30 * 24 * 3_600_000,
  pollMs: 5_000,
  readinessPollMs: 1_000,
  adapterTokenRefreshMs: 7 * 24 * 3_600_000,
  helmTimeoutMs: 10 * 60_000,
  namespaceDeleteMs: 5 * 60_000,
  reconcileMs: 5 * 60_000,
};
export const DEFAULT_EDGE_PORT_BASE = 20_000;
