export {
  createHelmRunner,
  type HelmApplyOptions,
  HelmError,
  type HelmRelease,
  type HelmRunner,
  type HelmRunnerOptions,
} from './helm.ts';
export {
  createNamespaceStore,
  NamespaceConflictError,
  NamespaceRemovalTimeoutError,
  type NamespaceStore,
  NamespaceTerminatingError,
  type ReadinessReport,
  readinessReport,
  type VolumeClaimPhase,
  type WorkloadReadiness,
} from './namespaces.ts';
export {
  ClusterUnavailableError,
  createSecretStore,
  loadKubeConfig,
  type SecretStore,
} from './secrets.ts';
